"""The snapshot sensor: one for all tables, requesting one downstream run per table that brought
new data, covering every snapshot since the last one (coalesced).

The cursor is one JSON object (:class:`orchestration.defs.ticks.LakeCursor`) with an entry per table:
``{"table": <identity>, "snapshot": <id>}`` (:class:`SensorCursor`). A table's identity is its
warehouse, its name and the creation time of its first schema (``schema-0``), so after the warehouse
moves (local → S3) or the table is dropped and recreated, the entry no longer matches: the sensor
says so in the tick and starts over at the new table's newest snapshot instead of waiting for ids it
has already passed. Run keys carry a short digest of the identity for the same reason.

A tick, per table, from the round-robin start on and within the tick budget (``control.tick_budget``):

- reads the table's ``LATEST`` hint only (``Catalog.latest_snapshot_id``: no schema, no snapshot
  file) and moves on when it equals the entry's snapshot: an unchanged table costs one hint read;
- otherwise opens the table and walks back from the latest snapshot to the newest one that changed
  rows, one snapshot file at a time (at most ``WALK_LIMIT``), never the whole snapshot directory.
  Snapshots that change no rows — COMPACT, and the OVERWRITE of a bucket rescale (lake_core's
  ``Snapshot.changes_data``, Paimon's streaming-read rule) — request nothing; the tick's log and the
  run's tags name them and why;
- requests **one** run for everything since the entry: the derived tables are rebuilt from the
  newest data snapshot, which holds every earlier one, and the run's tags give the range
  (``lake/snapshot-range``, ``lake/snapshots-covered``, ``lake/snapshots-skipped``).

Before requesting a run, the sensor leases its snapshot (tag ``lake/lease``) so expiry keeps it
until the run finishes; :mod:`.leases` releases it.
"""

import hashlib
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import dagster as dg
from dagster._core.storage.tags import RUN_KEY_TAG, SENSOR_NAME_TAG  # not exported at top level

from lake_core import LakeError, SchemaError, SnapshotNotFoundError, TableNotFoundError
from orchestration.config import TableConfig, TablesConfig, duration_seconds
from orchestration.defs.leases import LEASE_TAG, lease_holder, sweep_leases
from orchestration.defs.naming import SNAPSHOT_SENSOR
from orchestration.defs.resources import LakeCatalogResource
from orchestration.defs.ticks import LakeCursor, TickBudget, Visit, latest_hints, round_robin, table_failure

if TYPE_CHECKING:
    from dagster._core.definitions.unresolved_asset_job_definition import UnresolvedAssetJobDefinition

    from lake_core import Catalog, FileStoreTable

WALK_LIMIT = 1000  # snapshot files read per table and tick at most
RANGE_TAG = "lake/snapshot-range"
COVERED_TAG = "lake/snapshots-covered"
SKIPPED_TAG = "lake/snapshots-skipped"
_TAG_LIMIT = 4000


@dataclass(frozen=True)
class SensorCursor:
    """One table's entry of the cursor."""

    identity: str
    snapshot_id: int

    def encode(self) -> str:
        return json.dumps(self.entry(), sort_keys=True)

    def entry(self) -> dict[str, Any]:
        return {"table": self.identity, "snapshot": self.snapshot_id}

    @staticmethod
    def decode(text: "str | Mapping[str, Any] | None") -> "SensorCursor | None":
        """None for no entry, or one this version cannot read (a bare id from before identities)."""
        try:
            data = json.loads(text) if isinstance(text, str) and text else text
            return SensorCursor(str(data["table"]), int(data["snapshot"])) if isinstance(data, Mapping) else None
        except (ValueError, KeyError, TypeError):
            return None


@dataclass(frozen=True)
class SnapshotPlan:
    snapshot_id: int | None  # the newest data snapshot: what the one run reads (None: nothing to request)
    cursor: str | None  # the table's new entry (encoded SensorCursor)
    skip_reason: str | None
    identity: str | None = None
    notes: tuple[str, ...] = ()  # said in the tick's log (and in the skip reason when skipping)
    first_id: int | None = None  # the oldest snapshot the run covers (the one after the entry's)
    skipped: tuple[tuple[int, str], ...] = ()  # newer snapshots that change no rows, and why

    @property
    def snapshot_ids(self) -> tuple[int, ...]:
        """The snapshot requested (one run per table and tick), as a tuple."""
        return () if self.snapshot_id is None else (self.snapshot_id,)

    @property
    def covered(self) -> str:
        """'4..7' (or '7'): the snapshots the run covers."""
        first = self.first_id if self.first_id is not None else self.snapshot_id
        return str(self.snapshot_id) if first == self.snapshot_id else f"{first}..{self.snapshot_id}"


