"""The ``compaction`` and ``record_expiry`` assets of a primary-key table: a dedicated compaction
(:mod:`jobs.compact`: the driver plans, one Spark task per unit, one COMPACT commit) verified by a
blocking asset check.

- ``compaction`` (config ``full``, ``partitions``, ``expire_records``): the universal picker per
  bucket, or every selected bucket to the top level with ``full``. ``maintenance.compaction.
  max_sorted_runs``, when set in ``tables.yaml``, is this job's ``num-sorted-run.compaction-trigger``
  (a bucket with more sorted runs is compacted), so the policy and the job agree.
- ``record_expiry``: a targeted TTL compaction (``expire_records``) rewriting exactly the buckets
  whose statistics show expired records. ``maintenance.record_expiry.field``/``retention`` become
  this job's ``record-level.time-field``/``record-level.expire-time`` (Paimon's record-level TTL),
  given to the job as dynamic options, so the table's schema is not changed; without them the
  table's own options apply, and with neither the run is skipped with the reason.
- Each run is one maintenance run (:mod:`.run`): one row in the maintenance ledger (what it did,
  skipped or failed and why), in the table's maintenance pool (one maintainer per table; writers
  are not in it).
- Checks (blocking, so nothing downstream runs on a bad compaction): by default they compare the
  figures the Spark tasks computed where the data is (the job runs with ``verify=True``; lake_core's
  ``result.check()``): per unit (partition, bucket), rows and checksum of its input merged by key
  minus the rows dropped by design (expired records) against its written files read back in the
  task; the check reads no table file. For ``record_expiry`` also: every unit applied the TTL and wrote no expired record. Config
  ``deep_check`` instead re-reads the table at the compaction's snapshot and the one before it and
  compares them by key (``verify_compaction``: 1.6-3x the compaction's own cost).
"""

import json
from typing import TYPE_CHECKING, Any

import dagster as dg
from pydantic import Field

from jobs.compact import parse_partitions, run_compaction
from orchestration.config import TableConfig
from orchestration.defs.ledger import expired_run_check, run_to_verify
from orchestration.defs.maintenance.asset import BlockingCheck, MaintenanceAsset, TableOperation
from orchestration.defs.maintenance.run import Operation, Outcome, Skip, result_outputs, run_maintenance
from orchestration.defs.resources import LakeCatalogResource, SparkResource

if TYPE_CHECKING:
    from lake_core import CompactionCheck, CompactionResult, FileStoreTable

COMPACTION, RECORD_EXPIRY = "compaction", "record_expiry"
CHECKS = {
    COMPACTION: BlockingCheck(
        name="content_unchanged",
        nothing_done="nothing compacted",
        description="per unit (partition, bucket), from its task's figures: rows and checksum of its input merged "
        "by key, minus what it dropped by design (expired records), equal those of its files read back; "
        "executed alone: the last compaction's snapshot re-read against the one before it",
        alone=lambda lake, table: check_last_run(lake, table, COMPACTION),
    ),
    RECORD_EXPIRY: BlockingCheck(
        name="only_expired_records_dropped",
        nothing_done="nothing compacted",
        description="per unit, from its task's figures: rows read minus the expired ones equal the rows written "
        "(checksums too); every unit applied the TTL and wrote no expired record; executed alone: the last "
        "record expiry's snapshot re-read against the one before it",
        alone=lambda lake, table: check_last_run(lake, table, RECORD_EXPIRY),
    ),
}
_BYTES = ("bytes_read", "bytes_written")
_MAX_BUCKET_ROWS = 50  # rows of the check's per-bucket table (the totals cover all)


class CompactionConfig(dg.Config):
    full: bool = Field(False, description="compact every selected bucket to the top level")
    partitions: list[str] | None = Field(
        None, description="partitions to compact, as 'dt=2024-01-01' (or 'dt=2024-01-01/hr=3'); default: all"
    )
    expire_records: bool = Field(False, description="rewrite only the buckets holding expired records (record TTL)")
    deep_check: bool = Field(
        False,
        description="the blocking check re-reads the table before and after and compares by key (costs more than "
        "the compaction), instead of comparing the figures the tasks computed",
    )


