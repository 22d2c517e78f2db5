"""The maintenance ledger: one row per maintenance run, in a lake table of the warehouse itself.

Every maintenance asset (compaction, expiry, orphan cleanup, rescale, ...) calls :func:`record`
once per run with what it did or why it did nothing. The ledger is the primary-key table
``_maintenance.ledger`` keyed by ``(run_id, table_name, operation)``: a retried step writes the same
key again and readers see one row (the last attempt's). It lives next to the tables it describes,
so it survives Dagster restarts and a new Dagster instance, and anything that reads Paimon tables
(lake_core, Spark, pypaimon, Java) can query it::

    Catalog(warehouse).get_table("_maintenance.ledger").to_arrow()

``inputs`` and ``outputs`` are JSON objects (the run's config and the operation's typed result).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import math
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any

import dagster as dg
import pyarrow as pa
import pyarrow.compute as pc

from jobs.tables import TableSpec, ensure_table
from lake_core import Catalog, OperationResult

if TYPE_CHECKING:
    from lake_core import FileStoreTable
    from orchestration.defs.resources import LakeCatalogResource

LEDGER_DATABASE = "_maintenance"
LEDGER_TABLE = f"{LEDGER_DATABASE}.ledger"
PRIMARY_KEYS = ("run_id", "table_name", "operation")

SCHEMA = pa.schema(
    [
        pa.field("run_id", pa.string(), nullable=False),
        pa.field("table_name", pa.string(), nullable=False),
        pa.field("operation", pa.string(), nullable=False),
        pa.field("status", pa.string()),  # succeeded | skipped | failed
        pa.field("dry_run", pa.bool_()),
        pa.field("reason", pa.string()),  # why it ran (a sensor's reason, 'launched from the UI', ...)
        pa.field("skipped", pa.string()),  # why it did nothing
        pa.field("error", pa.string()),
        pa.field("inputs", pa.string()),  # JSON object
        pa.field("outputs", pa.string()),  # JSON object
        pa.field("bytes_reclaimed", pa.int64()),
        pa.field("snapshot_id", pa.int64()),  # the snapshot the operation committed, if any
        pa.field("duration_s", pa.float64()),
        pa.field("recorded_at", pa.timestamp("ms", tz="UTC")),
    ]
)
# One bucket: a few rows per run. Snapshot expiry and inline compaction after each commit (the
# table's defaults) keep the ledger's own files bounded.
OPTIONS = {"bucket": "1"}

# Fields every OperationResult has that are columns of their own, not outputs.
_RESULT_COLUMNS = {"operation", "table", "dry_run", "duration_s", "skipped"}


@dataclasses.dataclass(frozen=True, kw_only=True)
class LedgerEntry:
    """One row of the ledger, as :func:`record` wrote it."""

    run_id: str
    table_name: str
    operation: str
    status: str
    dry_run: bool
    reason: str | None
    skipped: str | None
    error: str | None
    inputs: str
    outputs: str
    bytes_reclaimed: int | None
    snapshot_id: int | None
    duration_s: float | None
    recorded_at: _dt.datetime

    def row(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def committed_snapshot(result: OperationResult) -> int | None:
    """The snapshot an operation committed: its ``snapshot_id`` unless it was a dry run or skipped
    (then ``snapshot_id`` is only the snapshot it looked at)."""
    if result.dry_run or getattr(result, "skipped", None) is not None:
        return None
    return getattr(result, "snapshot_id", None)


def _catalog(lake: LakeCatalogResource | Catalog) -> Catalog:
    return lake if isinstance(lake, Catalog) else lake.catalog()


def ledger_table(lake: LakeCatalogResource | Catalog) -> FileStoreTable:
    """The ledger table, created on first use (concurrent first uses agree on one table)."""
    catalog = _catalog(lake)
    if catalog.table_exists(LEDGER_TABLE):
        return catalog.get_table(LEDGER_TABLE)
    return ensure_table(catalog, TableSpec(LEDGER_TABLE, SCHEMA, primary_keys=PRIMARY_KEYS, options=OPTIONS))


def _json_value(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, (_dt.datetime, _dt.date, _dt.timedelta)):
        return str(value)
    return value


def _json(mapping: Mapping[str, Any] | None) -> str:
    return json.dumps({str(k): _json_value(v) for k, v in (mapping or {}).items()}, sort_keys=True, default=str)


def record(
    lake: LakeCatalogResource | Catalog,
    *,
    table: str,
    operation: str,
    run_id: str,
    result: OperationResult | None = None,
    reason: str | None = None,
    inputs: Mapping[str, Any] | None = None,
    outputs: Mapping[str, Any] | None = None,
    skipped: str | None = None,
    error: str | None = None,
    bytes_reclaimed: int | None = None,
    snapshot_id: int | None = None,
    duration_s: float | None = None,
    dry_run: bool | None = None,
) -> LedgerEntry:
    """Append one maintenance run to the ledger (one commit) and return the row written.

    ``table``: the maintained table (``database.table``); ``operation``: the asset's operation name
    (``manifest_compaction``, ``compaction``, ...); ``run_id``: the Dagster run id (a retried step
    of the same run overwrites its row). ``result``: the operation's typed result; ``outputs``,
    ``skipped``, ``bytes_reclaimed``, ``snapshot_id``, ``duration_s`` and ``dry_run`` default to
    its fields (``as_metadata()``, ``.skipped``, ``.bytes_reclaimed``, the snapshot it committed, ...),
    and an explicit argument wins. ``error``: the failure's message (status ``failed``).
    """
    if result is not None:
        meta = result.as_metadata()
        outputs = {k: v for k, v in meta.items() if k not in _RESULT_COLUMNS} if outputs is None else outputs
        skipped = skipped if skipped is not None else getattr(result, "skipped", None)
        bytes_reclaimed = bytes_reclaimed if bytes_reclaimed is not None else getattr(result, "bytes_reclaimed", None)
        snapshot_id = snapshot_id if snapshot_id is not None else committed_snapshot(result)
        duration_s = duration_s if duration_s is not None else result.duration_s
        dry_run = dry_run if dry_run is not None else result.dry_run
    status = "failed" if error is not None else "skipped" if skipped is not None else "succeeded"
    entry = LedgerEntry(
        run_id=run_id,
        table_name=table,
        operation=operation,
        status=status,
        dry_run=bool(dry_run),
        reason=reason,
        skipped=skipped,
        error=error,
        inputs=_json(inputs),
        outputs=_json(outputs),
        bytes_reclaimed=bytes_reclaimed,
        snapshot_id=snapshot_id,
        duration_s=duration_s,
        recorded_at=_dt.datetime.now(_dt.UTC),
    )
    ledger_table(lake).write_arrow(pa.Table.from_pylist([entry.row()], schema=SCHEMA))
    return entry


def read_ledger(
    lake: LakeCatalogResource | Catalog, *, table: str | None = None, operation: str | None = None
) -> pa.Table:
    """The ledger's rows (of one table and/or operation), oldest first; empty before the first run."""
    catalog = _catalog(lake)
    if not catalog.table_exists(LEDGER_TABLE):
        return SCHEMA.empty_table()
    rows = catalog.get_table(LEDGER_TABLE).to_arrow()
    for column, value in (("table_name", table), ("operation", operation)):
        if value is not None:
            rows = rows.filter(pc.equal(rows[column], value))
    return rows.sort_by([("recorded_at", "ascending"), ("run_id", "ascending")])


