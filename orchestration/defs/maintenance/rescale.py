"""The ``rescale`` asset of a table: a bucket rescale launched as a backfill over the partitions a
user picks, executed on Spark (:mod:`jobs.rescale`), verified by a blocking asset check.

- Partitioned by the table's own partitions (:mod:`.partitions`, kept in sync by a sensor).
- A run rescales exactly its partitions to ``maintenance.rescale.target_buckets``; it skips, with
  the reason in its metadata and log, when the target is not set or a partition is already there.
- ``maintenance.rescale.backfill``: ``single_run`` (``BackfillPolicy.single_run()``: one run, one
  Spark job and one commit per contiguous range of selected partitions) or ``per_partition``.
- The blocking check ``rescale_verified`` compares, per rescaled partition, the figures its Spark
  task computed where the data is (lake_core's ``check_rescale``): rows and checksum of the
  partition as the task read it against its new files read back in the same task, at the target
  bucket count. It reads no table file; lake_core's ``verify_rescale`` (the deep check, re-reading
  the partition at both snapshots) stays available.
- An unpartitioned table gets the same asset without partitions: it rescales the whole table.
- Each run is one maintenance run (:mod:`.run`): one row in the maintenance ledger, whose reason
  names the partitions ("backfill kvlhhtcl for 2 partition(s): dt=2024-01-02, dt=2024-01-03").
- Each partition's materialization carries its own figures (:func:`partition_metadata`: rows,
  files, bytes, buckets before and after, duration, the snapshot committed, or why it was skipped
  and no snapshot); the run's totals are there too, as ``run.*``.
"""

import json
from typing import TYPE_CHECKING, Any

import dagster as dg

from jobs.rescale import rescale_partitions
from lake_core import check_rescale
from orchestration.config import TableConfig
from orchestration.defs.ledger import expired_run_check, run_to_verify
from orchestration.defs.maintenance.asset import BlockingCheck, MaintenanceAsset, TableOperation
from orchestration.defs.maintenance.partitions import partitions_def_name, rescalable, table_partitions
from orchestration.defs.maintenance.run import Operation, Outcome, Skip, result_outputs, run_maintenance
from orchestration.defs.resources import LakeCatalogResource, SparkResource

if TYPE_CHECKING:
    from lake_core import FileStoreTable, PartitionRescaleResult, RescaleResult

OPERATION = "rescale"
CHECK_NAME = "rescale_verified"
# the ledger's outputs: {partition: the snapshot its task read} of every partition a run rewrote
READ_KEY = "partitions_read"
VERIFIED = BlockingCheck(
    name=CHECK_NAME,
    nothing_done="nothing rescaled",
    description="per rescaled partition, from its task's figures: rows and checksum as read equal those of its "
    "new files read back, written at the target bucket count; executed alone: the last rescale's partitions "
    "re-read at its snapshot and at the one each was read from (nothing is rescaled)",
    alone=lambda lake, table: check_last_rescale(lake, table),
)


def check_last_rescale(lake: LakeCatalogResource, table: TableConfig) -> dg.AssetCheckResult:
    """``rescale_verified`` executed on its own: the table's last rescale that committed a snapshot
    (maintenance ledger), each partition it rewrote re-read at that snapshot and at the one its task
    read (lake_core's ``verify_rescale``, the deep check); when one of them is expired, what its run
    recorded. Nothing is rescaled."""
    found = run_to_verify(
        lake, table=table.name, operation=OPERATION, check_name=CHECK_NAME, count_key="partitions_verified"
    )
    if isinstance(found, dg.AssetCheckResult):
        return found
    lake_table, last = found
    after, run = int(last["snapshot_id"]), str(last["run_id"])
    inputs, outputs = json.loads(last["inputs"] or "{}"), json.loads(last["outputs"] or "{}")
    # A run over partitions apart commits once per contiguous range: each partition against the
    # snapshot its own task read (a row without them, from an older version: the one before the run's).
    read = outputs.get(READ_KEY) or {p: after - 1 for p in inputs.get("partitions") or [""]}
    expired = expired_run_check(lake_table, last, check_name=CHECK_NAME, snapshots={*read.values(), after})
    if expired is not None:
        return expired
    check = check_result_from(
        lake_table.maintenance.verify_rescale(partitions=read, snapshot_id=after, bucket=int(inputs["target_buckets"]))
    )
    return dg.AssetCheckResult(
        check_name=CHECK_NAME,
        passed=check.passed,
        severity=check.severity,
        metadata={**check.metadata, "run_id": run, "snapshot_id": after, "check": "deep"},
        description=f"last rescale (run {run[:8]}): {check.description}",
    )


