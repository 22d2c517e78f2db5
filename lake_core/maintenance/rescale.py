"""Online, verified bucket rescale of a fixed-bucket table, partition by partition.

``rescale(bucket=N)`` sets the table's ``bucket`` option (a schema change) and then rewrites each
selected partition into N buckets:

1. read the partition's live rows at the latest snapshot S (merged, deletes dropped);
2. re-bucket them with Paimon's bucket function and write them as top-level files, one sorted run
   per new bucket (compaction's rolling writer). When one count is a multiple of the other, each
   new bucket's rows come from whole old buckets, whose merged rows arrive in key order: they are
   cut by new bucket as they stream, or merged as sorted runs (:func:`_routes`); other ratios go
   through sorted spill runs (:func:`_rewrite_streamed`);
3. verify: row count and an order-independent checksum of all columns, before (at S) and after
   (read back from the new files), and that every row sits in the bucket its key hashes to;
4. commit an OVERWRITE of exactly that partition: it deletes exactly the files read at S and
   fails cleanly (``CommitConflictError``) if anything else committed to the partition since S.

A partition keeps its bucket count (``_TOTAL_BUCKETS`` of its files) until it is rewritten, and
writers use each partition's own count, so writes to other partitions continue during a rescale.
A writer that still uses the old count for a partition rescaled meanwhile gets Paimon's "total
buckets changed" conflict. Every partition is one unit (:func:`plan_rescale`,
:func:`rescale_partition`) that a scheduler can run as a backfill; a re-run skips partitions
already at the new count. :class:`RescaleJob` is plan → prepare partitions → one commit as a
:class:`lake_core.distributed.DistributedJob`, which the local and the Spark runner execute.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from lake_core import arrow_memory
from lake_core.bucket.assign import assign_buckets
from lake_core.commit.file_store_commit import BATCH_IDENTIFIER, FileStoreCommit
from lake_core.decode_threads import one_of_several_workers
from lake_core.definition import commit_schema_changes
from lake_core.distributed import DistributedJob, Progress, run_locally
from lake_core.errors import (
    CommitConflictError,
    CommitFailedError,
    InvalidOptionError,
    LakeError,
    UnsupportedOptionError,
)
from lake_core.format.checksum import EMPTY, Checksum, table_checksum
from lake_core.kv.system_fields import KIND, SEQ
from lake_core.lsm.merge_stream import merge_sorted_runs
from lake_core.manifest.metadata import DataFileMeta, FileKind, ManifestEntry
from lake_core.merge.base import take
from lake_core.merge.sort import group_positions, merge_order
from lake_core.options import CoreOptions
from lake_core.paths import FileNamer, partition_dir
from lake_core.read.read_ahead import read_ahead
from lake_core.read.scan import TableScan
from lake_core.read.split import Split
from lake_core.read.split_read import SplitRead
from lake_core.result import OperationResult, fact, human_bytes
from lake_core.schema.change import SchemaChange
from lake_core.schema.partition_selector import PartitionSelector, partition_text
from lake_core.snapshot.snapshot import RESCALE_PROPERTY
from lake_core.write.file_writer import ROW_GROUP_BYTES, DataFileWriter

if TYPE_CHECKING:
    from lake_core.table import FileStoreTable

log = logging.getLogger(__name__)


class RescaleVerificationError(LakeError):
    """The rewritten partition did not read back exactly as it was; nothing was committed."""


# ------------------------------------------------------------------------------------------------
# Plans and results
# ------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class RescaleUnit:
    """One partition to rewrite (from metadata only)."""

    partition: tuple[tuple[str, Any], ...]  # ((name, value), ...); () for an unpartitioned table
    old_buckets: int
    files: int
    file_rows: int  # rows in the files (before merging)
    bytes: int

    @property
    def spec(self) -> dict[str, Any]:
        return dict(self.partition)


@dataclasses.dataclass(frozen=True)
class RescalePlan:
    table: str
    bucket: int
    snapshot_id: int | None
    units: tuple[RescaleUnit, ...]  # partitions still to rewrite
    already_rescaled: tuple[tuple[tuple[str, Any], ...], ...]  # partitions already at ``bucket``


@dataclasses.dataclass(frozen=True, kw_only=True)
class PartitionRescaleResult:
    """What rescaling one partition did."""

    partition: str  # 'dt=2024-01-01' ('' for an unpartitioned table)
    old_buckets: int
    new_buckets: int
    rows: int
    files_in: int
    files_out: int
    bytes_in: int
    bytes_out: int
    checksum: str  # of the rows read (``rows`` of them)
    snapshot_read: int | None
    snapshot_committed: int | None
    skipped: str | None = None
    # this partition's own time: its read, rewrite and check (in its task) plus the commit it is part of
    duration_s: float = 0.0
    # the new files read back in the task that wrote them (the in-task check compares them with
    # rows/checksum, read in the same task: lake_core.maintenance.rescale_verify.check_rescale)
    rows_after: int = 0
    checksum_after: str = ""

    def line(self) -> str:
        """One line of the rescale's description: ``'dt=1: 2 → 4 buckets, 100 rows, 3 → 4 files'``."""
        where = self.partition or "(unpartitioned)"
        if self.skipped:
            return f"{where}: skipped — {self.skipped}"
        return (
            f"{where}: {self.old_buckets} → {self.new_buckets} buckets, {self.rows} rows, "
            f"{self.files_in} → {self.files_out} files ({human_bytes(self.bytes_in)} → {human_bytes(self.bytes_out)})"
        )


@dataclasses.dataclass(frozen=True, kw_only=True)
class RescaleResult(OperationResult):
    bucket: int = fact(hidden=True)  # in the headline
    previous_bucket: int = fact(hidden=True)
    schema_id: int
    partitions_rescaled: int = fact(summary=True)
    partitions_skipped: int = fact(summary=True)
    rows: int = fact(summary=True)
    files_in: int = fact(summary=True, size="bytes_in")
    files_out: int = fact(summary=True, size="bytes_out")
    bytes_in: int
    bytes_out: int
    # the last snapshot the operation committed (None: nothing committed)
    snapshot_id: int | None = fact(None, summary=True, label="snapshot produced")
    partitions: tuple[PartitionRescaleResult, ...] = fact((), item=lambda p: p.line())

    def headline(self) -> str:
        return f"rescale of {self.table} from {self.previous_bucket} to {self.bucket} buckets" + (
            " (dry run)" if self.dry_run else ""
        )

    def did_something(self) -> bool:
        return self.partitions_rescaled > 0

    def noop_reason(self) -> str | None:
        if self.did_something():
            return None
        reasons = sorted({p.skipped for p in self.partitions if p.skipped})
        return "; ".join(reasons) if reasons else "no partition to rewrite"


