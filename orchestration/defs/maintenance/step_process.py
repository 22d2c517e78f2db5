"""Maintenance assets that run in the Dagster step process (no Spark): manifest compaction,
snapshot (and changelog) expiry, partition expiry, orphan cleanup and scheduled tags.

Each asset takes its arguments from the table's ``maintenance:`` policy, which a run's config may
override field by field (:mod:`.run_config`), calls one ``table.maintenance`` operation of lake_core
(snapshot expiry also expires long-lived changelogs) and hands the typed results to the run
(:mod:`.run`): every field becomes metadata (numbers as numeric metadata), and the run is skipped
when the policy disables it or every operation found nothing to do.

No ``from __future__ import annotations`` here: Dagster reads the config classes from the asset
functions' annotations at definition time.
"""

import datetime as _dt
from collections.abc import Sequence
from typing import Any

import dagster as dg

from lake_core import FileStoreTable, OperationResult
from orchestration.config import TableConfig, duration_seconds
from orchestration.defs import ledger
from orchestration.defs.maintenance.asset import MaintenanceAsset, TableOperation
from orchestration.defs.maintenance.run import Operation, Outcome, result_outputs, run_maintenance
from orchestration.defs.maintenance.run_config import (
    ManifestCompactionConfig,
    OrphanCleanupConfig,
    PartitionExpiryConfig,
    SnapshotExpiryConfig,
    TagsConfig,
    effective_policy,
)
from orchestration.defs.resources import LakeCatalogResource

_MAX_TEXT = 2000  # longer metadata text (file lists) is cut: the ledger and lake_core hold the rest


def _timedelta(text: str) -> _dt.timedelta:
    return _dt.timedelta(seconds=duration_seconds(text))


def metadata_value(value: Any) -> Any:
    """Numbers as numeric metadata (plotted by Dagster), long text cut."""
    if isinstance(value, bool):
        return dg.MetadataValue.bool(value)
    if isinstance(value, int):
        return dg.MetadataValue.int(value)
    if isinstance(value, float):
        return dg.MetadataValue.float(value)
    text = str(value)
    return dg.MetadataValue.text(text if len(text) <= _MAX_TEXT else text[:_MAX_TEXT] + f" ... ({len(text)} chars)")


def _skip_reason(results: Sequence[OperationResult]) -> str | None:
    """Skipped when every part did nothing; the reason names each part."""
    reasons = [getattr(r, "skipped", None) for r in results]
    if any(reason is None for reason in reasons):
        return None
    if len(results) == 1:
        return reasons[0]
    return "; ".join(f"{r.operation}: {reason}" for r, reason in zip(results, reasons))


def _outcome(*results: OperationResult) -> Outcome:
    """The results of one run as its outcome: the first is the main one, the others' fields are
    prefixed with their operation."""
    main = results[0]
    outputs: dict[str, Any] = {}
    for r in results:
        outputs.update(result_outputs(r, prefix="" if r is main else f"{r.operation}."))
    metadata = {k: metadata_value(v) for k, v in outputs.items() if v is not None}
    reclaimed = None
    if any(hasattr(r, "bytes_reclaimed") for r in results):
        reclaimed = sum(getattr(r, "bytes_reclaimed", 0) for r in results)
        metadata["bytes_reclaimed"] = dg.MetadataValue.int(reclaimed)
    summary = ", ".join(
        f"{k}={round(v, 3) if isinstance(v, float) else v}"
        for k, v in outputs.items()
        if v not in (None, "") and not k.endswith("files")
    )
    return Outcome(
        summary=summary,
        metadata=metadata,
        outputs=outputs,
        snapshot_id=ledger.committed_snapshot(main),
        skipped=_skip_reason(results),
        dry_run=main.dry_run,
        bytes_reclaimed=reclaimed,
    )


def _asset(table: TableConfig, operation: str, description: str) -> MaintenanceAsset:
    return MaintenanceAsset(
        table=table,
        operation=operation,
        description=f"{description} ({table.name}); runs in the step process, one maintainer per table.",
    )


def _disabled(table: TableConfig, section: str, enabled: bool) -> str | None:
    return None if enabled else f"policy maintenance.{section}.enabled is false for table {table.name}"


# -- the assets ------------------------------------------------------------------------------------------
def build_manifest_compaction(table: TableConfig) -> dg.AssetsDefinition | TableOperation:
    asset = _asset(table, "manifest_compaction", "Compacts the manifests of the latest snapshot")
    policy = table.maintenance.manifest_compaction

    @asset.define()
    def manifest_compaction(
        context: dg.AssetExecutionContext, config: ManifestCompactionConfig, lake: LakeCatalogResource
    ) -> dg.MaterializeResult:
        return run_maintenance(
            context,
            lake,
            asset=asset,
            operation=Operation(
                inputs={"mode": config.mode, "dry_run": config.dry_run},
                disabled=_disabled(table, "manifest_compaction", policy.enabled),
                execute=lambda t: _outcome(t.maintenance.compact_manifest(mode=config.mode, dry_run=config.dry_run)),
            ),
        )

    return manifest_compaction


