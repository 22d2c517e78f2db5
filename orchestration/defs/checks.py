"""Asset checks on each table (warnings; they never block a write): config drift and the policy's
health checks. The checks of all tables are two ops (``lake__config_drift``,
``lake__health_checks``, ``can_subset``): the UI shows each check on its table and runs any
selection of them; a run visits the selected tables one after the other."""

from collections.abc import Iterator, Sequence

import dagster as dg

from orchestration.config import TableConfig
from orchestration.defs.drift import config_drift, pending_rescale
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


def _selected(context: dg.AssetCheckExecutionContext, tables: Sequence[TableConfig]) -> Iterator[TableConfig]:
    """The tables with a selected check, in config order."""
    keys = {k.asset_key for k in context.selected_asset_check_keys}
    return (t for t in tables if table_asset_key(t.name) in keys)


def drift_result(lake: LakeCatalogResource, table: TableConfig) -> dg.AssetCheckResult:
    """Does the existing table still match its ``tables.yaml`` entry (options and keys)?"""
    key = table_asset_key(table.name)
    catalog = lake.catalog()
    if not catalog.table_exists(table.name):
        return dg.AssetCheckResult(
            asset_key=key,
            check_name="config_drift",
            passed=True,
            metadata={"table_exists": False},
            description=f"{table.name} does not exist yet; the config will create it",
        )
    lake_table = catalog.get_table(table.name)
    drifts = config_drift(table, lake_table)
    pending = pending_rescale(table, lake_table)
    description = "\n".join(d.message(table.name) for d in drifts) or "the table matches tables.yaml"
    if pending:
        description += (
            f"\nrescale to maintenance.rescale.target_buckets ({table.maintenance.rescale.target_buckets}) pending "
            f"for {len(pending)} partition(s): {', '.join(pending[:10])}{' ...' if len(pending) > 10 else ''}; "
            "launch the table's rescale backfill over them"
        )
    return dg.AssetCheckResult(
        asset_key=key,
        check_name="config_drift",
        passed=not drifts,
        severity=dg.AssetCheckSeverity.WARN,
        description=description,
        metadata={
            "drifted": ", ".join(d.what for d in drifts) or "none",
            **{f"{d.what}": f"config {d.config_value!r}, table {d.table_value!r}" for d in drifts},
            "table_bucket": lake_table.options.bucket,
            "partitions_to_rescale": len(pending),
            "needs_rescale": bool(pending) or any(d.what == "bucket" for d in drifts),
        },
    )


def build_config_drift_checks(tables: Sequence[TableConfig]) -> dg.AssetChecksDefinition:
    specs = [
        dg.AssetCheckSpec(
            "config_drift",
            asset=table_asset_key(t.name),
            description=f"Options and keys of {t.name} in tables.yaml against the table's schema; "
            "a changed bucket count is reported as needing a rescale.",
        )
        for t in tables
    ]

    @dg.multi_asset_check(specs=specs, name="lake__config_drift", can_subset=True)
    def config_drift_checks(context: dg.AssetCheckExecutionContext, lake: LakeCatalogResource):
        for table in _selected(context, tables):
            yield drift_result(lake, table)

    return config_drift_checks


def health_results(lake: LakeCatalogResource, table: TableConfig, wanted: set[str]) -> Iterator[dg.AssetCheckResult]:
    """The policy's health checks of one table (warnings), from one metadata-only read."""
    key = table_asset_key(table.name)
    catalog = lake.catalog()
    if not catalog.table_exists(table.name):
        for name in HEALTH_CHECKS:
            if name in wanted:
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
        if f.check not in wanted:
            continue
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


def build_health_checks(tables: Sequence[TableConfig]) -> dg.AssetChecksDefinition:
    """Health of each table against its maintenance policy (metadata only)."""
    specs = [
        dg.AssetCheckSpec(name, asset=table_asset_key(t.name), description=text)
        for t in tables
        for name, text in HEALTH_CHECKS.items()
    ]

    @dg.multi_asset_check(
        specs=specs,
        name="lake__health_checks",
        can_subset=True,
        description="Health of each selected table against its maintenance policy (metadata only).",
    )
    def health_checks(context: dg.AssetCheckExecutionContext, lake: LakeCatalogResource):
        selected = context.selected_asset_check_keys
        for table in _selected(context, tables):
            key = table_asset_key(table.name)
            yield from health_results(lake, table, {k.name for k in selected if k.asset_key == key})

    return health_checks


def table_checks(tables: Sequence[TableConfig]) -> list[dg.AssetChecksDefinition]:
    """Every check of the tables: config drift and the policy's health checks."""
    return [build_config_drift_checks(tables), build_health_checks(tables)]