def ledger_outputs(result: "RescaleResult") -> dict[str, Any]:
    """A rescale's figures for the ledger, with the snapshot each rewritten partition was read at
    (what ``rescale_verified`` executed alone compares it with)."""
    read = {
        p.partition: p.snapshot_read for p in result.partitions if p.skipped is None and p.snapshot_read is not None
    }
    return {**result_outputs(result), READ_KEY: read}


def _result_metadata(result, target: int, *, prefix: str = "") -> dict[str, Any]:
    """The typed result as metadata: numbers stay numbers (plotted by Dagster), plus a per-partition
    table. ``prefix``: ``run.`` in a partitioned asset's run, whose partitions have their own figures."""
    meta: dict[str, Any] = {k: v for k, v in result.as_metadata().items() if v is not None and k != "partitions.count"}
    for key in ("bytes_in", "bytes_out"):
        meta[key] = dg.MetadataValue.int(meta[key])
    rows = ["| partition | buckets | rows | files | snapshot | skipped |", "|---|---|---|---|---|---|"]
    for p in result.partitions:
        rows.append(
            f"| {p.partition or '(table)'} | {p.old_buckets} → {p.new_buckets} | {p.rows} | "
            f"{p.files_in} → {p.files_out} | {p.snapshot_committed or ''} | {p.skipped or ''} |"
        )
    meta["partitions"] = dg.MetadataValue.md("\n".join(rows))
    return {f"{prefix}{k}": v for k, v in meta.items()} | {"target_buckets": target}


def partition_metadata(p: "PartitionRescaleResult", lake_table: "FileStoreTable") -> dict[str, Any]:
    """One partition's own figures, for its materialization in a backfill run: what was done to
    it (or why it was skipped: no snapshot then), not the run's totals."""
    snapshot = p.snapshot_committed
    return {
        "partition": p.partition,
        "buckets_before": p.old_buckets,
        "buckets_after": p.old_buckets if p.skipped else p.new_buckets,
        "rows": p.rows,
        "files_in": p.files_in,
        "files_out": p.files_out,
        "bytes_in": dg.MetadataValue.int(p.bytes_in),
        "bytes_out": dg.MetadataValue.int(p.bytes_out),
        "duration_s": round(p.duration_s, 3),
        "snapshot_read": p.snapshot_read,
        "snapshot_id": snapshot,
        "snapshot": None if snapshot is None else dg.MetadataValue.path(lake_table.paths.snapshot(snapshot)),
        "skipped": p.skipped,
    }


def _gone_metadata(key: str, table: str) -> dict[str, Any]:
    """A selected partition no longer in the table (expired meanwhile): nothing done to it."""
    return {"partition": key, "rows": 0, "snapshot_id": None, "snapshot": None, "skipped": f"no longer in {table}"}


def _check_result(result, target: int) -> dg.AssetCheckResult:
    """The in-task figures of every partition the run rewrote, compared (none: passes, says why)."""
    rewritten = {p.partition: p.snapshot_read for p in result.partitions if p.skipped is None}
    if not rewritten or result.snapshot_id is None:
        return dg.AssetCheckResult(
            check_name=CHECK_NAME,
            passed=True,
            metadata={"partitions_verified": 0},
            description="nothing was rewritten, nothing to verify",
        )
    return check_result_from(check_rescale(result, bucket=target))


def check_result_from(verification) -> dg.AssetCheckResult:
    """A lake_core ``RescaleVerification`` as a blocking check result (ERROR when it failed)."""
    meta: dict[str, Any] = {
        "partitions_verified": len(verification.partitions),
        "snapshot_after": verification.snapshot_after,
        "target_buckets": verification.bucket,
        "compared": verification.compared,
    }
    for p in verification.partitions:
        meta[f"{p.partition or 'table'}.rows"] = f"{p.rows_before} → {p.rows_after}"
        meta[f"{p.partition or 'table'}.row_checksum"] = f"{p.row_checksum_before} → {p.row_checksum_after}"
        if p.key_checksum_before or p.key_checksum_after:  # the deep check's
            meta[f"{p.partition or 'table'}.key_checksum"] = f"{p.key_checksum_before} → {p.key_checksum_after}"
        meta[f"{p.partition or 'table'}.buckets"] = ", ".join(map(str, p.buckets_after))
    if verification.passed:
        description = (
            f"{len(verification.partitions)} partition(s) verified at snapshot "
            f"{verification.snapshot_after}: rows and checksums unchanged, {verification.bucket} buckets"
        )
    else:
        description = "rescale verification failed:\n" + "\n".join(verification.problems)
    return dg.AssetCheckResult(
        check_name=CHECK_NAME,
        passed=verification.passed,
        severity=dg.AssetCheckSeverity.ERROR,
        metadata=meta,
        description=description,
    )


