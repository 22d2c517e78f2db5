"""Asset checks on each table (warnings; they never block a write)."""

import dagster as dg

from orchestration.config import TableConfig
from orchestration.defs.drift import config_drift
from orchestration.defs.naming import table_asset_key
from orchestration.defs.policy import check_figures, health_arguments
from orchestration.defs.resources import LakeCatalogResource

HEALTH_CHECKS = {
    "sorted_runs": "Most sorted runs in any bucket against compaction.max_sorted_runs.",
    "small_files": "Most files below compaction.small_file_mb in any bucket against health.max_small_files.",
    "snapshot_count": "Snapshots against snapshot_expiry.retain_max.",
    "manifest_count": "Manifests of the latest snapshot against manifest_compaction.max_manifests.",
    "ttl_lag": "How far past its expiry the oldest record is against health.max_ttl_lag.",
    "bucket_skew": "Largest bucket's rows over its partition's mean per bucket against health.max_bucket_skew.",
}


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
            return dg.AssetCheckResult(
                passed=True,
                metadata={"table_exists": False},
                description=f"{table.name} does not exist yet; the config will create it",
            )
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


def build_health_checks(table: TableConfig) -> dg.AssetChecksDefinition:
    """The policy's health checks (warnings), from one metadata-only read of the table."""
    key = table_asset_key(table.name)
    specs = [dg.AssetCheckSpec(name, asset=key, description=text) for name, text in HEALTH_CHECKS.items()]

    @dg.multi_asset_check(
        specs=specs,
        name=f"{key.to_python_identifier()}__health_checks",
        description=f"Health of {table.name} against its maintenance policy (metadata only).",
    )
    def health_checks(lake: LakeCatalogResource):
        catalog = lake.catalog()
        if not catalog.table_exists(table.name):
            for name in HEALTH_CHECKS:
                yield dg.AssetCheckResult(
                    asset_key=key,
                    check_name=name,
                    passed=True,
                    description=f"{table.name} does not exist yet",
                    metadata={"table_exists": False},
                )
            return
        health = catalog.get_table(table.name).maintenance.health(**health_arguments(table.maintenance))
        for f in check_figures(health, table.maintenance):
            metadata = {"value": f.value, "threshold": f.threshold, "snapshot_id": health.snapshot_id}
            if f.where:
                metadata["where"] = f.where
            yield dg.AssetCheckResult(
                asset_key=key,
                check_name=f.check,
                passed=f.passed,
                severity=dg.AssetCheckSeverity.WARN,
                description=f.description,
                metadata={k: v for k, v in metadata.items() if v is not None},
            )

    return health_checks


def table_checks(table: TableConfig) -> list[dg.AssetChecksDefinition]:
    """Every check of one table: config drift and the policy's health checks."""
    return [build_config_drift_check(table), build_health_checks(table)]
