"""Full compaction of buckets: same data, fewer files, level max, COMPACT snapshot, readable by pypaimon."""

from __future__ import annotations

import pyarrow as pa
import pytest

from lake_core import Catalog
from lake_core.compaction.bucket_compact import compact_bucket
from lake_core.errors import CommitConflictError

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.int64()), ("op", pa.string())])


def _table(warehouse):
    cat = Catalog(warehouse)
    cat.create_database("db")
    t = cat.create_table(
        "db.t",
        schema=SCHEMA,
        primary_keys=["dt", "id"],
        partition_keys=["dt"],
        options={"bucket": "2", "rowkind.field": "op"},
    )
    for i in range(4):
        ids = list(range(i * 10, i * 10 + 30))
        t.write_arrow(
            pa.table(
                {"dt": ["a"] * 30, "id": ids, "v": [i] * 30, "op": ["-D" if (k % 7 == 0 and i) else "+I" for k in ids]},
                schema=SCHEMA,
            )
        )
    return t


def _compact_all(t):
    by_bucket = {}
    for e in t.manifest_store.live_entries(t.latest_snapshot()):
        by_bucket.setdefault((e.partition, e.bucket, e.total_buckets), []).append(e.file)
    msgs = [compact_bucket(t.store, p, b, tb, files) for (p, b, tb), files in by_bucket.items()]
    return t.new_batch_write_builder().new_commit().commit(msgs)


@pytest.mark.interop
def test_full_compaction_keeps_data_and_drops_deletes(warehouse, pypaimon):
    t = _table(warehouse)
    before = t.to_arrow().sort_by("id")
    snaps = _compact_all(t)
    assert [s.commit_kind.value for s in snaps] == ["COMPACT"]
    assert t.to_arrow().sort_by("id").equals(before)
    live = t.manifest_store.live_entries(t.latest_snapshot())
    assert len(live) == 2 and {e.file.level for e in live} == {5}
    assert all(e.file.delete_row_count == 0 for e in live)  # retractions dropped at the top level
    theirs = pypaimon.read(warehouse, "db.t").sort_by("id")
    assert theirs.select(before.column_names).to_pylist() == before.to_pylist()


def test_stale_compaction_conflicts(warehouse):
    t = _table(warehouse)
    by_bucket = {}
    for e in t.manifest_store.live_entries(t.latest_snapshot()):
        by_bucket.setdefault((e.partition, e.bucket, e.total_buckets), []).append(e.file)
    (p, b, tb), files = next(iter(by_bucket.items()))
    stale = compact_bucket(t.store, p, b, tb, files)
    _compact_all(t)  # someone else compacted first
    n = t.latest_snapshot().id
    with pytest.raises(CommitConflictError, match="no longer live"):
        t.new_batch_write_builder().new_commit().commit([stale])
    assert t.latest_snapshot().id == n


@pytest.mark.interop
def test_input_changelog_files(warehouse, pypaimon):
    cat = Catalog(warehouse)
    cat.create_database("db")
    schema = pa.schema([("id", pa.int64()), ("v", pa.string()), ("op", pa.string())])
    t = cat.create_table(
        "db.c",
        schema=schema,
        primary_keys=["id"],
        options={"bucket": "1", "changelog-producer": "input", "rowkind.field": "op"},
    )
    t.write_arrow(pa.table({"id": [1, 1, 2], "v": ["a", "b", "c"], "op": ["+I", "+U", "+I"]}, schema=schema))
    snap = t.latest_snapshot()
    assert snap.changelog_manifest_list and snap.changelog_record_count == 3
    entries = t.manifest_store.changelog_entries(snap)
    assert len(entries) == 1 and entries[0].file.file_name.startswith("changelog-")
    assert entries[0].file.row_count == 3  # every input row, unfolded
    assert t.to_arrow()["v"].to_pylist() == ["b", "c"]
    assert sorted(pypaimon.read(warehouse, "db.c")["v"].to_pylist()) == ["b", "c"]
