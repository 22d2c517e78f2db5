"""Planning a dedicated compaction from metadata only: per selected (partition, bucket), the
levels and the pick (universal, full, or record expiry) become a frozen, picklable
:class:`BucketCompactionUnit`; :func:`run_unit` runs one anywhere (thread, process, Spark task).

A :class:`BucketCompactionUnit` is a dedicated job's unit of work (one bucket); the picker's
:class:`~lake_core.compaction.picker.CompactUnit` (Java's name) is what it carries inside: the
files and the output level chosen for that bucket.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from lake_core.bucket.selection import bucket_selection
from lake_core.compaction.picker import (
    CompactUnit,
    Pick,
    UniversalConfig,
    drop_delete,
    force_pick_level0,
    pick_full,
    pick_universal,
    worth_running,
)
from lake_core.compaction.planning_options import with_planning_options
from lake_core.compaction.record_expiry import RecordExpiry, expired_file_test
from lake_core.compaction.rewrite import UnitOutcome, compact_actions, run_compact_unit
from lake_core.compaction.task import Rewrite
from lake_core.deletion_vectors.maintainer import BucketDeletionVectors, bucket_dv_entries, needs_full_for_dv
from lake_core.errors import InvalidOptionError, LakeError, PartitionNotFoundError
from lake_core.format.gc_pause import paused_gc
from lake_core.lsm.levels import Levels, key_decoder
from lake_core.manifest.metadata import DataFileMeta, IndexManifestEntry, ManifestEntry
from lake_core.paths import FileNamer
from lake_core.schema.partition_selector import PartitionSelector

if TYPE_CHECKING:
    from lake_core.manifest.store import ManifestStore
    from lake_core.snapshot.snapshot import Snapshot
    from lake_core.store import FileStore


@dataclass(frozen=True)
class BucketCompactionUnit:
    """One (partition, bucket)'s compaction in a dedicated job: which files, to which level,
    dropping retractions or not (the picker's ``CompactUnit`` plus where and how to run it)."""

    partition: bytes
    partition_values: tuple
    bucket: int
    total_buckets: int
    files: tuple[DataFileMeta, ...]
    output_level: int
    max_level: int
    drop_delete: bool
    reason: str
    expiry: RecordExpiry | None = None
    lookup_files: tuple[DataFileMeta, ...] = ()  # first-row, deletion vectors: the bucket's files outside the unit
    dv_index: tuple[IndexManifestEntry, ...] | None = None  # deletion vectors: the bucket's DV index files
    verify: bool = False  # compute the in-task check's figures (on the unit: a Spark task sees only its units)

    @property
    def bytes(self) -> int:
        return sum(f.file_size for f in self.files)

    @property
    def rows(self) -> int:
        return sum(f.row_count for f in self.files)

    def describe(self) -> str:
        return (
            f"partition {self.partition_values} bucket {self.bucket}: {len(self.files)} file(s) -> "
            f"level {self.output_level} ({self.reason})"
        )


@dataclass(frozen=True)
class BucketLevels:
    """Files per level of one bucket (level -> count), for before/after reporting."""

    partition: bytes
    bucket: int
    files: tuple[DataFileMeta, ...]


@dataclass(frozen=True)
class CompactionPlan:
    """What one dedicated compaction will do, from metadata only; picklable, so a driver can ship
    its units to workers (one task per unit) and commit their outcomes once."""

    snapshot_id: int | None
    units: tuple[BucketCompactionUnit, ...]
    buckets: tuple[BucketLevels, ...]  # every selected bucket, as planned
    expiry: RecordExpiry | None
    full: bool = False
    expire_records: bool = False
    options: tuple[tuple[str, str], ...] = ()  # dynamic options the plan was made with
    planned_at: float = 0.0  # wall clock (s) when planning started: the job's duration counts from it
    verify: bool = False  # the units compute the in-task check's figures (see .figures)


def run_unit(store: FileStore, unit: BucketCompactionUnit) -> UnitOutcome:
    """Run one unit: writes its new files, commits nothing; its CommitMessage, row counters and,
    when the unit was planned with ``verify``, the figures of the in-task check (:mod:`.figures`)."""
    cu = CompactUnit(unit.output_level, unit.files, unit.reason)
    vectors = (
        BucketDeletionVectors.load(store, unit.partition, unit.bucket, unit.dv_index)
        if unit.dv_index is not None
        else None
    )
    out = run_compact_unit(
        store,
        unit.partition,
        unit.bucket,
        unit.total_buckets,
        cu,
        drop_delete=unit.drop_delete,
        max_level=unit.max_level,
        expiry=unit.expiry,
        lookup_files=unit.lookup_files,
        vectors=vectors,
        figures=unit.verify,
    )
    return with_vector_changes(store, out, vectors, FileNamer())


@dataclass(frozen=True)
class PlannedFiles:
    """What running the units of a plan will do with their files, from metadata only: the files
    rewritten (read, merged, written anew) and those upgraded (moved up a level, not read)."""

    rewritten: tuple[DataFileMeta, ...]
    upgraded: tuple[DataFileMeta, ...]


def planned_files(store: FileStore, units: Sequence[BucketCompactionUnit]) -> PlannedFiles:
    """The files ``units`` will rewrite and upgrade when run (:func:`run_unit`, the same decision)."""
    rewritten: list[DataFileMeta] = []
    upgraded: list[DataFileMeta] = []
    for unit in units:
        actions = compact_actions(
            store,
            CompactUnit(unit.output_level, unit.files, unit.reason),
            drop_delete=unit.drop_delete,
            max_level=unit.max_level,
            expiry=unit.expiry,
            lookup_files=unit.lookup_files,
            vectors=unit.dv_index is not None,
        )
        for action in actions:
            if isinstance(action, Rewrite):
                rewritten += [f for section in action.sections for f in section]
            else:
                upgraded.append(action.file)
    return PlannedFiles(tuple(rewritten), tuple(upgraded))


def with_vector_changes(
    store: FileStore, out: UnitOutcome, vectors: BucketDeletionVectors | None, namer: FileNamer
) -> UnitOutcome:
    """The outcome with the bucket's rewritten DV index file (old ones deleted) in its message."""
    if vectors is None:
        return out
    new, deleted = vectors.changes(store, namer)
    return replace(out, message=replace(out.message, new_index_files=new, deleted_index_files=deleted))


def pick_bucket(
    store: FileStore,
    levels: Levels,
    *,
    full: bool,
    expiry: RecordExpiry | None,
    expire_records: bool,
    now_ms: int,
    last_full_ms: int | None = None,
    dv_index: Sequence[IndexManifestEntry] | None = None,
) -> Pick:
    """The pick for one bucket of a dedicated job (the writer's inline pick is in :mod:`.inline`)."""
    opts = store.options
    runs = levels.sorted_runs()
    n = levels.number_of_levels
    expired = expired_file_test(expiry, store)
    force = opts.compaction_force_rewrite_all_files
    if full or (dv_index is not None and needs_full_for_dv(levels, dv_index)):
        return pick_full(runs, n, lambda f: force or expired(f))
    if expire_records:
        if any(expired(f) for f in levels.all_files()):
            return pick_full(runs, n, expired)
        return Pick(None)
    cfg = UniversalConfig.from_options(opts)
    p = pick_universal(runs, n, cfg, now_ms=now_ms, last_full_ms=last_full_ms)
    if p.unit is None and store.force_up_level0:
        p = force_pick_level0(runs, n, cfg)  # ForceUpLevel0Compaction: level 0 is invisible to readers
    return p if worth_running(p.unit) else Pick(None)


def plan_compaction(
    store: FileStore,
    *,
    full: bool = False,
    partitions=None,
    buckets: Iterable[int] | None = None,
    expire_records: bool = False,
    now_ms: int | None = None,
    options: Mapping[str, str] | None = None,
    verify: bool = False,
) -> CompactionPlan:
    """``options``: dynamic planning options for this job only (see :mod:`.planning_options`).
    ``buckets``: plan only these buckets of the selected partitions (their manifest entries alone
    are decoded). ``verify``: the units compute the figures of the in-task check (``result.check()``)."""
    with paused_gc():  # one unit per bucket, by the hundred thousand: see lake_core.format.gc_pause
        return _plan_compaction(
            store,
            full=full,
            partitions=partitions,
            selected_buckets=buckets,
            expire_records=expire_records,
            now_ms=now_ms,
            options=options,
            verify=verify,
        )


def _plan_compaction(
    store: FileStore,
    *,
    full: bool,
    partitions,
    selected_buckets: Iterable[int] | None,
    expire_records: bool,
    now_ms: int | None,
    options: Mapping[str, str] | None,
    verify: bool,
) -> CompactionPlan:
    planned_at = time.time()
    store = with_planning_options(store, options)
    if not store.schema.primary_keys:
        raise LakeError(
            f"compact of {store.identifier}: only primary-key tables have LSM levels to compact; "
            "this is an append table"
        )
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    expiry = RecordExpiry.of(store, now_ms // 1000)
    if expire_records and expiry is None:
        raise InvalidOptionError(
            f"compact(expire_records=True) of {store.identifier} needs the table options "
            "'record-level.expire-time' and 'record-level.time-field'"
        )
    selector = PartitionSelector.of(store.schema, partitions, table=store.identifier, operation="compact")
    chosen = bucket_selection(selected_buckets, table=store.identifier, operation="compact")
    snapshot = store.snapshot_manager.latest()
    manifests = store.manifest_store
    groups: dict[tuple[bytes, int], list] = defaultdict(list)
    for e in _live_entries(manifests, snapshot, selector, chosen):
        groups[(e.partition, e.bucket)].append(e)
    if selector is not None:  # a selector matching nothing is a typo, not "nothing to compact"
        try:
            selector.check_matched(manifests.partition_values(p) for p in {p for p, _b in groups})
        except PartitionNotFoundError:  # name every partition with data in the message
            selector.check_matched(
                manifests.partition_values(p) for p in {e.partition for e in manifests.live_entries(snapshot)}
            )
            if chosen is None:
                raise
            # the partition has data, none of it in the selected buckets: nothing to compact
    key_of = key_decoder(store.key_types)
    num_levels = store.options.num_levels
    dv_entries = bucket_dv_entries(store, snapshot) if store.options.deletion_vectors_enabled else None
    units, buckets = [], []
    order = {p: repr(manifests.partition_values(p)) for p in {p for p, _b in groups}}
    in_order = sorted(groups.items(), key=lambda kv: (order[kv[0][0]], kv[0][1]))
    for (partition, bucket), entries in in_order:
        values = manifests.partition_values(partition)
        if selector is not None and not selector.matches(values):
            continue
        files = tuple(e.file for e in entries)
        buckets.append(BucketLevels(partition, bucket, files))
        levels = Levels.of(files, num_levels, key_of)
        dv_index = tuple(dv_entries.get((partition, bucket), ())) if dv_entries is not None else None
        p = pick_bucket(
            store, levels, full=full, expiry=expiry, expire_records=expire_records, now_ms=now_ms, dv_index=dv_index
        )
        if p.unit is None or not p.unit.files:
            continue
        units.append(
            BucketCompactionUnit(
                partition,
                values,
                bucket,
                entries[0].total_buckets,
                p.unit.files,
                p.unit.output_level,
                levels.max_level,
                drop_delete(p.unit, levels),
                p.unit.reason,
                expiry,
                outside_unit(levels, p.unit),
                dv_index,
                verify,
            )
        )
    return CompactionPlan(
        snapshot.id if snapshot else None,
        tuple(units),
        tuple(buckets),
        expiry,
        full=full,
        expire_records=expire_records,
        options=tuple(sorted((str(k), str(v)) for k, v in (options or {}).items())),
        planned_at=planned_at,
        verify=verify,
    )


def _live_entries(
    manifests: ManifestStore,
    snapshot: Snapshot | None,
    selector: PartitionSelector | None,
    buckets: frozenset[int] | None,
) -> list[ManifestEntry]:
    """The live entries of the selected partitions and buckets: every one, or only those of the
    manifests whose partition statistics admit a selected partition and whose bucket range admits
    a selected bucket (a file's ADD and DELETE share its partition and bucket, so they are read
    together), unless the whole snapshot is merged already."""
    if snapshot is None or manifests.has_live_files(snapshot) or (selector is None and buckets is None):
        return manifests.live_entries(snapshot, buckets=buckets)
    metas = manifests.data_manifests(snapshot)
    if selector is not None:
        metas = [m for m in metas if (b := manifests.partition_bounds(m)) is None or selector.may_match_range(*b)]
    entries = manifests.live_entries(snapshot, metas, buckets=buckets)
    if selector is None:
        return entries
    return [e for e in entries if selector.matches(manifests.partition_values(e.partition))]


def outside_unit(levels: Levels, unit: CompactUnit) -> tuple[DataFileMeta, ...]:
    if len(unit.files) == levels.number_of_files:  # the unit's files are the bucket's: all of them
        return ()
    inside = {(f.level, f.file_name) for f in unit.files}
    return tuple(f for f in levels.all_files() if (f.level, f.file_name) not in inside)


def level_counts(files: Sequence[DataFileMeta]) -> dict[str, int]:
    out: dict[str, int] = {}
    for f in files:
        out[f"L{f.level}"] = out.get(f"L{f.level}", 0) + 1
    return dict(sorted(out.items(), key=lambda kv: int(kv[0][1:])))


def ttl_lag_s(files: Sequence[DataFileMeta], expiry: RecordExpiry | None, store: FileStore) -> int | None:
    """How long past its expiry the oldest record is (0: nothing overdue), from value statistics."""
    if expiry is None:
        return None
    mins = [m for m in (expiry.file_min_seconds(f, store) for f in files) if m is not None]
    if not mins:
        return 0
    return max(0, expiry.cutoff_s - min(mins))
