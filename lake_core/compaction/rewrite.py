"""Running one compaction unit: read the files of each rewrite through the merge engine, write the
result at the output level (rolled at ``target-file-size``), move upgraded files by metadata only.
Returns the unit's CommitMessage with counters; the caller commits (plan -> execute -> commit).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

import numpy as np
import pyarrow as pa

from lake_core.kv import rowkind
from lake_core.write.file_writer import DataFileWriter
from lake_core.kv.system_fields import KIND
from lake_core.commit.messages import CommitMessage
from lake_core.manifest.metadata import DataFileMeta, FileSource
from lake_core.paths import FileNamer, data_file_in, partition_dir
from lake_core.compaction.dv import DvCompaction, unit_vectors
from lake_core.compaction.expire import RecordExpiry
from lake_core.compaction.kv_read import CHUNK_ROWS, iter_kv_file, kv_schema  # noqa: F401 - re-exported
from lake_core.lsm.levels import key_decoder
from lake_core.compaction.stream import merge_sorted_runs
from lake_core.compaction.picker import CompactUnit
from lake_core.compaction.task import Rewrite, unit_actions

if TYPE_CHECKING:
    from lake_core.deletion_vectors.maintainer import BucketDeletionVectors
    from lake_core.table import FileStoreTable


@dataclass(frozen=True)
class UnitCounts:
    rows_in: int = 0
    rows_out: int = 0
    rows_deleted: int = 0  # retractions dropped at the top level
    rows_expired: int = 0  # record-level expiry
    rows_null_time: int = 0  # kept: NULL time field
    files_upgraded: int = 0


@dataclass(frozen=True)
class UnitOutcome:
    message: CommitMessage
    counts: UnitCounts


def partition_path(table: "FileStoreTable", partition: bytes) -> str:
    schema = table.schema
    from lake_core.format.binary_row import deserialize_row
    values = deserialize_row(partition, [schema.field(n).type for n in schema.partition_keys]) \
        if schema.partition_keys else []
    return partition_dir(list(schema.partition_keys), values, table.options.partition_default_name)


def run_compact_unit(table: "FileStoreTable", partition: bytes, bucket: int, total_buckets: int, unit: CompactUnit,
                     *, drop_delete: bool, max_level: int, expiry: RecordExpiry | None = None,
                     extra_new_files: Sequence[DataFileMeta] = (), namer: FileNamer | None = None,
                     force_rewrite: bool | None = None, lookup_files: Sequence[DataFileMeta] = (),
                     vectors: "BucketDeletionVectors | None" = None) -> UnitOutcome:
    """Execute ``unit`` of one bucket. ``extra_new_files`` are files written by the same commit
    (inline compaction): they are reported as new files of the message. ``vectors``: the bucket's
    deletion vectors (``deletion-vectors.enabled``), applied to the inputs and updated in place with
    the rows this compaction replaces; the caller writes them (:meth:`BucketDeletionVectors.changes`)."""
    opts = table.options
    engine = table.merge_engine()
    key_of = key_decoder(table.key_types)
    schema = table.schema
    is_expired = (lambda f: expiry.file_has_expired(f, schema)) if expiry is not None else (lambda f: False)
    actions = unit_actions(unit, key_of=key_of, max_level=max_level,
                           min_file_size=int(opts.target_file_size * opts.compaction_small_file_ratio),
                           is_expired=is_expired,
                           force_rewrite=opts.compaction_force_rewrite_all_files if force_rewrite is None else force_rewrite,
                           rewrite_level0=(engine.hides_level0 and bool(lookup_files)) or vectors is not None)
    ppath = partition_path(table, partition)
    writer = DataFileWriter(table, ppath, bucket, namer or FileNamer())
    key_names = list(schema.trimmed_primary_keys)
    # first-row: a key already in the bucket's other levels is not a first row; Java reads such
    # tables without merging, so a key must never be stored twice (Paimon's lookup compaction)
    seen = _lookup_keys(table, ppath, bucket, lookup_files, key_names) if engine.hides_level0 else None
    bucket_dir = table.paths.bucket_dir(ppath, bucket)
    dv = None
    if vectors is not None:
        # the replaced rows are masked in their files, so retractions have nothing left to cancel
        drop_delete = drop_delete or unit.output_level > 0
        dv = DvCompaction(table, bucket_dir, tuple(lookup_files), vectors)
    before: list[DataFileMeta] = []
    after: list[DataFileMeta] = []
    c = dict(rows_in=0, rows_out=0, rows_deleted=0, rows_expired=0, rows_null_time=0, files_upgraded=0)
    written: list[DataFileMeta] = []  # every file this unit wrote, also of a rewrite that failed halfway
    try:
        for action in actions:
            if not isinstance(action, Rewrite):
                f = action.file
                before.append(f)
                after.append(f.upgrade(unit.output_level))
                c["files_upgraded"] += 1
                continue
            files = sorted((f for section in action.sections for f in section),
                           key=lambda f: (f.min_sequence_number, f.file_name))  # oldest first
            before.extend(files)
            dvs = vectors.vectors if vectors is not None else {}
            merged_chunks = merge_sorted_runs([iter_kv_file(table, bucket_dir, f, deletion=dvs.get(f.file_name))
                                               for f in files], key_names,
                                              lambda rows: _merge_chunk(engine, rows, drop_delete, expiry, c, seen,
                                                                        key_names, dv))
            start = len(written)
            _write_rolled(writer, merged_chunks, unit.output_level, written)
            after.extend(written[start:])
            unit_vectors(vectors, files)
    except Exception:
        for f in written:  # a failed unit commits nothing: leave none of its files behind
            table.fileio.delete(f.external_path or data_file_in(bucket_dir, f.file_name))
        raise
    msg = CommitMessage(partition, bucket, total_buckets, new_files=tuple(extra_new_files),
                        compact_before=tuple(before), compact_after=tuple(after))
    return UnitOutcome(msg, UnitCounts(**c))


def _lookup_keys(table, ppath: str, bucket: int, files: Sequence[DataFileMeta], key_names) -> pa.Table | None:
    """The keys stored in ``files`` (key columns only), or None when there are none."""
    if not files:
        return None
    bucket_dir = table.paths.bucket_dir(ppath, bucket)
    parts = [chunk.select(key_names) for f in files for chunk in iter_kv_file(table, bucket_dir, f)]
    return pa.concat_tables(parts) if parts else None


def _merge_chunk(engine, rows: pa.Table, drop_delete: bool, expiry: RecordExpiry | None, c: dict,
                 seen: pa.Table | None = None, key_names=(), dv: DvCompaction | None = None) -> pa.Table:
    """Merge one chunk of complete key groups; counts rows in/out, expired and dropped deletes.
    ``seen``: keys stored elsewhere in the bucket (first-row), whose rows are dropped."""
    c["rows_in"] += rows.num_rows
    if expiry is not None:
        rows, expired, nulls = expiry.split(rows)
        c["rows_expired"] += expired
        c["rows_null_time"] += nulls
    if dv is not None:
        rows = dv.absorb(rows)
    merged = engine.merge(rows, drop_deletes=False) if rows.num_rows else rows
    if drop_delete and merged.num_rows:
        retract = rowkind.is_retract(merged[KIND].to_numpy())
        n = int(np.count_nonzero(retract))
        if n:
            merged = merged.filter(pa.array(~retract))
            c["rows_deleted"] += n
    if seen is not None and merged.num_rows:
        kept = merged.join(seen, keys=list(key_names), join_type="left anti", use_threads=False)
        if kept.num_rows != merged.num_rows:
            merged = kept.sort_by([(k, "ascending") for k in key_names])
    c["rows_out"] += merged.num_rows
    return merged


def _write_rolled(writer: DataFileWriter, chunks, level: int, out: list[DataFileMeta]) -> None:
    """Stream merged chunks into files rolled at ``target-file-size`` (appended to ``out``, also
    when a later chunk fails, so the caller can delete them): one row group is held, never a file."""
    rolling = writer.rolling(level=level, file_source=FileSource.COMPACT)
    try:
        for chunk in chunks:
            rolling.write(chunk)
        rolling.close()
    except BaseException:
        rolling.abort()
        raise
    finally:
        out.extend(w.meta for w in rolling.written)
