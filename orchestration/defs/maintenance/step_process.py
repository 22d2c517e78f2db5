"""Maintenance assets that run in the Dagster step process (no Spark): manifest compaction,
snapshot (and changelog) expiry, partition expiry, orphan cleanup and scheduled tags.

Every asset, per configured table:
- depends on the table's asset, sits in the table's group and in the table's maintenance pool
  (:func:`~orchestration.defs.naming.maintenance_pool`: one maintainer per table at a time; writers
  are not in it);
- takes its arguments from the table's ``maintenance:`` policy, which a run's config may override
  field by field (validated by the same policy model, so an error names the table and the field);
- calls one ``table.maintenance`` operation of lake_core and records its typed result as
  materialization metadata (numbers as numeric metadata, the snapshot it committed as a link);
- skips, with the reason in its metadata, its log and the ledger, when the policy disables it or
  the operation found nothing to do;
- appends one row to the maintenance ledger (:mod:`orchestration.defs.ledger`), also when it
  skips or fails.

No ``from __future__ import annotations`` here: Dagster reads the config classes from the asset
functions' annotations at definition time.
"""
import datetime as _dt
from typing import Any, Callable, Literal, Optional, Sequence

import dagster as dg
from pydantic import BaseModel, Field, ValidationError

from lake_core import FileStoreTable, LakeError, OperationResult
from orchestration.config import TableConfig, duration_seconds
from orchestration.defs import ledger
from orchestration.defs.naming import (
    REASON_TAG, maintenance_asset_key, maintenance_pool, table_asset_key, table_group,
)
from orchestration.defs.resources import LakeCatalogResource

_MAX_TEXT = 2000  # longer metadata text (file lists) is cut: the ledger and lake_core hold the rest


class MaintenanceConfigError(LakeError, ValueError):
    """A maintenance run's config is invalid; the message names the table, the asset and the field."""


# -- run config: every field None means "the table's policy" ------------------------------------------
class ManifestCompactionConfig(dg.Config):
    mode: Literal["minor", "full"] = Field("full", description="full: fold every manifest; minor: merge runs of small ones")
    dry_run: bool = False


class SnapshotExpiryConfig(dg.Config):
    retain_min: Optional[int] = Field(None, description="default: the policy's snapshot_expiry.retain_min")
    retain_max: Optional[int] = None
    time_retained: Optional[str] = Field(None, description="a duration such as '1 h'; default: the policy's")
    max_deletes: Optional[int] = Field(None, description="at most this many snapshots per run (snapshot.expire.limit)")
    dry_run: bool = False


class PartitionExpiryConfig(dg.Config):
    expiration_time: Optional[str] = Field(None, description="a duration such as '30 d'; default: the policy's")
    dry_run: bool = False


class OrphanCleanupConfig(dg.Config):
    older_than: Optional[str] = Field(None, description="only files older than this (at least 1 h); default: the policy's")
    dry_run: Optional[bool] = Field(None, description="default: the policy's orphan_cleanup.dry_run (true unless set false)")


class TagsConfig(dg.Config):
    dry_run: bool = False


def effective_policy(table: TableConfig, operation: str, policy: BaseModel, **overrides: Any) -> Any:
    """``policy`` with the run's non-None ``overrides``, validated by the policy's own model."""
    updates = {k: v for k, v in overrides.items() if v is not None}
    try:
        return type(policy).model_validate({**policy.model_dump(), **updates})
    except ValidationError as e:
        problems = "; ".join(f"field {'.'.join(map(str, err['loc'])) or '?'!r}: {err['msg'].removeprefix('Value error, ')}"
                             for err in e.errors())
        raise MaintenanceConfigError(f"table {table.name!r}: {operation} run config: {problems}") from None


def _timedelta(text: str) -> _dt.timedelta:
    return _dt.timedelta(seconds=duration_seconds(text))


# -- shared execution ------------------------------------------------------------------------------------
def run_reason(context: dg.AssetExecutionContext) -> str:
    """Why this run happened: the requester's ``lake/reason`` tag, else who launched it."""
    tags = context.run.tags
    if tags.get(REASON_TAG):
        return tags[REASON_TAG]
    for tag, who in (("dagster/schedule_name", "schedule"), ("dagster/sensor_name", "sensor"),
                     ("dagster/backfill", "backfill")):
        if tags.get(tag):
            return f"{who} {tags[tag]}"
    return "launched by hand"


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


Execute = Callable[[FileStoreTable], Sequence[OperationResult]]


