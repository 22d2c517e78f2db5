"""Automatic tags (tag.automatic-creation = process-time), their retention, and expiry honouring them."""

from __future__ import annotations

import datetime as dt

import pytest

from lake_core.errors import InvalidOptionError, UnsupportedOptionError
from lake_core.maintenance.tags import auto_create_tag

from .helpers import Workload, make_table, state


def test_daily_tag_for_the_last_complete_day(warehouse):
    t = make_table(
        warehouse, **{"write-only": "false", "tag.automatic-creation": "process-time", "tag.num-retained-max": "2"}
    )
    w = Workload(t, 31).run(3)
    yesterday = (dt.date.today() - dt.timedelta(days=1)).isoformat()
    assert t.list_tags() == [yesterday]
    assert t.tag(yesterday).id == min(w.models)  # tagged at the first commit after the day ended
    # the next period's tag comes once processing time passes it; retention keeps the newest 2
    later = dt.datetime.now() + dt.timedelta(days=1)
    assert auto_create_tag(t, now=later) == dt.date.today().isoformat()
    assert auto_create_tag(t, now=later + dt.timedelta(days=1)) == (dt.date.today() + dt.timedelta(days=1)).isoformat()
    assert t.list_tags() == [dt.date.today().isoformat(), (dt.date.today() + dt.timedelta(days=1)).isoformat()]
    assert auto_create_tag(t, now=later + dt.timedelta(days=1)) is None  # not due again
    t.create_tag("release")  # a user's tag is never removed by retention
    auto_create_tag(t, now=later + dt.timedelta(days=2))
    assert "release" in t.list_tags() and len(t.list_tags()) == 3
    # expiry keeps what the tags hold
    t.maintenance.expire_snapshots(retain_min=1, older_than=dt.timedelta(0))
    for name in t.list_tags():
        assert state(t, tag=name) == w.models[t.tag(name).id]


def test_hourly_names(warehouse):
    t = make_table(warehouse, **{"tag.automatic-creation": "process-time", "tag.creation-period": "hourly"})
    Workload(t, 32).upsert()
    assert auto_create_tag(t, now=dt.datetime(2026, 5, 4, 10, 30)) == "2026-05-04 09"


@pytest.mark.parametrize(
    "options, error, match",
    [
        ({"tag.automatic-creation": "watermark"}, UnsupportedOptionError, "process-time"),
        ({"tag.automatic-creation": "sometimes"}, InvalidOptionError, "tag.automatic-creation"),
        ({"tag.creation-period": "weekly"}, InvalidOptionError, "tag.creation-period"),
        ({"tag.num-retained-max": "0"}, InvalidOptionError, "tag.num-retained-max"),
    ],
)
def test_bad_tag_options(warehouse, options, error, match):
    with pytest.raises(error, match=match):
        make_table(warehouse, **options)