def build_snapshot_expiry(table: TableConfig) -> dg.AssetsDefinition | TableOperation:
    asset = _asset(table, "snapshot_expiry", "Expires old snapshots, then long-lived changelogs")

    @asset.define()
    def snapshot_expiry(
        context: dg.AssetExecutionContext, config: SnapshotExpiryConfig, lake: LakeCatalogResource
    ) -> dg.MaterializeResult:
        policy = effective_policy(
            table,
            "snapshot_expiry",
            table.maintenance.snapshot_expiry,
            retain_min=config.retain_min,
            retain_max=config.retain_max,
            time_retained=config.time_retained,
        )

        def execute(t: FileStoreTable) -> Outcome:
            snapshots = t.maintenance.expire_snapshots(
                retain_min=policy.retain_min,
                retain_max=policy.retain_max,
                older_than=_timedelta(policy.time_retained),
                max_deletes=config.max_deletes,
                dry_run=config.dry_run,
            )
            # Changelogs kept longer than their snapshots (changelog.num-retained.*, changelog.time-retained)
            # expire by the table's own changelog options.
            return _outcome(snapshots, t.maintenance.expire_changelogs(dry_run=config.dry_run))

        return run_maintenance(
            context,
            lake,
            asset=asset,
            operation=Operation(
                inputs={
                    "retain_min": policy.retain_min,
                    "retain_max": policy.retain_max,
                    "time_retained": policy.time_retained,
                    "max_deletes": config.max_deletes,
                    "dry_run": config.dry_run,
                },
                disabled=_disabled(table, "snapshot_expiry", policy.enabled),
                execute=execute,
            ),
        )

    return snapshot_expiry


def build_partition_expiry(table: TableConfig) -> dg.AssetsDefinition | TableOperation | None:
    if not table.partition_keys:
        return None  # nothing to expire; the config refuses an expiration_time here anyway
    asset = _asset(table, "partition_expiry", "Drops partitions older than the policy's expiration_time")

    @asset.define()
    def partition_expiry(
        context: dg.AssetExecutionContext, config: PartitionExpiryConfig, lake: LakeCatalogResource
    ) -> dg.MaterializeResult:
        policy = effective_policy(
            table, "partition_expiry", table.maintenance.partition_expiry, expiration_time=config.expiration_time
        )
        return run_maintenance(
            context,
            lake,
            asset=asset,
            operation=Operation(
                inputs={
                    "expiration_time": policy.expiration_time,
                    "timestamp_formatter": policy.timestamp_formatter,
                    "dry_run": config.dry_run,
                },
                disabled=None
                if policy.expiration_time
                else (f"policy maintenance.partition_expiry.expiration_time is not set for table {table.name}"),
                execute=lambda t: _outcome(
                    t.maintenance.expire_partitions(
                        expiration_time=_timedelta(policy.expiration_time),
                        timestamp_formatter=policy.timestamp_formatter,
                        dry_run=config.dry_run,
                    )
                ),
            ),
        )

    return partition_expiry


def build_orphan_cleanup(table: TableConfig) -> dg.AssetsDefinition | TableOperation:
    asset = _asset(
        table,
        "orphan_cleanup",
        "Removes files no snapshot, tag or changelog references "
        "(a dry run unless the policy or the run says otherwise)",
    )

    @asset.define()
    def orphan_cleanup(
        context: dg.AssetExecutionContext, config: OrphanCleanupConfig, lake: LakeCatalogResource
    ) -> dg.MaterializeResult:
        policy = effective_policy(
            table,
            "orphan_cleanup",
            table.maintenance.orphan_cleanup,
            older_than=config.older_than,
            dry_run=config.dry_run,
        )
        return run_maintenance(
            context,
            lake,
            asset=asset,
            operation=Operation(
                inputs={"older_than": policy.older_than, "dry_run": policy.dry_run},
                disabled=_disabled(table, "orphan_cleanup", policy.enabled),
                execute=lambda t: _outcome(
                    t.maintenance.remove_orphan_files(older_than=_timedelta(policy.older_than), dry_run=policy.dry_run)
                ),
            ),
        )

    return orphan_cleanup


def build_tags(table: TableConfig) -> dg.AssetsDefinition | TableOperation | None:
    policy = table.maintenance.tags
    if policy.name_format is None:
        return None  # the policy asks for no tags
    asset = _asset(
        table,
        "tags",
        f"Tags the latest snapshot '{policy.name_format}' (UTC run time), "
        f"keeping the newest {policy.num_retained or 'all'}",
    )

    @asset.define()
    def tags(context: dg.AssetExecutionContext, config: TagsConfig, lake: LakeCatalogResource) -> dg.MaterializeResult:
        return run_maintenance(
            context,
            lake,
            asset=asset,
            operation=Operation(
                inputs={
                    "name_format": policy.name_format,
                    "num_retained": policy.num_retained,
                    "time_retained": policy.time_retained,
                    "dry_run": config.dry_run,
                },
                execute=lambda t: _outcome(
                    t.maintenance.tag_snapshot(
                        name_format=policy.name_format,
                        num_retained=policy.num_retained,
                        time_retained=_timedelta(policy.time_retained) if policy.time_retained else None,
                        dry_run=config.dry_run,
                    )
                ),
            ),
        )

    return tags


BUILDERS = {
    "manifest_compaction": build_manifest_compaction,
    "snapshot_expiry": build_snapshot_expiry,
    "partition_expiry": build_partition_expiry,
    "orphan_cleanup": build_orphan_cleanup,
    "tags": build_tags,
}
