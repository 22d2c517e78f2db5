"""What a table holds at one snapshot: rows, live data files and their bytes.

Files and bytes come from the snapshot's manifests alone. Rows are exact from metadata when every
split is raw-convertible (one sorted run, nothing to merge, as Paimon's ``DataSplit.mergedRowCount``);
otherwise a primary-key table has keys in several levels, and the rows are counted by a merged
read on Spark, one task per split.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from jobs.datasource import read_table
from lake_core import Catalog

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@dataclass(frozen=True)
class TableStats:
    snapshot_id: int
    table_rows: int  # live rows after merging, what a reader sees
    live_files: int  # data files the snapshot references
    total_bytes: int  # their size

    def as_metadata(self) -> dict[str, Any]:
        return {"table_rows": self.table_rows, "live_files": self.live_files, "total_bytes": self.total_bytes}


def table_stats(
    spark: SparkSession,
    warehouse: str,
    table_name: str,
    *,
    snapshot_id: int,
    storage_options: Mapping[str, Any] | None = None,
) -> TableStats:
    options = dict(storage_options or {})
    table = Catalog(warehouse, storage_options=options).get_table(table_name)
    splits = table.new_read_builder().new_scan(snapshot_id=snapshot_id).plan().splits()
    files = [f for s in splits for f in s.files]
    if all(s.raw_convertible for s in splits):
        rows = sum(s.row_count for s in splits)
    else:
        rows = read_table(spark, warehouse, table_name, snapshot_id=snapshot_id, storage_options=options).count()
    return TableStats(snapshot_id, rows, len(files), sum(f.file_size for f in files))
