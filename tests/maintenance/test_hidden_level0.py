"""Maintenance sees every committed row, level 0 included.

Batch reads of deletion-vector and first-row tables skip level 0 (its rows show after the next
compaction moves them up). Anything that rewrites or deletes committed rows must still read them:
a rescale that read through the hidden level and then replaced every file of the partition lost
the newest rows for good, and ``delete_where`` missed them. Checked against a dict model, on local
disk and S3, and with Java Paimon reading the result.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from lake_core import Catalog
from lake_core.maintenance.rescale import RescaleVerificationError
from lake_core.read.scan import TableScan

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string())])

# write-only: no inline compaction, so the second write stays at level 0 (as with a writer whose
# compaction did not land)
TABLES = {
    "dv-deduplicate": {"deletion-vectors.enabled": "true"},
    "dv-partial-update": {"deletion-vectors.enabled": "true", "merge-engine": "partial-update"},
    "first-row": {"merge-engine": "first-row"},
}


def _table(storage, kind: str):
    uri, opts = storage
    catalog = Catalog(uri, storage_options=opts)
    catalog.create_database("db", ignore_if_exists=True)
    table = catalog.create_table(
        "db.t", schema=SCHEMA, primary_keys=["k"], options={"bucket": "2", "write-only": "true", **TABLES[kind]}
    )
    return catalog, table


def _batch(pairs) -> pa.Table:
    return pa.table({"k": [k for k, _ in pairs], "v": [v for _, v in pairs]}, schema=SCHEMA)


def _rows(table) -> dict:
    return {r["k"]: r["v"] for r in table.to_arrow().to_pylist()}


def _with_hidden_level0(storage, kind: str):
    """Keys 1-3 compacted (visible); keys 4, 5 and an update of key 2 committed at level 0."""
    catalog, table = _table(storage, kind)
    table.write_arrow(_batch([(1, "a"), (2, "b"), (3, "c")]))
    table.maintenance.compact(full=True)
    table.write_arrow(_batch([(4, "d"), (5, "e"), (2, "b2")]))
    model = {1: "a", 2: "b" if kind == "first-row" else "b2", 3: "c", 4: "d", 5: "e"}
    assert set(_rows(table)) == {1, 2, 3}  # the level-0 rows are committed but not yet visible
    return catalog, table, model


@pytest.mark.parametrize("kind", sorted(TABLES))
def test_rescale_keeps_rows_committed_at_hidden_level0(storage, kind):
    catalog, table, model = _with_hidden_level0(storage, kind)
    result = table.maintenance.rescale(bucket=4)
    assert result.partitions_rescaled == 1 and result.rows == len(model)
    table = catalog.get_table("db.t")
    assert _rows(table) == model  # the rescale wrote every row at the top level: all visible now
    table.maintenance.compact(full=True)
    assert _rows(catalog.get_table("db.t")) == model


@pytest.mark.parametrize("kind", sorted(TABLES))
def test_rescale_verification_counts_what_the_commit_removes(warehouse, kind):
    """The guard that would have refused the old rescale: the files the OVERWRITE removes must all
    have been read. A scan that hides level 0 does not cover them."""
    from lake_core.maintenance.rescale import _check_reads_what_it_replaces

    _catalog, table, _model = _with_hidden_level0((warehouse, {}), kind)
    snap = table.latest_snapshot()
    entries = list(table.manifest_store.live_entries(snap))
    level0 = sorted(e.file.file_name for e in entries if e.file.level == 0)
    assert level0
    with pytest.raises(RescaleVerificationError) as err:
        _check_reads_what_it_replaces(table, "", snap.id, TableScan(table.store, snap).splits(), entries)
    assert "not read" in str(err.value) and level0[0] in str(err.value) and "db.t" in str(err.value)
    _check_reads_what_it_replaces(table, "", snap.id, TableScan(table.store, snap, all_levels=True).splits(), entries)


def test_delete_where_deletes_rows_committed_at_hidden_level0(storage):
    catalog, table = _table(storage, "dv-deduplicate")
    table.write_arrow(_batch([(1, "a"), (2, "b")]))
    pb = table.predicate_builder()
    snap = table.delete_where(pb.equal("k", 2))
    assert snap is not None  # a -D row was committed for key 2
    table.maintenance.compact(full=True)
    assert _rows(catalog.get_table("db.t")) == {1: "a"}
    # and a key that was never written is a no-op, not an error
    assert catalog.get_table("db.t").delete_where(pb.equal("k", 9)) is None


@pytest.mark.parametrize("kind", sorted(TABLES))
def test_compaction_check_does_not_call_revealed_rows_resurrected(warehouse, kind):
    """The compaction check compares committed content: rows a compaction moves up from a hidden
    level 0 were there before it (it used to report them as deleted rows come back)."""
    catalog, table, model = _with_hidden_level0((warehouse, {}), kind)
    before = table.latest_snapshot().id
    table.maintenance.compact(full=True)
    after = catalog.get_table("db.t").latest_snapshot().id
    check = table.maintenance.verify_compaction(before_snapshot_id=before, after_snapshot_id=after)
    assert check.passed, check.problems
    assert check.rows_before == check.rows_after > 0 and check.resurrected_keys == check.lost_keys == 0


@pytest.mark.java
@pytest.mark.parametrize("kind", sorted(TABLES))
def test_java_reads_the_rescaled_table(java_paimon, warehouse, kind):
    from fixtures.java_paimon import assert_same_rows

    catalog, table, model = _with_hidden_level0((warehouse, {}), kind)
    table.maintenance.rescale(bucket=3)
    table = catalog.get_table("db.t")
    assert _rows(table) == model
    assert_same_rows(java_paimon.read(table), table.to_arrow(), ["k"])
