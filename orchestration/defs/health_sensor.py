"""Automation from the ``maintenance:`` policy: one health sensor for all tables, and declarative
automation (a cron condition on each table's time-driven maintenance assets).

The **health sensor** visits the tables round-robin within the tick budget (``control.tick_budget``)
and, per table, reads its health from metadata only (``table.maintenance.health()``: snapshot hints,
manifest list, manifests) and evaluates the figure-driven operations of the policy
(:data:`policy.HEALTH_OPERATIONS`). Each operation that is due becomes a run of its maintenance
asset, with the reason in the run's tags (``lake/reason``) and in the tick's log; when nothing is
due anywhere, the tick is skipped and its skip reason lists the reasons. A table whose ``LATEST``
hint has not moved since its cursor entry, with nothing due then, is not read again until
``control.health_recheck`` has passed (TTL lag and snapshot age grow with time alone): an unchanged
table costs one hint read.

Run keys are ``<table>:<operation>:<snapshot id>@<table identity digest>``: the same table state
never requests the same operation twice once a run of it succeeded (a compaction that did nothing
leaves the snapshot as it was), and a new snapshot or a recreated table is a new state. An operation
that already has a run queued or in progress is not requested again. A run that failed (or was
canceled) is requested again for the same state, as ``<key>#retry-N``, up to
``sensor.failed_run_retries`` times, after ``sensor.retry_backoff`` doubled per attempt; then the
sensor waits for the table to change and says so.

Whenever a tick saw a table move (a new latest snapshot or identity), it also reports the
``lake/lake_health`` view (:mod:`.lake_health`) from the figures it keeps per table in its cursor.

The **time-driven operations** (:data:`policy.SCHEDULED_OPERATIONS`: snapshot and changelog expiry,
partition expiry, orphan cleanup, tags) carry an ``AutomationCondition`` on the table's ``maintenance.cron``
(:mod:`.automation`): the UI shows it on each of those assets, and one automation sensor
(``lake__maintenance_automation``) evaluates them all.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import dagster as dg

from lake_core import LakeError, TableNotFoundError
from orchestration.config import TableConfig, TablesConfig, duration_seconds
from orchestration.defs.lake_health import lake_health_metadata, last_maintenance, summarize
from orchestration.defs.naming import (
    AUTOMATION_SENSOR,
    HEALTH_SENSOR,
    LAKE_HEALTH_ASSET,
    REASON_TAG,
    maintenance_asset_key,
)
from orchestration.defs.policy import (
    HEALTH_OPERATIONS,
    SCHEDULED_OPERATIONS,
    Decision,
    evaluate_policy,
    health_arguments,
)
from orchestration.defs.resources import LakeCatalogResource
from orchestration.defs.sensors import identity_prefix, table_identity
from orchestration.defs.ticks import LakeCursor, TickBudget, Visit, latest_hints, round_robin, table_failure

if TYPE_CHECKING:
    from lake_core import Catalog, TableHealth

OPERATION_TAG = "lake/operation"
TRIGGER_TAG = "lake/trigger"
STATE_TAG = "lake/health_state"  # the state key every attempt of one request carries
_TAG_LIMIT = 4000  # a reason longer than this is cut in the tag (the tick's log keeps it whole)


@dataclass(frozen=True)
class HealthEvaluation:
    """One evaluation of a table's policy: the decisions, and what the table looked like."""

    table: str
    decisions: tuple[Decision, ...]
    health: TableHealth | None
    identity: str | None
    missing: str | None = None  # why the table could not be read (then no decisions)


def evaluate_table(
    catalog: Catalog, warehouse: str, table: TableConfig, operations: tuple[str, ...]
) -> HealthEvaluation:
    """Health of ``table`` (metadata only) and the policy's decisions for ``operations``."""
    try:
        lake_table = catalog.get_table(table.name)
    except TableNotFoundError:
        return HealthEvaluation(table.name, (), None, None, f"table {table.name} does not exist yet")
    except LakeError as e:
        return HealthEvaluation(table.name, (), None, None, f"table {table.name} cannot be opened yet: {e}")
    policy = table.maintenance
    health = lake_table.maintenance.health(**health_arguments(policy))
    return HealthEvaluation(
        table.name, tuple(evaluate_policy(health, policy, operations)), health, table_identity(warehouse, lake_table)
    )


def health_run_key(table_name: str, operation: str, snapshot_id: int | None, identity: str) -> str:
    digest = hashlib.sha1(identity.encode()).hexdigest()[:8]
    return f"{table_name}:{operation}:{snapshot_id}@{digest}"


