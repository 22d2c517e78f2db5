"""Scheduled tags: tag_snapshot names the latest snapshot by the run time and keeps the newest N."""

from __future__ import annotations

import datetime as dt

import pytest

from lake_core.errors import MaintenanceArgumentError

from .helpers import Workload, make_table, state

FMT = "daily-%Y-%m-%d"
DAY = dt.datetime(2026, 11, 1, 12, tzinfo=dt.UTC)


def test_one_tag_per_period_newest_kept_other_tags_untouched(warehouse):
    t = make_table(warehouse)
    w = Workload(t, 5).run(2)
    t.create_tag("release")  # a user's tag: never counted or removed
    first = t.maintenance.tag_snapshot(name_format=FMT, num_retained=2, now=DAY)
    assert (first.tag, first.created, first.snapshot_id, first.skipped) == (
        "daily-2026-11-01",
        True,
        t.latest_snapshot().id,
        None,
    )
    model_at_first = dict(w.model)
    assert state(t, tag="daily-2026-11-01") == model_at_first  # a restore point
    w.run(2)
    again = t.maintenance.tag_snapshot(name_format=FMT, num_retained=2, now=DAY + dt.timedelta(hours=3))
    assert (
        again.created is False
        and again.skipped == f"tag 'daily-2026-11-01' already exists (snapshot {first.snapshot_id})"
    )
    for days in (1, 2):
        t.maintenance.tag_snapshot(name_format=FMT, num_retained=2, now=DAY + dt.timedelta(days=days))
    assert t.list_tags() == ["daily-2026-11-02", "daily-2026-11-03", "release"]
    dry = t.maintenance.tag_snapshot(name_format=FMT, num_retained=2, now=DAY + dt.timedelta(days=3), dry_run=True)
    assert dry.deleted_tags == ("daily-2026-11-02",) and not dry.created
    assert t.list_tags() == ["daily-2026-11-02", "daily-2026-11-03", "release"]


def test_bad_arguments_name_the_table_and_value(warehouse):
    t = make_table(warehouse)
    with pytest.raises(MaintenanceArgumentError, match="db.t.*'nightly'|'nightly'.*db.t"):
        t.maintenance.tag_snapshot(name_format="nightly")
    with pytest.raises(MaintenanceArgumentError, match="num_retained = 0 for table db.t"):
        t.maintenance.tag_snapshot(name_format=FMT, num_retained=0)
    assert t.maintenance.tag_snapshot(name_format=FMT).skipped == "the table has no snapshots"
    assert t.list_tags() == []
