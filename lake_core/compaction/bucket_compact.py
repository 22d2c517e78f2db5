"""Full compaction of one (partition, bucket) to the top level, and the re-compaction a first-row
commit falls back on when its own compaction lost a race. The LSM machinery (levels, pickers,
chunked merge) lives in :mod:`lake_core.compaction`; this module keeps the bucket-level entry points.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

import pyarrow as pa

from lake_core.commit.messages import CommitMessage
from lake_core.compaction.picker import CompactUnit, drop_delete
from lake_core.compaction.rewrite import run_compact_unit
from lake_core.deletion_vectors.maintainer import BucketDeletionVectors, bucket_dv_entries
from lake_core.kv.system_fields import KIND, SEQ
from lake_core.lsm.levels import Levels, key_decoder
from lake_core.manifest.metadata import DataFileMeta
from lake_core.paths import FileNamer
from lake_core.read.evolution import read_evolved

if TYPE_CHECKING:
    from lake_core.store import FileStore


def read_kv_files(store: FileStore, partition_path: str, bucket: int, files: Sequence[DataFileMeta]) -> pa.Table:
    """All columns plus _SEQUENCE_NUMBER/_VALUE_KIND of ``files``, concatenated oldest first."""
    schema = store.schema.arrow_schema()
    full = schema.append(pa.field(SEQ, pa.int64(), nullable=False)).append(pa.field(KIND, pa.int8(), nullable=False))
    parts = []
    bucket_dir = store.paths.bucket_dir(partition_path, bucket)
    for f in sorted(files, key=lambda f: (f.min_sequence_number, f.file_name)):
        path = f.path_in(bucket_dir)
        parts.append(read_evolved(store, path, f, f.file_name.rsplit(".", 1)[-1], full.names, full))
    if not parts:
        return full.empty_table()
    return pa.concat_tables(parts)


__all__ = ["read_kv_files", "compact_bucket", "recompact_buckets"]


def compact_bucket(
    store: FileStore,
    partition: bytes,
    bucket: int,
    total_buckets: int,
    files: Sequence[DataFileMeta],
    extra_new_files: Sequence[DataFileMeta] = (),
    namer: FileNamer | None = None,
    base_snapshot_id: int | None = None,
) -> CommitMessage:
    """Full compaction of ``files`` (live) and ``extra_new_files`` (written in this commit) to the
    top level, every file rewritten (as ``compaction.force-rewrite-all-files``).

    ``base_snapshot_id`` is the snapshot ``files`` were live in; the commit uses it to refuse a
    compaction whose dropped deletes are still needed by files that landed since."""

    inputs = tuple(files) + tuple(extra_new_files)
    levels = Levels.of(inputs, store.options.num_levels, key_decoder(store.key_types))
    unit = CompactUnit(levels.max_level, inputs, "full compaction")
    vectors = None
    if store.options.deletion_vectors_enabled:
        snap = store.snapshot_manager.get(base_snapshot_id) if base_snapshot_id else store.snapshot_manager.latest()
        vectors = BucketDeletionVectors.load(
            store, partition, bucket, bucket_dv_entries(store, snap).get((partition, bucket), [])
        )
    namer = namer or FileNamer()
    msg = run_compact_unit(
        store,
        partition,
        bucket,
        total_buckets,
        unit,
        drop_delete=drop_delete(unit, levels),
        max_level=levels.max_level,
        extra_new_files=extra_new_files,
        namer=namer,
        force_rewrite=True,
        vectors=vectors,
    ).message
    if vectors is not None:
        new, deleted = vectors.changes(store, namer)
        msg = replace(msg, new_index_files=new, deleted_index_files=deleted)
    return replace(msg, base_snapshot_id=base_snapshot_id)


def recompact_buckets(store: FileStore, snapshot, buckets) -> list[CommitMessage]:
    """Full compactions of ``buckets`` ((partition, bucket, total_buckets)) as live at ``snapshot``:
    how a first-row commit whose own compaction lost a race still makes its rows visible."""
    live: dict[tuple[bytes, int], list[DataFileMeta]] = {}
    for e in store.manifest_store.live_entries(snapshot):
        live.setdefault((e.partition, e.bucket), []).append(e.file)
    base = snapshot.id if snapshot is not None else 0
    out = []
    for partition, bucket, total in sorted(buckets):
        files = live.get((partition, bucket), [])
        if files:
            out.append(compact_bucket(store, partition, bucket, total, files, base_snapshot_id=base))
    return out
