"""Java Paimon as the oracle for the decoupled changelog lifecycle and for consumer files: the same
files go under Java's ExpireSnapshotsImpl/ExpireChangelogImpl and ours, Java streams through our
changelog/changelog-N files, and consumer files written by either side are honoured by the other."""

from __future__ import annotations

import datetime as dt
import shutil

import pytest

from fixtures.java_paimon import JavaPaimonError
from lake_core import Catalog
from lake_core.maintenance.references import added_files, tagged_snapshots, try_manifest_list
from lake_core.maintenance.tag_time import tag_times

from .helpers import Workload, listing, make_table

pytestmark = pytest.mark.java

NOW = dt.timedelta(0)


def _twin(t, warehouse_path, tmp_path):
    twin_wh = tmp_path / "twin"
    shutil.copytree(warehouse_path, twin_wh)
    return Catalog(twin_wh.as_uri()).get_table(t.identifier)


def _tag_changelog_files(table) -> set[str]:
    """Names of the files a tag's own changelog list holds (the list, its manifests, their files)."""
    names: set[str] = set()
    for snap in tagged_snapshots(table):
        if snap.changelog_manifest_list:
            names.add(snap.changelog_manifest_list)
            names.update(m.file_name for m in try_manifest_list(table, snap.changelog_manifest_list))
            names.update(
                f.path.rsplit("/", 1)[-1] for f in added_files(table, snap.changelog_manifest_list, "changelog")
            )
    return names


def _assert_same_files(ours, java, *, kept_for_tags: set[str] = frozenset()) -> None:
    """The same paths, and the same sizes except for ``changelog/changelog-N``: Java 1.0's
    ``Changelog`` rewrites the snapshot with only the fields it knows (no list sizes, uuid,
    writerVersion), while ours is the snapshot file unchanged. ``kept_for_tags``: files we keep on
    purpose and Java 1.0 deletes: a tag's own changelog list and its files (a tag is a copy of
    its snapshot, and remove_orphan_files must be able to read every list a retained tag names)."""
    a, b = listing(ours), listing(java)
    extra = {k for k in set(a) - set(b) if k.rsplit("/", 1)[-1] in kept_for_tags}
    a = {k: v for k, v in a.items() if k not in extra}
    assert sorted(a) == sorted(b)
    sized = lambda d: {k: v for k, v in d.items() if not k.startswith("changelog/changelog-")}
    assert sized(a) == sized(b)


def _rows(table) -> list[tuple]:
    return sorted((r["_row_kind"], r["dt"], r["id"], r["v"]) for r in table.to_pylist())


@pytest.mark.parametrize("producer, seed", [("none", 21), ("input", 22)])
def test_decoupled_expiry_deletes_exactly_what_java_deletes(
    warehouse, warehouse_path, tmp_path, java_paimon, producer, seed
):
    t = make_table(warehouse, **{"changelog-producer": producer, "changelog.num-retained.min": "12"})
    w = Workload(t, seed).run(26)
    t.create_tag("kept", 7)
    twin = _twin(t, warehouse_path, tmp_path)
    latest = t.latest_snapshot().id
    # Java streams every changelog of the untouched copy: what it must still see through ours
    java_before = java_paimon.stream_read(twin, from_snapshot=latest - 11)
    assert java_before.num_rows > 0

    ours = t.maintenance.expire_snapshots(retain_min=3, older_than=NOW, max_deletes=1000)
    java_n = java_paimon.expire_decoupled(
        "expire_snapshots", twin, retain_min=3, changelog_retain_min=12, max_deletes=1000
    )
    assert len(ours.expired_snapshots) == java_n == latest - 3
    _assert_same_files(t, twin)
    assert t.changelog_manager.long_lived.list_ids() == list(range(1, latest - 2))

    held_by_tag = _tag_changelog_files(t)
    ours = t.maintenance.expire_changelogs(older_than=NOW)
    java_n = java_paimon.expire_decoupled(
        "expire_changelogs", twin, retain_min=3, changelog_retain_min=12, max_deletes=1000
    )
    assert len(ours.expired_changelogs) == java_n > 0
    _assert_same_files(t, twin, kept_for_tags=held_by_tag)
    # orphan removal can read every list the tag names (it refuses when it cannot), and finds nothing
    assert t.maintenance.remove_orphan_files(dry_run=True, older_than=dt.timedelta(hours=1)).files == ()

    # Java's streaming read goes through our long-lived changelogs and sees the same changes
    assert t.changelog_manager.earliest_id() == latest - 11
    assert _rows(java_paimon.stream_read(t, from_snapshot=latest - 11)) == _rows(java_before)
    got = java_paimon.read(t)
    assert {(r["dt"], r["id"]): r["v"] for r in got.to_pylist()} == w.model


@pytest.mark.xfail(
    strict=True,
    raises=JavaPaimonError,
    reason="Java 1.0's IncrementalStartingScanner ('incremental-between') reads snapshot-N only, "
    "never changelog/changelog-N; its streaming read does (tested above)",
)
def test_java_incremental_between_reads_long_lived_changelogs(warehouse, java_paimon):
    t = make_table(warehouse, **{"changelog-producer": "input", "changelog.num-retained.min": "12"})
    Workload(t, 25).run(16)
    latest = t.latest_snapshot().id
    before = java_paimon.changes_between(t, latest - 10, latest, mode="changelog")
    t.maintenance.expire_snapshots(retain_min=3, older_than=NOW, max_deletes=1000)
    assert _rows(java_paimon.changes_between(t, latest - 10, latest, mode="changelog")) == _rows(before)