def _tags(table_name: str, decision: Decision, trigger: str, snapshot_id: int | None) -> dict[str, str]:
    return {
        "lake/table": table_name,
        OPERATION_TAG: decision.operation,
        TRIGGER_TAG: trigger,
        REASON_TAG: decision.reason[:_TAG_LIMIT],
        "lake/snapshot": str(snapshot_id),
    }


def _active_run(instance: dg.DagsterInstance, table_name: str, operation: str) -> dg.DagsterRun | None:
    runs = instance.get_runs(
        dg.RunsFilter(
            tags={"lake/table": table_name, OPERATION_TAG: operation},
            statuses=[
                dg.DagsterRunStatus.NOT_STARTED,
                dg.DagsterRunStatus.QUEUED,
                dg.DagsterRunStatus.STARTING,
                dg.DagsterRunStatus.STARTED,
            ],
        ),
        limit=1,
    )
    return runs[0] if runs else None


@dataclass(frozen=True)
class RetryPolicy:
    retries: int = 2
    backoff_s: float = 300.0


def _attempts(instance: dg.DagsterInstance, state_key: str) -> list[dg.RunRecord]:
    """Every run requested for this table state, newest first (the first attempt's run key is the
    state key; every attempt carries the state tag)."""
    records = {
        r.dagster_run.run_id: r
        for tags in ({STATE_TAG: state_key}, {"dagster/run_key": state_key})
        for r in instance.get_run_records(dg.RunsFilter(tags=tags))
    }
    return sorted(records.values(), key=lambda r: r.create_timestamp, reverse=True)


def _retry_decision(
    instance: dg.DagsterInstance, state_key: str, snapshot_id: int | None, retry: RetryPolicy, now: float
) -> tuple[str | None, str | None]:
    """(run key to request, None) or (None, why not): the first attempt, a retry of a failed one, or
    nothing because a run succeeded, the retries are spent or the backoff has not passed."""
    attempts = _attempts(instance, state_key)
    if not attempts:
        return state_key, None
    record = attempts[0]
    last = record.dagster_run
    if last.status == dg.DagsterRunStatus.SUCCESS:
        return None, (
            f"run {last.run_id[:8]} already ran for snapshot {snapshot_id} (SUCCESS); waiting for the table to change"
        )
    failures = len(attempts)
    if failures > retry.retries:
        return None, (
            f"{failures} runs for snapshot {snapshot_id} failed (last {last.run_id[:8]}, "
            f"{last.status.value}); retries spent (sensor.failed_run_retries = {retry.retries}), waiting "
            "for the table to change"
        )
    ended = record.end_time if record.end_time is not None else record.create_timestamp.timestamp()
    wait = retry.backoff_s * 2 ** (failures - 1) - (now - ended)
    if wait > 0:
        return None, (
            f"run {last.run_id[:8]} for snapshot {snapshot_id} {last.status.value}; retry {failures} of "
            f"{retry.retries} in {wait:.0f} s"
        )
    return f"{state_key}#retry-{failures}", None


def plan_health_requests(
    instance: dg.DagsterInstance,
    evaluation: HealthEvaluation,
    available: frozenset[str],
    *,
    max_requests: int,
    retry: RetryPolicy = RetryPolicy(),
    now: float | None = None,
) -> tuple[list[dg.RunRequest], list[str]]:
    """The runs to request and the reasons of everything not requested (for the skip reason)."""
    now = time.time() if now is None else now
    requests: list[dg.RunRequest] = []
    skipped: list[str] = []
    health = evaluation.health
    assert health is not None and evaluation.identity is not None
    for d in evaluation.decisions:
        if not d.request:
            skipped.append(d.reason)
            continue
        if d.operation not in available:
            skipped.append(
                f"{d.reason} — due, but this code location has no '{d.operation}' asset for {evaluation.table}"
            )
            continue
        key = health_run_key(evaluation.table, d.operation, health.snapshot_id, evaluation.identity)
        active = _active_run(instance, evaluation.table, d.operation)
        if active is not None:
            skipped.append(f"{d.reason} — due, but run {active.run_id[:8]} is already {active.status.value}")
            continue
        run_key, why_not = _retry_decision(instance, key, health.snapshot_id, retry, now)
        if run_key is None:
            skipped.append(f"{d.reason} — due, but {why_not}")
            continue
        if len(requests) >= max_requests:
            skipped.append(f"{d.reason} — due, next tick (max_requests_per_tick reached)")
            continue
        requests.append(
            dg.RunRequest(
                run_key=run_key,
                asset_selection=[maintenance_asset_key(evaluation.table, d.operation)],
                tags={**_tags(evaluation.table, d, "health_sensor", health.snapshot_id), STATE_TAG: key},
            )
        )
    return requests, skipped