def policy_options(table: TableConfig, operation: str) -> tuple[dict[str, str], dict[str, str]]:
    """The dynamic options the policy gives the job, and where each came from (for the UI)."""
    options: dict[str, str] = {}
    source: dict[str, str] = {}
    compaction = table.maintenance.compaction
    if operation == COMPACTION and "max_sorted_runs" in compaction.model_fields_set:
        options["num-sorted-run.compaction-trigger"] = str(compaction.max_sorted_runs)
        source["num-sorted-run.compaction-trigger"] = "maintenance.compaction.max_sorted_runs"
    expiry = table.maintenance.record_expiry
    if expiry.field is not None and expiry.retention is not None:
        options["record-level.time-field"] = expiry.field
        options["record-level.expire-time"] = expiry.retention
        source["record-level.time-field"] = "maintenance.record_expiry.field"
        source["record-level.expire-time"] = "maintenance.record_expiry.retention"
    return options, source


def expiry_skip_reason(table: TableConfig, lake_table: "FileStoreTable", options: dict[str, str]) -> str | None:
    """Why a record expiry cannot run (None: it can)."""
    if "record-level.expire-time" in options or lake_table.options.get("record-level.expire-time"):
        return None
    return (
        f"no record TTL for {table.name}: set maintenance.record_expiry.field and .retention in tables.yaml "
        "(or the table options 'record-level.time-field' and 'record-level.expire-time')"
    )


def empty_plan_reason(plan: Any, operation: str) -> str:
    """Why a plan has no unit, from the plan itself: what was looked at and what was not found."""
    expiry = operation == RECORD_EXPIRY or plan.expire_records
    nothing = "nothing to expire" if expiry else "nothing to compact"
    if plan.snapshot_id is None:
        return f"{nothing}: the table has no snapshot yet; Spark was not started"
    looked = f"{len(plan.buckets)} selected bucket(s) at snapshot {plan.snapshot_id}"
    if expiry:
        why = "none holds records past the TTL"
    elif plan.full:
        why = "each is already one file at the top level"
    else:
        trigger = dict(plan.options).get("num-sorted-run.compaction-trigger")
        why = "none needs compaction" + (f" (num-sorted-run.compaction-trigger {trigger})" if trigger else "")
    return f"{nothing}: {why} among the {looked}; Spark was not started"


def result_metadata(result, source: dict[str, str]) -> dict[str, Any]:
    """The typed CompactionResult as metadata: numbers stay numbers (plotted by Dagster), and each
    policy-driven option says where it came from."""
    meta: dict[str, Any] = {k: v for k, v in result.as_metadata().items() if v is not None and k != "skipped"}
    for key in _BYTES:
        meta[key] = dg.MetadataValue.int(meta[key])
    if result.skipped:
        meta["skipped_units"] = dg.MetadataValue.md("\n".join(f"- {reason}" for reason in result.skipped))
    for key, where in source.items():
        meta[f"options.{key}"] = f"{result.options.get(key)} (from {where})"
    return meta


def verification_check(
    lake_table: "FileStoreTable",
    operation: str,
    *,
    before_snapshot_id: int,
    after_snapshot_id: int,
    expiry_field: str | None,
    expiry_cutoff_s: int | None,
) -> tuple[dg.AssetCheckResult, Any]:
    """lake_core's ``verify_compaction`` between two snapshots as a blocking check result (and the
    verification itself)."""
    v = lake_table.maintenance.verify_compaction(
        before_snapshot_id=before_snapshot_id,
        after_snapshot_id=after_snapshot_id,
        expiry_field=expiry_field,
        expiry_cutoff_s=expiry_cutoff_s,
        expired_must_be_gone=operation == RECORD_EXPIRY,
    )
    meta = {k: val for k, val in v.as_metadata().items() if val is not None}
    meta["check"] = "deep"
    if v.passed:
        what = (
            "no expired record survives, no unexpired one was lost"
            if operation == RECORD_EXPIRY
            else "rows, key and row checksums unchanged, no deleted key came back"
        )
        description = f"snapshot {after_snapshot_id} against {before_snapshot_id}: {what}"
        if v.expired_dropped:
            description += f" ({v.expired_dropped} expired record(s) dropped)"
    else:
        description = (
            f"{operation} of {lake_table.identifier} changed the table's content between snapshot "
            f"{before_snapshot_id} and {after_snapshot_id}:\n" + "\n".join(v.problems)
        )
    return dg.AssetCheckResult(
        check_name=CHECKS[operation].name,
        passed=v.passed,
        severity=dg.AssetCheckSeverity.ERROR,
        metadata=meta,
        description=description,
    ), v


