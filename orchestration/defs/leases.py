"""Leases on the snapshots that requested downstream runs read, so snapshot expiry cannot delete a
snapshot a pending or running run needs.

The lease is lake_core's (``table.maintenance.acquire_lease``): a Paimon consumer file
``consumer/consumer-lease-<holder>-<expiry millis>-<random>`` whose ``nextSnapshot`` is the snapshot,
which our expiry and Java Paimon's ``ExpireSnapshotsImpl`` both honour.

- The snapshot sensor takes the lease *before* it requests the run and puts its id in the run's
  ``lake/lease`` tag.
- The run-status sensors below release it when the run succeeds, fails or is canceled.
- Each snapshot-sensor tick sweeps this sensor's leases: a lease whose run has finished (an event
  the run-status sensors missed, e.g. while stopped) or that no run carries after ``VANISHED_AFTER_S``
  (the request was dropped: a duplicate run key, a deleted run) is released.
- The lease's TTL (``sensor.lease_ttl`` of the table) is the last safety net: past it, expiry
  ignores the lease even if nothing released it.
"""

from __future__ import annotations

import hashlib
import time
from typing import TYPE_CHECKING

import dagster as dg

from lake_core import LakeError
from orchestration.defs.resources import LakeCatalogResource

if TYPE_CHECKING:
    from lake_core import Catalog, FileStoreTable

LEASE_TAG = "lake/lease"
LEGACY_HOLDER = "dagster-snapshot-sensor"  # leases taken before holders named their instance
VANISHED_AFTER_S = 600  # a requested run appears within seconds; after this, no run will carry it
FINISHED = frozenset({dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED})


def release_run_lease(catalog: Catalog, run: dg.DagsterRun) -> str | None:
    """Release the lease named in ``run``'s tags; a line for the log (None: the run holds none)."""
    lease_id, table_name = run.tags.get(LEASE_TAG), run.tags.get("lake/table")
    if not lease_id or not table_name:
        return None
    try:
        table = catalog.get_table(table_name)
    except LakeError as e:  # dropped meanwhile: its consumer files went with it
        return f"{lease_id} of run {run.run_id[:8]}: {table_name} cannot be opened ({e}); nothing to release"
    released = table.maintenance.release_lease(consumer_id=lease_id)
    state = "released" if released else "already gone"
    return (
        f"{lease_id} on snapshot {run.tags.get('lake/snapshot')} of {table_name} {state} "
        f"(run {run.run_id[:8]} {run.status.value})"
    )


def lease_holder(instance: dg.DagsterInstance) -> str:
    """The lease holder name of this Dagster instance: two instances (two deployments on one
    warehouse) each sweep only their own leases, since neither can see the other's runs."""
    where = getattr(instance, "root_directory", None) or repr(instance.run_storage)
    return f"dagster-{hashlib.sha1(str(where).encode()).hexdigest()[:12]}"


def sweep_leases(
    instance: dg.DagsterInstance, table: FileStoreTable, *, ttl_s: float, now_ms: int | None = None
) -> list[str]:
    """Release this instance's leases on ``table`` whose run finished or never appeared."""
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    notes = []
    prefixes = (f"lease-{lease_holder(instance)}-", f"lease-{LEGACY_HOLDER}-")
    for consumer in table.maintenance.consumers.consumers():
        if consumer.lease_expires_ms is None or not consumer.consumer_id.startswith(prefixes):
            continue
        runs = instance.get_runs(dg.RunsFilter(tags={LEASE_TAG: consumer.consumer_id}), limit=1)
        if runs and runs[0].status not in FINISHED:
            continue
        age_s = (now_ms - (consumer.lease_expires_ms - ttl_s * 1000)) / 1000
        if not runs and age_s < VANISHED_AFTER_S:
            continue  # its run may not be created yet
        why = (
            f"run {runs[0].run_id[:8]} is {runs[0].status.value}" if runs else f"no run carries it after {age_s:.0f} s"
        )
        if table.maintenance.release_lease(consumer_id=consumer.consumer_id):
            notes.append(f"released {consumer.consumer_id} on snapshot {consumer.next_snapshot}: {why}")
    return notes


def build_lease_release_sensors(jobs, *, prefix: str) -> list[dg.SensorDefinition]:
    """Run-status sensors releasing the lease of each run of ``jobs`` once it succeeds, fails or is
    canceled."""
    sensors = []
    for status in (dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED):

        def release(context: dg.RunStatusSensorContext, lake: LakeCatalogResource):
            line = release_run_lease(lake.catalog(), context.dagster_run)
            if line is None:
                return dg.SkipReason(f"run {context.dagster_run.run_id[:8]} holds no lease")
            context.log.info(line)
            return dg.SkipReason(line)  # nothing to launch; the line is the tick's message

        sensors.append(
            dg.run_status_sensor(
                run_status=status,
                name=f"{prefix}lease_release_on_{status.value.lower()}",
                monitored_jobs=jobs,
                default_status=dg.DefaultSensorStatus.RUNNING,
                description=f"Releases the snapshot lease (tag '{LEASE_TAG}') of a downstream run once it is "
                f"{status.value}.",
            )(release)
        )
    return sensors
