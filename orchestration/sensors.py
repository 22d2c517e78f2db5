"""Snapshot sensors: one per table, requesting downstream runs for each new snapshot (D6).

The cursor is the id of the newest snapshot already handled. A tick lists the table's snapshots
newer than the cursor; each one that brought new data (APPEND/OVERWRITE, not COMPACT) gets a run
request whose ``run_key`` is ``<table>:<snapshot id>``, so Dagster never launches two runs for the
same snapshot even if the cursor were lost.
"""

from dataclasses import dataclass
from typing import TYPE_CHECKING

import dagster as dg

from orchestration.assets import downstream_run_config
from orchestration.config import DownstreamConfig, TableConfig
from orchestration.resources import LakeCatalogResource

if TYPE_CHECKING:
    from dagster._core.definitions.unresolved_asset_job_definition import UnresolvedAssetJobDefinition

    from lake_core import Catalog

DATA_KINDS = ("APPEND", "OVERWRITE")


@dataclass(frozen=True)
class SnapshotPlan:
    snapshot_ids: list[int]  # new data snapshots to request runs for, oldest first
    cursor: str | None  # the new cursor
    skip_reason: str | None


def plan_snapshot_requests(catalog: "Catalog", table_name: str, cursor: str | None, max_requests: int) -> SnapshotPlan:
    from lake_core.errors import CatalogError

    try:
        table = catalog.get_table(table_name)
    except CatalogError:
        return SnapshotPlan([], cursor, f"table {table_name} does not exist yet")
    latest = table.latest_snapshot()
    if latest is None:
        return SnapshotPlan([], cursor, f"table {table_name} has no snapshot yet")
    seen = int(cursor) if cursor else None
    if seen is not None and latest.id <= seen:
        return SnapshotPlan([], cursor, f"no new snapshot of {table_name} since {seen}")
    if seen is None:
        # First tick: the derived tables are rebuilt from a whole snapshot, so history is not
        # replayed; only the newest data snapshot is requested.
        candidates = [s for s in table.snapshots() if s.commit_kind.value in DATA_KINDS][-1:]
    else:
        candidates = [s for s in table.snapshots() if s.id > seen and s.commit_kind.value in DATA_KINDS]
    ids = sorted(s.id for s in candidates)[-max_requests:]
    if not ids:
        return SnapshotPlan([], str(latest.id), f"snapshots up to {latest.id} of {table_name} changed no data")
    return SnapshotPlan(ids, str(latest.id), None)


def run_key(table_name: str, snapshot_id: int) -> str:
    return f"{table_name}:{snapshot_id}"


def build_snapshot_sensor(
    table: TableConfig, job: "UnresolvedAssetJobDefinition", downstream: list[DownstreamConfig]
) -> dg.SensorDefinition:
    def evaluate(context: dg.SensorEvaluationContext, lake: LakeCatalogResource) -> dg.SensorResult:
        plan = plan_snapshot_requests(lake.catalog(), table.name, context.cursor, table.sensor.max_requests_per_tick)
        if plan.skip_reason is not None:
            return dg.SensorResult(skip_reason=plan.skip_reason, cursor=plan.cursor)
        requests = [
            dg.RunRequest(
                run_key=run_key(table.name, sid),
                run_config=downstream_run_config(downstream, sid),
                tags={"lake/table": table.name, "lake/snapshot": str(sid)},
            )
            for sid in plan.snapshot_ids
        ]
        return dg.SensorResult(run_requests=requests, cursor=plan.cursor)

    return dg.sensor(
        name=f"{table.name.replace('.', '__')}__snapshot_sensor",
        job=job,
        minimum_interval_seconds=table.sensor.minimum_interval_seconds,
        default_status=dg.DefaultSensorStatus.RUNNING if table.sensor.enabled else dg.DefaultSensorStatus.STOPPED,
        description=f"Requests {', '.join(d.name for d in downstream)} for each new snapshot of {table.name}.",
    )(evaluate)