def table_identity(warehouse: str, table: "FileStoreTable") -> str:
    """warehouse + table + creation time of its first schema: differs for a recreated table."""
    try:
        first = table.schema_manager.schema(0)
    except SchemaError:  # schema-0 removed by hand: the oldest one left still marks this incarnation
        first = table.schema_manager.schema(table.schema_manager.list_ids()[0])
    return f"{identity_prefix(warehouse, table.identifier)}{first.time_millis}"


def identity_prefix(warehouse: str, table_name: str) -> str:
    """The identity up to its creation time: an entry with another prefix is another warehouse's."""
    return f"{warehouse.rstrip('/')}/{table_name}@"


def run_key(table_name: str, snapshot_id: int, identity: str) -> str:
    digest = hashlib.sha1(identity.encode()).hexdigest()[:8]
    return f"{table_name}:{snapshot_id}@{digest}"


def existing_run(instance: dg.DagsterInstance, key: str) -> dg.DagsterRun | None:
    """The run of this sensor (the daemon's, or the demo's, which carries the same tags) for ``key``:
    the one the daemon would match a request's run key with."""
    runs = instance.get_runs(filters=dg.RunsFilter(tags={RUN_KEY_TAG: key, SENSOR_NAME_TAG: SNAPSHOT_SENSOR}), limit=1)
    return runs[0] if runs else None


def no_row_change_reason(snapshot: Any) -> str:
    """Why a snapshot that changes no rows requests nothing."""
    kind = snapshot.commit_kind.value
    if kind == "OVERWRITE":
        return f"snapshot {snapshot.id}: OVERWRITE of a bucket rescale (same rows in new buckets)"
    return f"snapshot {snapshot.id}: {kind} (files reorganized, rows unchanged)"


def _newest_data_snapshot(
    table: "FileStoreTable", latest_id: int, seen: int
) -> tuple[int | None, list[tuple[int, str]], bool]:
    """The newest snapshot in (seen, latest_id] that changes rows, walking back from the latest;
    the newer ones that change none (with why); and whether the walk stopped early (limit reached
    or older snapshots expired)."""
    skipped: list[tuple[int, str]] = []
    sid = latest_id
    while sid > seen:
        if latest_id - sid >= WALK_LIMIT:
            return None, skipped, True
        try:
            snap = table.snapshot(sid)
        except SnapshotNotFoundError:
            return None, skipped, seen > 0  # snapshots after the cursor expired unseen
        if snap.changes_data:
            return sid, skipped, False
        skipped.append((sid, no_row_change_reason(snap)))
        sid -= 1
    return None, skipped, False


def plan_snapshot_requests(
    catalog: "Catalog", warehouse: str, table_name: str, cursor: "str | Mapping[str, Any] | None", max_requests: int = 1
) -> SnapshotPlan:
    """What one table asks for in a tick, given its cursor entry. ``max_requests`` is kept for
    callers of the per-table sensor; one run covers every new snapshot."""
    try:
        table = catalog.get_table(table_name)
    except TableNotFoundError:
        return SnapshotPlan(None, _text(cursor), f"table {table_name} does not exist yet")
    except LakeError as e:  # e.g. its database does not exist yet
        return SnapshotPlan(None, _text(cursor), f"table {table_name} cannot be opened yet: {e}")
    identity = table_identity(warehouse, table)
    previous = SensorCursor.decode(cursor)
    notes: list[str] = []
    if previous is not None and previous.identity != identity:
        notes.append(
            f"cursor reset: it was for {previous.identity} (up to snapshot {previous.snapshot_id}), "
            f"the table is now {identity}; starting at its newest snapshot"
        )
        previous = None
    elif previous is None and cursor:
        notes.append(f"cursor reset: {cursor!r} names no table identity; starting at the newest snapshot")
    latest = table.latest_snapshot()
    if latest is None:
        return SnapshotPlan(
            None,
            _text(cursor) if not notes else None,
            f"table {table_name} has no snapshot yet",
            identity,
            tuple(notes),
        )
    if previous is not None and latest.id < previous.snapshot_id:
        notes.append(
            f"latest snapshot {latest.id} is older than the cursor's {previous.snapshot_id} "
            "(rolled back?); continuing from it"
        )
        previous = SensorCursor(identity, latest.id)
    new_cursor = SensorCursor(identity, latest.id).encode()
    if previous is not None and latest.id == previous.snapshot_id:
        return SnapshotPlan(
            None, new_cursor, f"no new snapshot of {table_name} since {latest.id}", identity, tuple(notes)
        )
    # First tick (or after a reset): a derived table is rebuilt from a whole snapshot, so history is
    # not replayed; only the newest data snapshot is requested.
    seen = previous.snapshot_id if previous is not None else 0
    sid, skipped, truncated = _newest_data_snapshot(table, latest.id, seen)
    if truncated:
        notes.append(
            f"looked back {WALK_LIMIT} snapshots at most (or older ones expired); earlier snapshots are skipped"
        )
    for _, why in reversed(skipped):
        notes.append(f"{why}: requests nothing")
    if sid is None:
        return SnapshotPlan(
            None,
            new_cursor,
            f"snapshots up to {latest.id} of {table_name} changed no rows",
            identity,
            tuple(notes),
            skipped=tuple(reversed(skipped)),
        )
    first = seen + 1 if previous is not None else sid
    return SnapshotPlan(sid, new_cursor, None, identity, tuple(notes), first, tuple(reversed(skipped)))


