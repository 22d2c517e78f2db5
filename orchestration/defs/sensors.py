"""Snapshot sensors: one per table, requesting a run for each new snapshot that brought data.

The cursor is ``{"table": <identity>, "snapshot": <id>}``. A table's identity is its warehouse, its
name and the creation time of its first schema (``schema-0``), so after the warehouse moves (local
→ S3) or the table is dropped and recreated, the cursor no longer matches: the sensor says so in
the tick and starts over at the new table's newest snapshot instead of waiting for ids it has
already passed. Run keys carry a short digest of the identity for the same reason.

Before requesting a run, the sensor leases its snapshot (tag ``lake/lease``) so expiry keeps it
until the run finishes; :mod:`.leases` releases it.

A tick reads the ``LATEST`` hint and walks back from there, one snapshot file at a time, to the
cursor (at most ``WALK_LIMIT`` files), never the whole snapshot directory.
"""

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import dagster as dg

from lake_core import LakeError, SchemaError, SnapshotNotFoundError, TableNotFoundError
from orchestration.config import TableConfig, duration_seconds
from orchestration.defs.leases import LEASE_TAG, lease_holder, sweep_leases
from orchestration.defs.naming import snapshot_sensor_name
from orchestration.defs.resources import LakeCatalogResource

if TYPE_CHECKING:
    from dagster._core.definitions.unresolved_asset_job_definition import UnresolvedAssetJobDefinition

    from lake_core import Catalog, FileStoreTable

WALK_LIMIT = 1000  # snapshot files read per tick at most


@dataclass(frozen=True)
class SensorCursor:
    identity: str
    snapshot_id: int

    def encode(self) -> str:
        return json.dumps({"table": self.identity, "snapshot": self.snapshot_id}, sort_keys=True)

    @staticmethod
    def decode(text: str | None) -> "SensorCursor | None":
        """None for no cursor, or one this version cannot read (a bare id from before identities)."""
        try:
            data = json.loads(text) if text else None
            return SensorCursor(str(data["table"]), int(data["snapshot"])) if isinstance(data, dict) else None
        except (ValueError, KeyError, TypeError):
            return None


@dataclass(frozen=True)
class SnapshotPlan:
    snapshot_ids: tuple[int, ...]  # new data snapshots to request runs for, oldest first
    cursor: str | None  # the new cursor
    skip_reason: str | None
    identity: str | None = None
    notes: tuple[str, ...] = ()  # said in the tick's log (and in the skip reason when skipping)


def table_identity(warehouse: str, table: "FileStoreTable") -> str:
    """warehouse + table + creation time of its first schema: differs for a recreated table."""
    try:
        first = table.schema_manager.schema(0)
    except SchemaError:  # schema-0 removed by hand: the oldest one left still marks this incarnation
        first = table.schema_manager.schema(table.schema_manager.list_ids()[0])
    return f"{warehouse.rstrip('/')}/{table.identifier}@{first.time_millis}"


def run_key(table_name: str, snapshot_id: int, identity: str) -> str:
    digest = hashlib.sha1(identity.encode()).hexdigest()[:8]
    return f"{table_name}:{snapshot_id}@{digest}"


def _data_snapshots_since(table: "FileStoreTable", latest_id: int, seen: int, want: int) -> tuple[list[int], bool]:
    """Data snapshots in (seen, latest_id], newest ``want`` of them, walking back from the latest;
    also whether the walk stopped early (limit reached or older snapshots expired)."""
    found: list[int] = []
    sid = latest_id
    while sid > seen and len(found) < want:
        if latest_id - sid >= WALK_LIMIT:
            return sorted(found), True
        try:
            snap = table.snapshot(sid)
        except SnapshotNotFoundError:
            return sorted(found), seen > 0  # snapshots after the cursor expired unseen
        if snap.changes_data:  # not COMPACT, not a rescale's OVERWRITE: nothing new to derive
            found.append(sid)
        sid -= 1
    return sorted(found), False


