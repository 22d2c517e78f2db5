"""Java Paimon as the oracle: the same files expire, Java reads what our maintenance leaves, and
Java's expiry honours our tags and consumer files."""

from __future__ import annotations

import datetime as dt
import shutil

import pytest

from lake_core import Catalog

from .helpers import Workload, listing, make_table

pytestmark = pytest.mark.java


def _java_state(java_paimon, table, **options) -> dict:
    t = java_paimon.read(table, options=options or None)
    return {(r["dt"], r["id"]): r["v"] for r in t.to_pylist()}


@pytest.mark.parametrize("seed, retain_min", [(11, 4), (12, 1)])
def test_we_delete_exactly_what_java_deletes(warehouse, warehouse_path, tmp_path, java_paimon, seed, retain_min):
    t = make_table(warehouse)
    w = Workload(t, seed).run(30)
    t.create_tag("kept", 9)
    twin_wh = tmp_path / "twin"
    shutil.copytree(warehouse_path, twin_wh)
    twin = Catalog(twin_wh.as_uri()).get_table("db.t")
    before = listing(t)

    ours = t.maintenance.expire_snapshots(retain_min=retain_min, older_than=dt.timedelta(0), max_deletes=1000)
    expired_by_java = java_paimon.expire_snapshots(twin, retain_min=retain_min, time_retained_ms=0, max_deletes=1000)
    assert len(ours.expired_snapshots) == expired_by_java > 0
    assert listing(t) == listing(twin)
    assert len(before) > len(listing(t))
    # Java reads the latest snapshot and the tag of the table we expired
    assert _java_state(java_paimon, t) == w.model
    assert _java_state(java_paimon, t, **{"scan.tag-name": "kept"}) == w.models[9]


def test_java_expiry_honours_our_consumer_and_tag(warehouse, java_paimon):
    t = make_table(warehouse)
    w = Workload(t, 13).run(20)
    t.maintenance.consumers.reset("downstream", 8)
    t.create_tag("v3", 3)
    java_paimon.expire_snapshots(t, retain_min=1, time_retained_ms=0, max_deletes=1000)
    assert [s.id for s in java_paimon.snapshots(t)][0] == 8
    assert t.snapshot_manager.earliest_id() == 8
    for sid in range(8, max(w.models) + 1):
        assert {(r["dt"], r["id"]): r["v"] for r in t.to_arrow(snapshot_id=sid).to_pylist()} == w.models[sid]
    assert {(r["dt"], r["id"]): r["v"] for r in t.to_arrow(tag="v3").to_pylist()} == w.models[3]
    # a lease is a consumer file too: Java stops at it as well
    w.run(5)
    t.maintenance.consumers.delete("downstream")
    latest = t.latest_snapshot().id
    with t.lease(latest - 2, holder="nightly"):
        java_paimon.expire_snapshots(t, retain_min=1, time_retained_ms=0, max_deletes=1000)
        assert t.snapshot_manager.earliest_id() == latest - 2


def test_java_reads_after_manifest_compaction_and_expiry(warehouse, java_paimon):
    t = make_table(warehouse)
    w = Workload(t, 14).run(40)
    t.maintenance.compact_manifest()
    assert _java_state(java_paimon, t) == w.model
    w.run(5)
    t.maintenance.expire_snapshots(retain_min=2, older_than=dt.timedelta(0), max_deletes=1000)
    assert _java_state(java_paimon, t) == w.model
    # Java writes on top of our compacted, expired table; we read Java's snapshot
    java_paimon.compact(t, options={"write-only": "false"})
    assert {(r["dt"], r["id"]): r["v"] for r in t.to_arrow().to_pylist()} == w.model