def _operation(
    table: TableConfig, context: dg.AssetExecutionContext, lake: LakeCatalogResource, spark: SparkResource
) -> Operation:
    """One run's rescale: exactly its partitions (the whole table when unpartitioned) to the target."""
    partitioned = bool(table.partition_keys)
    keys = list(context.partition_keys) if partitioned else [""]
    target = table.maintenance.rescale.target_buckets

    def rescale(lake_table: "FileStoreTable") -> Outcome | Skip:

        current = table_partitions(lake_table) if partitioned else {"": {}}
        gone = [k for k in keys if k not in current]
        if gone:
            context.log.info(f"partitions no longer in {table.name} (skipped): {', '.join(gone)}")
        specs = [current[k] for k in keys if k in current]
        if not specs:
            return Skip(why=f"none of the selected partitions exists in {table.name}: {', '.join(keys)}")
        context.log.info(f"rescale {table.name} to {target} buckets: {len(specs)} partition(s): {', '.join(keys)}")
        job = dict(
            bucket=target,
            partitions=specs,
            commit_user=f"rescale:{context.run.run_id}",
            storage_options=lake.storage_options(),
        )
        if lake_table.maintenance.plan_rescale(bucket=target, partitions=specs).units:
            with spark.session(warehouse=lake.warehouse) as session:
                result = rescale_partitions(session, lake.warehouse, table.name, **job)
        else:  # every selected partition is already at the target: metadata only, no Spark
            result = rescale_partitions(None, lake.warehouse, table.name, **job)
        for p in result.partitions:
            context.log.info(
                f"{p.partition or table.name}: "
                + (
                    f"skipped, {p.skipped}"
                    if p.skipped
                    else f"{p.old_buckets} → {p.new_buckets} buckets, {p.rows} rows, snapshot {p.snapshot_committed}"
                )
            )
        meta = _result_metadata(result, target, prefix="run." if partitioned else "")
        if gone:
            meta["partitions_gone"] = ", ".join(gone)
        # each partition's materialization carries its own figures, a gone one why it was skipped
        by_partition = (
            {p.partition: partition_metadata(p, lake_table) for p in result.partitions}
            | {k: _gone_metadata(k, table.name) for k in gone}
            if partitioned
            else {}
        )
        skipped = (
            None
            if result.partitions_rescaled
            else "; ".join(sorted({f"{p.skipped}" for p in result.partitions if p.skipped})) or "nothing to rewrite"
        )
        return Outcome(
            summary=f"{result.partitions_rescaled} partition(s) to {target} buckets, "
            f"{result.partitions_skipped} skipped, snapshot {result.snapshot_id}",
            metadata=meta,
            outputs=ledger_outputs(result),
            snapshot_id=result.snapshot_id,
            skipped=skipped,
            dry_run=result.dry_run,
            check=_check_result(result, target),
            partition_metadata=by_partition,
        )

    return Operation(
        inputs={"partitions": keys, "target_buckets": target},
        scope=f"{len(keys)} partition(s): {', '.join(keys)}" if partitioned else "the whole table",
        disabled=None
        if target is not None
        else (f"maintenance.rescale.target_buckets of {table.name} is not set in tables.yaml"),
        skipped_metadata={"run.partitions_rescaled" if partitioned else "partitions_rescaled": 0},
        execute=rescale,
    )


def build_rescale_asset(table: TableConfig) -> dg.AssetsDefinition | TableOperation | None:
    """The table's ``rescale`` asset, or None for a table that is not fixed-bucket."""
    if not rescalable(table):
        return None
    partitioned = bool(table.partition_keys)
    policy = table.maintenance.rescale
    backfill = dg.BackfillPolicy.single_run() if policy.backfill == "single_run" else dg.BackfillPolicy.multi_run(1)
    asset = MaintenanceAsset(
        table=table,
        operation=OPERATION,
        on_spark=True,
        check=VERIFIED,
        description=(
            f"Rescale {table.name} to maintenance.rescale.target_buckets "
            f"({policy.target_buckets or 'not set'}): "
            + ("launch a backfill over the partitions to rewrite." if partitioned else "rewrites the table.")
        ),
        metadata={"target_buckets": str(policy.target_buckets), "backfill": policy.backfill},
        partitions_def=dg.DynamicPartitionsDefinition(name=partitions_def_name(table.name)) if partitioned else None,
        backfill_policy=backfill if partitioned else None,
    )

    @asset.define()
    def rescale(
        context: dg.AssetExecutionContext, lake: LakeCatalogResource, spark: SparkResource
    ) -> dg.MaterializeResult:
        return run_maintenance(context, lake, asset=asset, operation=_operation(table, context, lake, spark))

    return rescale
