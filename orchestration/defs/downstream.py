"""Derived tables: each rebuilt from one exact snapshot of its source table, in a job (one per
source table) that the lake's snapshot sensor requests once per tick in which the source table
brought new rows, covering every snapshot since the previous run."""

from typing import Any

import dagster as dg
from pydantic import Field

from orchestration.config import DownstreamConfig, TablesConfig
from orchestration.defs.cheap_assets import table_asset
from orchestration.defs.leases import build_lease_release_sensors
from orchestration.defs.metadata import write_materialization
from orchestration.defs.naming import downstream_job_name, op_name, table_asset_key, table_group, table_pool
from orchestration.defs.resources import LakeCatalogResource, SparkResource
from orchestration.defs.sensors import RANGE_TAG, SKIPPED_TAG, SnapshotTarget, build_snapshot_sensor


class DownstreamRunConfig(dg.Config):
    snapshot_id: int | None = Field(None, description="source snapshot to read; default: the latest")


def downstream_run_config(downstream: list[DownstreamConfig], snapshot_id: int) -> dict[str, Any]:
    """Run config that pins every given downstream asset to ``snapshot_id`` of its source."""
    return {"ops": {op_name(d.name): {"config": {"snapshot_id": snapshot_id}} for d in downstream}}


def build_downstream_asset(downstream: DownstreamConfig) -> dg.AssetsDefinition:
    """A derived table rebuilt from one exact snapshot of its source table."""

    @table_asset(
        key=table_asset_key(downstream.name),
        deps=[table_asset_key(downstream.source_table)],
        group_name=table_group(downstream.name),
        kinds={"spark", "paimon"},
        pool=table_pool(downstream.name),
        description=f"{downstream.transform} of {downstream.source_table}, read at one snapshot via spark.read.format('paimon').",
        metadata={"table": downstream.name, "source_table": downstream.source_table, "transform": downstream.transform},
    )
    def derived_table(
        context: dg.AssetExecutionContext, config: DownstreamRunConfig, lake: LakeCatalogResource, spark: SparkResource
    ) -> dg.MaterializeResult:
        from jobs.downstream import run_downstream  # noqa: PLC0415 - pyspark stays out of loading the definitions (Dagster's webserver and daemon)

        lake.check_access()  # before Spark starts
        snapshot_id = config.snapshot_id
        if snapshot_id is None:
            latest = lake.catalog().get_table(downstream.source_table).latest_snapshot()
            if latest is None:
                raise dg.Failure(f"{downstream.source_table} has no snapshot yet; materialize it first")
            snapshot_id = latest.id
        with spark.session(warehouse=lake.warehouse) as session:
            result = run_downstream(
                session,
                lake.warehouse,
                source_table=downstream.source_table,
                snapshot_id=snapshot_id,
                target_table=downstream.name,
                transform=downstream.transform,
                storage_options=lake.storage_options(),
            )
            return write_materialization(
                context,
                session,
                lake,
                downstream.name,
                result,
                log_prefix=f"from {downstream.source_table}@{snapshot_id}: ",
                extra={
                    "source_table": downstream.source_table,
                    "source_snapshot_id": snapshot_id,
                    # the snapshot sensor's coalesced range: every snapshot this one run covers, and
                    # the newer ones that changed no rows (COMPACT, a rescale's OVERWRITE) and why
                    **{
                        name: context.run.tags[tag]
                        for name, tag in (("source_snapshots", RANGE_TAG), ("source_snapshots_skipped", SKIPPED_TAG))
                        if tag in context.run.tags
                    },
                },
            )

    return derived_table


def downstream_definitions(config: TablesConfig) -> dg.Definitions:
    """Every derived table's asset, per source table the job rebuilding its derived tables, and
    the one snapshot sensor requesting those jobs."""
    assets = [build_downstream_asset(d) for d in config.downstream]
    targets: list[SnapshotTarget] = []
    for table in config.tables:
        consumers = [d for d in config.downstream if d.source_table == table.name]
        if not consumers:
            continue  # nothing to trigger: a sensor needs a downstream job to request
        job = dg.define_asset_job(
            name=downstream_job_name(table.name),
            selection=dg.AssetSelection.assets(*[table_asset_key(d.name) for d in consumers]),
            description=f"Rebuild the tables derived from {table.name} at one snapshot.",
            tags={"lake/table": table.name},
        )
        targets.append(
            SnapshotTarget(
                table,
                job,
                lambda sid, consumers=consumers: downstream_run_config(consumers, sid),
                tuple(d.name for d in consumers),
            )
        )
    if not targets:
        return dg.Definitions(assets=assets)
    jobs = [t.job for t in targets]
    sensors = [build_snapshot_sensor(config, targets), *build_lease_release_sensors(jobs, prefix="downstream__")]
    return dg.Definitions(assets=assets, jobs=jobs, sensors=sensors)