def check_last_run(lake: LakeCatalogResource, table: TableConfig, operation: str) -> dg.AssetCheckResult:
    """The blocking check executed on its own (a check-only run): the table's last ``operation``
    that committed a snapshot (from the maintenance ledger), re-read at that snapshot and the one
    before it (lake_core's ``verify_compaction``, the deep check); when one of them is expired,
    the result the run itself recorded, saying so."""
    name = CHECKS[operation].name
    found = run_to_verify(lake, table=table.name, operation=operation, check_name=name, count_key="runs_verified")
    if isinstance(found, dg.AssetCheckResult):
        return found
    lake_table, last = found
    after, run = int(last["snapshot_id"]), str(last["run_id"])
    expired = expired_run_check(lake_table, last, check_name=name, snapshots=(after - 1, after))
    if expired is not None:
        return expired
    outputs = json.loads(last["outputs"] or "{}")
    check, _ = verification_check(
        lake_table,
        operation,
        before_snapshot_id=after - 1,
        after_snapshot_id=after,
        expiry_field=outputs.get("expiry_field"),
        expiry_cutoff_s=outputs.get("expiry_cutoff_s"),
    )
    return dg.AssetCheckResult(
        check_name=name,
        passed=check.passed,
        severity=check.severity,
        metadata={**check.metadata, "run_id": run, "snapshot_id": after, "recorded_at": str(last["recorded_at"])},
        description=f"last {operation} (run {run[:8]}): {check.description}",
    )


def in_task_check(result: "CompactionResult", operation: str) -> tuple[dg.AssetCheckResult, "CompactionCheck"]:
    """The figures the compaction's tasks computed (lake_core's ``result.check()``) as a blocking
    check result (and the comparison itself); no table file is read."""
    v = result.check(expired_must_be_gone=operation == RECORD_EXPIRY)
    meta: dict[str, Any] = {k: val for k, val in v.as_metadata().items() if val is not None}
    meta["check"] = "in-task"
    rows = [
        "| partition | bucket | rows read | dropped | expected | written | checksum written |",
        "|---|---|---|---|---|---|---|",
    ]
    for b in v.buckets[:_MAX_BUCKET_ROWS]:
        f = b.figures
        rows.append(
            f"| {b.partition or '(table)'} | {b.bucket} | {f.read.rows} | {f.dropped.rows} | {f.expected.rows} | "
            f"{f.written.rows} | {f.written.digest} |"
        )
    if len(v.buckets) > _MAX_BUCKET_ROWS:
        rows.append(f"| ... {len(v.buckets) - _MAX_BUCKET_ROWS} more | | | | | | |")
    meta["buckets"] = dg.MetadataValue.md("\n".join(rows))
    if v.passed:
        description = (
            f"{v.buckets_verified} unit(s) of snapshot {v.after_snapshot_id}, figures computed in their tasks: "
            f"{v.rows_before} rows read - {v.rows_dropped} dropped = {v.rows_after} written and read back, "
            "checksums equal"
        )
        if v.expired_dropped:
            description += f" ({v.expired_dropped} expired record(s) dropped)"
    else:
        description = f"{operation} of {result.table} (snapshot {v.after_snapshot_id}) failed its in-task check:\n" + (
            "\n".join(v.problems)
        )
    return dg.AssetCheckResult(
        check_name=CHECKS[operation].name,
        passed=v.passed,
        severity=dg.AssetCheckSeverity.ERROR,
        metadata=meta,
        description=description,
    ), v


