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
- Each run appends one row to the maintenance ledger (what it did, skipped or failed and why),
  in the table's maintenance pool (one maintainer per table; writers are not in it).
- Checks (blocking, so nothing downstream runs on a bad compaction): the table at the compaction's
  snapshot against the snapshot before it, by key: same rows, same key and row checksums, no
  deleted key back (records that had expired may go). For ``record_expiry``: no expired record
  survives and no unexpired one was lost.
"""

import time
from typing import TYPE_CHECKING, Any

import dagster as dg
from pydantic import Field

from orchestration.config import TableConfig
from orchestration.defs import ledger
from orchestration.defs.naming import maintenance_asset_key, maintenance_pool, table_asset_key, table_group
from orchestration.defs.resources import LakeCatalogResource, SparkResource

if TYPE_CHECKING:
    from lake_core import FileStoreTable

COMPACTION, RECORD_EXPIRY = "compaction", "record_expiry"
CHECKS = {COMPACTION: "content_unchanged", RECORD_EXPIRY: "only_expired_records_dropped"}
_BYTES = ("bytes_read", "bytes_written")
REASON_TAG = "lake/reason"  # why a run was requested: the health sensor's run tag


class CompactionConfig(dg.Config):
    full: bool = Field(False, description="compact every selected bucket to the top level")
    partitions: list[str] | None = Field(
        None, description="partitions to compact, as 'dt=2024-01-01' (or 'dt=2024-01-01/hr=3'); default: all")
    expire_records: bool = Field(False, description="rewrite only the buckets holding expired records (record TTL)")


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
    return (f"no record TTL for {table.name}: set maintenance.record_expiry.field and .retention in tables.yaml "
            "(or the table options 'record-level.time-field' and 'record-level.expire-time')")


def result_metadata(result, lake_table: "FileStoreTable", source: dict[str, str]) -> dict[str, Any]:
    """The typed CompactionResult as metadata: numbers stay numbers (plotted by Dagster), the
    snapshot it committed is linked, and each policy-driven option says where it came from."""
    meta: dict[str, Any] = {k: v for k, v in result.as_metadata().items() if v is not None and k != "skipped"}
    for key in _BYTES:
        meta[key] = dg.MetadataValue.int(meta[key])
    if result.skipped:
        meta["skipped_units"] = dg.MetadataValue.md("\n".join(f"- {reason}" for reason in result.skipped))
    if result.snapshot_id is not None:
        meta["snapshot"] = dg.MetadataValue.path(lake_table.paths.snapshot(result.snapshot_id))
    for key, where in source.items():
        meta[f"options.{key}"] = f"{result.options.get(key)} (from {where})"
    return meta


def verification_check(lake_table: "FileStoreTable", operation: str, *, before_snapshot_id: int,
                       after_snapshot_id: int, expiry_field: str | None,
                       expiry_cutoff_s: int | None) -> tuple[dg.AssetCheckResult, Any]:
    """lake_core's ``verify_compaction`` between two snapshots as a blocking check result (and the
    verification itself)."""
    v = lake_table.maintenance.verify_compaction(
        before_snapshot_id=before_snapshot_id, after_snapshot_id=after_snapshot_id, expiry_field=expiry_field,
        expiry_cutoff_s=expiry_cutoff_s, expired_must_be_gone=operation == RECORD_EXPIRY)
    meta = {k: val for k, val in v.as_metadata().items() if val is not None}
    if v.passed:
        what = ("no expired record survives, no unexpired one was lost" if operation == RECORD_EXPIRY
                else "rows, key and row checksums unchanged, no deleted key came back")
        description = f"snapshot {after_snapshot_id} against {before_snapshot_id}: {what}"
        if v.expired_dropped:
            description += f" ({v.expired_dropped} expired record(s) dropped)"
    else:
        description = (f"{operation} of {lake_table.identifier} changed the table's content between snapshot "
                       f"{before_snapshot_id} and {after_snapshot_id}:\n" + "\n".join(v.problems))
    return dg.AssetCheckResult(check_name=CHECKS[operation], passed=v.passed, severity=dg.AssetCheckSeverity.ERROR,
                               metadata=meta, description=description), v


def _skipped(context: dg.AssetExecutionContext, operation: str, reason: str) -> tuple[dg.MaterializeResult, dict]:
    context.log.info(f"{operation} skipped: {reason}")
    return dg.MaterializeResult(
        metadata={"skipped": reason, "units_run": 0},
        check_results=[dg.AssetCheckResult(check_name=CHECKS[operation], passed=True,
                                           description=f"nothing compacted: {reason}")]), {"skipped": reason}


def run_compaction(context: dg.AssetExecutionContext, table: TableConfig, operation: str, lake: LakeCatalogResource,
                   spark: SparkResource, *, full: bool = False, partitions: list[str] | None = None,
                   expire_records: bool = False) -> dg.MaterializeResult:
    """Both assets' body: the compaction, then one row in the maintenance ledger (also when the run
    skipped or failed)."""
    started = time.monotonic()
    inputs = {"full": full, "partitions": ", ".join(partitions) if partitions else None,
              "expire_records": expire_records}
    entry = dict(table=table.name, operation=operation, run_id=context.run.run_id, inputs=inputs,
                 reason=context.run.tags.get(REASON_TAG) or "requested without a reason (UI, schedule or backfill)")
    try:
        materialization, outcome = _compact(context, table, operation, lake, spark, full=full, partitions=partitions,
                                            expire_records=expire_records)
    except Exception as e:
        try:
            ledger.record(lake, **entry, error=f"{type(e).__name__}: {e}", duration_s=time.monotonic() - started)
        except Exception as ledger_error:  # noqa: BLE001 - the run's own error is the one to raise
            context.log.warning(f"could not record the failed run in the maintenance ledger: {ledger_error}")
        raise
    ledger.record(lake, **entry, duration_s=time.monotonic() - started, **outcome)
    return materialization


def _compact(context: dg.AssetExecutionContext, table: TableConfig, operation: str, lake: LakeCatalogResource,
             spark: SparkResource, *, full: bool, partitions: list[str] | None,
             expire_records: bool) -> tuple[dg.MaterializeResult, dict]:
    """Policy → dynamic options, the Spark job, metadata and the blocking check; and the ledger's
    fields of the outcome."""
    from jobs.compact import compact_on_spark, parse_partitions

    lake.check_access()  # before Spark starts: a bad bucket or key fails in one line
    catalog = lake.catalog()
    if not catalog.table_exists(table.name):
        return _skipped(context, operation, f"{table.name} does not exist yet")
    lake_table = catalog.get_table(table.name)
    specs = parse_partitions(lake_table, partitions)  # a bad spec fails here, before Spark starts
    options, source = policy_options(table, operation)
    if expire_records or operation == RECORD_EXPIRY:
        reason = expiry_skip_reason(table, lake_table, options)
        if reason is not None:
            return _skipped(context, operation, reason)
    context.log.info(f"{operation} of {table.name}: full={full}, expire_records={expire_records}, "
                     f"partitions={partitions or 'all'}, options={options or 'the table own'}")
    with spark.session() as session:
        result = compact_on_spark(session, lake.warehouse, table.name, full=full, partitions=specs,
                                  expire_records=expire_records, options=options,
                                  storage_options=lake.storage_options())
    for reason in result.skipped:
        context.log.warning(f"{operation} of {table.name}: {reason}")
    context.log.info(f"{operation} of {table.name}: {result.units_run}/{result.units_planned} unit(s), "
                     f"{result.files_read} → {result.files_written} files, {result.rows_expired} expired, "
                     f"snapshot {result.snapshot_id}")
    lake_table = catalog.get_table(table.name)
    meta = result_metadata(result, lake_table, source)
    outputs = {k: v for k, v in result.as_metadata().items() if k not in ("operation", "table", "dry_run", "duration_s")}
    outcome: dict[str, Any] = dict(snapshot_id=result.snapshot_id, dry_run=result.dry_run)
    if result.snapshot_id is None:
        reason = "nothing to compact" if not result.units_planned else "every unit was skipped"
        check = dg.AssetCheckResult(check_name=CHECKS[operation], passed=True,
                                    description=f"no snapshot committed ({reason}): the table is unchanged")
        outcome["skipped"] = reason
    else:
        # The snapshot right before the COMPACT one: writes that landed while the job ran are in
        # both, so the comparison isolates what the compaction did.
        check, _ = verification_check(lake_table, operation, before_snapshot_id=result.snapshot_id - 1,
                                      after_snapshot_id=result.snapshot_id, expiry_field=result.expiry_field,
                                      expiry_cutoff_s=result.expiry_cutoff_s)
        if not check.passed:
            outcome["error"] = f"blocking check {CHECKS[operation]} failed: {check.description}"
    outputs[f"check.{CHECKS[operation]}"] = check.passed
    return dg.MaterializeResult(metadata=meta, check_results=[check]), {**outcome, "outputs": outputs}


def _asset(table: TableConfig, operation: str, description: str, check_description: str):
    key = maintenance_asset_key(table.name, operation)
    return dg.asset(
        key=key,
        group_name=table_group(table.name),
        kinds={"spark", "paimon"},
        pool=maintenance_pool(table.name),
        deps=[table_asset_key(table.name)],
        check_specs=[dg.AssetCheckSpec(CHECKS[operation], asset=key, blocking=True, description=check_description)],
        description=description,
        metadata={"table": table.name},
    )


def build_compaction_asset(table: TableConfig) -> dg.AssetsDefinition | None:
    """The table's ``compaction`` asset; None for an append table or when the policy disables it."""
    if not table.primary_keys or not table.maintenance.compaction.enabled:
        return None

    @_asset(table, COMPACTION,
            f"Dedicated compaction of {table.name} on Spark (one task per (partition, bucket) unit, one COMPACT "
            "commit); config: full, partitions, expire_records.",
            "the table at the COMPACT snapshot against the snapshot before it: rows, key and row checksums "
            "unchanged, no deleted key back (expired records may go)")
    def compaction(context: dg.AssetExecutionContext, config: CompactionConfig, lake: LakeCatalogResource,
                   spark: SparkResource) -> dg.MaterializeResult:
        return run_compaction(context, table, COMPACTION, lake, spark, full=config.full,
                              partitions=config.partitions, expire_records=config.expire_records)

    return compaction


def build_record_expiry_asset(table: TableConfig) -> dg.AssetsDefinition | None:
    """The table's ``record_expiry`` asset (targeted TTL compaction); None for an append table."""
    if not table.primary_keys:
        return None
    expiry = table.maintenance.record_expiry
    ttl = f"{expiry.field} older than {expiry.retention}" if expiry.field else "the table's record-level options"

    @_asset(table, RECORD_EXPIRY,
            f"Record expiry of {table.name} on Spark: rewrites exactly the buckets holding records with {ttl}.",
            "no record older than the cutoff survives and no younger one was lost, against the snapshot before")
    def record_expiry(context: dg.AssetExecutionContext, lake: LakeCatalogResource,
                      spark: SparkResource) -> dg.MaterializeResult:
        return run_compaction(context, table, RECORD_EXPIRY, lake, spark, expire_records=True)

    return record_expiry
