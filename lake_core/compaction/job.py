"""Dedicated compaction: plan (metadata) -> execute units (threads here, or any worker) -> one
COMPACT commit (:func:`commit_compaction`). :class:`CompactionJob` is these parts as a
:class:`lake_core.distributed.DistributedJob`, which the local and the Spark runner execute.

A unit whose input files another job already compacted is *stale*: it is skipped and reported,
its output files deleted, and the other units still land. The commit is conflict-checked, so a
compaction racing a writer either lands whole or leaves nothing visible.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lake_core.commit.file_store_commit import FileStoreCommit
from lake_core.commit.messages import CommitMessage, with_base_snapshot
from lake_core.commit.uncommitted import remove_uncommitted
from lake_core.compaction.figures import BucketFigures
from lake_core.compaction.plan import (
    BucketCompactionUnit,
    CompactionPlan,
    level_counts,
    plan_compaction,
    planned_files,
    run_unit,
    ttl_lag_s,
)
from lake_core.compaction.result import CompactionResult
from lake_core.compaction.rewrite import UnitOutcome
from lake_core.distributed import DistributedJob, Progress, run_locally
from lake_core.errors import (
    CommitConflictError,
    CommitOutcomeUnknownError,
    CompactionVerificationError,
    LakeError,
    MaintenanceArgumentError,
)
from lake_core.format.gc_pause import paused_gc
from lake_core.schema.partition_selector import partition_text

if TYPE_CHECKING:
    from lake_core.commit.hooks import TableHooks
    from lake_core.store import FileStore

log = logging.getLogger(__name__)

_MAX_STALE_ROUNDS = 5


@dataclass(frozen=True)
class CompactionJob(DistributedJob[BucketCompactionUnit, UnitOutcome, CompactionResult]):
    """A planned dedicated compaction as a distributed job: one unit per (partition, bucket), one
    COMPACT commit. Picklable (the store and the table pickle), so Spark can ship it to its tasks.
    ``dry_run``: no unit runs, the commit reports the plan."""

    store: FileStore
    hooks: TableHooks  # what the commit calls above itself (the table's expiry after it lands)
    plan: CompactionPlan
    dry_run: bool = False

    @property
    def units(self) -> tuple[BucketCompactionUnit, ...]:
        return () if self.dry_run else self.plan.units

    def run_unit(self, unit: BucketCompactionUnit) -> UnitOutcome:
        return run_unit(self.store, unit)

    def commit(self, outcomes: Sequence[UnitOutcome]) -> CompactionResult:
        return commit_compaction(self.store, self.plan, outcomes, hooks=self.hooks, dry_run=self.dry_run)

    def abort(self, outcomes: Sequence[UnitOutcome]) -> None:
        abort_compaction(self.store, outcomes)

    def describe_unit(self, unit: BucketCompactionUnit) -> str:
        return f"compaction of {self.store.identifier}, {unit.describe()}"


def compaction_job(
    store: FileStore,
    *,
    hooks: TableHooks,
    full: bool = False,
    partitions=None,
    buckets: Iterable[int] | None = None,
    expire_records: bool = False,
    dry_run: bool = False,
    now_ms: int | None = None,
    options: Mapping[str, str] | None = None,
    verify: bool = False,
) -> CompactionJob:
    """Plan (metadata only) and return the job; arguments as :func:`compact`."""
    _check_arguments(store, verify=verify)
    plan = plan_compaction(
        store,
        full=full,
        partitions=partitions,
        buckets=buckets,
        expire_records=expire_records,
        now_ms=now_ms,
        options=options,
        verify=verify,
    )
    log.info(
        "compact %s: %d unit(s) planned over %d bucket(s)%s",
        store.identifier,
        len(plan.units),
        len(plan.buckets),
        " (dry run)" if dry_run else "",
    )
    return CompactionJob(store, hooks, plan, dry_run=dry_run)


def compact(
    store: FileStore,
    *,
    hooks: TableHooks,
    full: bool = False,
    partitions=None,
    buckets: Iterable[int] | None = None,
    dry_run: bool = False,
    expire_records: bool = False,
    parallelism: int = 2,
    now_ms: int | None = None,
    options: Mapping[str, str] | None = None,
    verify: bool = False,
    progress: Progress | None = None,
) -> CompactionResult:
    """Plan, execute and commit; ``progress(done, total)`` after each unit (``run_locally``); ``now_ms`` fixes the clock of record-level expiry (default: now);
    ``hooks``: what the commit calls above itself (the table's expiry after it lands);
    ``verify``: the units compute the figures ``result.check()`` compares (their written files read
    back: each unit takes about a third more CPU).

    The job a distributed executor runs (:class:`CompactionJob`), run here in threads."""
    _check_arguments(
        store, full=full, dry_run=dry_run, expire_records=expire_records, verify=verify, parallelism=parallelism
    )
    job = compaction_job(
        store,
        hooks=hooks,
        full=full,
        partitions=partitions,
        buckets=buckets,
        expire_records=expire_records,
        dry_run=dry_run,
        now_ms=now_ms,
        options=options,
        verify=verify,
    )
    return run_locally(job, parallelism=parallelism, progress=progress)


def commit_compaction(
    store: FileStore, plan: CompactionPlan, outcomes: Sequence[UnitOutcome], *, hooks: TableHooks, dry_run: bool = False
) -> CompactionResult:
    """One COMPACT commit of ``outcomes`` (``outcomes[i]`` is the result of ``plan.units[i]``, run
    anywhere) and the job's result. Units made stale by a concurrent compaction are skipped, with
    their reason, and their files deleted. ``dry_run``: commit nothing, report the plan."""
    with paused_gc():  # one message per bucket, by the hundred thousand: see lake_core.format.gc_pause
        return _commit_compaction(store, plan, outcomes, hooks=hooks, dry_run=dry_run)


def _commit_compaction(
    store: FileStore, plan: CompactionPlan, outcomes: Sequence[UnitOutcome], *, hooks: TableHooks, dry_run: bool
) -> CompactionResult:
    before_files = [f for b in plan.buckets for f in b.files]
    common: dict[str, Any] = dict(
        table=store.identifier,
        full=plan.full,
        expire_records=plan.expire_records,
        dry_run=dry_run,
        base_snapshot_id=plan.snapshot_id,
        units_planned=len(plan.units),
        levels_before=level_counts(before_files),
        ttl_lag_before_s=ttl_lag_s(before_files, plan.expiry, store),
        options=dict(plan.options),
        expiry_field=plan.expiry.field if plan.expiry else None,
        expiry_cutoff_s=plan.expiry.cutoff_s if plan.expiry else None,
        verify=plan.verify,
    )
    if dry_run or not plan.units:
        if outcomes:
            abort_compaction(store, outcomes)
            raise LakeError(
                f"compact of {store.identifier}: {len(outcomes)} executed unit(s) given to a "
                f"{'dry run' if dry_run else 'plan without units'}; their files were deleted"
            )
        # what the units would read and what they would only move up a level, as the run counts them
        planned = planned_files(store, plan.units)
        return CompactionResult(
            **common,
            files_read=len(planned.rewritten),
            bytes_read=sum(f.file_size for f in planned.rewritten),
            files_upgraded=len(planned.upgraded),
            rows_in=sum(f.row_count for f in planned.rewritten),
            levels_after=common["levels_before"],
            ttl_lag_after_s=common["ttl_lag_before_s"],
            duration_s=_elapsed(plan),
        )
    if len(outcomes) != len(plan.units):
        abort_compaction(store, outcomes)
        raise LakeError(
            f"compact of {store.identifier}: {len(outcomes)} outcome(s) for {len(plan.units)} planned "
            "unit(s); every unit must be executed (nothing was committed, their files were deleted)"
        )
    if plan.verify:
        _refuse_mismatched_units(store, plan, outcomes)
    committed, skipped, snapshot_id = commit_units(store, plan, list(outcomes), hooks=hooks)
    after_files = _files_after(before_files, [outcomes[i].message for i in committed])
    counts = [outcomes[i].counts for i in committed]
    msgs = [outcomes[i].message for i in committed]
    upgraded = {(f.file_name) for m in msgs for f in m.compact_before} & {
        f.file_name for m in msgs for f in m.compact_after
    }
    written = [f for m in msgs for f in m.compact_after if f.file_name not in upgraded]
    read = [f for m in msgs for f in m.compact_before if f.file_name not in upgraded]
    return CompactionResult(
        **common,
        snapshot_id=snapshot_id,
        units_run=len(committed),
        units_skipped=len(skipped),
        skipped=tuple(skipped),
        files_read=len(read),
        bytes_read=sum(f.file_size for f in read),
        files_written=len(written),
        bytes_written=sum(f.file_size for f in written),
        files_upgraded=sum(c.files_upgraded for c in counts),
        rows_in=sum(c.rows_in for c in counts),
        rows_out=sum(c.rows_out for c in counts),
        rows_dropped_deletes=sum(c.rows_deleted for c in counts),
        rows_expired=sum(c.rows_expired for c in counts),
        rows_null_time=sum(c.rows_null_time for c in counts),
        levels_after=level_counts(after_files),
        ttl_lag_after_s=ttl_lag_s(after_files, plan.expiry, store),
        duration_s=_elapsed(plan),
        figures=tuple(
            BucketFigures(
                partition_text(list(store.schema.partition_keys), list(plan.units[i].partition_values)),
                plan.units[i].bucket,
                figures,
                outcomes[i].counts.rows_expired,
            )
            for i in committed
            if (figures := outcomes[i].figures) is not None
        ),
    )


def _refuse_mismatched_units(store: FileStore, plan: CompactionPlan, outcomes: Sequence[UnitOutcome]) -> None:
    """A verified job commits only units whose figures agree, as rescale refuses before its commit:
    a unit that lost or changed rows would otherwise be the table's content until someone reads the
    check. All units are aborted (the job is one commit), each mismatch named."""
    keys = list(store.schema.partition_keys)
    problems = [
        f"{BucketFigures(partition_text(keys, list(unit.partition_values)), unit.bucket, figures).describe()}: {p}"
        for unit, outcome in zip(plan.units, outcomes, strict=True)
        if (figures := outcome.figures) is not None
        for p in figures.problems()
    ]
    if problems:
        abort_compaction(store, outcomes)
        raise CompactionVerificationError(
            f"compact of {store.identifier}: the in-task check failed, nothing was committed and the "
            f"written files were deleted: {'; '.join(problems)}"
        )


def abort_compaction(store: FileStore, outcomes: Sequence[UnitOutcome]) -> None:
    """Delete the files of executed, uncommitted units (another unit failed; nothing is committed)."""
    for outcome in outcomes:
        _discard(store, outcome.message)


def _elapsed(plan: CompactionPlan) -> float:
    return max(0.0, time.time() - plan.planned_at) if plan.planned_at else 0.0


def _check_arguments(store: FileStore, *, parallelism: int = 1, **flags) -> None:
    for name, v in flags.items():  # a truthy string would silently switch on a full rewrite
        if not isinstance(v, bool):
            raise MaintenanceArgumentError(f"{name} = {v!r} for compact of {store.identifier} must be True or False")
    if not isinstance(parallelism, int) or isinstance(parallelism, bool) or parallelism < 1:
        raise MaintenanceArgumentError(
            f"parallelism = {parallelism!r} for compact of {store.identifier} must be a positive integer"
        )


def _stale_reason(unit: BucketCompactionUnit, live: set) -> str | None:
    gone = [f.file_name for f in unit.files if (unit.partition, unit.bucket, f.level, f.file_name) not in live]
    if not gone:
        return None
    return (
        f"{unit.describe()}: stale, {len(gone)} input file(s) (e.g. {gone[0]}) were already compacted or "
        "removed by another job"
    )


def commit_units(store: FileStore, plan: CompactionPlan, outcomes: list[UnitOutcome], *, hooks: TableHooks):
    """One COMPACT commit of the executed units that are still valid (``outcomes[i]`` belongs to
    ``plan.units[i]``); stale units are skipped and their files deleted. Returns (committed unit
    indices, skip reasons, snapshot id or None)."""
    pending = list(range(len(plan.units)))
    skipped: list[str] = []
    try:
        for _round in range(_MAX_STALE_ROUNDS):
            latest = store.snapshot_manager.latest()
            live = {
                (e.partition, e.bucket, e.file.level, e.file.file_name)
                for e in store.manifest_store.live_files(latest).values()
            }
            still = []
            for i in pending:
                reason = _stale_reason(plan.units[i], live)
                if reason is None:
                    still.append(i)
                else:
                    skipped.append(reason)
                    log.warning("compact %s: skipping %s", store.identifier, reason)
                    _discard(store, outcomes[i].message)
            pending = still
            if not pending:
                return [], skipped, None
            try:
                # base_snapshot_id: the commit refuses deletes dropped here that rows landed since still need
                snaps = FileStoreCommit(store, hooks=hooks).commit(
                    [with_base_snapshot(outcomes[i].message, plan.snapshot_id) for i in pending]
                )
            except CommitConflictError:
                # Someone compacted between our check and our commit: re-check and drop what went
                # stale; a conflict that made nothing stale is final.
                if _round == _MAX_STALE_ROUNDS - 1 or not _any_stale(store, plan, pending):
                    raise
                continue
            return pending, skipped, (snaps[-1].id if snaps else None)
        raise CommitConflictError(f"compact of {store.identifier} kept losing to concurrent compactions")
    except CommitOutcomeUnknownError:
        raise  # the compaction may be part of the table: its files stay
    except BaseException:
        for i in pending:
            _discard(store, outcomes[i].message)
        raise


def _any_stale(store: FileStore, plan: CompactionPlan, pending: list[int]) -> bool:
    latest = store.snapshot_manager.latest()
    live = {(e.partition, e.bucket, e.file.level, e.file.file_name) for e in store.manifest_store.live_entries(latest)}
    return any(_stale_reason(plan.units[i], live) is not None for i in pending)


def _discard(store: FileStore, message: CommitMessage) -> None:
    remove_uncommitted(store, [message])  # keeps upgraded files: they are the unit's own inputs


def _files_after(before, messages: list[CommitMessage]):
    # data file names are unique per table (uuid + counter), so (level, name) identifies a file
    gone_names = {(f.level, f.file_name) for m in messages for f in m.compact_before}
    return [f for f in before if (f.level, f.file_name) not in gone_names] + [
        f for m in messages for f in m.compact_after
    ]