def test_java_written_consumer_is_honoured_by_our_expiry(warehouse, java_paimon):
    t = make_table(warehouse)
    w = Workload(t, 23).run(16)
    assert java_paimon.consumer(t, "flink-job", next_snapshot=7) == 7
    assert t.maintenance.consumers.get("flink-job") == 7
    r = t.maintenance.expire_snapshots(retain_min=1, older_than=NOW, max_deletes=1000)
    assert r.expired_snapshots == tuple(range(1, 7))
    assert t.snapshot_manager.earliest_id() == 7
    for sid in range(7, max(w.models) + 1):
        assert {(x["dt"], x["id"]): x["v"] for x in t.to_arrow(snapshot_id=sid).to_pylist()} == w.models[sid]
    # and the other way: Java reads the consumer file we write
    t.maintenance.consumers.reset("flink-job", 11)
    t.maintenance.consumers.reset("ours", 9)
    assert java_paimon.consumer(t, "flink-job") == 11
    assert java_paimon.consumer(t, "ours") == 9
    assert java_paimon.consumer(t, "nobody") is None


def test_java_written_consumer_bounds_our_changelog_expiry(warehouse, java_paimon):
    t = make_table(warehouse, **{"changelog.num-retained.min": "30"})
    Workload(t, 24).run(16)
    t.maintenance.expire_snapshots(retain_min=2, older_than=NOW, max_deletes=1000)
    java_paimon.consumer(t, "reader", next_snapshot=5)
    r = t.maintenance.expire_changelogs(retain_min=1, older_than=NOW)
    assert r.expired_changelogs == (1, 2, 3, 4)
    assert t.changelog_manager.earliest_id() == 5


def test_tag_time_retained_round_trips_with_java(warehouse, java_paimon):
    t = make_table(warehouse)
    w = Workload(t, 26).run(8)
    t.create_tag("ours", 3, time_retained=dt.timedelta(hours=2, milliseconds=5))
    java_paimon.create_tag(t, "javas", 4, time_retained_ms=90_000)
    java_paimon.create_tag(t, "plain", 5)
    # Java reads our tag file (tagCreateTime / tagTimeRetained as its Jackson writes them)
    got = java_paimon.read(t, options={"scan.tag-name": "ours"})
    assert {(r["dt"], r["id"]): r["v"] for r in got.to_pylist()} == w.models[3]
    # we read Java's
    javas = tag_times(t, "javas")
    assert javas.time_retained == dt.timedelta(seconds=90)
    assert abs(javas.create_time - dt.datetime.now()) < dt.timedelta(minutes=5)
    assert tag_times(t, "plain") == tag_times(t, "plain").__class__(None, None)
    ours = tag_times(t, "ours")
    assert ours.time_retained == dt.timedelta(hours=2, milliseconds=5)
    # 91 s later Java's tag has expired, ours has not; a tag without time retained never does
    later = javas.create_time + dt.timedelta(seconds=91)
    from lake_core.maintenance.tag_time import expire_tags

    r = expire_tags(t, now=later)
    assert r.expired_tags == ("javas",)
    assert t.list_tags() == ["ours", "plain"]


def test_java_ignores_the_record_our_consumer_expiry_leaves(warehouse, java_paimon):
    # consumer/.expired-<id> is no consumer to Java: it neither reads it as one, nor is its
    # expiry bounded by it, nor does its own consumer expiry trip over it
    import os
    import time

    from lake_core.errors import ConsumerExpiredError

    t = make_table(warehouse, **{"consumer.expiration-time": "1 h"})
    w = Workload(t, 27).run(12)
    t.maintenance.consumers.reset("gone", 3)
    t.maintenance.consumers.reset("live", 6)
    stamp = time.time() - 2 * 3600
    os.utime(t.fileio._p(t.paths.consumer("gone")), (stamp, stamp))
    assert t.maintenance.consumers.expire() == ["gone"]
    assert t.fileio.exists(t.paths.expired_consumer("gone"))
    assert java_paimon.consumer(t, "gone") is None and java_paimon.consumer(t, "live") == 6
    java_paimon.expire_snapshots(t, retain_min=1, time_retained_ms=0, max_deletes=1000)
    assert [s.id for s in java_paimon.snapshots(t)][0] == 6 == t.snapshot_manager.earliest_id()
    # Java's consumer expiry after its own commit (every consumer file is older than 1 ms)
    java_paimon.compact(t, options={"write-only": "false", "consumer.expiration-time": "1 ms"})
    assert java_paimon.consumer(t, "live") is None and t.maintenance.consumers.get("live") is None
    assert t.fileio.exists(t.paths.expired_consumer("gone"))
    assert {(r["dt"], r["id"]): r["v"] for r in java_paimon.read(t).to_pylist()} == w.model
    with pytest.raises(ConsumerExpiredError, match="'gone'"):
        t.new_read_builder().new_stream_scan(consumer_id="gone")