def _health_keys(available: dict[str, frozenset[str]]) -> list[dg.AssetKey]:
    return [maintenance_asset_key(name, op) for name in sorted(available) for op in sorted(available[name])]


@dataclass
class _TableTick:
    requests: list[dg.RunRequest]
    skipped: list[str]  # the reasons of what was not requested
    entry: dict | None  # the table's new cursor entry (None: drop it)
    read: bool  # the table's health was read in this tick


def _hint_decides(lake: LakeCatalogResource, name: str, entry: dict | None, *, recheck_s: float, now: float) -> bool:
    """Whether the table's LATEST hint alone can tell it needs no reading: it was read recently as
    this identity and nothing was due then (otherwise the tick reads its health anyway)."""
    return bool(
        entry
        and not entry.get("due")
        and str(entry.get("table", "")).startswith(identity_prefix(lake.warehouse, name))
        and now - float(entry.get("at", 0)) < recheck_s
    )


def _tick_table(
    context: dg.SensorEvaluationContext,
    lake: LakeCatalogResource,
    catalog: Catalog,
    table: TableConfig,
    ours: frozenset[str],
    entry: dict | None,
    *,
    latest: Callable[[str], int | None],
    recheck_s: float,
    now: float,
) -> _TableTick:
    """One table's part of a health tick; ``latest``: the table's LATEST hint (read ahead by the tick)."""
    if (
        entry
        and _hint_decides(lake, table.name, entry, recheck_s=recheck_s, now=now)
        and (latest(table.name) == entry.get("snapshot"))
    ):
        return _TableTick([], [], entry, False)  # unchanged since it was last read, nothing due then
    evaluation = evaluate_table(catalog, lake.warehouse, table, HEALTH_OPERATIONS)
    if evaluation.missing is not None:
        return _TableTick([], [evaluation.missing], None, False)
    for d in evaluation.decisions:
        context.log.info(f"{table.name}: " + ("request " if d.request else "skip ") + d.reason)
    retry = RetryPolicy(table.sensor.failed_run_retries, duration_seconds(table.sensor.retry_backoff))
    requests, skipped = plan_health_requests(
        context.instance, evaluation, ours, max_requests=table.sensor.max_requests_per_tick, retry=retry, now=now
    )
    assert evaluation.health is not None
    new_entry = {
        "table": evaluation.identity,
        "snapshot": evaluation.health.snapshot_id,
        "at": now,
        "due": any(d.request for d in evaluation.decisions),
        "health": summarize(evaluation.health, table),
    }
    return _TableTick(requests, skipped, new_entry, True)


