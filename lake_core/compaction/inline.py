"""Inline compaction in a batch writer, as Java's ``MergeTreeWriter`` + ``MergeTreeCompactManager``
do for batch jobs: after a bucket's new level-0 files are written, the bucket's picker runs over
its levels and the compaction is done before the commit, landing in the same ``commit()`` as a
second, COMPACT snapshot.

- ``write-only``: never compacts (a dedicated job does).
- ``full-compaction.delta-commits``: a batch commit always fully compacts the touched buckets.
- first-row (level 0 invisible to readers): when the universal pick finds nothing, level 0 is
  forced up (``ForceUpLevel0Compaction``).
- write stall ``num-sorted-run.stop-trigger``: while the bucket still has more sorted runs than
  that, the writer keeps compacting before it commits.
- ``commit.force-compact`` makes a streaming writer wait for its compaction; a batch writer
  always waits, so it changes nothing here.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from lake_core.commit.messages import CommitMessage
from lake_core.compaction.picker import (
    Pick,
    UniversalConfig,
    drop_delete,
    force_pick_level0,
    pick_full,
    pick_universal,
    worth_running,
)
from lake_core.compaction.plan import outside_unit
from lake_core.compaction.record_expiry import RecordExpiry, expired_file_test
from lake_core.compaction.rewrite import run_compact_unit
from lake_core.deletion_vectors.maintainer import BucketDeletionVectors, bucket_dv_entries, needs_full_for_dv
from lake_core.lsm.levels import Levels, key_decoder
from lake_core.manifest.metadata import DataFileMeta
from lake_core.paths import FileNamer, data_file_in

if TYPE_CHECKING:
    from lake_core.format.parquet_file import DictionaryChoice
    from lake_core.snapshot.snapshot import Snapshot
    from lake_core.store import FileStore

_MAX_ROUNDS = 8


def pick_inline(
    store: FileStore, levels: Levels, expiry: RecordExpiry | None, now_ms: int, stalled: bool, dv_index=None
) -> Pick:
    opts = store.options
    runs = levels.sorted_runs()
    n = levels.number_of_levels
    if (
        opts.full_compaction_delta_commits is not None
        or stalled
        or (dv_index is not None and needs_full_for_dv(levels, dv_index))
    ):
        force = opts.compaction_force_rewrite_all_files
        expired = expired_file_test(expiry, store)
        return pick_full(runs, n, lambda f: force or expired(f))
    cfg = UniversalConfig.from_options(opts)
    # A batch writer starts with no memory of a previous full compaction (Java keeps it per writer).
    p = pick_universal(runs, n, cfg, now_ms=now_ms, last_full_ms=None)
    if p.unit is None and store.force_up_level0:
        p = force_pick_level0(runs, n, cfg)
    return p if worth_running(p.unit) else Pick(None)


def compact_written_bucket(
    store: FileStore,
    partition: bytes,
    bucket: int,
    total_buckets: int,
    live: Sequence[DataFileMeta],
    new_files: Sequence[DataFileMeta],
    namer: FileNamer,
    *,
    dictionary: DictionaryChoice | None = None,
    latest: Snapshot | None = None,
) -> CommitMessage | None:
    """The compaction of one bucket after a write (None: nothing to compact). The message carries
    only compact_before/compact_after; the caller merges it with the bucket's new files.
    ``dictionary``: the write's Parquet dictionary columns, kept for the compacted files (sampling
    them again per file cost a tenth of a deletion-vector table's write). ``latest``: the table's
    latest snapshot, whose deletion vectors the compaction extends (read here when not given; the
    commit fails if a vector it replaces is no longer live)."""
    opts = store.options
    if opts.write_only or not new_files:
        return None
    now_ms = int(time.time() * 1000)
    expiry = RecordExpiry.of(store, now_ms // 1000)
    original = list(live) + list(new_files)
    levels = Levels.of(original, opts.num_levels, key_decoder(store.key_types))
    stop = opts.num_sorted_run_stop_trigger
    written: set[str] = set()
    changelog: tuple[DataFileMeta, ...] = ()  # every round's changelog (lookup, full-compaction)
    vectors = None
    if opts.deletion_vectors_enabled:
        # no live files (a new bucket, or an overwrite replacing them): no vectors can matter
        if live and latest is None:
            latest = store.snapshot_manager.latest()
        dv_index = bucket_dv_entries(store, latest).get((partition, bucket), []) if live else []
        vectors = BucketDeletionVectors.load(store, partition, bucket, dv_index)
    for round_ in range(_MAX_ROUNDS):
        stalled = round_ > 0
        if stalled and levels.number_of_sorted_runs <= stop:
            break
        p = pick_inline(store, levels, expiry, now_ms, stalled, vectors.entries if vectors is not None else None)
        if p.unit is None or not p.unit.files:
            break
        out = run_compact_unit(
            store,
            partition,
            bucket,
            total_buckets,
            p.unit,
            drop_delete=drop_delete(p.unit, levels),
            max_level=levels.max_level,
            expiry=expiry,
            namer=namer,
            lookup_files=outside_unit(levels, p.unit),
            vectors=vectors,
            dictionary=dictionary,
        ).message
        changelog += out.compact_changelog
        upgraded = {f.file_name for f in out.compact_before}
        written |= {f.file_name for f in out.compact_after if f.file_name not in upgraded}
        levels = levels.update(out.compact_before, out.compact_after)
    final = levels.all_files()
    ident = lambda f: (f.level, f.file_name)  # noqa: E731 - data file names are unique per table
    final_ids = {ident(f) for f in final}
    original_ids = {ident(f) for f in original}
    before = tuple(f for f in original if ident(f) not in final_ids)
    after = tuple(f for f in final if ident(f) not in original_ids)
    # intermediate outputs of an earlier round that a later round consumed: referenced by nobody
    final_names = {f.file_name for f in final}
    bucket_dir = store.bucket_dir(partition, bucket)
    for name in written - final_names:
        store.fileio.delete(data_file_in(bucket_dir, name))
    if not before and not after:
        return None
    new_index, deleted_index = vectors.changes(store, namer) if vectors is not None else ((), ())
    return CommitMessage(
        partition,
        bucket,
        total_buckets,
        compact_before=before,
        compact_after=after,
        compact_changelog=changelog,
        new_index_files=new_index,
        deleted_index_files=deleted_index,
    )
