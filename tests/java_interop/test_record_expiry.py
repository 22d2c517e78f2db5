"""Record-level expiry with Java Paimon 1.0 as the reader: after our expiry of files written under
older schemas, of merged rows (every merge engine) and below the top level with deletion vectors,
Java reads the same rows as we do, and both equal the dict model. (Java 1.0's own expiry filters
rows before merging, so its expiry result is not a reference here; its reading of ours is.)"""

from __future__ import annotations

import pyarrow as pa
import pytest
from compaction.expiry_scenarios import (
    ALTERS,
    DAY,
    ENGINES,
    LATE_CUTOFF_S,
    NOW,
    altered_table,
    late_update_table,
    layered_table,
    read_rows,
    unexpired,
)

from fixtures.java_paimon import assert_same_rows
from lake_core import Catalog
from lake_core.compaction.job import compact


def _catalog(warehouse: str) -> Catalog:
    cat = Catalog(warehouse)
    cat.create_database("db")
    return cat


def _java_reads_as_we_do(java_paimon, catalog: Catalog) -> dict:
    t = catalog.get_table("db.t")
    ours = t.to_arrow()
    assert_same_rows(java_paimon.read(t), ours)
    return read_rows(t)


@pytest.mark.parametrize("alter", sorted(ALTERS))
def test_java_reads_our_expiry_of_files_from_older_schemas(java_paimon, warehouse, alter):
    cat = _catalog(warehouse)
    t, model, field = altered_table(cat, alter)
    assert t.maintenance.compact(expire_records=True).rows_expired == 2
    assert _java_reads_as_we_do(java_paimon, cat) == unexpired(model, field=field)


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_java_reads_our_expiry_of_merged_rows(java_paimon, warehouse, engine):
    cat = _catalog(warehouse)
    t, merged = late_update_table(cat, engine)
    compact(t.store, hooks=t, full=True, now_ms=(NOW + DAY // 2) * 1000)
    assert _java_reads_as_we_do(java_paimon, cat) == unexpired(merged, cutoff_s=LATE_CUTOFF_S)


@pytest.mark.parametrize("dv", [False, True], ids=["plain", "deletion_vectors"])
def test_java_reads_our_table_after_a_compaction_below_the_top_level(java_paimon, warehouse, dv):
    cat = _catalog(warehouse)
    t, merged = layered_table(cat, deletion_vectors=dv)
    t.maintenance.compact()  # levels 0 -> 4: expires key 1 with deletion vectors only
    assert _java_reads_as_we_do(java_paimon, cat) == (unexpired(merged) if dv else merged)
    t.maintenance.compact(full=True)
    assert _java_reads_as_we_do(java_paimon, cat) == unexpired(merged)
    row = pa.Table.from_pylist([{"id": 9, "ts": NOW, "v": 9}], schema=t.schema.arrow_schema())
    java_paimon.write(t, row)  # Java writes and compacts on top of our expiry: key 1 stays gone
    java_paimon.compact(t, full=True, options={"write-only": "false"})
    assert _java_reads_as_we_do(java_paimon, cat) == unexpired({**merged, 9: {"ts": NOW, "v": 9}})