# ------------------------------------------------------------------------------------------------
# Checks
# ------------------------------------------------------------------------------------------------


def _check_rescalable(table: FileStoreTable, bucket: Any) -> int:
    if isinstance(bucket, bool) or not isinstance(bucket, (int, np.integer)) or int(bucket) < 1:
        raise InvalidOptionError(f"rescale of {table.identifier}: bucket must be a positive integer, got {bucket!r}")
    if table.options.bucket < 1:
        raise UnsupportedOptionError(
            f"rescale of {table.identifier}: the table is in {table.bucket_mode} bucket mode ('bucket' = "
            f"{str(table.options.bucket)!r}); such tables grow their buckets by themselves (a new bucket opens "
            "when the others hold 'dynamic-bucket.target-row-num' keys) and cannot be rescaled. Rescale applies to "
            "fixed-bucket tables ('bucket' >= 1)"
        )
    return int(bucket)


def _spec_text(partition: Sequence[tuple[str, Any]]) -> str:
    return partition_text([k for k, _v in partition], [v for _k, v in partition])


def _partition_entries(table: FileStoreTable, snapshot) -> dict[bytes, list[ManifestEntry]]:
    out: dict[bytes, list[ManifestEntry]] = {}
    for e in table.manifest_store.live_entries(snapshot):
        out.setdefault(e.partition, []).append(e)
    return out


def _named(table: FileStoreTable, partition: bytes) -> tuple[tuple[str, Any], ...]:
    return tuple(zip(table.schema.partition_keys, table.manifest_store.partition_values(partition)))


# ------------------------------------------------------------------------------------------------
# Planning
# ------------------------------------------------------------------------------------------------


def plan_rescale(
    table: FileStoreTable, *, bucket: int, partitions: Sequence[Mapping[str, Any]] | None = None
) -> RescalePlan:
    """The partitions (matching ``partitions``, a list of {column: value} selectors; all when
    None) that are not yet at ``bucket`` buckets, from the latest snapshot's metadata."""
    bucket = _check_rescalable(table, bucket)
    selector = PartitionSelector.of(table.schema, partitions, table=table.identifier, operation="rescale")
    snap = table.latest_snapshot()
    by_partition = _partition_entries(table, snap)
    if selector is not None:  # a selector matching nothing is a typo, not a no-op
        selector.check_matched(table.manifest_store.partition_values(p) for p in by_partition)
    units, done = [], []
    for part, entries in sorted(
        by_partition.items(), key=lambda kv: repr(table.manifest_store.partition_values(kv[0]))
    ):
        named = _named(table, part)
        if selector is not None and not selector.matches([v for _k, v in named]):
            continue
        counts = {e.total_buckets for e in entries}
        if counts == {bucket}:
            done.append(named)
            continue
        units.append(
            RescaleUnit(
                partition=named,
                old_buckets=max(counts),
                files=len(entries),
                file_rows=sum(e.file.row_count for e in entries),
                bytes=sum(e.file.file_size for e in entries),
            )
        )
    return RescalePlan(table.identifier, bucket, snap.id if snap else None, tuple(units), tuple(done))


# ------------------------------------------------------------------------------------------------
# One partition
# ------------------------------------------------------------------------------------------------


def _target_buckets(table: FileStoreTable, rows: pa.Table, bucket: int) -> np.ndarray:
    """The bucket of every row of ``rows`` among ``bucket`` buckets (Paimon's bucket function)."""
    schema = table.schema
    keys = list(schema.bucket_keys())
    return assign_buckets(
        [rows[k] for k in keys], [schema.field(k).type for k in keys], bucket, table.options.bucket_function
    )


class _Spill:
    """Phase one of a rewrite: the partition's merged rows, streamed split by split, cut by new
    bucket into local Arrow IPC files, one per (new bucket, source split). A source split's rows
    arrive in key order, so each file is a sorted run of its new bucket. Nothing is held but the
    chunk in hand; the files go to a temporary directory deleted with the rewrite."""

    def __init__(self, directory: str):
        self.directory = directory
        self.runs: dict[int, list[str]] = {}  # new bucket -> its runs, in source-split order
        self._open: dict[tuple[int, int], pa.ipc.RecordBatchStreamWriter] = {}
        self._files: list[pa.NativeFile] = []

    def add(self, source: int, rows: pa.Table, buckets: np.ndarray) -> None:
        order = np.argsort(buckets, kind="stable")  # each new bucket's rows stay in key order
        ordered = buckets[order]
        cuts = np.flatnonzero(ordered[1:] != ordered[:-1]) + 1
        starts, ends = np.concatenate([[0], cuts]), np.concatenate([cuts, [len(ordered)]])
        rows = take(rows, order) if len(starts) > 1 else rows
        for s, e in zip(starts.tolist(), ends.tolist()):
            self._writer(source, int(ordered[s]), rows.schema).write_table(rows.slice(s, e - s))

    def _writer(self, source: int, b: int, schema: pa.Schema) -> pa.ipc.RecordBatchStreamWriter:
        w = self._open.get((source, b))
        if w is None:
            path = os.path.join(self.directory, f"run-{b}-{source}.arrows")
            sink = pa.OSFile(path, "wb")
            self._files.append(sink)
            w = self._open[(source, b)] = pa.ipc.new_stream(sink, schema)
            self.runs.setdefault(b, []).append(path)
        return w

    def close(self) -> None:
        for w in self._open.values():
            w.close()
        for f in self._files:
            f.close()
        self._open, self._files = {}, []


def _spilled_chunks(path: str, rows: int) -> Iterator[pa.Table]:
    """A spilled run in chunks of about ``rows`` rows (its batches are the cut pieces of the
    source chunks, smaller than a merge round wants)."""
    with pa.OSFile(path, "rb") as f:
        reader = pa.ipc.open_stream(f)
        held: list[pa.RecordBatch] = []
        n = 0
        for batch in reader:
            held.append(batch)
            n += batch.num_rows
            if n >= rows:
                yield pa.Table.from_batches(held)
                held, n = [], 0
        if held:
            yield pa.Table.from_batches(held)


