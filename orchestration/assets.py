"""Asset factories: one write asset per configured table, one asset per downstream table.

Each asset launches a Spark job from ``jobs/`` (in the step's process, local mode by default) and
records what the commit did as materialization metadata.
"""

from typing import Any

import dagster as dg
from pydantic import Field

from orchestration.config import DownstreamConfig, TableConfig
from orchestration.resources import LakeCatalogResource, SparkResource

GROUP = "lake"


def table_asset_key(table_name: str) -> dg.AssetKey:
    """'demo.orders' → AssetKey(['demo', 'orders']): the asset *is* the table."""
    return dg.AssetKey(table_name.split("."))


def table_pool(table_name: str) -> str:
    """One concurrency pool per table: at most one job maintains a table at a time (D6)."""
    return "lake_table_" + table_name.replace(".", "__")


def op_name(table_name: str) -> str:
    return table_name.replace(".", "__")


def _write_metadata(result: Any, extra: dict[str, Any]) -> dict[str, Any]:
    """WriteResult → Dagster metadata (None values left out: Dagster metadata has no null)."""
    meta: dict[str, Any] = {k: v for k, v in result.as_metadata().items() if v is not None}
    if "bytes" in meta:
        meta["bytes"] = dg.MetadataValue.int(meta["bytes"])
    meta.update(extra)
    return meta


class IngestConfig(dg.Config):
    batch: int | None = Field(None, description="source batch to ingest; default: the next one")


def build_table_asset(table: TableConfig) -> dg.AssetsDefinition | dg.AssetSpec:
    """The asset that *is* the table: its write job if it has a source, else an external asset
    (written by something outside Dagster; its sensor and, later, maintenance still apply)."""
    if table.source is None:
        return dg.AssetSpec(
            key=table_asset_key(table.name), group_name=GROUP, kinds={"paimon"},
            description=f"Lake table {table.name}, written outside this code location.",
            metadata={"table": table.name, "primary_keys": ", ".join(table.primary_keys)},
        )
    return build_write_asset(table)


def build_write_asset(table: TableConfig) -> dg.AssetsDefinition:
    """The table's write job: ingest the next source batch through the distributed Spark write."""
    from jobs.ingest import TableSpec

    spec = TableSpec(
        name=table.name,
        schema=table.arrow_schema(),
        primary_keys=tuple(table.primary_keys),
        partition_keys=tuple(table.partition_keys),
        options=dict(table.options),
    )

    @dg.asset(
        key=table_asset_key(table.name),
        group_name=GROUP,
        kinds={"spark", "paimon"},
        pool=table_pool(table.name),
        description=f"Lake table {table.name}: ingests the next batch of {table.source} with a Spark write.",
        metadata={"table": table.name, "source": str(table.source), "primary_keys": ", ".join(table.primary_keys)},
    )
    def write_table(
        context: dg.AssetExecutionContext, config: IngestConfig, lake: LakeCatalogResource, spark: SparkResource
    ) -> dg.MaterializeResult:
        from jobs.ingest import ingest

        # A re-execution keeps the root run id, so its commit identity (and batch) is reused.
        run_key = context.run.root_run_id or context.run.run_id
        with spark.session() as session:
            result = ingest(
                session, lake.warehouse, spec, table.make_source(),
                run_key=run_key, storage_options=lake.storage_options(), batch=config.batch,
            )
        w = result.write
        context.log.info(
            f"{table.name}: batch {result.batch} → snapshot {w.snapshot_id} "
            f"({w.rows} rows, {w.files} files, {w.bytes} bytes{', already committed' if w.already_committed else ''})"
        )
        return dg.MaterializeResult(metadata=_write_metadata(w, {"batch": result.batch, "warehouse": lake.warehouse}))

    return write_table


class DownstreamRunConfig(dg.Config):
    snapshot_id: int | None = Field(None, description="source snapshot to read; default: the latest")


def downstream_run_config(downstream: list[DownstreamConfig], snapshot_id: int) -> dict[str, Any]:
    """Run config that pins every given downstream asset to ``snapshot_id`` of its source."""
    return {"ops": {op_name(d.name): {"config": {"snapshot_id": snapshot_id}} for d in downstream}}


def build_downstream_asset(downstream: DownstreamConfig) -> dg.AssetsDefinition:
    """A derived table rebuilt from one exact snapshot of its source table."""

    @dg.asset(
        key=table_asset_key(downstream.name),
        deps=[table_asset_key(downstream.source_table)],
        group_name=GROUP,
        kinds={"spark", "paimon"},
        pool=table_pool(downstream.name),
        description=f"{downstream.transform} of {downstream.source_table}, read at one snapshot via spark.read.format('paimon').",
        metadata={"table": downstream.name, "source_table": downstream.source_table, "transform": downstream.transform},
    )
    def derived_table(
        context: dg.AssetExecutionContext, config: DownstreamRunConfig, lake: LakeCatalogResource, spark: SparkResource
    ) -> dg.MaterializeResult:
        from jobs.downstream import run_downstream

        snapshot_id = config.snapshot_id
        if snapshot_id is None:
            latest = lake.catalog().get_table(downstream.source_table).latest_snapshot()
            if latest is None:
                raise dg.Failure(f"{downstream.source_table} has no snapshot yet; materialize it first")
            snapshot_id = latest.id
        with spark.session() as session:
            result = run_downstream(
                session, lake.warehouse,
                source_table=downstream.source_table, snapshot_id=snapshot_id,
                target_table=downstream.name, transform=downstream.transform,
                storage_options=lake.storage_options(),
            )
        context.log.info(f"{downstream.name} from {downstream.source_table}@{snapshot_id}: snapshot {result.snapshot_id}")
        return dg.MaterializeResult(
            metadata=_write_metadata(result, {"source_table": downstream.source_table, "source_snapshot_id": snapshot_id})
        )

    return derived_table
