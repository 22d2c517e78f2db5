"""The ``rescale`` asset of a table: a bucket rescale launched as a backfill over the partitions a
user picks, executed on Spark (:mod:`jobs.rescale`), verified by a blocking asset check.

- Partitioned by the table's own partitions: a ``DynamicPartitionsDefinition`` per table
  (``demo__orders__partitions``, keys like ``dt=2024-01-01``), kept in sync by a sensor that adds
  new partitions and removes dropped ones from the table's metadata (manifests only, no data).
- A run rescales exactly its partitions to ``maintenance.rescale.target_buckets``; it skips, with
  the reason in its metadata and log, when the target is not set or a partition is already there.
- ``maintenance.rescale.backfill``: ``single_run`` (``BackfillPolicy.single_run()``: one run, one
  Spark job and one commit per contiguous range of selected partitions) or ``per_partition``.
- The blocking check ``rescale_verified`` re-reads each rescaled partition before (at the snapshot
  the rescale read) and after (at the snapshot it committed): rows, key checksum and row checksum
  unchanged, every file at the target bucket count.
- An unpartitioned table gets the same asset without partitions: it rescales the whole table.
"""
from typing import TYPE_CHECKING, Any

import dagster as dg

from orchestration.config import TableConfig
from orchestration.defs import ledger
from orchestration.defs.naming import identifier, maintenance_asset_key, maintenance_pool, table_asset_key, table_group
from orchestration.defs.resources import LakeCatalogResource, SparkResource

if TYPE_CHECKING:
    from lake_core import FileStoreTable

OPERATION = "rescale"
CHECK_NAME = "rescale_verified"


def partitions_def_name(table_name: str) -> str:
    return f"{identifier(table_name)}__partitions"


def partitions_sensor_name(table_name: str) -> str:
    return f"{identifier(table_name)}__partitions_sensor"


def partition_key(named: tuple[tuple[str, Any], ...]) -> str:
    """((dt, 2024-01-01), (hr, 3)) → 'dt=2024-01-01/hr=3': the text lake_core's rescale results use."""
    return "/".join(f"{name}={value}" for name, value in named)


def table_partitions(table: "FileStoreTable") -> dict[str, dict[str, Any]]:
    """Partition key → {column: value} of every partition with live files (manifests only)."""
    plan = table.maintenance.plan_rescale(bucket=max(table.options.bucket, 1))
    named = [unit.partition for unit in plan.units] + list(plan.already_rescaled)
    return {partition_key(n): dict(n) for n in sorted(named, key=partition_key)}


def rescalable(table: TableConfig) -> bool:
    """Only fixed-bucket tables ('bucket' >= 1) can be rescaled; others grow buckets by themselves."""
    try:
        return int(table.options.get("bucket", "-1")) >= 1
    except ValueError:
        return False


def _result_metadata(result, table: "FileStoreTable", target: int) -> dict[str, Any]:
    """The typed result as metadata: numbers stay numbers (plotted by Dagster), plus a per-partition
    table and a link to the snapshot the rescale committed."""
    meta: dict[str, Any] = {k: v for k, v in result.as_metadata().items() if v is not None and k != "partitions.count"}
    for key in ("bytes_in", "bytes_out"):
        meta[key] = dg.MetadataValue.int(meta[key])
    meta["target_buckets"] = target
    rows = ["| partition | buckets | rows | files | snapshot | skipped |", "|---|---|---|---|---|---|"]
    for p in result.partitions:
        rows.append(f"| {p.partition or '(table)'} | {p.old_buckets} → {p.new_buckets} | {p.rows} | "
                    f"{p.files_in} → {p.files_out} | {p.snapshot_committed or ''} | {p.skipped or ''} |")
    meta["partitions"] = dg.MetadataValue.md("\n".join(rows))
    if result.snapshot_id is not None:
        meta["snapshot"] = dg.MetadataValue.path(table.paths.snapshot(result.snapshot_id))
    return meta


def _check_result(table: "FileStoreTable", result, target: int) -> dg.AssetCheckResult:
    """Before/after verification of every partition the run rewrote (none: passes, says why)."""
    rewritten = {p.partition: p.snapshot_read for p in result.partitions if p.skipped is None}
    if not rewritten or result.snapshot_id is None:
        return dg.AssetCheckResult(check_name=CHECK_NAME, passed=True, metadata={"partitions_verified": 0},
                                   description="nothing was rewritten, nothing to verify")
    verification = table.maintenance.verify_rescale(partitions=rewritten, snapshot_id=result.snapshot_id, bucket=target)
    return check_result_from(verification)


