"""One maintenance run, the same for every maintenance asset (:func:`run_maintenance`):

1. why it runs (:func:`~orchestration.defs.maintenance.reason.run_reason`);
2. the storage access check, so a wrong bucket, endpoint or key fails in one line before Spark
   starts (the ledger lives in that storage too, so such a run leaves no ledger row);
3. the table: a run the policy rules out, or one on a table not written yet, skips with the reason;
4. the operation, which the asset supplies (:class:`Operation`), on the table;
5. one row in the maintenance ledger (:mod:`orchestration.defs.ledger`), also when the run skipped
   or failed;
6. the materialization metadata (table, reason, inputs, the operation's figures, a link to the
   snapshot it committed, why it skipped) and the result of the asset's blocking check, if any;
   a run over several partitions gives each partition's materialization its own figures;
7. one log line: what the run did, or why it skipped, and why it was requested.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import dagster as dg

from lake_core import OperationResult
from orchestration.defs import ledger
from orchestration.defs.maintenance.asset import MaintenanceAsset
from orchestration.defs.maintenance.reason import run_reason
from orchestration.defs.resources import LakeCatalogResource

if TYPE_CHECKING:
    from lake_core import FileStoreTable


@dataclasses.dataclass(frozen=True, kw_only=True)
class Skip:
    """An operation found, before changing anything, that it has nothing to do."""

    why: str


@dataclasses.dataclass(frozen=True, kw_only=True)
class Outcome:
    """What an operation did."""

    summary: str  # for the log line: "4/4 unit(s), 12 → 4 files, 0 expired, snapshot 7"
    metadata: Mapping[str, Any]  # its figures as materialization metadata
    outputs: Mapping[str, Any]  # its figures as the ledger's JSON ``outputs``
    snapshot_id: int | None = None  # the snapshot it committed
    skipped: str | None = None  # why it did nothing
    dry_run: bool = False
    bytes_reclaimed: int | None = None
    check: dg.AssetCheckResult | None = None  # the asset's blocking check on what it wrote
    # a partitioned asset's run: each partition's own metadata, by partition key (its
    # materialization shows these besides ``metadata``, which then holds only the run's figures)
    partition_metadata: Mapping[str, Mapping[str, Any]] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Operation:
    """What one run of a maintenance asset does: all an asset supplies besides its definition."""

    inputs: Mapping[str, Any]  # the run's effective arguments, for the ledger and the metadata
    execute: Callable[[FileStoreTable], Outcome | Skip]
    disabled: str | None = None  # why the policy rules this run out (known before the table is opened)
    scope: str | None = None  # the part of the table the run covers, for its reason ("2 partition(s): ...")
    skipped_metadata: Mapping[str, Any] = dataclasses.field(default_factory=dict)  # e.g. its main counter at 0

    @property
    def dry_run(self) -> bool:
        return bool(self.inputs.get("dry_run"))


def result_outputs(result: OperationResult, *, prefix: str = "") -> dict[str, Any]:
    """A typed result's fields for the ledger's ``outputs`` (the table and operation have columns)."""
    return {prefix + k: v for k, v in result.as_metadata().items() if k not in ("table", "operation")}


def run_maintenance(
    context: dg.AssetExecutionContext, lake: LakeCatalogResource, *, asset: MaintenanceAsset, operation: Operation
) -> dg.MaterializeResult:
    """Run ``operation`` as one run of ``asset`` (see the module's docstring)."""
    run = _Run(
        context=context,
        lake=lake,
        asset=asset,
        operation=operation,
        started=time.monotonic(),
        reason=run_reason(context.run.tags, scope=operation.scope),
    )
    lake.check_access()
    try:
        outcome, lake_table = _execute(lake, asset.table.name, operation)
    except Exception as error:
        run.failed(error)
        raise
    if isinstance(outcome, Skip):
        return run.skipped(outcome.why)
    return run.done(outcome, lake_table)


def _execute(
    lake: LakeCatalogResource, name: str, operation: Operation
) -> tuple[Outcome | Skip, FileStoreTable | None]:
    if operation.disabled is not None:
        return Skip(why=operation.disabled), None
    catalog = lake.catalog()
    if not catalog.table_exists(name):
        return Skip(why=f"table {name} does not exist yet; materialize {name} first"), None
    lake_table = catalog.get_table(name)
    return operation.execute(lake_table), lake_table


@dataclasses.dataclass(frozen=True, kw_only=True)
class _Run:
    """One run under way: how it ends (skipped, done or failed) in the log, the ledger and the metadata."""

    context: dg.AssetExecutionContext
    lake: LakeCatalogResource
    asset: MaintenanceAsset
    operation: Operation
    reason: str
    started: float  # time.monotonic() when the run began: the ledger's duration is the run's wall time

    def skipped(self, why: str) -> dg.MaterializeResult:
        self._log_skipped(why)
        self._record(skipped=why, dry_run=self.operation.dry_run)
        check = None if self.asset.check is None else self.asset.check.skipped(why)
        return self._result({**self.operation.skipped_metadata, "skipped": why}, check)

    def done(self, outcome: Outcome, lake_table: FileStoreTable) -> dg.MaterializeResult:
        outputs, error = dict(outcome.outputs), None
        if outcome.check is not None:
            outputs[f"check.{outcome.check.check_name}"] = outcome.check.passed
            if not outcome.check.passed:
                error = f"blocking check {outcome.check.check_name} failed: {outcome.check.description}"
        if outcome.skipped is not None:
            self._log_skipped(outcome.skipped)
        else:
            self.context.log.info(
                f"{self.asset.operation} on {self.asset.table.name}"
                f"{' (dry run)' if outcome.dry_run else ''}: {outcome.summary} "
                f"(requested: {self.reason})"
            )
        self._record(
            outputs=outputs,
            skipped=outcome.skipped,
            error=error,
            dry_run=outcome.dry_run,
            snapshot_id=outcome.snapshot_id,
            bytes_reclaimed=outcome.bytes_reclaimed,
        )
        metadata = dict(outcome.metadata)
        if outcome.snapshot_id is not None:
            metadata["snapshot"] = dg.MetadataValue.path(lake_table.paths.snapshot(outcome.snapshot_id))
        if outcome.skipped is not None:
            metadata["skipped"] = outcome.skipped
        for partition, partition_metadata in outcome.partition_metadata.items():
            # Dagster lays these over the run's metadata in that partition's materialization only
            self.context.add_asset_metadata(dict(partition_metadata), partition_key=partition)
        return self._result(metadata, outcome.check)

    def failed(self, error: Exception) -> None:
        try:
            self._record(error=f"{type(error).__name__}: {error}", dry_run=self.operation.dry_run)
        except Exception as ledger_error:  # noqa: BLE001 - the run's own error is the one to raise
            self.context.log.warning(f"could not record the failed run in the maintenance ledger: {ledger_error}")

    def _log_skipped(self, why: str) -> None:
        self.context.log.info(
            f"{self.asset.operation} on {self.asset.table.name} skipped: {why} (requested: {self.reason})"
        )

    def _record(self, **fields: Any) -> None:
        ledger.record(
            self.lake,
            table=self.asset.table.name,
            operation=self.asset.operation,
            run_id=self.context.run.run_id,
            reason=self.reason,
            inputs=self.operation.inputs,
            duration_s=time.monotonic() - self.started,
            **fields,
        )

    def _result(self, metadata: Mapping[str, Any], check: dg.AssetCheckResult | None) -> dg.MaterializeResult:
        base = {
            "table": self.asset.table.name,
            "reason": self.reason,
            "inputs": dg.MetadataValue.json(dict(self.operation.inputs)),
        }
        return dg.MaterializeResult(metadata={**base, **metadata}, check_results=None if check is None else [check])