def build_health_sensor(
    config: TablesConfig, available: dict[str, frozenset[str]], *, lake_health: bool = True
) -> dg.SensorDefinition:
    """The lake's health sensor; ``available``: per table, the operations whose maintenance asset
    exists; ``lake_health``: report the lake-wide view (the asset exists)."""
    tables = {t.name: t for t in config.tables}
    names = sorted(tables)
    ours = {name: available.get(name, frozenset()) & frozenset(HEALTH_OPERATIONS) for name in names}
    budget_s = duration_seconds(config.control.tick_budget)
    recheck_s = duration_seconds(config.control.health_recheck)

    def evaluate(context: dg.SensorEvaluationContext, lake: LakeCatalogResource) -> dg.SensorResult:
        cursor = LakeCursor.decode(context.cursor)
        budget, visit = TickBudget(budget_s), Visit(len(names))
        now = time.time()
        catalog = lake.catalog()
        requests: list[dg.RunRequest] = []
        reasons: list[str] = []
        read = unchanged = changed = disabled = 0
        # the hints read ahead: those that decide alone (a table to be read anyway needs none)
        polled = {
            n
            for n in names
            if tables[n].sensor.enabled and _hint_decides(lake, n, cursor.tables.get(n), recheck_s=recheck_s, now=now)
        }
        with latest_hints(catalog, names, cursor.next, polled) as hints:
            for name in round_robin(names, cursor.next, budget, visit):
                table = tables[name]
                if not table.sensor.enabled:
                    disabled += 1
                    continue
                entry = cursor.tables.get(name)
                try:
                    tick = _tick_table(
                        context, lake, catalog, table, ours[name], entry, latest=hints.get, recheck_s=recheck_s, now=now
                    )
                except Exception as error:  # noqa: BLE001 - one broken table must not stop the others' ticks
                    failure = table_failure(lake, name, error)  # a storage problem fails the tick, in one line
                    context.log.error(failure)
                    reasons.append(failure)
                    continue
                requests += tick.requests
                read += tick.read
                unchanged += tick.entry is entry and not tick.read
                changed += tick.read and _state(entry) != _state(tick.entry)
                if tick.skipped:
                    reasons.append("; ".join(tick.skipped))
                if tick.entry is None:
                    cursor.tables.pop(name, None)
                else:
                    cursor.tables[name] = tick.entry
        cursor.next = visit.next
        summary = f"{visit.summary(budget)}: {read} read, {unchanged} unchanged, {len(requests)} run(s) requested" + (
            f", {disabled} with the sensor disabled" if disabled else ""
        )
        context.log.info(summary)
        # the view is reported when a table moved (or never before), not on every re-read of a due table
        report = lake_health and (changed or (read and not cursor.extra.get("lake_health_reported")))
        events = _lake_health_events(lake, cursor, names) if report else []
        if events:
            cursor.extra["lake_health_reported"] = True
        if not requests:
            return dg.SensorResult(
                skip_reason="; ".join([*reasons, summary]), cursor=cursor.encode(), asset_events=events
            )
        return dg.SensorResult(run_requests=requests, cursor=cursor.encode(), asset_events=events)

    keys = _health_keys(ours)
    kwargs = {"target": dg.AssetSelection.assets(*keys)} if keys else {}
    enabled = any(t.sensor.enabled for t in config.tables)
    return dg.sensor(
        name=HEALTH_SENSOR,
        minimum_interval_seconds=min(t.sensor.minimum_interval_seconds for t in config.tables),
        default_status=dg.DefaultSensorStatus.RUNNING if enabled else dg.DefaultSensorStatus.STOPPED,
        description=f"Reads the health of each of the {len(names)} table(s) (metadata only; an unchanged table "
        f"costs one LATEST-hint read) and requests the maintenance its policy calls for "
        f"({', '.join(HEALTH_OPERATIONS)}); the reason is in each run's '{REASON_TAG}' tag, or in the skip "
        f"reason when nothing is due. A tick stops after {config.control.tick_budget}; the next one carries on "
        "where it stopped. Reports the lake_health view when a table changed.",
        **kwargs,
    )(evaluate)


def _state(entry: dict | None) -> tuple:
    """What makes a table's row of the lake_health view change: its identity and latest snapshot."""
    return (entry or {}).get("table"), (entry or {}).get("snapshot")


def _lake_health_events(lake: LakeCatalogResource, cursor: LakeCursor, names: list[str]) -> list:
    """The lake_health view from the figures in the cursor, as a reported materialization."""
    summaries: dict[str, dict | str] = {}
    for name in names:
        entry = cursor.tables.get(name)
        summaries[name] = entry["health"] if entry and "health" in entry else "not read yet"
    try:
        last = last_maintenance(lake)
    except (LakeError, OSError) as e:  # the view without the last runs beats no view
        last = {}
        summaries["(maintenance ledger)"] = f"unreadable: {e}"
    return [dg.AssetMaterialization(asset_key=LAKE_HEALTH_ASSET, metadata=lake_health_metadata(summaries, last))]


def build_automation_sensor(keys: list[dg.AssetKey]) -> dg.AutomationConditionSensorDefinition | None:
    """The one sensor evaluating the cron conditions of every table's time-driven assets."""
    if not keys:
        return None
    return dg.AutomationConditionSensorDefinition(
        name=AUTOMATION_SENSOR,
        target=dg.AssetSelection.assets(*keys),
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="Evaluates the maintenance policy's cron (maintenance.cron) on each table's time-driven "
        "maintenance assets (snapshot expiry, partition expiry, orphan cleanup, tags).",
    )


def health_definitions(config: TablesConfig, maintenance_keys, *, lake_health: bool = True) -> dg.Definitions:
    """The lake's health sensor and automation sensor, targeting the maintenance assets in
    ``maintenance_keys`` (the asset keys of the maintenance assets that exist)."""
    keys = set(maintenance_keys)
    available = {
        t.name: frozenset(
            op for op in (*HEALTH_OPERATIONS, *SCHEDULED_OPERATIONS) if maintenance_asset_key(t.name, op) in keys
        )
        for t in config.tables
    }
    scheduled = [
        maintenance_asset_key(t.name, op)
        for t in config.tables
        if t.maintenance.cron is not None
        for op in SCHEDULED_OPERATIONS
        if op in available[t.name]
    ]
    automation = build_automation_sensor(scheduled)
    sensors: list = [build_health_sensor(config, available, lake_health=lake_health)]
    if automation is not None:
        sensors.append(automation)
    return dg.Definitions(sensors=sensors)
