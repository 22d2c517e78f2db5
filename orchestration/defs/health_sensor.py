"""Automation from the ``maintenance:`` policy: a health sensor and a cron schedule per table.

The **health sensor** reads the table's health from metadata only (``table.maintenance.health()``:
snapshot hints, manifest list, manifests) and evaluates the figure-driven operations of the policy
(:data:`policy.HEALTH_OPERATIONS`). Each operation that is due becomes a run of its maintenance
asset, with the reason in the run's tags (``lake/reason``) and in the tick's log; when nothing is
due, the tick is skipped and its skip reason lists every operation's reason.

Run keys are ``<table>:<operation>:<snapshot id>@<table identity digest>``: the same table state
never requests the same operation twice once a run of it succeeded (a compaction that did nothing
leaves the snapshot as it was), and a new snapshot or a recreated table is a new state. An operation
that already has a run queued or in progress is not requested again. A run that failed (or was
canceled) is requested again for the same state, as ``<key>#retry-N``, up to
``sensor.failed_run_retries`` times, after ``sensor.retry_backoff`` doubled per attempt; then the
sensor waits for the table to change and says so.

The **schedule** (the policy's ``cron``) requests the time-driven operations
(:data:`policy.SCHEDULED_OPERATIONS`: snapshot expiry, partition expiry, orphan cleanup) that the
policy enables, with their reasons, and skips with the reasons otherwise.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import dagster as dg

from lake_core import LakeError, TableNotFoundError
from orchestration.config import TableConfig, duration_seconds
from orchestration.defs.naming import REASON_TAG, health_sensor_name, maintenance_asset_key, maintenance_schedule_name
from orchestration.defs.policy import (
    HEALTH_OPERATIONS,
    SCHEDULED_OPERATIONS,
    Decision,
    evaluate_policy,
    health_arguments,
)
from orchestration.defs.resources import LakeCatalogResource
from orchestration.defs.sensors import table_identity

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


def _evaluate(lake: LakeCatalogResource, table: TableConfig, operations: tuple[str, ...]) -> HealthEvaluation:
    try:
        return evaluate_table(lake.catalog(), lake.warehouse, table, operations)
    except Exception:
        lake.check_access()  # a storage problem becomes one line naming bucket, endpoint, variables
        raise


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


def _target(table: TableConfig, operations: frozenset[str]):
    keys = [maintenance_asset_key(table.name, op) for op in sorted(operations)]
    return dg.AssetSelection.assets(*keys) if keys else None


def build_health_sensor(table: TableConfig, available: frozenset[str]) -> dg.SensorDefinition:
    """The table's health sensor; ``available``: operations whose maintenance asset exists."""
    ours = available & frozenset(HEALTH_OPERATIONS)

    def evaluate(context: dg.SensorEvaluationContext, lake: LakeCatalogResource):
        evaluation = _evaluate(lake, table, HEALTH_OPERATIONS)
        if evaluation.missing is not None:
            return dg.SkipReason(evaluation.missing)
        for d in evaluation.decisions:
            context.log.info(("request " if d.request else "skip ") + d.reason)
        retry = RetryPolicy(table.sensor.failed_run_retries, duration_seconds(table.sensor.retry_backoff))
        requests, skipped = plan_health_requests(
            context.instance, evaluation, ours, max_requests=table.sensor.max_requests_per_tick, retry=retry
        )
        if not requests:
            return dg.SkipReason("; ".join(skipped))
        return dg.SensorResult(run_requests=requests)

    kwargs = {"target": _target(table, ours)} if ours else {}
    return dg.sensor(
        name=health_sensor_name(table.name),
        minimum_interval_seconds=table.sensor.minimum_interval_seconds,
        default_status=dg.DefaultSensorStatus.RUNNING if table.sensor.enabled else dg.DefaultSensorStatus.STOPPED,
        description=f"Reads the health of {table.name} (metadata only) and requests the maintenance its policy "
        f"calls for ({', '.join(HEALTH_OPERATIONS)}); the reason is in each run's '{REASON_TAG}' tag, "
        "or in the skip reason when nothing is due.",
        **kwargs,
    )(evaluate)


def build_maintenance_schedule(table: TableConfig, available: frozenset[str]) -> dg.ScheduleDefinition | None:
    """The policy's cron schedule of the time-driven operations; None without a cron or assets."""
    cron = table.maintenance.cron
    ours = available & frozenset(SCHEDULED_OPERATIONS)
    if cron is None or not ours:
        return None
    operations = tuple(op for op in SCHEDULED_OPERATIONS if op in ours)

    def evaluate(context: dg.ScheduleEvaluationContext, lake: LakeCatalogResource):
        evaluation = _evaluate(lake, table, operations)
        if evaluation.missing is not None:
            return dg.SkipReason(evaluation.missing)
        tick = context.scheduled_execution_time
        stamp = tick.strftime("%Y-%m-%dT%H:%M") if tick is not None else "manual"
        snapshot_id = evaluation.health.snapshot_id if evaluation.health else None
        requests = [
            dg.RunRequest(
                run_key=f"{table.name}:{d.operation}:{stamp}",
                asset_selection=[maintenance_asset_key(table.name, d.operation)],
                tags=_tags(table.name, d, f"schedule {cron}", snapshot_id),
            )
            for d in evaluation.decisions
            if d.request
        ]
        for d in evaluation.decisions:
            context.log.info(("request " if d.request else "skip ") + d.reason)
        if not requests:
            return dg.SkipReason("; ".join(d.reason for d in evaluation.decisions))
        return requests

    return dg.schedule(
        name=maintenance_schedule_name(table.name),
        cron_schedule=cron,
        target=_target(table, ours),
        default_status=dg.DefaultScheduleStatus.RUNNING,
        description=f"The maintenance policy's cron ({cron}) for {table.name}: {', '.join(operations)} when the "
        "policy enables them; reasons in each run's tags.",
    )(evaluate)


def health_definitions(table: TableConfig, maintenance_keys) -> dg.Definitions:
    """The health sensor and the schedule of one table, targeting the maintenance assets in
    ``maintenance_keys`` (the asset keys of the table's maintenance assets that exist)."""
    keys = set(maintenance_keys)
    available = frozenset(
        op for op in (*HEALTH_OPERATIONS, *SCHEDULED_OPERATIONS) if maintenance_asset_key(table.name, op) in keys
    )
    schedule = build_maintenance_schedule(table, available)
    return dg.Definitions(
        sensors=[build_health_sensor(table, available)], schedules=[schedule] if schedule is not None else []
    )