def run_maintenance(
    context: dg.AssetExecutionContext, lake: LakeCatalogResource, table: TableConfig, operation: str, *,
    inputs: dict[str, Any], disabled: str | None, execute: Execute,
) -> dg.MaterializeResult:
    """Run ``execute`` on the table (unless ``disabled`` says why not), log, record metadata and
    one ledger row. ``execute`` returns the operation's result(s), the first being the main one."""
    reason = run_reason(context)
    base = {"table": table.name, "reason": reason, "inputs": dg.MetadataValue.json(inputs)}
    entry = {"table": table.name, "operation": operation, "run_id": context.run.run_id, "reason": reason,
             "inputs": inputs}
    lake.check_access()

    def skip(why: str) -> dg.MaterializeResult:
        context.log.info(f"{operation} on {table.name} skipped: {why} (requested: {reason})")
        ledger.record(lake, **entry, skipped=why, dry_run=bool(inputs.get("dry_run")))
        return dg.MaterializeResult(metadata={**base, "skipped": why})

    if disabled is not None:
        return skip(disabled)
    catalog = lake.catalog()
    if not catalog.table_exists(table.name):
        return skip(f"table {table.name} does not exist yet; materialize {table.name} first")
    try:
        lake_table = catalog.get_table(table.name)
        results = list(execute(lake_table))
    except Exception as e:
        ledger.record(lake, **entry, error=f"{type(e).__name__}: {e}", dry_run=bool(inputs.get("dry_run")))
        raise
    main = results[0]
    outputs: dict[str, Any] = {}  # every result's fields; the parts' prefixed with their operation
    for r in results:
        prefix = "" if r is main else f"{r.operation}."
        outputs.update({prefix + k: v for k, v in r.as_metadata().items() if k not in ("table", "operation")})
    skipped = _skip_reason(results)
    metadata = {**base, **{k: metadata_value(v) for k, v in outputs.items() if v is not None}}
    reclaimed = None
    if any(hasattr(r, "bytes_reclaimed") for r in results):
        reclaimed = sum(getattr(r, "bytes_reclaimed", 0) for r in results)
        metadata["bytes_reclaimed"] = dg.MetadataValue.int(reclaimed)
    snapshot_id = ledger.committed_snapshot(main)
    if snapshot_id is not None:
        metadata["snapshot"] = dg.MetadataValue.path(lake_table.paths.snapshot(snapshot_id))
    if skipped is not None:
        metadata["skipped"] = skipped
        context.log.info(f"{operation} on {table.name} skipped: {skipped} (requested: {reason})")
    else:
        done = ", ".join(f"{k}={round(v, 3) if isinstance(v, float) else v}" for k, v in outputs.items()
                         if v not in (None, "") and not k.endswith("files"))
        context.log.info(f"{operation} on {table.name}{' (dry run)' if main.dry_run else ''}: {done} "
                         f"(requested: {reason})")
    ledger.record(lake, **entry, result=main, outputs=outputs, skipped=skipped, bytes_reclaimed=reclaimed,
                  duration_s=sum(r.duration_s for r in results))
    return dg.MaterializeResult(metadata=metadata)


def _asset_args(table: TableConfig, operation: str, description: str) -> dict[str, Any]:
    return dict(
        key=maintenance_asset_key(table.name, operation), deps=[table_asset_key(table.name)],
        group_name=table_group(table.name), pool=maintenance_pool(table.name), kinds={"paimon"},
        description=f"{description} ({table.name}); runs in the step process, one maintainer per table.",
        metadata={"table": table.name, "operation": operation},
    )


def _disabled(table: TableConfig, section: str, enabled: bool) -> str | None:
    return None if enabled else f"policy maintenance.{section}.enabled is false for table {table.name}"


# -- the assets ------------------------------------------------------------------------------------------
def build_manifest_compaction(table: TableConfig) -> dg.AssetsDefinition:
    policy = table.maintenance.manifest_compaction

    @dg.asset(**_asset_args(table, "manifest_compaction", "Compacts the manifests of the latest snapshot"))
    def manifest_compaction(context: dg.AssetExecutionContext, config: ManifestCompactionConfig,
                            lake: LakeCatalogResource) -> dg.MaterializeResult:
        inputs = {"mode": config.mode, "dry_run": config.dry_run}
        return run_maintenance(
            context, lake, table, "manifest_compaction", inputs=inputs,
            disabled=_disabled(table, "manifest_compaction", policy.enabled),
            execute=lambda t: [t.maintenance.compact_manifest(mode=config.mode, dry_run=config.dry_run)])

    return manifest_compaction


