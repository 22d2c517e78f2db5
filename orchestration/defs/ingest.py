"""The asset that *is* a table: its write job (a Spark ingest of the next source batch), or an
external asset when the table is written outside this code location."""

import dagster as dg
from pydantic import Field

from jobs.ingest import ingest
from jobs.tables import TableSpec
from orchestration.config import TableConfig
from orchestration.defs.cheap_assets import table_asset
from orchestration.defs.drift import config_drift
from orchestration.defs.metadata import write_materialization
from orchestration.defs.naming import table_asset_key, table_group, table_pool
from orchestration.defs.resources import LakeCatalogResource, SparkResource


class IngestConfig(dg.Config):
    batch: int | None = Field(None, description="source batch to ingest; default: the next one")


def build_table_asset(table: TableConfig) -> dg.AssetsDefinition | dg.AssetSpec:
    """The table's write job if it has a source, else an external asset (its sensor, checks and
    maintenance still apply)."""
    if table.source is None:
        return dg.AssetSpec(
            key=table_asset_key(table.name),
            group_name=table_group(table.name),
            kinds={"paimon"},
            description=f"Lake table {table.name}, written outside this code location.",
            metadata={"table": table.name, "primary_keys": ", ".join(table.primary_keys)},
        )
    return build_write_asset(table)


def build_write_asset(table: TableConfig) -> dg.AssetsDefinition:
    """Ingest the next source batch through the distributed Spark write."""

    spec = TableSpec(
        name=table.name,
        schema=table.arrow_schema(),
        primary_keys=tuple(table.primary_keys),
        partition_keys=tuple(table.partition_keys),
        options=dict(table.options),
    )

    @table_asset(
        key=table_asset_key(table.name),
        group_name=table_group(table.name),
        kinds={"spark", "paimon"},
        pool=table_pool(table.name),
        description=f"Lake table {table.name}: ingests the next batch of {table.source} with a Spark write.",
        metadata={"table": table.name, "source": str(table.source), "primary_keys": ", ".join(table.primary_keys)},
    )
    def write_table(
        context: dg.AssetExecutionContext, config: IngestConfig, lake: LakeCatalogResource, spark: SparkResource
    ) -> dg.MaterializeResult:

        lake.check_access()  # before Spark starts: a bad bucket or key fails in one line
        catalog = lake.catalog()
        if catalog.table_exists(table.name):
            for drift in config_drift(table, catalog.get_table(table.name)):
                context.log.warning(drift.message(table.name))
        # A re-execution keeps the root run id, so its commit identity (and batch) is reused.
        run_key = context.run.root_run_id or context.run.run_id
        with spark.session(warehouse=lake.warehouse) as session:
            result = ingest(
                session,
                lake.warehouse,
                spec,
                table.make_source(),
                run_key=run_key,
                storage_options=lake.storage_options(),
                batch=config.batch,
            )
            return write_materialization(
                context,
                session,
                lake,
                table.name,
                result.write,
                log_prefix=f"batch {result.batch}: ",
                extra={"batch": result.batch, "warehouse": lake.warehouse},
            )

    return write_table
