"""Materialization metadata of the Spark write assets: what the commit did and what the table holds.

Numbers are recorded as numeric metadata so Dagster plots them over time. ``change_rows`` is the
commit's input (change records); ``table_rows``/``live_files``/``total_bytes`` describe the table at
the snapshot. ``dagster/row_count`` (the table's rows) is the key Dagster's UI shows by name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import dagster as dg

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from jobs.stats import TableStats
    from jobs.write import WriteResult
    from orchestration.defs.resources import LakeCatalogResource


def write_materialization(
    context: dg.AssetExecutionContext,
    session: SparkSession,
    lake: LakeCatalogResource,
    table_name: str,
    result: WriteResult,
    *,
    log_prefix: str,
    extra: dict[str, Any],
) -> dg.MaterializeResult:
    """Log and record a Spark write of ``table_name``, with the table's stats at its new snapshot."""
    from jobs.stats import table_stats  # noqa: PLC0415 - pyspark stays out of loading the definitions (Dagster's webserver and daemon)

    stats = None
    if result.snapshot_id is not None:
        stats = table_stats(
            session, lake.warehouse, table_name, snapshot_id=result.snapshot_id, storage_options=lake.storage_options()
        )
    context.log.info(log_prefix + write_log_line(table_name, result, stats))
    return dg.MaterializeResult(metadata=write_metadata(result, stats, extra))


def write_metadata(result: WriteResult, stats: TableStats | None, extra: dict[str, Any]) -> dict[str, Any]:
    """WriteResult (+ the table's stats at its snapshot) → Dagster metadata (None values left out)."""
    meta: dict[str, Any] = {k: v for k, v in result.as_metadata().items() if v is not None}
    if stats is not None:
        meta.update(stats.as_metadata())
        meta["dagster/row_count"] = stats.table_rows
    for key in ("bytes", "total_bytes"):
        if key in meta:
            meta[key] = dg.MetadataValue.int(meta[key])
    meta.update(extra)
    return meta


def write_log_line(name: str, result: WriteResult, stats: TableStats | None) -> str:
    done = ", already committed" if result.already_committed else ""
    table = f"; table: {stats.table_rows} rows in {stats.live_files} files" if stats else ""
    return (
        f"{name}: snapshot {result.snapshot_id} ({result.rows} change rows, {result.files} files, "
        f"{result.bytes} bytes{done}){table}"
    )