def _key_sorted(key_names: Sequence[str]):
    """The merge of a round of the runs of one new bucket: its rows in key order (Java's order for
    float keys). The runs come from different old buckets, so no key is in two of them."""

    def merge(rows: pa.Table) -> pa.Table:
        with_seq = rows.append_column(SEQ, pa.array(np.zeros(rows.num_rows, np.int64)))
        return take(rows, merge_order(with_seq, tuple(key_names)))

    return merge


class _BucketRun:
    """One new bucket's rows as one sorted run at ``level``, written as they arrive in final order
    (the compaction writer: rolled at ``target-file-size``, one row group held), every row numbered
    0: no key is in the run twice, so no merge compares two of its numbers, and the next write of
    the bucket numbers above it (a constant column also costs a third of the time to encode and
    decode that distinct numbers take). ``group_bytes``: the Arrow bytes held per row group (a
    caller writing many new buckets at once shares one row group's worth among them)."""

    def __init__(self, table: FileStoreTable, ppath: str, b: int, level: int, group_bytes: int | None = None):
        self.table, self.b = table, b
        self.rolling = DataFileWriter(table.store, ppath, b, FileNamer()).rolling(level=level, group_bytes=group_bytes)

    def write(self, rows: pa.Table) -> None:
        n = rows.num_rows
        if not n:
            return
        rows = rows.append_column(pa.field(SEQ, pa.int64(), nullable=False), pa.array(arrow_memory.filled(n, 0)))
        rows = rows.append_column(pa.field(KIND, pa.int8(), nullable=False), pa.array(np.zeros(n, np.int8)))
        self.rolling.write(rows)

    def close(self) -> list[DataFileMeta]:
        """Finish the last file; the files written (deleted again if finishing fails)."""
        try:
            self.rolling.close()
        except BaseException:
            self.abort()
            raise
        return [w.meta for w in self.rolling.written]

    def abort(self) -> None:
        """Drop the file being written and delete the finished ones."""
        self.rolling.abort()
        for w in self.rolling.written:
            self.table.fileio.delete(w.path)


def _write_bucket(
    table: FileStoreTable, ppath: str, b: int, chunks: Iterator[pa.Table], level: int
) -> tuple[int, list[DataFileMeta]]:
    """One new bucket's rows, arriving in final order, as one sorted run (see :class:`_BucketRun`)."""
    run = _BucketRun(table, ppath, b, level)
    try:
        for chunk in chunks:
            run.write(chunk)
    except BaseException:
        run.abort()
        raise
    return b, run.close()


# ------------------------------------------------------------------------------------------------
# The routed rewrite: bucket counts that are multiples of each other
# ------------------------------------------------------------------------------------------------


class _NotRouted(Exception):  # noqa: N818 - internal signal, never raised out of this module
    """A row of an old bucket hashes to a new bucket its old bucket does not feed: the partition's
    files were not bucketed as this table buckets them, so the routed rewrite stops (deleting what
    it wrote) and the general one runs."""


@dataclasses.dataclass(frozen=True)
class _Route:
    """Old buckets (their splits, read merged) that together feed exactly ``targets`` new buckets."""

    splits: tuple[Split, ...]
    targets: tuple[int, ...]


def _routes(splits: Sequence[Split], old: int, bucket: int) -> list[_Route] | None:
    """How each new bucket's rows come from whole old buckets: one old bucket fanned out (1 -> N)
    or k old buckets merged into each new one (N -> N / k); None otherwise (the spill runs), or
    when the partition's files are not one split per bucket of ``old``.

    Paimon's bucket of a row is ``h mod n`` for a non-negative ``h`` that does not depend on ``n``
    (``|hashCode|`` for ``default``, the key for ``mod``, ``hashCode & MAX_INT`` for ``hive``; see
    :mod:`lake_core.bucket.assign`). So when ``bucket = k * old``, new bucket ``c`` holds only rows of
    old bucket ``c mod old`` (``(h mod k*old) mod old = h mod old``): old bucket ``b`` fans out to
    new buckets ``b, b + old, ..., b + (k-1) * old``. When ``old = k * bucket``, old bucket ``b``
    goes whole to new bucket ``b mod bucket``. Each old bucket's merged rows arrive in key order,
    so cutting them by new bucket keeps every piece in key order (no spill, no re-sort), and k
    old buckets, their keys disjoint, merge into one new bucket as k sorted runs.
    (tests/bucket/test_rescale_routing.py checks the property for the three functions.)"""
    if not splits or len({s.bucket for s in splits}) != len(splits):
        return None
    if any(s.total_buckets != old or not 0 <= s.bucket < old for s in splits):
        return None
    if bucket % old == 0:
        return [_Route((s,), tuple(range(s.bucket, bucket, old))) for s in splits]
    if old % bucket == 0:
        groups: dict[int, list[Split]] = {}
        for s in sorted(splits, key=lambda s: s.bucket):
            groups.setdefault(s.bucket % bucket, []).append(s)
        return [_Route(tuple(g), (c,)) for c, g in sorted(groups.items())]
    return None


def _cut(rows: pa.Table, buckets: np.ndarray) -> Iterator[tuple[int, pa.Table]]:
    """``rows`` cut into one piece per new bucket, each piece in the rows' order. Each piece is a
    copy of its own rows (not a slice of one reordered chunk): a writer holding pieces of many
    chunks until its row group fills then holds those rows, not every chunk they came from."""
    # the write's grouping: a stable order keeps every bucket's rows in key order
    for b, positions in group_positions(buckets, int(buckets.max()) + 1):
        yield b, rows if len(positions) == rows.num_rows else take(rows, positions)


