"""Asset checks on each table (warnings; they never block a write)."""

import dagster as dg

from orchestration.config import TableConfig
from orchestration.defs.drift import config_drift
from orchestration.defs.naming import table_asset_key
from orchestration.defs.resources import LakeCatalogResource


def build_config_drift_check(table: TableConfig) -> dg.AssetChecksDefinition:
    """Does the existing table still match its ``tables.yaml`` entry (options and keys)?"""

    @dg.asset_check(
        asset=table_asset_key(table.name),
        name="config_drift",
        description=f"Options and keys of {table.name} in tables.yaml against the table's schema; "
                    "a changed bucket count is reported as needing a rescale.",
    )
    def config_drift_check(lake: LakeCatalogResource) -> dg.AssetCheckResult:
        catalog = lake.catalog()
        if not catalog.table_exists(table.name):
            return dg.AssetCheckResult(passed=True, metadata={"table_exists": False},
                                       description=f"{table.name} does not exist yet; the config will create it")
        drifts = config_drift(table, catalog.get_table(table.name))
        return dg.AssetCheckResult(
            passed=not drifts,
            severity=dg.AssetCheckSeverity.WARN,
            description="\n".join(d.message(table.name) for d in drifts) or "the table matches tables.yaml",
            metadata={
                "drifted": ", ".join(d.what for d in drifts) or "none",
                **{f"{d.what}": f"config {d.config_value!r}, table {d.table_value!r}" for d in drifts},
                "needs_rescale": any(d.what == "bucket" for d in drifts),
            },
        )

    return config_drift_check


def table_checks(table: TableConfig) -> list[dg.AssetChecksDefinition]:
    """Every check of one table. Health checks of the maintenance policy join here."""
    return [build_config_drift_check(table)]