def check_result_from(verification) -> dg.AssetCheckResult:
    """A lake_core ``RescaleVerification`` as a blocking check result (ERROR when it failed)."""
    meta: dict[str, Any] = {"partitions_verified": len(verification.partitions),
                            "snapshot_after": verification.snapshot_after, "target_buckets": verification.bucket}
    for p in verification.partitions:
        meta[f"{p.partition or 'table'}.rows"] = f"{p.rows_before} → {p.rows_after}"
        meta[f"{p.partition or 'table'}.key_checksum"] = f"{p.key_checksum_before} → {p.key_checksum_after}"
        meta[f"{p.partition or 'table'}.buckets"] = ", ".join(map(str, p.buckets_after))
    if verification.passed:
        description = (f"{len(verification.partitions)} partition(s) verified at snapshot "
                       f"{verification.snapshot_after}: rows and checksums unchanged, {verification.bucket} buckets")
    else:
        description = "rescale verification failed:\n" + "\n".join(verification.problems)
    return dg.AssetCheckResult(check_name=CHECK_NAME, passed=verification.passed, severity=dg.AssetCheckSeverity.ERROR,
                               metadata=meta, description=description)


def run_reason(context: dg.AssetExecutionContext, keys: list[str]) -> str:
    """Why this run happened, from its tags: a backfill, a sensor's request, or a manual launch."""
    tags = context.run.tags
    what = f"{len(keys)} partition(s): {', '.join(keys)}" if keys != [""] else "the whole table"
    if "dagster/backfill" in tags:
        return f"backfill {tags['dagster/backfill']} over {what}"
    if "dagster/sensor_name" in tags:
        return f"requested by sensor {tags['dagster/sensor_name']} for {what}"
    return f"launched {'from the UI' if tags.get('dagster/from_ui') else 'manually'} for {what}"


def _skip(context: dg.AssetExecutionContext, lake: LakeCatalogResource, table: str, reason: str,
          inputs: dict[str, Any]) -> dg.MaterializeResult:
    context.log.info(f"rescale skipped: {reason}")
    ledger.record(lake, table=table, operation=OPERATION, run_id=context.run.run_id, skipped=reason,
                  reason=run_reason(context, inputs["partitions"]), inputs=inputs)
    return dg.MaterializeResult(
        metadata={"skipped": reason, "partitions_rescaled": 0},
        check_results=[dg.AssetCheckResult(check_name=CHECK_NAME, passed=True, description=f"nothing rescaled: {reason}")],
    )