def last_committed_run(lake: LakeCatalogResource | Catalog, *, table: str, operation: str) -> dict[str, Any] | None:
    """The ledger row of ``operation``'s newest succeeded run on ``table`` that committed a snapshot
    (what a check run on its own verifies), or None."""
    rows = read_ledger(lake, table=table, operation=operation)
    rows = rows.filter(pc.and_(pc.equal(rows["status"], "succeeded"), pc.is_valid(rows["snapshot_id"])))
    return rows.slice(rows.num_rows - 1).to_pylist()[0] if rows.num_rows else None


def run_to_verify(
    lake: LakeCatalogResource, *, table: str, operation: str, check_name: str, count_key: str
) -> tuple[FileStoreTable, dict[str, Any]] | dg.AssetCheckResult:
    """What a blocking check executed alone verifies: the table and ``operation``'s last committed
    run on it (:func:`last_committed_run`); or, when there is nothing to verify (no table yet, no
    such run), the passing result that says so (``count_key``: the check's count, 0)."""
    catalog = lake.catalog()
    if not catalog.table_exists(table):
        return dg.AssetCheckResult(
            check_name=check_name,
            passed=True,
            metadata={"table_exists": False},
            description=f"{table} does not exist yet: nothing to verify",
        )
    last = last_committed_run(lake, table=table, operation=operation)
    if last is None:
        return dg.AssetCheckResult(
            check_name=check_name,
            passed=True,
            metadata={count_key: 0},
            description=f"no {operation} of {table} has committed a snapshot: nothing to verify",
        )
    return catalog.get_table(table), last


def expired_run_check(
    lake_table: FileStoreTable, last: Mapping[str, Any], *, check_name: str, snapshots: Collection[int]
) -> dg.AssetCheckResult | None:
    """A blocking check executed alone verifies its operation's last committed run (``last``, a
    row of :func:`last_committed_run`) by re-reading ``snapshots`` (before and after it). When one
    of them is expired, it cannot: the result is what the run's own check recorded in its
    ``outputs`` (``check.<name>``), saying so. None: every snapshot is readable, re-read them."""
    expired = sorted(s for s in set(snapshots) if not lake_table.has_snapshot(s))
    if not expired:
        return None
    run, after = str(last["run_id"]), int(last["snapshot_id"])
    recorded = json.loads(last["outputs"] or "{}").get(f"check.{check_name}")
    return dg.AssetCheckResult(
        check_name=check_name,
        passed=recorded is not False,  # not recorded (a row of an older version): nothing says it failed
        severity=dg.AssetCheckSeverity.ERROR,
        metadata={"run_id": run, "snapshot_id": after, "recorded_at": str(last["recorded_at"]), "check": "recorded"},
        description=f"last {last['operation']} (run {run[:8]}, snapshot {after}): "
        + (f"snapshot {expired[0]} is" if len(expired) == 1 else f"snapshots {', '.join(map(str, expired))} are")
        + " expired, so it cannot be re-read; its run's check "
        + ("passed" if recorded else "failed" if recorded is False else "was not recorded"),
    )
