"""Running one compaction unit: read the files of each rewrite through the merge engine, write the
result at the output level (rolled at ``target-file-size``), move upgraded files by metadata only.
Returns the unit's CommitMessage with counters; the caller commits (plan -> execute -> commit).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from lake_core.commit.messages import CommitMessage
from lake_core.compaction.changelog_producers import ChangelogProducer, ChunkState, producer_for, produces_changelog
from lake_core.compaction.dv import DvCompaction, unit_vectors
from lake_core.compaction.figures import UnitFigures
from lake_core.compaction.kv_read import CHUNK_ROWS, iter_kv_file, key_ranges, kv_schema  # noqa: F401 - re-exported
from lake_core.compaction.picker import CompactUnit
from lake_core.compaction.record_expiry import RecordExpiry, expired_file_test
from lake_core.compaction.task import Rewrite, Upgrade, unit_actions
from lake_core.format.checksum import EMPTY, Checksum, hashes_checksum, row_hashes
from lake_core.format.float_order import java_order_key
from lake_core.kv import rowkind
from lake_core.kv.system_fields import KIND
from lake_core.lsm.key_probe import KeyBlock, SortedKeyProbe
from lake_core.lsm.levels import key_decoder
from lake_core.lsm.merge_stream import merge_sorted_runs
from lake_core.manifest.metadata import DataFileMeta, FileSource
from lake_core.merge.lookup_merge import LEVEL, needs_lookup_merge, newest_high_level_mask, with_level
from lake_core.paths import FileNamer
from lake_core.write.file_writer import DataFileWriter, RollingFileWriter

if TYPE_CHECKING:
    from lake_core.compaction.record_expiry import RecordExpiry
    from lake_core.deletion_vectors.maintainer import BucketDeletionVectors
    from lake_core.format.parquet_file import DictionaryChoice
    from lake_core.store import FileStore


@dataclass(frozen=True)
class UnitCounts:
    rows_in: int = 0
    rows_out: int = 0
    rows_deleted: int = 0  # retractions dropped at the top level
    rows_expired: int = 0  # merged rows dropped by record-level expiry
    rows_null_time: int = 0  # merged rows kept: NULL time field
    files_upgraded: int = 0


@dataclass(frozen=True)
class UnitOutcome:
    message: CommitMessage
    counts: UnitCounts
    figures: UnitFigures | None = None  # rows and checksums for the in-task check (dedicated compaction)


def _effective_drops(
    unit: CompactUnit, drop_delete: bool, expiry: RecordExpiry | None, *, vectors: bool
) -> tuple[bool, RecordExpiry | None]:
    """Whether the unit drops retractions, and the record expiry it applies."""
    if vectors:
        # the replaced rows are masked in their files, so retractions have nothing left to cancel
        drop_delete = drop_delete or unit.output_level > 0
    # Expiry drops a key's merged row, which is sound only where the unit holds the key's whole
    # history: exactly where a retraction may be dropped (see lake_core.compaction.record_expiry)
    return drop_delete, expiry if drop_delete else None


def compact_actions(
    store: FileStore,
    unit: CompactUnit,
    *,
    drop_delete: bool,
    max_level: int,
    expiry: RecordExpiry | None,
    force_rewrite: bool | None = None,
    lookup_files: Sequence[DataFileMeta] = (),
    vectors: bool = False,
) -> list[Rewrite | Upgrade]:
    """What :func:`run_compact_unit` does with each of the unit's files (rewrite or upgrade), from
    metadata only: the one decision, so a dry run reports the figures the run will have."""
    opts = store.options
    drop_delete, expiry = _effective_drops(unit, drop_delete, expiry, vectors=vectors)
    changelog = produces_changelog(store, output_level=unit.output_level, max_level=max_level)
    # deletion vectors: a level-0 file without retractions moves up in place and only its keys' older
    # rows are masked (Java upgrades it too); an engine that merges a key's old values must rewrite
    dv_rewrites_level0 = vectors and store.merge_engine().lookup_needs_old_value
    return unit_actions(
        unit,
        key_of=key_decoder(store.key_types),
        max_level=max_level,
        min_file_size=int(opts.target_file_size * opts.compaction_small_file_ratio),
        is_expired=expired_file_test(expiry, store),
        force_rewrite=opts.compaction_force_rewrite_all_files if force_rewrite is None else force_rewrite,
        rewrite_level0=(store.merge_engine().hides_level0 and bool(lookup_files)) or changelog or dv_rewrites_level0,
        rewrite_level0_retractions=vectors,
        # Java's ChangelogMergeTreeRewriter.upgrade: a file moved to the top level by a
        # full-compaction changelog producer is rewritten, to emit its changelog
        rewrite_upgrades=changelog and opts.changelog_producer == "full-compaction",
    )


def run_compact_unit(
    store: FileStore,
    partition: bytes,
    bucket: int,
    total_buckets: int,
    unit: CompactUnit,
    *,
    drop_delete: bool,
    max_level: int,
    expiry: RecordExpiry | None = None,
    extra_new_files: Sequence[DataFileMeta] = (),
    namer: FileNamer | None = None,
    force_rewrite: bool | None = None,
    lookup_files: Sequence[DataFileMeta] = (),
    vectors: BucketDeletionVectors | None = None,
    figures: bool = False,
    dictionary: DictionaryChoice | None = None,
) -> UnitOutcome:
    """Execute ``unit`` of one bucket. ``extra_new_files`` are files written by the same commit
    (inline compaction): they are reported as new files of the message. ``vectors``: the bucket's
    deletion vectors (``deletion-vectors.enabled``), applied to the inputs and updated in place with
    the rows this compaction replaces; the caller writes them (:meth:`BucketDeletionVectors.changes`).
    ``figures``: also compute the unit's :class:`UnitFigures` (its written files read back), for
    the in-task check of a dedicated compaction; a writer's inline compaction does without.
    ``dictionary``: the Parquet dictionary columns of the files written (default: sampled from
    each file's first rows)."""
    opts = store.options
    engine = store.merge_engine()
    key_of = key_decoder(store.key_types)
    schema = store.schema
    drop_delete, expiry = _effective_drops(unit, drop_delete, expiry, vectors=vectors is not None)
    ppath = store.partition_path(partition)
    bucket_dir = store.paths.bucket_dir(ppath, bucket)
    key_names = list(schema.trimmed_primary_keys)
    # first-row: a key already in the bucket's other levels is not a first row; Java reads such
    # tables without merging, so a key must never be stored twice (Paimon's lookup compaction)
    seen = (
        _stored_keys(store, bucket_dir, lookup_files, key_names, opts.read_batch_rows, key_of)
        if engine.hides_level0 and lookup_files
        else None
    )
    producer = producer_for(
        store,
        output_level=unit.output_level,
        max_level=max_level,
        bucket_dir=bucket_dir,
        lookup_files=lookup_files,
        vectors=vectors,
    )
    actions = compact_actions(
        store,
        unit,
        drop_delete=drop_delete,
        max_level=max_level,
        expiry=expiry,
        force_rewrite=force_rewrite,
        lookup_files=lookup_files,
        vectors=vectors is not None,
    )
    lookup_merge = needs_lookup_merge(store)
    writer = DataFileWriter(store, ppath, bucket, namer or FileNamer(), dictionary=dictionary)
    with_levels = producer is not None or lookup_merge
    changelog_files: list[DataFileMeta] = []
    # Java writes the changelog of a compaction at its output level (createRollingChangelogFileWriter)
    changelog_chunks = _ChangelogSink(writer, unit.output_level, changelog_files)
    dv = DvCompaction(store, bucket_dir, tuple(lookup_files), vectors) if vectors is not None else None
    before: list[DataFileMeta] = []
    after: list[DataFileMeta] = []
    c = dict(rows_in=0, rows_out=0, rows_deleted=0, rows_expired=0, rows_null_time=0, files_upgraded=0)
    written: list[DataFileMeta] = []  # every file this unit wrote, also of a rewrite that failed halfway
    sink = _FigureSink(list(schema.arrow_schema().names), expiry) if figures else None
    try:
        for action in actions:
            if not isinstance(action, Rewrite):
                f = action.file
                if dv is not None and f.level == 0:
                    dv.absorb_upgraded(f, opts.read_batch_rows)
                before.append(f)
                after.append(f.upgrade(unit.output_level))
                c["files_upgraded"] += 1
                continue
            files = sorted(
                (f for section in action.sections for f in section), key=lambda f: (f.min_sequence_number, f.file_name)
            )  # oldest first
            before.extend(files)
            dvs = vectors.vectors if vectors is not None else {}

            def chunks(f: DataFileMeta):
                it = iter_kv_file(store, bucket_dir, f, opts.read_batch_rows, deletion=dvs.get(f.file_name))
                return with_level(it, f.level) if with_levels else it

            merged_chunks = merge_sorted_runs(
                [chunks(f) for f in files],
                key_names,
                lambda rows: _merge_chunk(
                    engine,
                    rows,
                    drop_delete,
                    expiry,
                    c,
                    seen,
                    key_names,
                    dv,
                    producer,
                    lookup_merge,
                    changelog_chunks,
                    sink,
                ),
                # a deletion vector drops rows: such a run's size is unknown
                [None if f.file_name in dvs else f.row_count for f in files],
            )
            start = len(written)
            _write_rolled(writer, merged_chunks, unit.output_level, written)
            after.extend(written[start:])
            if sink is not None:
                sink.read_back(store, bucket_dir, written[start:], opts.read_batch_rows)
            changelog_chunks.flush()
            unit_vectors(vectors, files)
    except Exception:
        changelog_chunks.discard()
        for f in written + changelog_files:  # a failed unit commits nothing: leave none of its files behind
            store.fileio.delete(f.path_in(bucket_dir))
        raise
    msg = CommitMessage(
        partition,
        bucket,
        total_buckets,
        new_files=tuple(extra_new_files),
        compact_before=tuple(before),
        compact_after=tuple(after),
        compact_changelog=tuple(changelog_files),
    )
    return UnitOutcome(msg, UnitCounts(**c), sink.figures() if sink is not None else None)


def _stored_keys(
    store, bucket_dir: str, files: Sequence[DataFileMeta], key_names, chunk_rows: int, key_of
) -> SortedKeyProbe:
    """A probe of the keys stored in ``files`` (the bucket's files outside the unit): each level >= 1
    is one run of its files in key order, each level-0 file a run of its own. A file is a block of
    its key range, split into its row groups once a key falls in it (Parquet statistics)."""

    def file_block(f: DataFileMeta) -> KeyBlock:
        def read():
            return iter_kv_file(store, bucket_dir, f, chunk_rows, columns=key_names)

        def split():
            ranges = key_ranges(store, bucket_dir, f, key_names)
            if ranges is None or len(ranges) < 2:
                return None
            return [
                KeyBlock(
                    lo,
                    hi,
                    lambda g=g: iter_kv_file(store, bucket_dir, f, chunk_rows, columns=key_names, row_groups=[g]),
                )
                for g, (_rows, lo, hi) in enumerate(ranges)
            ]

        return KeyBlock(tuple(key_of(f.min_key)), tuple(key_of(f.max_key)), read, split)

    level0 = [[f] for f in files if f.level == 0]
    levels = sorted({f.level for f in files if f.level > 0})
    chained = [
        sorted((f for f in files if f.level == lv), key=lambda f: java_order_key(key_of(f.min_key))) for lv in levels
    ]
    return SortedKeyProbe([[file_block(f) for f in run] for run in level0 + chained], key_names)


def _merge_chunk(
    engine,
    rows: pa.Table,
    drop_delete: bool,
    expiry: RecordExpiry | None,
    c: dict,
    seen: SortedKeyProbe | None = None,
    key_names=(),
    dv: DvCompaction | None = None,
    producer: ChangelogProducer | None = None,
    lookup_merge: bool = False,
    changelog_out: _ChangelogSink | None = None,
    sink: _FigureSink | None = None,
) -> pa.Table:
    """Merge one chunk of complete key groups; counts rows in/out, expired and dropped deletes.
    ``expiry``: applied to the merged rows, after the changelog (see :mod:`.record_expiry`).
    ``seen``: keys stored elsewhere in the bucket (first-row), whose rows are dropped before the
    changelog is produced (a key stored elsewhere has no first row here).
    ``producer``: appends the chunk's changelog to ``changelog_out``; ``lookup_merge``: Java's
    ``LookupMergeFunction`` (only a key's newest row above level 0 is merged). ``sink``: takes the
    merged rows and every row dropped after the merge (the in-task figures)."""
    c["rows_in"] += rows.num_rows
    state = prepared = None
    if LEVEL in rows.column_names:
        levels = rows[LEVEL].to_numpy()
        rows = rows.drop_columns([LEVEL])
        if lookup_merge:
            keep = newest_high_level_mask(rows, key_names, levels)
            if keep is not None:
                rows, levels = rows.filter(pa.array(keep)), levels[keep]
        state = ChunkState(rows, levels)
        if producer is not None:
            prepared = producer.prepare(state)
    if dv is not None:
        rows = dv.absorb(rows)
    if producer is not None and state is not None:
        rows = producer.absorb(rows, prepared, engine)
    merged = engine.merge(rows, drop_deletes=False) if rows.num_rows else rows
    if sink is not None:
        sink.merged(merged)
    if seen is not None and merged.num_rows:
        stored = seen.present(merged)
        if stored.any():
            if sink is not None:
                sink.dropped(merged.filter(pa.array(stored)))
            merged = merged.filter(pa.array(~stored))
    if producer is not None and state is not None:
        merged, changelog = producer.changelog(state, merged, engine, prepared)
        if changelog is not None and changelog.num_rows and changelog_out is not None:
            changelog_out.append(changelog)
    if drop_delete and merged.num_rows:
        retract = rowkind.is_retract(merged[KIND].to_numpy())
        n = int(np.count_nonzero(retract))
        if n:
            if sink is not None:
                sink.dropped(merged.filter(pa.array(retract)))
            merged = merged.filter(pa.array(~retract))
            c["rows_deleted"] += n
    if expiry is not None and merged.num_rows:
        expired, nulls = expiry.expired_mask(merged)
        n = int(np.count_nonzero(expired))
        if n:
            if sink is not None:
                sink.dropped(merged.filter(pa.array(expired)))
            merged = merged.filter(pa.array(~expired))
        c["rows_expired"] += n
        c["rows_null_time"] += int(np.count_nonzero(nulls))
    c["rows_out"] += merged.num_rows
    return merged


class _FigureSink:
    """One unit's :class:`UnitFigures` as it runs: checksums of the merged rows and of the rows
    dropped after the merge, per batch as they stream by (checksums add up), then of the files
    written, read back. Visible rows and retractions are summed apart, over the table's columns."""

    def __init__(self, columns: list[str], expiry: RecordExpiry | None):
        self.columns, self.expiry = columns, expiry
        self.sums: dict[str, Checksum] = {}
        self.expired_written = 0

    def _add(self, name: str, rows: pa.Table) -> None:
        if not rows.num_rows:
            return
        # one hashing of the rows, its sums split by row kind (no filtered copies to hash apart)
        h = row_hashes(rows.select(self.columns))
        retract = rowkind.is_retract(rows[KIND].to_numpy())
        parts = ((name, h[~retract]), (name + "_r", h[retract])) if retract.any() else ((name, h),)
        for key, part in parts:
            if len(part):
                self.sums[key] = self.sums.get(key, EMPTY) + hashes_checksum(part)

    def merged(self, rows: pa.Table) -> None:
        self._add("read", rows)

    def dropped(self, rows: pa.Table) -> None:
        self._add("dropped", rows)

    def read_back(self, store: FileStore, bucket_dir: str, files: Sequence[DataFileMeta], chunk_rows: int) -> None:
        # Read back from storage, not summed from the batches given to the writer: those are the
        # merged rows minus the dropped ones by construction (a comparison that cannot fail), while
        # the files are what readers will see (writer, encoding and storage included).
        for f in files:
            # the table's columns and the row kind: what is compared (not the sequence numbers)
            for chunk in iter_kv_file(store, bucket_dir, f, chunk_rows, columns=[*self.columns, KIND]):
                self._add("written", chunk)
                if self.expiry is not None and chunk.num_rows:
                    self.expired_written += int(np.count_nonzero(self.expiry.expired_mask(chunk)[0]))

    def figures(self) -> UnitFigures:
        s = self.sums
        return UnitFigures(
            read=s.get("read", EMPTY),
            dropped=s.get("dropped", EMPTY),
            written=s.get("written", EMPTY),
            retractions_read=s.get("read_r", EMPTY),
            retractions_dropped=s.get("dropped_r", EMPTY),
            retractions_written=s.get("written_r", EMPTY),
            expired_written=self.expired_written,
            expiry_applied=self.expiry is not None,
        )


class _ChangelogSink:
    """Changelog chunks streamed into changelog files rolled at ``target-file-size`` while the merge
    runs (appended to ``out``, also on failure, so the caller can delete them)."""

    def __init__(self, writer: DataFileWriter, level: int, out: list[DataFileMeta]):
        self.writer, self.level, self.out = writer, level, out
        self.rolling: RollingFileWriter | None = None

    def append(self, chunk: pa.Table) -> None:
        rolling = self.rolling
        if rolling is None:
            rolling = self.rolling = self.writer.rolling(
                level=self.level, file_source=FileSource.COMPACT, changelog=True
            )
        try:
            rolling.write(chunk)
        except BaseException:
            self._finish(abort=True)
            raise

    def flush(self) -> None:
        if self.rolling is not None:
            self._finish(abort=False)

    def discard(self) -> None:
        """Drop the file being written (a failed unit); finished files are in ``out``."""
        if self.rolling is not None:
            self._finish(abort=True)

    def _finish(self, abort: bool) -> None:
        rolling, self.rolling = self.rolling, None
        if rolling is None:
            return
        try:
            if abort:
                rolling.abort()
            else:
                rolling.close()
        except BaseException:
            rolling.abort()
            raise
        finally:
            self.out.extend(w.meta for w in rolling.written)


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
