"""Declarative automation of the time-driven maintenance operations: each table's snapshot
expiry, partition expiry, orphan cleanup and tags assets carry an ``AutomationCondition`` on the
policy's cron (``maintenance.cron``), which the UI shows on the asset; one automation sensor
evaluates them all, however many tables there are."""

from __future__ import annotations

import dagster as dg

from orchestration.config import TableConfig
from orchestration.defs.policy import SCHEDULED_OPERATIONS


def on_policy_cron(cron: str) -> dg.AutomationCondition:
    """Once per tick of ``cron`` (when no run of the asset is in progress), whether or not the table
    changed: expiry and orphan cleanup are due with time. The run applies the policy itself (and
    skips, with the reason, when there is nothing to do)."""
    return (
        dg.AutomationCondition.cron_tick_passed(cron).since_last_handled() & ~dg.AutomationCondition.in_progress()
    ).with_label(f"maintenance.cron {cron}")


def scheduled_condition(table: TableConfig, operation: str) -> dg.AutomationCondition | None:
    """The automation condition of a table's maintenance asset: the policy's cron for the
    time-driven operations, none for the others (the health sensor requests those)."""
    cron = table.maintenance.cron
    if cron is None or operation not in SCHEDULED_OPERATIONS:
        return None
    if not getattr(getattr(table.maintenance, operation), "enabled", True):
        return None  # disabled in the policy: nothing to run on the cron
    if operation == "partition_expiry" and table.maintenance.partition_expiry.expiration_time is None:
        return None
    return on_policy_cron(cron)
