"""Health at a glance for the whole lake: the ``lake/lake_health`` asset.

Its materialization metadata is one table (``dg.TableMetadataValue``), a row per configured table:
latest snapshot, max sorted runs per bucket, small files, snapshot count, oldest retained snapshot,
manifests, what the policy calls for now, and the last maintenance run with its result (from the
maintenance ledger); plus lake-wide numbers (tables, tables needing maintenance, the worst sorted
runs, small files and snapshot counts) that Dagster plots over time.

The figures are lake_core's ``table.maintenance.health()`` (metadata only). Two ways it is updated:

- the health sensor reports a materialization (``SensorResult.asset_events``) whenever a tick saw a
  table change, from the figures it read anyway (kept per table in its cursor): no run, no extra
  read besides the ledger;
- materializing the asset (the UI's button) reads every table's health afresh.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import dagster as dg

from lake_core import LakeError, TableNotFoundError
from orchestration.config import TablesConfig
from orchestration.defs import ledger
from orchestration.defs.naming import LAKE_HEALTH_ASSET
from orchestration.defs.policy import HEALTH_OPERATIONS, evaluate_policy, health_arguments
from orchestration.defs.resources import LakeCatalogResource

if TYPE_CHECKING:
    from lake_core import Catalog, TableHealth
    from orchestration.config import TableConfig

COLUMNS = (
    ("table", "string"),
    ("snapshot", "int"),
    ("max_sorted_runs", "int"),
    ("small_files", "int"),
    ("files", "int"),
    ("snapshots", "int"),
    ("oldest_snapshot", "int"),
    ("oldest_snapshot_age_h", "float"),
    ("manifests", "int"),
    ("due", "string"),
    ("last_maintenance", "string"),
    ("last_result", "string"),
    ("last_maintenance_at", "string"),
)


def summarize(health: TableHealth, table: TableConfig) -> dict[str, Any]:
    """The figures of one table the view shows (small enough to keep in a sensor cursor)."""
    due = [d.operation for d in evaluate_policy(health, table.maintenance, HEALTH_OPERATIONS) if d.request]
    age = health.oldest_snapshot_age_s
    return {
        "snapshot": health.snapshot_id,
        "max_sorted_runs": health.max_sorted_runs,
        "small_files": health.small_files,
        "files": health.files,
        "snapshots": health.snapshot_count,
        "oldest_snapshot": health.earliest_snapshot_id,
        "oldest_snapshot_age_h": None if age is None else round(age / 3600, 2),
        "manifests": health.manifest_count,
        "due": ", ".join(due) or "-",
    }


@dataclass(frozen=True)
class LastRun:
    operation: str
    status: str
    detail: str
    at: str


def last_maintenance(lake: LakeCatalogResource | Catalog) -> dict[str, LastRun]:
    """Per table, its newest maintenance ledger row (none before the first maintenance run)."""
    rows = ledger.read_ledger(lake).to_pylist()  # oldest first
    out: dict[str, LastRun] = {}
    for r in rows:
        detail = r.get("error") or r.get("skipped") or ""
        at = r["recorded_at"]
        out[r["table_name"]] = LastRun(
            r["operation"],
            r["status"],
            detail[:200],
            at.astimezone(_dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC") if at is not None else "",
        )
    return out


def lake_health_metadata(
    summaries: Mapping[str, Mapping[str, Any] | str], last: Mapping[str, LastRun]
) -> dict[str, Any]:
    """The asset's metadata: the table (a row per table, a missing table with why) and the numbers.
    ``summaries``: table name → :func:`summarize`'s figures, or the text saying why there are none."""
    records = []
    figures = [s for s in summaries.values() if not isinstance(s, str)]
    for name in sorted(summaries):
        s = summaries[name]
        run = last.get(name)
        row: dict[str, Any] = {"table": name}
        if isinstance(s, str):
            row["due"] = s
        else:
            row.update({k: v for k, v in s.items() if v is not None})
        if run is not None:
            row["last_maintenance"] = run.operation
            row["last_result"] = run.status + (f": {run.detail}" if run.detail else "")
            row["last_maintenance_at"] = run.at
        records.append(dg.TableRecord({k: v for k, v in row.items() if v is not None}))
    schema = dg.TableSchema(columns=[dg.TableColumn(name, kind) for name, kind in COLUMNS])
    return {
        "tables": dg.MetadataValue.table(records, schema),
        "table_count": len(summaries),
        "tables_missing": len(summaries) - len(figures),
        "tables_needing_maintenance": sum(1 for s in figures if s.get("due", "-") != "-"),
        "max_sorted_runs": max((int(s.get("max_sorted_runs") or 0) for s in figures), default=0),
        "small_files": sum(int(s.get("small_files") or 0) for s in figures),
        "max_snapshots": max((int(s.get("snapshots") or 0) for s in figures), default=0),
        "snapshots": sum(int(s.get("snapshots") or 0) for s in figures),
    }


def read_summary(catalog: Catalog, table: TableConfig) -> dict[str, Any] | str:
    """One table's figures now, or why there are none."""
    try:
        lake_table = catalog.get_table(table.name)
    except TableNotFoundError:
        return f"table {table.name} does not exist yet"
    except LakeError as e:
        return f"table {table.name} cannot be opened yet: {e}"
    return summarize(lake_table.maintenance.health(**health_arguments(table.maintenance)), table)


def build_lake_health_asset(config: TablesConfig) -> dg.AssetsDefinition:
    @dg.asset(
        key=LAKE_HEALTH_ASSET,
        group_name="lake",
        kinds={"paimon"},
        description=f"Health of all {len(config.tables)} tables at a glance (sorted runs, small files, snapshots, "
        "oldest retained snapshot, last maintenance and its result). The health sensor reports it whenever a "
        "table changes; materializing it reads every table afresh.",
    )
    def lake_health(lake: LakeCatalogResource) -> dg.MaterializeResult:
        catalog = lake.catalog()
        summaries = {t.name: read_summary(catalog, t) for t in config.tables}
        return dg.MaterializeResult(metadata=lake_health_metadata(summaries, last_maintenance(lake)))

    return lake_health