def _text(cursor: "str | Mapping[str, Any] | None") -> str | None:
    return json.dumps(dict(cursor), sort_keys=True) if isinstance(cursor, Mapping) else cursor


@dataclass(frozen=True)
class SnapshotTarget:
    """A table with derived tables: the job rebuilding them and its run config for a snapshot."""

    table: TableConfig
    job: "UnresolvedAssetJobDefinition"
    run_config_for: Callable[[int], dict[str, Any]]
    consumers: tuple[str, ...]


@dataclass
class _Tally:
    unchanged: int = 0
    requested: int = 0
    skipped: int = 0
    disabled: int = 0

    def text(self) -> str:
        return f"{self.requested} requested, {self.unchanged} unchanged, {self.skipped} with nothing to request" + (
            f", {self.disabled} with the sensor disabled" if self.disabled else ""
        )


def _request(
    context: dg.SensorEvaluationContext, target: SnapshotTarget, plan: SnapshotPlan, lake_table: "FileStoreTable"
) -> tuple[dg.RunRequest | None, list[str]]:
    """Lease the plan's snapshot, then the run request (None: it expired before the lease, or a run
    with its run key exists already: the demo's, or an earlier tick's)."""
    table = target.table
    assert plan.snapshot_id is not None and plan.identity is not None
    sid = plan.snapshot_id
    key = run_key(table.name, sid, plan.identity)
    done = existing_run(context.instance, key)
    if done is not None:  # the daemon would drop the request; leasing for it would pin the snapshot for nothing
        return None, [f"snapshot {sid} already has run {done.run_id[:8]} ({done.status.value}, run_key {key})"]
    ttl_s = duration_seconds(table.sensor.lease_ttl)
    try:
        lease = lake_table.maintenance.acquire_lease(snapshot_id=sid, holder=lease_holder(context.instance), ttl=ttl_s)
    except LakeError as e:  # the snapshot expired since the plan
        return None, [f"snapshot {sid} not requested: {e}"]
    skipped = ", ".join(str(s) for s, _ in plan.skipped)
    tags = {
        "lake/table": table.name,
        "lake/snapshot": str(sid),
        RANGE_TAG: plan.covered,
        COVERED_TAG: str(sid - (plan.first_id or sid) + 1),
        "lake/table-identity": plan.identity,
        LEASE_TAG: lease.consumer_id,
    }
    if plan.skipped:
        tags[SKIPPED_TAG] = ("; ".join(why for _, why in plan.skipped))[:_TAG_LIMIT]
    note = f"leased snapshot {sid} for one downstream run covering snapshots {plan.covered} ({lease.consumer_id})" + (
        f"; snapshots {skipped} change no rows" if skipped else ""
    )
    request = dg.RunRequest(
        run_key=key,
        job_name=target.job.name,
        run_config=target.run_config_for(sid),
        tags=tags,
    )
    return request, [note]