def _rewrite_route(
    table: FileStoreTable,
    route: _Route,
    bucket: int,
    ppath: str,
    level: int,
    read_back: Callable[[int, Sequence[DataFileMeta]], Checksum],
    *,
    alone: bool = True,
) -> tuple[Checksum, Checksum, dict[int, list[DataFileMeta]]]:
    """Read the old buckets of ``route`` merged (one k-way merge of their sorted streams when
    several feed one new bucket), write every row to its new bucket as it passes (one rolling
    writer per new bucket, the row group shared among them), then read the new files back.
    ``alone``: the only route running, so it takes both cores: the read, merge and cut run in a
    thread of their own, two chunks ahead of the writers, which encode several new buckets in two
    threads; otherwise (routes run side by side) all of it runs in the caller's thread. Returns the
    checksums of the rows read and of the files read back, and the files per new bucket; on
    failure deletes what it wrote."""
    # the rows are checksummed and cut by new bucket before their string values are decoded: a
    # dictionary's checksum gathers views, and its cut gathers indices, not characters
    reader = SplitRead(table.store, dictionaries=True)
    if len(route.splits) > 1:
        # k old buckets merge into one new bucket: each reads 1/k of ``read.batch-size`` per round,
        # so a round holds about one batch whatever k is (as one old bucket cut into k does)
        reader.batch_rows = max(1024, reader.batch_rows // len(route.splits))
    before = [EMPTY]  # summed by the thread that reads

    def counted(split: Split) -> Iterator[pa.Table]:
        for rows in reader.iter_split(split):
            before[0] = before[0] + table_checksum(rows)
            # runs merged into one new bucket: each file chooses its dictionary columns, so the
            # runs' chunks are decoded to one schema first
            yield reader.decoded(rows) if len(route.splits) > 1 else rows

    key_names = list(table.schema.trimmed_primary_keys)
    feeds = np.zeros(bucket, bool)
    feeds[list(route.targets)] = True

    def pieces(_route: _Route) -> Iterator[list[tuple[int, pa.Table]]]:
        runs = [counted(s) for s in route.splits]
        chunks: Iterator[pa.Table]
        if len(runs) == 1:
            chunks = runs[0]
        elif key_names:
            chunks = merge_sorted_runs(runs, key_names, _key_sorted(key_names))
        else:  # an append table's bucket has no order
            chunks = (c for run in runs for c in run)
        for rows in chunks:
            if not rows.num_rows:
                continue
            buckets = _target_buckets(table, rows, bucket)
            if not feeds[buckets].all():
                stray = int(np.count_nonzero(~feeds[buckets]))
                raise _NotRouted(
                    f"{stray} row(s) of old bucket(s) {[s.bucket for s in route.splits]} hash to new buckets "
                    f"outside {list(route.targets)}"
                )
            yield [(b, reader.decoded(piece)) for b, piece in _cut(rows, buckets)]

    block = table.options.parquet_block_size or ROW_GROUP_BYTES
    group_bytes = max(block // len(route.targets), min(block, 1 << 20))
    writers: dict[int, _BucketRun] = {}
    written: dict[int, list[DataFileMeta]] = {}
    pending: dict[int, Future] = {}

    def finish(b: int) -> Checksum:
        written[b] = writers.pop(b).close()  # a writer that fails to close drops its files
        return read_back(b, written[b])

    # several new buckets are encoded in two threads (the read, merge and cut run in a third): a
    # bucket's pieces one at a time and in order, so each stays one sorted run
    pool = ThreadPoolExecutor(max_workers=2) if alone else None
    try:
        for _r, cut in read_ahead([route], pieces, threads=1, ahead=2, background=alone):
            for b, piece in cut:
                w = writers.get(b)
                if w is None:
                    w = writers[b] = _BucketRun(table, ppath, b, level, group_bytes)
                if pool is None or len(route.targets) == 1:  # written here, as it arrives
                    w.write(piece)
                    continue
                prev = pending.get(b)
                if prev is not None:
                    prev.result()
                pending[b] = pool.submit(w.write, piece)
        for fut in pending.values():
            fut.result()
        after = EMPTY
        for got in (pool.map if pool is not None else map)(finish, sorted(writers)):
            after = after + got
    except BaseException:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)  # nothing writes while the files are dropped
        for w in writers.values():
            w.abort()
        _delete_files(table, route.splits[0].partition_values, written)
        raise
    finally:
        if pool is not None:
            pool.shutdown(wait=True)
    return before[0], after, written


def _rewrite_routed(
    table: FileStoreTable,
    snapshot_id: int,
    partition: bytes,
    partition_values: tuple,
    routes: Sequence[_Route],
    bucket: int,
) -> tuple[Checksum, Checksum, dict[int, list[DataFileMeta]]]:
    """The routed rewrite (see :func:`_routes`): several routes run two at a time, each in one
    thread (2 -> 8: 0.73 against 0.77 s one at a time; 8 -> 2: x1.39 the rows/s); a single route
    (1 -> N) reads, merges and cuts in a thread of its own while two threads encode its new
    buckets. Memory: per running route the merge's chunks (``read.batch-size`` rows per file of a
    section) and one row group, whatever the partition's size. Raises :class:`_NotRouted` (nothing
    left behind) when a row is not where its old bucket count puts it."""
    is_pk = bool(table.schema.primary_keys)
    level = table.options.num_levels - 1 if is_pk else 0
    ppath = partition_dir(
        list(table.schema.partition_keys), list(partition_values), table.options.partition_default_name
    )

    def read_back(b: int, files: Sequence[DataFileMeta]) -> Checksum:
        return _read_back_checksum(table, snapshot_id, partition, partition_values, bucket, b, files)

    def run(route: _Route, alone: bool) -> tuple[Checksum, Checksum, dict[int, list[DataFileMeta]]]:
        # routes side by side read in this thread; a lone route reads in a thread of its own
        with one_of_several_workers(not alone):
            return _rewrite_route(table, route, bucket, ppath, level, read_back, alone=alone)

    before = after = EMPTY
    written: dict[int, list[DataFileMeta]] = {}
    failed: BaseException | None = None
    if len(routes) > 1:
        # two routes at a time, each read, merged, cut, written and read back in one thread (as
        # compaction runs two buckets); a route that fails has dropped its own files, the others'
        # are dropped below once every route ended
        with ThreadPoolExecutor(max_workers=2) as pool:
            futures = [pool.submit(run, route, False) for route in routes]
            for fut in futures:
                try:
                    got_before, got_after, got = fut.result()
                except BaseException as e:  # noqa: BLE001 - raised below, once every route ended
                    failed = failed or e
                    continue
                before, after = before + got_before, after + got_after
                written.update(got)
    else:
        for route in routes:
            try:
                got_before, got_after, got = run(route, True)
            except BaseException as e:  # noqa: BLE001 - raised below
                failed = e
                break
            before, after = before + got_before, after + got_after
            written.update(got)
    if failed is not None:
        _delete_files(table, partition_values, written)
        raise failed
    return before, after, dict(sorted(written.items()))


def _rewrite_streamed(
    table: FileStoreTable,
    snapshot_id: int,
    partition: bytes,
    partition_values: tuple,
    splits: Sequence[Split],
    bucket: int,
) -> tuple[Checksum, Checksum, dict[int, list[DataFileMeta]]]:
    """Read the partition's merged rows split by split and write them into ``bucket`` buckets, one
    sorted run per new bucket at the top level (PK tables), holding about two chunks per thread and
    one row group per writer, not the partition: rows are cut by new bucket into sorted spill runs
    as they are read, then each new bucket's runs are merged by key into its files, which are read
    back at once (two buckets at a time: Parquet decoding and encoding release the GIL). Returns
    the checksums of the rows read and of the files read back, and the files written per new
    bucket (deleted again when anything fails)."""
    is_pk = bool(table.schema.primary_keys)
    level = table.options.num_levels - 1 if is_pk else 0
    ppath = partition_dir(
        list(table.schema.partition_keys), list(partition_values), table.options.partition_default_name
    )
    # ``read.batch-size`` rows per source file per merge round, as compaction: 4x that measured the
    # same CPU seconds at twice the peak memory (2M rows, 2 -> 8 buckets: +180 MiB against +370)
    chunk_rows = table.options.read_batch_rows
    reader = SplitRead(table.store)
    index = {id(s): i for i, s in enumerate(splits)}
    before = EMPTY
    key_names = list(table.schema.trimmed_primary_keys)
    with tempfile.TemporaryDirectory(prefix="lake-core-rescale-") as tmp:
        spill = _Spill(tmp)
        try:
            for split, rows in reader.iter_split_batches(splits):
                before = before + table_checksum(rows)
                spill.add(index[id(split)], rows, _target_buckets(table, rows, bucket))
        finally:
            spill.close()

        def write(b: int) -> tuple[list[DataFileMeta], Checksum]:
            runs = [_spilled_chunks(p, chunk_rows) for p in spill.runs[b]]
            if len(runs) == 1:
                chunks = runs[0]
            elif is_pk:
                chunks = merge_sorted_runs(runs, key_names, _key_sorted(key_names))
            else:  # an append table's bucket has no order: its runs one after the other
                chunks = (c for run in runs for c in run)
            _b, files = _write_bucket(table, ppath, b, chunks, level)
            try:
                return files, _read_back_checksum(table, snapshot_id, partition, partition_values, bucket, b, files)
            except BaseException:
                _delete_files(table, partition_values, {b: files})
                raise

        written: dict[int, list[DataFileMeta]] = {}
        after = EMPTY
        with ThreadPoolExecutor(max_workers=2) as pool:
            futures = [(b, pool.submit(write, b)) for b in sorted(spill.runs)]
            failed: BaseException | None = None
            for b, fut in futures:
                try:
                    written[b], got = fut.result()
                    after = after + got
                except BaseException as e:  # noqa: BLE001 - re-raised below, after the others finished
                    failed = failed or e
        if failed is not None:
            _delete_files(table, partition_values, written)
            raise failed
    return before, after, written


def _rewrite(
    table: FileStoreTable,
    snapshot_id: int,
    partition: bytes,
    partition_values: tuple,
    splits: Sequence[Split],
    old: int,
    bucket: int,
    text: str,
) -> tuple[Checksum, Checksum, dict[int, list[DataFileMeta]]]:
    """The partition rewritten into ``bucket`` buckets: routed when the counts are multiples of
    each other (:func:`_routes`), through sorted spill runs otherwise (:func:`_rewrite_streamed`)."""
    routes = _routes(splits, old, bucket)
    if routes is not None:
        try:
            return _rewrite_routed(table, snapshot_id, partition, partition_values, routes, bucket)
        except _NotRouted as e:
            log.warning(
                "rescale %s partition '%s': %s; rewriting it through sorted spill runs instead",
                table.identifier,
                text,
                e,
            )
    return _rewrite_streamed(table, snapshot_id, partition, partition_values, splits, bucket)


def _read_back_checksum(
    table: FileStoreTable,
    snapshot_id: int,
    partition: bytes,
    values: tuple,
    bucket: int,
    b: int,
    files: Sequence[DataFileMeta],
) -> Checksum:
    """The checksum of new bucket ``b``'s files, read back chunk by chunk; every row must sit in
    the bucket its key hashes to."""
    if not files:
        return EMPTY
    ppath = partition_dir(list(table.schema.partition_keys), list(values), table.options.partition_default_name)
    split = Split(
        snapshot_id=snapshot_id,
        partition=partition,
        partition_values=values,
        bucket=b,
        total_buckets=bucket,
        bucket_path=table.paths.bucket_dir(ppath, b),
        files=tuple(files),
    )
    reader = SplitRead(table.store, dictionaries=True)  # checksummed as read (a dictionary gathers views)
    after = EMPTY
    with one_of_several_workers():  # read-backs run two at a time
        for t in reader.iter_split(split):
            got = _target_buckets(table, t, bucket)
            if len(got) and not np.all(got == b):
                raise RescaleVerificationError(
                    f"rescale of {table.identifier}: bucket {b} of the rewritten partition holds "
                    f"{int(np.count_nonzero(got != b))} row(s) of other buckets; nothing was committed"
                )
            after = after + table_checksum(t)
    return after


def _delete_files(table: FileStoreTable, partition_values, written: dict[int, list]) -> None:
    ppath = partition_dir(
        list(table.schema.partition_keys), list(partition_values), table.options.partition_default_name
    )
    for b, files in written.items():
        for f in files:
            table.fileio.delete(table.paths.data_file(ppath, b, f.file_name))


@dataclasses.dataclass(frozen=True)
class PreparedRescale:
    """A partition rewritten into new files and verified, not yet committed (picklable: the
    files can be written by one task and committed by another)."""

    partition: bytes
    partition_text: str
    partition_values: tuple
    old_buckets: int
    new_buckets: int
    snapshot_read: int
    replaced: tuple[ManifestEntry, ...]  # the partition's live files at ``snapshot_read``
    new_files: tuple[tuple[int, DataFileMeta], ...]  # (bucket, file)
    checksum: Checksum  # of the partition's rows as read at ``snapshot_read``
    started: float  # time.monotonic() when preparing began (in the process that prepared it)
    checksum_after: Checksum | None = None  # of the new files, read back in the task
    prepare_s: float = 0.0  # how long preparing took (a duration: valid in any process)


def _find_partition(table: FileStoreTable, partition: Any):
    """(latest snapshot, the partition's serialized key or None when it holds no data, its live
    entries, its text) for ``partition``: a value for every partition column, as a dict or text."""
    names = list(table.schema.partition_keys)
    where = f"rescale_partition of {table.identifier}"
    if not names:
        if partition:
            raise InvalidOptionError(f"{where}: the table is not partitioned, got partition {partition!r}")
        spec: dict[str, Any] = {}
    else:
        selector = PartitionSelector.of(
            table.schema, partition or {}, table=table.identifier, operation="rescale_partition"
        )
        specs = selector.specs if selector is not None else ()
        spec = dict(specs[0]) if len(specs) == 1 else {}
        if sorted(spec) != sorted(names):
            raise InvalidOptionError(f"{where} needs one value for every partition column {names}, got {partition!r}")
    values = [spec[n] for n in names]
    snap = table.latest_snapshot()
    for part, entries in _partition_entries(table, snap).items():
        if list(table.manifest_store.partition_values(part)) == values:
            return snap, part, entries, partition_text(names, values)
    return snap, None, [], partition_text(names, values)


def _check_reads_what_it_replaces(
    table: FileStoreTable, text: str, snapshot_id: int, splits: Sequence[Split], entries: Sequence[ManifestEntry]
) -> None:
    """The OVERWRITE removes every live file of the partition, so the rows written must come from
    every one of them: a file the read skipped (a hidden level 0) would lose its rows for good."""
    read = {(s.bucket, f.file_name) for s in splits for f in s.files}
    removed = {(e.bucket, e.file.file_name) for e in entries}
    if read != removed:
        missed = sorted(removed - read)
        raise RescaleVerificationError(
            f"rescale of {table.identifier} partition '{text}' at snapshot {snapshot_id}: the commit would remove "
            f"{len(removed)} file(s) but the read covered {len(read & removed)}; not read: "
            f"{', '.join(f'bucket {b}/{n}' for b, n in missed[:5])}{' ...' if len(missed) > 5 else ''}; "
            "nothing was written or committed"
        )


def prepare_rescale_partition(
    table: FileStoreTable, *, partition: Mapping[str, Any] | None = None, bucket: int, dry_run: bool = False
) -> PreparedRescale | PartitionRescaleResult:
    """Read one partition at the latest snapshot, write it into ``bucket`` buckets and verify the
    new files. Returns a :class:`PreparedRescale` for :func:`commit_rescale_partition`, or a
    result with ``skipped`` set (no data, already at ``bucket`` buckets, or a dry run)."""
    started = time.monotonic()
    bucket = _check_rescalable(table, bucket)
    snap, part, entries, text = _find_partition(table, partition)

    def skipped(why: str, old: int, rows: int = 0, preview: bool = False) -> PartitionRescaleResult:
        log.info("rescale %s partition '%s': skipped, %s", table.identifier, text, why)
        return PartitionRescaleResult(
            partition=text,
            old_buckets=old,
            new_buckets=bucket,
            rows=rows,
            # a dry run previews the files it would read; a partition skipped otherwise read none
            files_in=len(entries) if preview else 0,
            files_out=0,
            bytes_in=sum(e.file.file_size for e in entries) if preview else 0,
            bytes_out=0,
            checksum="",
            skipped=why,
            snapshot_read=snap.id if snap else None,
            snapshot_committed=None,
            duration_s=time.monotonic() - started,
        )

    if part is None:
        return skipped("the partition has no data", bucket)
    old = max(e.total_buckets for e in entries)
    if {e.total_buckets for e in entries} == {bucket}:
        return skipped(f"already at {bucket} buckets", old)
    if dry_run:
        return skipped("dry run", old, sum(e.file.row_count for e in entries), preview=True)
    values = table.manifest_store.partition_values(part)
    splits = [s for s in TableScan(table.store, snap, all_levels=True).splits() if s.partition == part]
    _check_reads_what_it_replaces(table, text, snap.id, splits, entries)
    before, after, written = _rewrite(table, snap.id, part, values, splits, old, bucket, text)
    try:
        if after != before:
            raise RescaleVerificationError(
                f"rescale of {table.identifier} partition '{text}': the rewritten data reads back as {after}, "
                f"but the partition held {before} at snapshot {snap.id}; nothing was committed"
            )
    except BaseException:
        _delete_files(table, values, written)
        raise
    return PreparedRescale(
        part,
        text,
        values,
        old,
        bucket,
        snap.id,
        tuple(entries),
        tuple((b, f) for b, files in sorted(written.items()) for f in files),
        before,
        started,
        after,
        time.monotonic() - started,
    )


def _validate_unchanged(table: FileStoreTable, prepared: Sequence[PreparedRescale]):
    """The commit's guard: every rewritten partition still holds exactly the files it was read from."""
    by_partition = {p.partition: p for p in prepared}

    def validate(latest):
        live: dict[bytes, set] = {part: set() for part in by_partition}
        for e in table.manifest_store.live_entries(latest):
            if e.partition in live:
                live[e.partition].add(e.identifier())
        for part, p in by_partition.items():
            expected = {e.identifier() for e in p.replaced}
            if live[part] != expected:
                raise CommitConflictError(
                    f"rescale of {table.identifier} partition '{p.partition_text}' is not committed: the partition "
                    f"changed after snapshot {p.snapshot_read}, which the rescale read (at snapshot {latest.id} it "
                    f"has {len(live[part])} live file(s), the rescale rewrote {len(expected)}); nothing was lost — "
                    "re-run the rescale of this partition"
                )

    return validate


def abort_rescale(table: FileStoreTable, prepared: Sequence[PreparedRescale]) -> None:
    """Delete the new files of prepared, uncommitted partitions (after a failure elsewhere)."""
    for p in prepared:
        written: dict[int, list] = {}
        for b, f in p.new_files:
            written.setdefault(b, []).append(f)
        _delete_files(table, p.partition_values, written)


def commit_rescale_partitions(
    table: FileStoreTable, prepared: Sequence[PreparedRescale], commit_user: str | None = None
) -> tuple[PartitionRescaleResult, ...]:
    """Commit prepared partitions as ONE OVERWRITE that replaces exactly the files they read;
    fails with ``CommitConflictError`` (and deletes every new file) if any of them changed since."""
    prepared = list(prepared)
    if not prepared:
        return ()
    if len({p.partition for p in prepared}) != len(prepared):
        raise InvalidOptionError(
            f"rescale of {table.identifier}: a partition was prepared more than once "
            f"({', '.join(p.partition_text for p in prepared)})"
        )
    entries = [
        ManifestEntry(FileKind.DELETE, e.partition, e.bucket, e.total_buckets, e.file)
        for p in prepared
        for e in p.replaced
    ]
    entries += [ManifestEntry(FileKind.ADD, p.partition, b, p.new_buckets, f) for p in prepared for b, f in p.new_files]
    commit_started = time.monotonic()
    properties = {
        RESCALE_PROPERTY: ",".join(p.partition_text for p in prepared),
        "rescale.buckets": ",".join(f"{p.old_buckets}->{p.new_buckets}" for p in prepared),
        "rescale.checksum": ",".join(p.checksum.digest for p in prepared),
    }
    try:
        committed = FileStoreCommit(
            table.store, hooks=table, commit_user=commit_user or f"rescale-{uuid.uuid4()}"
        ).commit_overwrite_entries(entries, _validate_unchanged(table, prepared), BATCH_IDENTIFIER, properties)
    except (CommitConflictError, CommitFailedError):  # certainly not committed: the new files are garbage
        abort_rescale(table, prepared)
        raise
    results = []
    for p in prepared:
        result = PartitionRescaleResult(
            partition=p.partition_text,
            old_buckets=p.old_buckets,
            new_buckets=p.new_buckets,
            rows=p.checksum.rows,
            files_in=len(p.replaced),
            files_out=len(p.new_files),
            bytes_in=sum(e.file.file_size for e in p.replaced),
            bytes_out=sum(f.file_size for _b, f in p.new_files),
            checksum=p.checksum.digest,
            snapshot_read=p.snapshot_read,
            snapshot_committed=committed.id,
            duration_s=p.prepare_s + (time.monotonic() - commit_started),
            rows_after=p.checksum_after.rows if p.checksum_after is not None else 0,
            checksum_after=p.checksum_after.digest if p.checksum_after is not None else "",
        )
        log.info(
            "rescale %s partition '%s': %d -> %d buckets, %d rows, %d -> %d files, checksum %s verified, "
            "snapshot %d, %.2fs",
            table.identifier,
            p.partition_text,
            p.old_buckets,
            p.new_buckets,
            result.rows,
            result.files_in,
            result.files_out,
            p.checksum.digest,
            committed.id,
            result.duration_s,
        )
        results.append(result)
    return tuple(results)


def commit_rescale_partition(
    table: FileStoreTable, prepared: PreparedRescale, commit_user: str | None = None
) -> PartitionRescaleResult:
    """Commit one prepared partition (see :func:`commit_rescale_partitions`)."""
    return commit_rescale_partitions(table, [prepared], commit_user)[0]


def rescale_partition(
    table: FileStoreTable,
    *,
    partition: Mapping[str, Any] | None = None,
    bucket: int,
    commit_user: str | None = None,
    dry_run: bool = False,
) -> PartitionRescaleResult:
    """Rewrite one partition (``{column: value}`` for every partition column; None or {} for an
    unpartitioned table) into ``bucket`` buckets, verified, as one OVERWRITE commit. Safe to
    retry: a partition already at ``bucket`` buckets is skipped; pass the same ``commit_user`` on
    a retry to recognise a commit that landed before a crash."""
    prepared = prepare_rescale_partition(table, partition=partition, bucket=bucket, dry_run=dry_run)
    if isinstance(prepared, PartitionRescaleResult):
        return prepared
    return commit_rescale_partition(table, prepared, commit_user)


# ------------------------------------------------------------------------------------------------
# The whole operation
# ------------------------------------------------------------------------------------------------


def set_bucket_option(table: FileStoreTable, bucket: int) -> FileStoreTable:
    """The table with its ``bucket`` option set to ``bucket`` (a schema change when it differs)."""
    latest = table.schema_manager.latest()
    if latest is not None and CoreOptions(latest.options).bucket == bucket:
        # nothing would change (also when another handle set it meanwhile): no identical schema-N
        return table if latest == table.schema else table.with_schema(latest)
    schema = commit_schema_changes(table, [SchemaChange.set_option("bucket", str(bucket))])
    log.info("rescale %s: option 'bucket' set to %d (schema %d)", table.identifier, bucket, schema.id)
    return table.with_schema(schema)


def rescale(
    table: FileStoreTable,
    *,
    bucket: int,
    partitions: Sequence[Mapping[str, Any]] | None = None,
    dry_run: bool = False,
    progress: Progress | None = None,
) -> RescaleResult:
    """Set ``bucket`` and rewrite the selected partitions (all when None) into it, one verified
    OVERWRITE commit per partition (``progress(done, total)`` after each). Stops at the first partition that fails (its error says
    why); partitions done before stay done and a re-run continues with the rest."""
    started = time.monotonic()
    bucket = _check_rescalable(table, bucket)
    previous = table.options.bucket
    plan = plan_rescale(table, bucket=bucket, partitions=partitions)
    log.info(
        "rescale %s to %d buckets: %d partition(s) to rewrite, %d already at %d%s",
        table.identifier,
        bucket,
        len(plan.units),
        len(plan.already_rescaled),
        bucket,
        " (dry run)" if dry_run else "",
    )
    if not dry_run:
        table = set_bucket_option(table, bucket)
    job = RescaleJob(table, plan, previous_bucket=previous, dry_run=dry_run)
    results: list[PartitionRescaleResult] = []
    if progress is not None:
        progress(0, len(plan.units))
    for i, unit in enumerate(plan.units, 1):
        log.info(
            "rescale %s: partition %d/%d '%s' (%d files, %d bytes)",
            table.identifier,
            i,
            len(plan.units),
            _spec_text(unit.partition),
            unit.files,
            unit.bytes,
        )
        # one job per partition, so each commits on its own: a later failure keeps the earlier ones
        results += run_locally(job.only(unit)).partitions
        if progress is not None:
            progress(i, len(plan.units))
    return _summary(
        table,
        bucket=bucket,
        previous=previous,
        results=results,
        already=len(plan.already_rescaled),
        started=started,
        dry_run=dry_run,
    )


def _summary(
    table: FileStoreTable,
    *,
    bucket: int,
    previous: int,
    results: Sequence[PartitionRescaleResult],
    already: int,
    started: float,
    dry_run: bool = False,
) -> RescaleResult:
    done = [r for r in results if r.skipped is None]
    committed = [r.snapshot_committed for r in done if r.snapshot_committed is not None]
    return RescaleResult(
        operation="rescale",
        table=table.identifier,
        dry_run=dry_run,
        duration_s=time.monotonic() - started,
        bucket=bucket,
        previous_bucket=previous,
        schema_id=table.schema.id,
        partitions_rescaled=len(done),
        partitions_skipped=len(results) - len(done) + already,
        rows=sum(r.rows for r in done),
        files_in=sum(r.files_in for r in done),
        files_out=sum(r.files_out for r in done),
        bytes_in=sum(r.bytes_in for r in done),
        bytes_out=sum(r.bytes_out for r in done),
        snapshot_id=max(committed) if committed else None,
        partitions=tuple(results),
    )


def commit_rescale(
    table: FileStoreTable,
    outcomes: Sequence[PreparedRescale | PartitionRescaleResult],
    *,
    bucket: int,
    previous_bucket: int,
    commit_user: str | None = None,
    started: float | None = None,
) -> RescaleResult:
    """The second half of a distributed rescale: commit every prepared partition of ``outcomes``
    (what :func:`prepare_rescale_partition` returned for each partition, in any process) as one
    OVERWRITE snapshot, and summarize it with the skipped ones. ``previous_bucket`` is the
    table's ``bucket`` option before the rescale set it; ``started`` a ``time.monotonic()``."""
    prepared = [o for o in outcomes if isinstance(o, PreparedRescale)]
    # prepared elsewhere (a Spark task), ``p.started`` is another process's clock: use the durations
    first = time.monotonic() - max((p.prepare_s for p in prepared), default=0.0)
    committed = iter(commit_rescale_partitions(table, prepared, commit_user))
    results = [next(committed) if isinstance(o, PreparedRescale) else o for o in outcomes]
    return _summary(
        table,
        bucket=bucket,
        previous=previous_bucket,
        results=results,
        already=0,
        started=first if started is None else started,
    )


# ------------------------------------------------------------------------------------------------
# The distributed job
# ------------------------------------------------------------------------------------------------


PartitionOutcome = PreparedRescale | PartitionRescaleResult  # a prepared partition, or why it was skipped


@dataclasses.dataclass(frozen=True)
class RescaleJob(DistributedJob[RescaleUnit, PartitionOutcome, RescaleResult]):
    """A planned rescale as a distributed job: one unit per partition to rewrite (prepared and
    verified, not committed), then ONE OVERWRITE commit of them all. ``table`` is at the schema
    whose ``bucket`` option is already set, so the files written carry it; the job pickles (the
    table does), so Spark can ship it to its tasks. ``report``: partitions to report in the
    result, in this order, rewritten or with why they were skipped (a backfill's list); None:
    the units."""

    table: FileStoreTable
    plan: RescalePlan
    previous_bucket: int
    commit_user: str | None = None
    started: float | None = None  # time.monotonic() when the operation began (default: the first unit's start)
    dry_run: bool = False
    report: tuple[tuple[tuple[str, Any], ...], ...] | None = None

    @property
    def units(self) -> tuple[RescaleUnit, ...]:
        return self.plan.units

    def only(self, unit: RescaleUnit) -> RescaleJob:
        """This job for ``unit`` alone (its own commit)."""
        return dataclasses.replace(self, plan=dataclasses.replace(self.plan, units=(unit,)))

    def run_unit(self, unit: RescaleUnit) -> PartitionOutcome:
        return prepare_rescale_partition(self.table, partition=unit.spec, bucket=self.plan.bucket, dry_run=self.dry_run)

    def commit(self, outcomes: Sequence[PartitionOutcome]) -> RescaleResult:
        if self.report is not None:
            by_key = {_partition_key(u.spec): o for u, o in zip(self.units, outcomes)}
            # Partitions with nothing to rewrite: lake_core says why (metadata only, on the driver).
            outcomes = [
                by_key.get(_partition_key(dict(spec)))
                or prepare_rescale_partition(self.table, partition=dict(spec), bucket=self.plan.bucket)
                for spec in self.report
            ]
        return commit_rescale(
            self.table,
            outcomes,
            bucket=self.plan.bucket,
            previous_bucket=self.previous_bucket,
            commit_user=self.commit_user,
            started=self.started,
        )

    def abort(self, outcomes: Sequence[PartitionOutcome]) -> None:
        abort_rescale(self.table, [o for o in outcomes if isinstance(o, PreparedRescale)])

    def describe_unit(self, unit: RescaleUnit) -> str:
        return f"rescale of {self.table.identifier} partition {unit.spec}"


def _partition_key(spec: Mapping[str, Any]) -> tuple:
    return tuple(sorted(spec.items()))


def rescale_job(
    table: FileStoreTable,
    *,
    bucket: int,
    partitions: Sequence[Mapping[str, Any]] | None = None,
    commit_user: str | None = None,
) -> RescaleJob:
    """Plan a rescale to ``bucket`` (metadata only), set the table's ``bucket`` option (as
    :func:`rescale`) and return the job. ``partitions``: a backfill's partitions, each one
    partition (``{column: value}`` for every partition column; ``[{}]`` unpartitioned): those
    not at ``bucket`` become the units, and every one is reported in the result (a partition gone
    meanwhile, e.g. expired, is reported as skipped, not refused); None: every partition."""
    started = time.monotonic()
    bucket = _check_rescalable(table, bucket)
    previous = table.options.bucket
    report = None
    plan = plan_rescale(table, bucket=bucket)
    if partitions is not None:
        report = tuple(dict.fromkeys(_partition_key(p) for p in partitions))  # each partition once, in order
        wanted = set(report)
        plan = dataclasses.replace(plan, units=tuple(u for u in plan.units if _partition_key(u.spec) in wanted))
    return RescaleJob(
        set_bucket_option(table, bucket),
        plan,
        previous_bucket=previous,
        commit_user=commit_user,
        started=started,
        report=report,
    )