def build_rescale_asset(table: TableConfig) -> dg.AssetsDefinition | None:
    """The table's ``rescale`` asset, or None for a table that is not fixed-bucket."""
    if not rescalable(table):
        return None
    key = maintenance_asset_key(table.name, OPERATION)
    partitioned = bool(table.partition_keys)
    policy = table.maintenance.rescale
    backfill = dg.BackfillPolicy.single_run() if policy.backfill == "single_run" else dg.BackfillPolicy.multi_run(1)

    @dg.asset(
        key=key,
        group_name=table_group(table.name),
        kinds={"spark", "paimon"},
        pool=maintenance_pool(table.name),
        deps=[table_asset_key(table.name)],
        partitions_def=dg.DynamicPartitionsDefinition(name=partitions_def_name(table.name)) if partitioned else None,
        backfill_policy=backfill if partitioned else None,
        check_specs=[dg.AssetCheckSpec(
            CHECK_NAME, asset=key, blocking=True,
            description="rows, key checksum and row checksum of each rescaled partition unchanged between the "
                        "snapshot the rescale read and the one it committed; its files at the target bucket count")],
        description=(f"Rescale {table.name} to maintenance.rescale.target_buckets "
                     f"({policy.target_buckets or 'not set'}): " +
                     ("launch a backfill over the partitions to rewrite." if partitioned else "rewrites the table.")),
        metadata={"table": table.name, "target_buckets": str(policy.target_buckets), "backfill": policy.backfill},
    )
    def rescale(context: dg.AssetExecutionContext, lake: LakeCatalogResource, spark: SparkResource) -> dg.MaterializeResult:
        keys = list(context.partition_keys) if partitioned else [""]
        target = table.maintenance.rescale.target_buckets
        inputs = {"partitions": keys, "target_buckets": target}
        lake.check_access()  # before Spark starts: a bad bucket or key fails in one line
        if target is None:
            return _skip(context, lake, table.name,
                         f"maintenance.rescale.target_buckets of {table.name} is not set in tables.yaml", inputs)
        try:
            return _rescale(context, lake, spark, keys, target, inputs)
        except Exception as e:
            ledger.record(lake, table=table.name, operation=OPERATION, run_id=context.run.run_id,
                          reason=run_reason(context, keys), inputs=inputs, error=f"{type(e).__name__}: {e}")
            raise

    def _rescale(context, lake, spark, keys: list[str], target: int, inputs: dict[str, Any]) -> dg.MaterializeResult:
        from jobs.rescale import rescale_partitions

        catalog = lake.catalog()
        if not catalog.table_exists(table.name):
            return _skip(context, lake, table.name, f"{table.name} does not exist yet", inputs)
        lake_table = catalog.get_table(table.name)
        current = table_partitions(lake_table) if partitioned else {"": {}}
        gone = [k for k in keys if k not in current]
        if gone:
            context.log.info(f"partitions no longer in {table.name} (skipped): {', '.join(gone)}")
        specs = [current[k] for k in keys if k in current]
        if not specs:
            return _skip(context, lake, table.name,
                         f"none of the selected partitions exists in {table.name}: {', '.join(keys)}", inputs)
        context.log.info(f"rescale {table.name} to {target} buckets: {len(specs)} partition(s): {', '.join(keys)}")
        job = dict(bucket=target, partitions=specs, commit_user=f"rescale:{context.run.run_id}",
                   storage_options=lake.storage_options())
        if lake_table.maintenance.plan_rescale(bucket=target, partitions=specs).units:
            with spark.session() as session:
                result = rescale_partitions(session, lake.warehouse, table.name, **job)
        else:  # every selected partition is already at the target: metadata only, no Spark
            result = rescale_partitions(None, lake.warehouse, table.name, **job)
        for p in result.partitions:
            context.log.info(f"{p.partition or table.name}: " + (f"skipped, {p.skipped}" if p.skipped else
                             f"{p.old_buckets} → {p.new_buckets} buckets, {p.rows} rows, snapshot {p.snapshot_committed}"))
        lake_table = catalog.get_table(table.name)
        meta = _result_metadata(result, lake_table, target)
        if gone:
            meta["partitions_gone"] = ", ".join(gone)
        check = _check_result(lake_table, result, target)
        skipped = None if result.partitions_rescaled else "; ".join(
            sorted({f"{p.skipped}" for p in result.partitions if p.skipped})) or "nothing to rewrite"
        ledger.record(lake, table=table.name, operation=OPERATION, run_id=context.run.run_id, result=result,
                      reason=run_reason(context, keys), inputs=inputs, skipped=skipped,
                      error=None if check.passed else f"rescale_verified failed: {check.description}")
        return dg.MaterializeResult(metadata=meta, check_results=[check])

    return rescale


def build_partitions_sensor(table: TableConfig) -> dg.SensorDefinition | None:
    """Keeps the rescale asset's partitions equal to the table's partitions (manifests only)."""
    if not (rescalable(table) and table.partition_keys):
        return None
    partitions = dg.DynamicPartitionsDefinition(name=partitions_def_name(table.name))

    @dg.sensor(
        name=partitions_sensor_name(table.name),
        minimum_interval_seconds=table.sensor.minimum_interval_seconds,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description=f"Adds new partitions of {table.name} to its rescale asset and removes dropped ones.",
    )
    def sync_partitions(context: dg.SensorEvaluationContext, lake: LakeCatalogResource):
        catalog = lake.catalog()
        if not catalog.table_exists(table.name):
            return dg.SkipReason(f"{table.name} does not exist yet")
        current = list(table_partitions(catalog.get_table(table.name)))
        known = set(context.instance.get_dynamic_partitions(partitions.name))
        added = [k for k in current if k not in known]
        removed = sorted(known - set(current))
        if not added and not removed:
            return dg.SkipReason(f"{table.name}: {len(current)} partition(s), already in sync")
        context.log.info(f"{table.name}: {len(added)} partition(s) added ({', '.join(added[:10])}), "
                         f"{len(removed)} removed ({', '.join(removed[:10])})")
        requests = ([partitions.build_add_request(added)] if added else []) + \
                   ([partitions.build_delete_request(removed)] if removed else [])
        return dg.SensorResult(dynamic_partitions_requests=requests)

    return sync_partitions