def plan_snapshot_requests(
    catalog: "Catalog", warehouse: str, table_name: str, cursor: str | None, max_requests: int
) -> SnapshotPlan:
    try:
        table = catalog.get_table(table_name)
    except TableNotFoundError:
        return SnapshotPlan((), cursor, f"table {table_name} does not exist yet")
    except LakeError as e:  # e.g. its database does not exist yet
        return SnapshotPlan((), cursor, f"table {table_name} cannot be opened yet: {e}")
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
            (), cursor if not notes else None, f"table {table_name} has no snapshot yet", identity, tuple(notes)
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
            (), new_cursor, f"no new snapshot of {table_name} since {latest.id}", identity, tuple(notes)
        )
    # First tick (or after a reset): a derived table is rebuilt from a whole snapshot, so history is
    # not replayed; only the newest data snapshot is requested.
    seen, want = (previous.snapshot_id, max_requests) if previous is not None else (0, 1)
    ids, truncated = _data_snapshots_since(table, latest.id, seen, want)
    if truncated:
        notes.append(
            f"looked back {WALK_LIMIT} snapshots at most (or older ones expired); earlier snapshots are skipped"
        )
    if not ids:
        return SnapshotPlan(
            (), new_cursor, f"snapshots up to {latest.id} of {table_name} changed no data", identity, tuple(notes)
        )
    return SnapshotPlan(tuple(ids), new_cursor, None, identity, tuple(notes))


def build_snapshot_sensor(
    table: TableConfig,
    job: "UnresolvedAssetJobDefinition",
    run_config_for: Callable[[int], dict[str, Any]],
    *,
    description: str,
) -> dg.SensorDefinition:
    """The sensor requesting ``job`` (with ``run_config_for(snapshot_id)``) once per new data snapshot."""

    ttl_s = duration_seconds(table.sensor.lease_ttl)

    def evaluate(context: dg.SensorEvaluationContext, lake: LakeCatalogResource) -> dg.SensorResult:
        catalog = lake.catalog()
        try:
            plan = plan_snapshot_requests(
                catalog, lake.warehouse, table.name, context.cursor, table.sensor.max_requests_per_tick
            )
        except Exception:
            lake.check_access()  # a storage problem becomes one line naming bucket, endpoint, variables
            raise
        notes = list(plan.notes)
        lake_table = catalog.get_table(table.name) if plan.identity is not None else None
        if lake_table is not None:
            notes += sweep_leases(context.instance, lake_table, ttl_s=ttl_s)
        for note in notes:
            context.log.info(f"{table.name}: {note}")
        if plan.skip_reason is not None:
            return dg.SensorResult(skip_reason="; ".join([*notes, plan.skip_reason]), cursor=plan.cursor)
        assert plan.identity is not None and lake_table is not None
        requests = []
        for sid in plan.snapshot_ids:
            # Lease first, request second: expiry cannot remove the snapshot before the run reads it.
            try:
                lease = lake_table.maintenance.acquire_lease(
                    snapshot_id=sid, holder=lease_holder(context.instance), ttl=ttl_s
                )
            except LakeError as e:  # the snapshot expired since the plan
                context.log.warning(f"{table.name}: snapshot {sid} not requested: {e}")
                continue
            context.log.info(f"{table.name}: leased snapshot {sid} for its downstream run ({lease.consumer_id})")
            requests.append(
                dg.RunRequest(
                    run_key=run_key(table.name, sid, plan.identity),
                    run_config=run_config_for(sid),
                    tags={
                        "lake/table": table.name,
                        "lake/snapshot": str(sid),
                        "lake/table-identity": plan.identity,
                        LEASE_TAG: lease.consumer_id,
                    },
                )
            )
        if not requests:
            return dg.SensorResult(
                skip_reason="; ".join(
                    [*notes, f"snapshots {list(plan.snapshot_ids)} expired before they could be leased"]
                ),
                cursor=plan.cursor,
            )
        return dg.SensorResult(run_requests=requests, cursor=plan.cursor)

    return dg.sensor(
        name=snapshot_sensor_name(table.name),
        job=job,
        minimum_interval_seconds=table.sensor.minimum_interval_seconds,
        default_status=dg.DefaultSensorStatus.RUNNING if table.sensor.enabled else dg.DefaultSensorStatus.STOPPED,
        description=description,
    )(evaluate)