def build_snapshot_expiry(table: TableConfig) -> dg.AssetsDefinition:
    @dg.asset(**_asset_args(table, "snapshot_expiry", "Expires old snapshots, then long-lived changelogs"))
    def snapshot_expiry(context: dg.AssetExecutionContext, config: SnapshotExpiryConfig,
                        lake: LakeCatalogResource) -> dg.MaterializeResult:
        policy = effective_policy(table, "snapshot_expiry", table.maintenance.snapshot_expiry,
                                  retain_min=config.retain_min, retain_max=config.retain_max,
                                  time_retained=config.time_retained)
        inputs = {"retain_min": policy.retain_min, "retain_max": policy.retain_max,
                  "time_retained": policy.time_retained, "max_deletes": config.max_deletes, "dry_run": config.dry_run}

        def execute(t: FileStoreTable) -> list[OperationResult]:
            snapshots = t.maintenance.expire_snapshots(
                retain_min=policy.retain_min, retain_max=policy.retain_max, older_than=_timedelta(policy.time_retained),
                max_deletes=config.max_deletes, dry_run=config.dry_run)
            # Changelogs kept longer than their snapshots (changelog.num-retained.*, changelog.time-retained)
            # expire by the table's own changelog options.
            return [snapshots, t.maintenance.expire_changelogs(dry_run=config.dry_run)]

        return run_maintenance(context, lake, table, "snapshot_expiry", inputs=inputs,
                               disabled=_disabled(table, "snapshot_expiry", policy.enabled), execute=execute)

    return snapshot_expiry


def build_partition_expiry(table: TableConfig) -> dg.AssetsDefinition | None:
    if not table.partition_keys:
        return None  # nothing to expire; the config refuses an expiration_time here anyway

    @dg.asset(**_asset_args(table, "partition_expiry", "Drops partitions older than the policy's expiration_time"))
    def partition_expiry(context: dg.AssetExecutionContext, config: PartitionExpiryConfig,
                         lake: LakeCatalogResource) -> dg.MaterializeResult:
        policy = effective_policy(table, "partition_expiry", table.maintenance.partition_expiry,
                                  expiration_time=config.expiration_time)
        inputs = {"expiration_time": policy.expiration_time, "timestamp_formatter": policy.timestamp_formatter,
                  "dry_run": config.dry_run}
        disabled = None if policy.expiration_time else (
            f"policy maintenance.partition_expiry.expiration_time is not set for table {table.name}")
        return run_maintenance(
            context, lake, table, "partition_expiry", inputs=inputs, disabled=disabled,
            execute=lambda t: [t.maintenance.expire_partitions(
                expiration_time=_timedelta(policy.expiration_time), timestamp_formatter=policy.timestamp_formatter,
                dry_run=config.dry_run)])

    return partition_expiry


def build_orphan_cleanup(table: TableConfig) -> dg.AssetsDefinition:
    @dg.asset(**_asset_args(table, "orphan_cleanup", "Removes files no snapshot, tag or changelog references "
                                                     "(a dry run unless the policy or the run says otherwise)"))
    def orphan_cleanup(context: dg.AssetExecutionContext, config: OrphanCleanupConfig,
                       lake: LakeCatalogResource) -> dg.MaterializeResult:
        policy = effective_policy(table, "orphan_cleanup", table.maintenance.orphan_cleanup,
                                  older_than=config.older_than, dry_run=config.dry_run)
        inputs = {"older_than": policy.older_than, "dry_run": policy.dry_run}
        return run_maintenance(
            context, lake, table, "orphan_cleanup", inputs=inputs,
            disabled=_disabled(table, "orphan_cleanup", policy.enabled),
            execute=lambda t: [t.maintenance.remove_orphan_files(older_than=_timedelta(policy.older_than),
                                                                 dry_run=policy.dry_run)])

    return orphan_cleanup


def build_tags(table: TableConfig) -> dg.AssetsDefinition | None:
    policy = table.maintenance.tags
    if policy.name_format is None:
        return None  # the policy asks for no tags

    @dg.asset(**_asset_args(table, "tags", f"Tags the latest snapshot '{policy.name_format}' (UTC run time), "
                                           f"keeping the newest {policy.num_retained or 'all'}"))
    def tags(context: dg.AssetExecutionContext, config: TagsConfig, lake: LakeCatalogResource) -> dg.MaterializeResult:
        inputs = {"name_format": policy.name_format, "num_retained": policy.num_retained,
                  "time_retained": policy.time_retained, "dry_run": config.dry_run}
        return run_maintenance(
            context, lake, table, "tags", inputs=inputs, disabled=None,
            execute=lambda t: [t.maintenance.tag_snapshot(
                name_format=policy.name_format, num_retained=policy.num_retained,
                time_retained=_timedelta(policy.time_retained) if policy.time_retained else None,
                dry_run=config.dry_run)])

    return tags


BUILDERS = {
    "manifest_compaction": build_manifest_compaction,
    "snapshot_expiry": build_snapshot_expiry,
    "partition_expiry": build_partition_expiry,
    "orphan_cleanup": build_orphan_cleanup,
    "tags": build_tags,
}
