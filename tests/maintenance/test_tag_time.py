"""Tag time retention (Java TagTimeExpire): per-tag time retained, tag.default-time-retained, expiry
through the API and after commits."""

from __future__ import annotations

import datetime as dt
import time

import pytest

from lake_core.errors import InvalidOptionError, MaintenanceArgumentError
from lake_core.maintenance.tag_time import expire_tags, tag_times

from .helpers import Workload, listing, make_table, state


def test_tags_expire_when_their_time_retained_has_passed(warehouse):
    t = make_table(warehouse)
    w = Workload(t, 31).run(6)
    t.create_tag("short", 2, time_retained=dt.timedelta(minutes=10))
    t.create_tag("long", 3, time_retained=dt.timedelta(days=3))
    t.create_tag("forever", 4)
    created = tag_times(t, "short").create_time
    assert tag_times(t, "forever").create_time is None
    # the model: a tag expires once now > created + retained
    cases = {dt.timedelta(minutes=9): (), dt.timedelta(minutes=11): ("short",), dt.timedelta(days=4): ("long", "short")}
    for age, expected in cases.items():
        r = expire_tags(t, now=created + age, dry_run=True)
        assert r.expired_tags == expected and r.dry_run
    assert t.list_tags() == ["forever", "long", "short"]
    r = expire_tags(t, now=created + dt.timedelta(minutes=11))
    assert r.expired_tags == ("short",) and t.list_tags() == ["forever", "long"]
    assert state(t, tag="long") == w.models[3]
    # older_than: every tag with a creation time before it
    r = t.maintenance.expire_tags(older_than=dt.datetime.now() + dt.timedelta(seconds=1))
    assert r.expired_tags == ("long",) and t.list_tags() == ["forever"]
    assert r.summary().startswith("expire_tags on db.t: expired tags 1; took ")
    assert r.describe().splitlines()[1:] == ["  expired tags: long"]


def test_default_time_retained_and_expiry_after_commits(warehouse):
    t = make_table(
        warehouse, **{"write-only": "false", "tag.default-time-retained": "300 ms", "snapshot.num-retained.min": "50"}
    )
    w = Workload(t, 32)
    w.upsert()
    t.create_tag("auto-ttl")
    t.create_tag("kept", time_retained=dt.timedelta(days=1))
    assert tag_times(t, "auto-ttl").time_retained == dt.timedelta(milliseconds=300)
    w.upsert()  # too early: the commit's maintenance keeps it
    assert t.list_tags() == ["auto-ttl", "kept"]
    time.sleep(0.4)
    w.upsert()  # maintenance after this commit expires it
    assert t.list_tags() == ["kept"]
    assert state(t) == w.model


@pytest.mark.parametrize("kwargs, match", [({"older_than": "yesterday"}, "older_than"), ({"dry_run": "no"}, "dry_run")])
def test_bad_expire_tags_arguments(warehouse, kwargs, match):
    t = make_table(warehouse)
    Workload(t, 33).run(3)
    t.create_tag("a", 1, time_retained=dt.timedelta(seconds=1))
    before = listing(t)
    with pytest.raises(MaintenanceArgumentError, match=match):
        t.maintenance.expire_tags(**kwargs)
    assert listing(t) == before


@pytest.mark.parametrize("value", [dt.timedelta(0), dt.timedelta(seconds=-5), 3600])
def test_bad_time_retained_is_refused(warehouse, value):
    t = make_table(warehouse)
    Workload(t, 34).run(2)
    with pytest.raises(InvalidOptionError, match="time_retained"):
        t.create_tag("x", time_retained=value)
    assert t.list_tags() == []