def build_snapshot_sensor(config: TablesConfig, targets: list[SnapshotTarget]) -> dg.SensorDefinition:
    """The one sensor requesting, per table with derived tables, one run of its downstream job for
    everything new since the table's cursor entry."""
    by_name = {t.table.name: t for t in targets}
    names = sorted(by_name)
    budget_s = duration_seconds(config.control.tick_budget)

    def evaluate(context: dg.SensorEvaluationContext, lake: LakeCatalogResource) -> dg.SensorResult:
        catalog = lake.catalog()
        cursor = LakeCursor.decode(context.cursor)
        budget, visit, tally = TickBudget(budget_s), Visit(len(names)), _Tally()
        requests: list[dg.RunRequest] = []
        reasons: list[str] = []
        # the hints read ahead: those that decide alone (new tables, leases: the visit reads more)
        polled = {n for n in names if by_name[n].table.sensor.enabled and _hint_decides(lake, n, cursor.tables.get(n))}
        with latest_hints(catalog, names, cursor.next, polled) as hints:
            for name in round_robin(names, cursor.next, budget, visit):
                target = by_name[name]
                if not target.table.sensor.enabled:
                    tally.disabled += 1
                    continue
                entry = cursor.tables.get(name)
                try:
                    request, notes, skip = _visit(context, catalog, lake, target, entry, cursor, hints.get)
                except Exception as error:  # noqa: BLE001 - one broken table must not stop the others' ticks
                    failure = table_failure(lake, name, error)  # a storage problem fails the tick, in one line
                    context.log.error(failure)
                    tally.skipped += 1
                    reasons.append(failure)
                    continue
                for note in notes:
                    context.log.info(f"{name}: {note}")
                if request is not None:
                    tally.requested += 1
                    requests.append(request)
                elif skip == "unchanged":
                    tally.unchanged += 1
                else:
                    tally.skipped += 1
                    reasons.append("; ".join([*notes, skip] if skip else notes))
        cursor.next = visit.next
        summary = f"{visit.summary(budget)}: {tally.text()}"
        context.log.info(summary)
        if not requests:
            details = [r for r in reasons if r]
            return dg.SensorResult(
                skip_reason="; ".join([*details[:20], summary]) if details else summary, cursor=cursor.encode()
            )
        return dg.SensorResult(run_requests=requests, cursor=cursor.encode())

    enabled = any(t.table.sensor.enabled for t in targets)
    return dg.sensor(
        name=SNAPSHOT_SENSOR,
        jobs=[t.job for t in targets],
        minimum_interval_seconds=min(t.table.sensor.minimum_interval_seconds for t in targets),
        default_status=dg.DefaultSensorStatus.RUNNING if enabled else dg.DefaultSensorStatus.STOPPED,
        description=f"For each of the {len(targets)} table(s) with derived tables: one downstream run covering "
        "every new snapshot that changed rows (COMPACT and rescale snapshots request nothing); unchanged "
        f"tables cost one LATEST-hint read; a tick stops after {config.control.tick_budget} and the next one "
        "carries on where it stopped.",
    )(evaluate)


def _visit(
    context: dg.SensorEvaluationContext,
    catalog: "Catalog",
    lake: LakeCatalogResource,
    target: SnapshotTarget,
    entry: dict[str, Any] | None,
    cursor: LakeCursor,
    latest: Callable[[str], int | None],
) -> tuple[dg.RunRequest | None, list[str], str | None]:
    """One table's part of a tick: (request, notes for the log, why nothing was requested);
    ``latest``: the table's LATEST hint (read ahead by the tick)."""
    name = target.table.name
    previous = SensorCursor.decode(entry)
    if previous is not None and _hint_decides(lake, name, entry) and latest(name) == previous.snapshot_id:
        return None, [], "unchanged"
    plan = plan_snapshot_requests(catalog, lake.warehouse, name, entry)
    notes = list(plan.notes)
    lake_table = catalog.get_table(name) if plan.identity is not None else None
    new_entry = SensorCursor.decode(plan.cursor)
    if lake_table is not None:
        ttl_s = duration_seconds(target.table.sensor.lease_ttl)
        notes += sweep_leases(context.instance, lake_table, ttl_s=ttl_s)
    request = None
    if plan.skip_reason is None and lake_table is not None:
        request, more = _request(context, target, plan, lake_table)
        notes += more
    if new_entry is None:
        cursor.tables.pop(name, None)
    else:
        outstanding = _our_leases(context.instance, lake_table) if lake_table is not None else 0
        cursor.tables[name] = {**new_entry.entry(), **({"leases": outstanding} if outstanding else {})}
    if request is None and plan.skip_reason is None:
        return None, notes, f"snapshot {plan.snapshot_id}: nothing requested"
    return request, notes, plan.skip_reason


def _hint_decides(lake: LakeCatalogResource, name: str, entry: dict[str, Any] | None) -> bool:
    """Whether the table's LATEST hint alone can tell it is unchanged: it has an entry of this
    table's identity and no lease of ours to sweep (otherwise the tick reads more anyway)."""
    previous = SensorCursor.decode(entry)
    return (
        previous is not None
        and previous.identity.startswith(identity_prefix(lake.warehouse, name))
        and not (entry or {}).get("leases")
    )


def _our_leases(instance: dg.DagsterInstance, table: "FileStoreTable") -> int:
    """This instance's leases on ``table`` still held: the table is visited (and swept) every tick
    until they are released, even when it does not change."""
    prefix = f"lease-{lease_holder(instance)}-"
    return sum(1 for c in table.maintenance.consumers.consumers() if c.consumer_id.startswith(prefix))