def _operation(
    asset: MaintenanceAsset,
    context: dg.AssetExecutionContext,
    lake: LakeCatalogResource,
    spark: SparkResource,
    *,
    full: bool = False,
    partitions: list[str] | None = None,
    expire_records: bool = False,
    deep_check: bool = False,
) -> Operation:
    """Both assets' operation: the compaction on Spark, checked by the figures its tasks computed
    (``deep_check``: against the snapshot before it, re-read)."""
    table, operation = asset.table, asset.operation

    def compact(lake_table: "FileStoreTable") -> Outcome | Skip:

        specs = parse_partitions(lake_table, partitions)  # a bad spec fails here, before Spark starts
        options, source = policy_options(table, operation)
        if expire_records or operation == RECORD_EXPIRY:
            reason = expiry_skip_reason(table, lake_table, options)
            if reason is not None:
                return Skip(why=reason)
        context.log.info(
            f"{operation} of {table.name}: full={full}, expire_records={expire_records}, "
            f"partitions={partitions or 'all'}, options={options or 'the table own'}"
        )
        # Planned here, from metadata only: Spark starts (or is attached to) only for a plan with units.
        # verify: the tasks compute the figures the blocking check compares (the deep check re-reads instead)
        job = lake_table.maintenance.compaction_job(
            full=full, partitions=specs, expire_records=expire_records, options=options, verify=not deep_check
        )
        if not job.units:
            result = run_compaction(None, job)  # commits nothing; the result still reports the plan
            empty = empty_plan_reason(job.plan, operation)
        else:
            with spark.session(warehouse=lake.warehouse) as session:
                result = run_compaction(session, job)
            empty = None
        for reason in result.skipped:
            context.log.warning(f"{operation} of {table.name}: {reason}")
        skipped = None
        if result.snapshot_id is None:
            skipped = empty or result.noop_reason() or "every unit was skipped"
            check = dg.AssetCheckResult(
                check_name=CHECKS[operation].name,
                passed=True,
                description=f"no snapshot committed ({skipped}): the table is unchanged",
            )
        elif not deep_check:
            check, _ = in_task_check(result, operation)
        else:
            # The snapshot right before the COMPACT one: writes that landed while the job ran are in
            # both, so the comparison isolates what the compaction did.
            check, _ = verification_check(
                lake.catalog().get_table(table.name),
                operation,
                before_snapshot_id=result.snapshot_id - 1,
                after_snapshot_id=result.snapshot_id,
                expiry_field=result.expiry_field,
                expiry_cutoff_s=result.expiry_cutoff_s,
            )
        return Outcome(
            summary=f"{result.units_run}/{result.units_planned} unit(s), {result.files_read} → "
            f"{result.files_written} files, {result.rows_expired} expired, snapshot {result.snapshot_id}",
            metadata=result_metadata(result, source),
            outputs=result_outputs(result),
            snapshot_id=result.snapshot_id,
            skipped=skipped,
            dry_run=result.dry_run,
            check=check,
        )

    return Operation(
        inputs={
            "full": full,
            "partitions": ", ".join(partitions) if partitions else None,
            "expire_records": expire_records,
            "deep_check": deep_check,
        },
        skipped_metadata={"units_run": 0},
        execute=compact,
    )


def _asset(table: TableConfig, operation: str, description: str) -> MaintenanceAsset:
    return MaintenanceAsset(
        table=table, operation=operation, description=description, on_spark=True, check=CHECKS[operation]
    )


def build_compaction_asset(table: TableConfig) -> dg.AssetsDefinition | TableOperation | None:
    """The table's ``compaction`` asset; None for an append table or when the policy disables it."""
    if not table.primary_keys or not table.maintenance.compaction.enabled:
        return None
    asset = _asset(
        table,
        COMPACTION,
        f"Dedicated compaction of {table.name} on Spark (one task per (partition, bucket) unit, one "
        "COMPACT commit); config: full, partitions, expire_records.",
    )

    @asset.define()
    def compaction(
        context: dg.AssetExecutionContext, config: CompactionConfig, lake: LakeCatalogResource, spark: SparkResource
    ) -> dg.MaterializeResult:
        return run_maintenance(
            context,
            lake,
            asset=asset,
            operation=_operation(
                asset,
                context,
                lake,
                spark,
                full=config.full,
                partitions=config.partitions,
                expire_records=config.expire_records,
                deep_check=config.deep_check,
            ),
        )

    return compaction


def build_record_expiry_asset(table: TableConfig) -> dg.AssetsDefinition | TableOperation | None:
    """The table's ``record_expiry`` asset (targeted TTL compaction); None for an append table."""
    if not table.primary_keys:
        return None
    expiry = table.maintenance.record_expiry
    ttl = f"{expiry.field} older than {expiry.retention}" if expiry.field else "the table's record-level options"
    asset = _asset(
        table,
        RECORD_EXPIRY,
        f"Record expiry of {table.name} on Spark: rewrites exactly the buckets holding records with {ttl}.",
    )

    @asset.define()
    def record_expiry(
        context: dg.AssetExecutionContext, lake: LakeCatalogResource, spark: SparkResource
    ) -> dg.MaterializeResult:
        return run_maintenance(
            context, lake, asset=asset, operation=_operation(asset, context, lake, spark, expire_records=True)
        )

    return record_expiry
