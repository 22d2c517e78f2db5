"""Cross-partition upsert (a primary key that omits some partition fields, ``bucket`` = -1):
Java ``GlobalIndexAssigner`` + ``IndexBootstrap`` + ``ExistingProcessor``.

A key lives in exactly one (partition, bucket) of the table. When a write starts, a
key → (partition, bucket) index is bootstrapped from the live data of the latest snapshot (the
merged key columns of every bucket, skipping buckets whose files are all older than
``cross-partition-upsert.index-ttl``). Paimon keeps it in RocksDB; here it is sorted NumPy/Arrow
shards, spilled to Arrow IPC files in a temporary directory and memory-mapped when the table has
more keys than :attr:`CrossPartitionIndex.spill_rows`. Paimon writes no HASH index files in this
mode, and neither do we.

When an incoming row's key already lives in another partition, the merge engine decides
(Java ``ExistingProcessor.create``):

* deduplicate — a ``-D`` of the key goes to the old (partition, bucket), the row goes to its
  new partition (``DeleteExistingProcessor``);
* partial-update, aggregation — the row is rewritten into the old partition and bucket and
  merges there (``UseOldExistingProcessor``);
* first-row — the new row is dropped; the old one stays (``SkipNewExistingProcessor``).

New keys fill the partition's buckets up to ``dynamic-bucket.target-row-num`` (Java
``crosspartition.BucketAssigner``). Everything is vectorized over the batch: keys are looked up
with ``searchsorted`` on a 64-bit sort key (the key itself for one integer column, else a 64-bit
hash verified against the exact BinaryRow bytes of the key), and the sequential per-row rules
are applied per run of equal (key, partition) rows.
"""
from __future__ import annotations

import logging
import os
import shutil
import tempfile
import weakref
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_core.kv import rowkind
from lake_core.format.binary_row import _field, encode_rows, serialize_row
from lake_core.bucket.assign import _hash_word_matrix, hash_rows
from lake_core.bucket.dynamic import BucketFiller, DynamicBucketOptions, assigner_of
from lake_core.bucket.assign import hash_row_bytes
from lake_core.kv.system_fields import KIND
from lake_core.commit.messages import Split
from lake_core.options import parse_duration_ms
from lake_core.paths import partition_dir

if TYPE_CHECKING:
    from lake_core.snapshot.snapshot import Snapshot
    from lake_core.table import FileStoreTable

log = logging.getLogger(__name__)

_SEED2 = 0x9747B28C
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)

DEDUPLICATE, USE_OLD, SKIP_NEW = "delete-old", "use-old", "skip-new"




# ------------------------------------------------------------------------------------------------
# Keys
# ------------------------------------------------------------------------------------------------

class KeyEncoder:
    """Sort key (int64) of every key, plus its exact BinaryRow bytes unless the sort key *is* the
    key (one integer-like column)."""

    def __init__(self, types: Sequence[pa.DataType]):
        self.types = list(types)
        f = _field(types[0]) if len(types) == 1 else None
        self.exact = f is not None and f.kind in ("int", "date") and f.width <= 8

    def encode(self, columns: Sequence[Any]) -> tuple[np.ndarray, pa.Array | None]:
        if self.exact:
            col = columns[0]
            if isinstance(col, pa.ChunkedArray):
                col = col.combine_chunks()
            if pa.types.is_date(col.type):
                col = col.cast(pa.int32())
            return col.to_numpy(zero_copy_only=False).astype(np.int64), None
        buf, lengths = encode_rows(columns, self.types)
        n = len(lengths)
        width = buf.shape[1] if n else 0
        data = buf[np.arange(width)[None, :] < lengths[:, None]] if n else np.zeros(0, np.uint8)
        offsets = np.zeros(n + 1, np.int64)
        np.cumsum(lengths, out=offsets[1:])
        kb = pa.Array.from_buffers(pa.large_binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data)])
        # _hash_word_matrix may mix in place when a column of words is contiguous (one row): copy then
        words = buf.view("<u4")
        h1 = _hash_word_matrix(words.copy() if n == 1 else words, lengths // 4, 0, 42, lengths)
        h2 = _hash_word_matrix(words.copy() if n == 1 else words, lengths // 4, 0, _SEED2, lengths)
        sk = ((h1.view(np.uint32).astype(np.uint64) << np.uint64(32)) | h2.view(np.uint32).astype(np.uint64))
        return sk.view(np.int64), kb

    def hash32(self, columns: Sequence[Any]) -> np.ndarray:
        return hash_rows(columns, self.types)


def _search(sk: np.ndarray, kb: pa.Array | None, qsk: np.ndarray, qkb: pa.Array | None) -> np.ndarray:
    """Position of each query key in a store sorted by ``sk``, -1 where absent."""
    pos = np.full(len(qsk), -1, np.int64)
    if len(sk) == 0 or len(qsk) == 0:
        return pos
    lo = np.searchsorted(sk, qsk, side="left")
    hi = np.searchsorted(sk, qsk, side="right")
    if kb is None:
        hit = hi > lo
        pos[hit] = lo[hit]
        return pos
    pending = np.flatnonzero(hi > lo)
    r = 0
    while len(pending):  # almost always one round: 64-bit hashes rarely collide
        cand = lo[pending] + r
        eq = pc.equal(kb.take(pa.array(cand)), qkb.take(pa.array(pending))).to_numpy(zero_copy_only=False)
        pos[pending[eq]] = cand[eq]
        pending = pending[~eq]
        r += 1
        pending = pending[lo[pending] + r < hi[pending]]
    return pos


class _Store:
    """Keys sorted by sort key, with their partition id and bucket."""

    __slots__ = ("sk", "kb", "part", "bucket")

    def __init__(self, sk: np.ndarray, kb: pa.Array | None, part: np.ndarray, bucket: np.ndarray):
        self.sk, self.kb, self.part, self.bucket = sk, kb, part, bucket

    @staticmethod
    def empty(with_kb: bool) -> "_Store":
        return _Store(np.zeros(0, np.int64), pa.array([], pa.large_binary()) if with_kb else None,
                      np.zeros(0, np.int32), np.zeros(0, np.int32))

    @staticmethod
    def sorted_from(sk, kb, part, bucket) -> "_Store":
        order = np.argsort(sk, kind="stable")
        return _Store(sk[order], kb.take(pa.array(order)) if kb is not None else None, part[order], bucket[order])

    def __len__(self) -> int:
        return len(self.sk)

    def to_table(self) -> pa.Table:
        cols = {"sk": self.sk, "part": self.part, "bucket": self.bucket}
        if self.kb is not None:
            cols["kb"] = self.kb
        return pa.table(cols)

    @staticmethod
    def from_table(t: pa.Table) -> "_Store":
        def np_col(name):
            c = t.column(name)
            c = c.chunk(0) if c.num_chunks == 1 else c.combine_chunks()
            return c.to_numpy(zero_copy_only=False)
        kb = None
        if "kb" in t.column_names:
            c = t.column("kb")
            kb = c.chunk(0) if c.num_chunks == 1 else c.combine_chunks()
        return _Store(np_col("sk"), kb, np_col("part"), np_col("bucket"))

    def lookup(self, qsk, qkb):
        pos = _search(self.sk, self.kb, qsk, qkb)
        hit = pos >= 0
        part = np.full(len(qsk), -1, np.int32)
        bucket = np.full(len(qsk), -1, np.int32)
        part[hit] = self.part[pos[hit]]
        bucket[hit] = self.bucket[pos[hit]]
        return hit, part, bucket

    def upsert(self, sk, kb, part, bucket) -> "_Store":
        """New store with these (unique) keys set; they replace existing entries. A merge of
        two sorted runs: O(n + m log m)."""
        new = _Store.sorted_from(sk, kb, part, bucket) if len(sk) > 1 and (sk[1:] < sk[:-1]).any() \
            else _Store(sk, kb, part, bucket)
        if len(self.sk) == 0:
            return new
        pos = _search(self.sk, self.kb, new.sk, new.kb)
        keep = np.ones(len(self.sk), bool)
        keep[pos[pos >= 0]] = False
        idx = np.flatnonzero(keep)
        old_sk = self.sk[idx]
        at = np.searchsorted(old_sk, new.sk, side="right") + np.arange(len(new.sk))
        total = len(idx) + len(new.sk)
        is_new = np.zeros(total, bool)
        is_new[at] = True
        rest = ~is_new

        def merged(old, new_values, dtype):
            out = np.empty(total, dtype)
            out[at] = new_values
            out[rest] = old
            return out

        all_kb = None
        if self.kb is not None:
            take = np.empty(total, np.int64)
            take[at] = len(idx) + np.arange(len(new.sk))
            take[rest] = np.arange(len(idx))
            all_kb = pa.concat_arrays([self.kb.take(pa.array(idx)), new.kb]).take(pa.array(take))
        return _Store(merged(old_sk, new.sk, np.int64), all_kb, merged(self.part[idx], new.part, np.int32),
                      merged(self.bucket[idx], new.bucket, np.int32))


def _counting_argsort(values: np.ndarray) -> np.ndarray:
    """``argsort`` of distinct non-negative integers, in O(max) (a counting sort)."""
    if len(values) == 0:
        return np.zeros(0, np.int64)
    slot = np.full(int(values.max()) + 1, -1, np.int64)
    slot[values] = np.arange(len(values), dtype=np.int64)
    return slot[slot >= 0]


def _shard_of(sk: np.ndarray, bits: int) -> np.ndarray:
    if bits == 0:
        return np.zeros(len(sk), np.int64)
    return ((sk.view(np.uint64) * _GOLDEN) >> np.uint64(64 - bits)).astype(np.int64)


class CrossPartitionIndex:
    """key → (partition id, bucket) for one writer: sorted shards (in memory, or memory-mapped
    Arrow IPC files on local disk) plus an in-memory overlay of the keys this writer moved."""

    spill_rows = 4_000_000  # more bootstrap keys than this → shards on disk
    shard_rows = 2_000_000  # target keys per on-disk shard

    def __init__(self, encoder: KeyEncoder, tmp_root: str | None = None):
        self.encoder = encoder
        self.bits = 0
        self.shards: list[_Store | str] = [_Store.empty(not encoder.exact)]
        self.overlay = _Store.empty(not encoder.exact)
        self.tmp_root = tmp_root
        self.tmpdir: str | None = None
        self._finalizer = None
        self.size = 0

    # -- building -------------------------------------------------------------------------------
    def build(self, chunks: Callable[[], Any], estimated_rows: int) -> None:
        """``chunks()`` yields (sk, kb, part, bucket) arrays of the table's live keys."""
        spill = estimated_rows > self.spill_rows
        if spill:
            n_shards = max(1, -(-estimated_rows // self.shard_rows))
            self.bits = int(np.ceil(np.log2(n_shards))) if n_shards > 1 else 0
            self.tmpdir = tempfile.mkdtemp(prefix="lake-xpart-index-", dir=self.tmp_root)
            self._finalizer = weakref.finalize(self, shutil.rmtree, self.tmpdir, True)
        n_shards = 1 << self.bits
        pending: list[list] = [[] for _ in range(n_shards)]
        pending_rows = 0
        writers: dict[int, pa.ipc.RecordBatchStreamWriter] = {}
        schema = None

        def flush():
            nonlocal pending_rows, schema
            for s in range(n_shards):
                if not pending[s]:
                    continue
                t = pa.concat_tables(pending[s])
                schema = t.schema
                w = writers.get(s)
                if w is None:
                    w = writers[s] = pa.ipc.new_stream(os.path.join(self.tmpdir, f"run-{s}"), t.schema)
                w.write_table(t)
                pending[s] = []
            pending_rows = 0

        for sk, kb, part, bucket in chunks():
            store = _Store(sk, kb, part.astype(np.int32), bucket.astype(np.int32))
            t = store.to_table()
            self.size += len(sk)
            if n_shards == 1:
                pending[0].append(t)
            else:
                shard = _shard_of(sk, self.bits)
                order = np.argsort(shard, kind="stable")
                cuts = np.searchsorted(shard[order], np.arange(n_shards + 1))
                for s in range(n_shards):
                    if cuts[s + 1] > cuts[s]:
                        pending[s].append(t.take(pa.array(order[cuts[s]:cuts[s + 1]])))
            pending_rows += len(sk)
            if spill and pending_rows >= self.shard_rows:
                flush()
        if not spill:
            tables = pending[0]
            self.shards = [self._sorted(pa.concat_tables(tables)) if tables else _Store.empty(not self.encoder.exact)]
            return
        flush()
        for w in writers.values():
            w.close()
        self.shards = []
        for s in range(n_shards):
            run = os.path.join(self.tmpdir, f"run-{s}")
            final = os.path.join(self.tmpdir, f"shard-{s}.arrow")
            if os.path.exists(run):
                with pa.memory_map(run) as src:
                    store = self._sorted(pa.ipc.open_stream(src).read_all())
                os.remove(run)
            else:
                store = _Store.empty(not self.encoder.exact)
            t = store.to_table()
            with pa.OSFile(final, "wb") as sink, pa.ipc.new_file(sink, t.schema) as w:
                w.write_table(t)
            del store, t
            self.shards.append(final)
        log.info("cross-partition index: %d keys in %d on-disk shards under %s", self.size, n_shards, self.tmpdir)

    def _sorted(self, t: pa.Table) -> _Store:
        s = _Store.from_table(t)
        store = _Store.sorted_from(s.sk, s.kb, s.part, s.bucket)
        if len(store) > 1:
            dup = store.sk[1:] == store.sk[:-1]
            if dup.any():
                if store.kb is None:
                    n_dup = int(dup.sum())
                else:
                    i = np.flatnonzero(dup)
                    n_dup = int(pc.sum(pc.equal(store.kb.take(pa.array(i)), store.kb.take(pa.array(i + 1)))).as_py()
                                or 0)
                if n_dup:
                    log.warning("cross-partition index: %d key(s) are live in more than one (partition, bucket) "
                                "(concurrent writers, or keys older than 'cross-partition-upsert.index-ttl'); a later "
                                "write of such a key retracts only one copy", n_dup)
        return store

    def _shard(self, s: int) -> _Store:
        shard = self.shards[s]
        if isinstance(shard, str):  # memory-mapped: only the pages a lookup touches are read
            return _Store.from_table(pa.ipc.open_file(pa.memory_map(shard)).read_all())
        return shard

    # -- lookups and updates ------------------------------------------------------------------------
    def lookup(self, sk: np.ndarray, kb: pa.Array | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """For unique keys: (found, partition id, bucket)."""
        found, part, bucket = self.overlay.lookup(sk, kb)
        rest = np.flatnonzero(~found)
        if len(rest) and self.size:
            shard = _shard_of(sk[rest], self.bits)
            for s in np.unique(shard).tolist():
                sel = rest[shard == s]
                f, p, b = self._shard(s).lookup(sk[sel], kb.take(pa.array(sel)) if kb is not None else None)
                found[sel[f]] = True
                part[sel[f]] = p[f]
                bucket[sel[f]] = b[f]
        return found, part, bucket

    def update(self, sk: np.ndarray, kb: pa.Array | None, part: np.ndarray, bucket: np.ndarray) -> None:
        if len(sk):
            self.overlay = self.overlay.upsert(sk, kb, part.astype(np.int32), bucket.astype(np.int32))

    def close(self) -> None:
        self.shards = []
        if self._finalizer is not None:
            self._finalizer()


# ------------------------------------------------------------------------------------------------
# The assigner
# ------------------------------------------------------------------------------------------------

class CrossPartitionAssigner:
    """Routes a writer's rows in cross-partition upsert mode (see the module docstring)."""

    def __init__(self, table: "FileStoreTable", base: "Snapshot | None",
                 skip_partition: Callable[[tuple], bool] | None = None, tmp_root: str | None = None):
        self.table = table
        self.base = base
        schema = table.schema
        self.opts = DynamicBucketOptions.of(table.options)
        self.processor = table.merge_engine().on_partition_change
        self.key_names = list(schema.trimmed_primary_keys)
        self.key_types = [schema.field(k).type for k in self.key_names]
        self.partition_names = list(schema.partition_keys)
        self.partition_types = [schema.field(n).type for n in self.partition_names]
        self.encoder = KeyEncoder(self.key_types)
        self.skip_partition = skip_partition
        self.partitions: list[bytes] = []
        self.part_ids: dict[bytes, int] = {}
        self.part_values: list[tuple] = []
        self.fillers: dict[int, BucketFiller] = {}
        self.index = CrossPartitionIndex(self.encoder, tmp_root)
        self._bootstrapped = False

    # -- partitions -----------------------------------------------------------------------------
    def _part_id(self, partition: bytes, values: tuple | None = None) -> int:
        pid = self.part_ids.get(partition)
        if pid is None:
            pid = self.part_ids[partition] = len(self.partitions)
            self.partitions.append(partition)
            self.part_values.append(values if values is not None
                                    else self.table.manifest_store.partition_values(partition))
        return pid

    def _filler(self, pid: int) -> BucketFiller:
        f = self.fillers.get(pid)
        if f is None:
            values = self.part_values[pid]
            f = self.fillers[pid] = BucketFiller({}, self.opts, str(dict(zip(self.partition_names, values))))
        return f

    # -- bootstrap (Java IndexBootstrap) ------------------------------------------------------------
    def bootstrap(self) -> None:
        if self._bootstrapped:
            return
        self._bootstrapped = True
        if self.base is None:
            return
        from lake_core.write.file_writer import local_now_millis
        from lake_core.read.split_read import SplitRead
        table = self.table
        store = table.manifest_store
        groups: dict[tuple[bytes, int], list] = {}
        total_buckets: dict[tuple[bytes, int], int] = {}
        for e in store.live_entries(self.base):
            groups.setdefault((e.partition, e.bucket), []).append(e.file)
            total_buckets[(e.partition, e.bucket)] = e.total_buckets
        ttl = table.options.get("cross-partition-upsert.index-ttl")
        ttl_ms = parse_duration_ms("cross-partition-upsert.index-ttl", ttl) if ttl else None
        now = local_now_millis()
        splits = []
        default_name = table.options.partition_default_name
        for (partition, bucket), files in groups.items():
            values = store.partition_values(partition)
            if self.skip_partition is not None and self.skip_partition(values):
                continue
            if ttl_ms is not None and not any(f.creation_time is not None and now <= f.creation_time + ttl_ms
                                              for f in files):
                continue  # Java IndexBootstrap.filterSplit
            files = sorted(files, key=lambda f: (f.min_sequence_number, f.max_sequence_number, f.file_name))
            splits.append(Split(
                snapshot_id=self.base.id, partition=partition, partition_values=values, bucket=bucket,
                total_buckets=total_buckets[(partition, bucket)],
                bucket_path=table.paths.bucket_dir(partition_dir(self.partition_names, values, default_name), bucket),
                files=tuple(files), raw_convertible=len(files) == 1 and files[0].delete_row_count == 0))
        estimated = sum(f.row_count for s in splits for f in s.files)
        counts: dict[int, dict[int, int]] = {}

        def chunks():
            # Every level is read (first-row hides level 0 from batch scans, not from the index).
            read = SplitRead(table, self.key_names)
            for split, keys in read.iter_split_batches(splits):
                if keys.num_rows == 0:
                    continue
                pid = self._part_id(split.partition, split.partition_values)
                c = counts.setdefault(pid, {})
                c[split.bucket] = c.get(split.bucket, 0) + keys.num_rows
                sk, kb = self.encoder.encode([keys[k] for k in self.key_names])
                yield (sk, kb, np.full(keys.num_rows, pid, np.int32), np.full(keys.num_rows, split.bucket, np.int32))

        self.index.build(chunks, estimated)
        for pid, c in counts.items():
            self.fillers[pid] = BucketFiller(c, self.opts, str(dict(zip(self.partition_names, self.part_values[pid]))))
        log.info("cross-partition index of %s bootstrapped from snapshot %d: %d keys in %d buckets",
                 table.identifier, self.base.id, self.index.size, len(splits))

    # -- routing --------------------------------------------------------------------------------
    def _assign_new(self, pids: np.ndarray, order_key: np.ndarray, rep_rows: np.ndarray, data: pa.Table) -> np.ndarray:
        """New buckets for keys entering partitions ``pids`` (one per key, arrival ``order_key``)."""
        out = np.empty(len(pids), np.int64)
        if not len(pids):
            return out
        n_assigners = self.opts.num_assigners
        h32 = (self.encoder.hash32([data[k].take(pa.array(rep_rows)) for k in self.key_names])
               if n_assigners > 1 else np.zeros(len(pids), np.int32))
        # arrival order (order_key: distinct row numbers), then grouped by partition, stably
        by_arrival = _counting_argsort(order_key)
        p = pids[by_arrival]
        order = by_arrival[np.argsort(p.astype(np.int16) if len(self.partitions) < 32768 else p, kind="stable")]
        sp = pids[order]
        cuts = np.flatnonzero(np.diff(sp)) + 1
        for seg in np.split(order, cuts):
            pid = int(pids[seg[0]])
            part_hash = hash_row_bytes(self.partitions[pid][4:]) if n_assigners > 1 else 0
            groups = assigner_of(part_hash, h32[seg], n_assigners)
            out[seg] = self._filler(pid).assign(h32[seg], groups)
        return out

    def _rewrite_partition(self, data: pa.Table, rows: np.ndarray, pids: np.ndarray) -> pa.Table:
        """``data`` with the partition columns of ``rows`` set to the values of partitions ``pids``."""
        if not len(rows):
            return data
        mask = np.zeros(data.num_rows, bool)
        mask[rows] = True
        src = np.zeros(data.num_rows, np.int64)
        src[rows] = pids
        for i, name in enumerate(self.partition_names):
            t = data.schema.field(name).type
            values = pa.array([v[i] for v in self.part_values], type=t)
            col = pc.if_else(pa.array(mask), values.take(pa.array(src)), data[name].combine_chunks())
            data = data.set_column(data.schema.get_field_index(name), data.schema.field(name), col)
        return data

    def route(self, data: pa.Table, pcode: np.ndarray, pvalues: list[tuple]) -> tuple[pa.Table, np.ndarray]:
        """Rows to write (in write order, with retractions of moved keys added and skipped rows
        removed) and the bucket of each."""
        self.bootstrap()
        n = data.num_rows
        code_pid = np.array([self._part_id(serialize_row(list(v), self.partition_types), tuple(v)) for v in pvalues],
                            np.int64)
        row_pid = code_pid[pcode]
        sk, kb = self.encoder.encode([data[k] for k in self.key_names])
        # exact key groups within the batch; ``order`` puts a key's rows together, in arrival order
        if kb is None:
            order = np.argsort(sk, kind="stable")
            sk_s = sk[order]
            first = np.ones(n, bool)
            np.not_equal(sk_s[1:], sk_s[:-1], out=first[1:])
            g_s = np.cumsum(first) - 1
            g_sk, g_kb = sk_s[first], None
        else:  # Arrow's hash table groups the exact key bytes
            enc = pc.dictionary_encode(kb)
            gid = enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)
            g_kb = enc.dictionary
            order = np.argsort(gid, kind="stable")
            g_s = gid[order]
            first = np.ones(n, bool)
            first[1:] = g_s[1:] != g_s[:-1]
            g_sk = sk[order[first]]  # group ids are 0..G-1, so first rows come in group order
        p_s = row_pid[order]
        found, opart, obucket = self.index.lookup(g_sk, g_kb)
        opart = opart.astype(np.int64)
        obucket = obucket.astype(np.int64)
        bucket_s = np.empty(n, np.int64)
        keep_s = np.ones(n, bool)
        new_pid_s = p_s.copy()  # partition the row is written to
        retract_rows = np.zeros(0, np.int64)
        retract_pid = np.zeros(0, np.int64)
        retract_bucket = np.zeros(0, np.int64)

        if self.processor == DEDUPLICATE:
            run_start = first.copy()
            run_start[1:] |= p_s[1:] != p_s[:-1]
            starts = np.flatnonzero(run_start)
            run_id = np.cumsum(run_start) - 1
            r_group = g_s[starts]
            r_pid = p_s[starts]
            r_first = first[starts]
            same_as_old = r_first & found[r_group] & (opart[r_group] == r_pid)
            r_bucket = np.where(same_as_old, obucket[r_group], -1)
            need = np.flatnonzero(~same_as_old)
            r_bucket[need] = self._assign_new(r_pid[need], order[starts[need]], order[starts[need]], data)
            # predecessor location of every run: the previous run of the key, or the index
            pred_pid = np.full(len(starts), -1, np.int64)
            pred_bucket = np.full(len(starts), -1, np.int64)
            nf = np.flatnonzero(~r_first)
            pred_pid[nf], pred_bucket[nf] = r_pid[nf - 1], r_bucket[nf - 1]
            fi = np.flatnonzero(r_first & found[r_group])
            pred_pid[fi], pred_bucket[fi] = opart[r_group[fi]], obucket[r_group[fi]]
            moved = np.flatnonzero((pred_pid >= 0) & (pred_pid != r_pid))
            retract_rows = order[starts[moved]]
            retract_pid, retract_bucket = pred_pid[moved], pred_bucket[moved]
            for pid in np.unique(retract_pid).tolist():
                self._filler(pid).decrement(retract_bucket[retract_pid == pid])
            bucket_s = r_bucket[run_id]
            last_run = np.r_[np.flatnonzero(r_group[1:] != r_group[:-1]), len(starts) - 1]
            upd_group, upd_pid, upd_bucket = r_group[last_run], r_pid[last_run], r_bucket[last_run]
        else:
            g_first_rows = np.flatnonzero(first)  # sorted positions of each group's first row
            groups = g_s[g_first_rows]
            loc_pid = np.where(found[groups], opart[groups], p_s[g_first_rows])
            loc_bucket = np.where(found[groups], obucket[groups], -1)
            new = np.flatnonzero(~found[groups])
            loc_bucket[new] = self._assign_new(loc_pid[new], order[g_first_rows[new]], order[g_first_rows[new]], data)
            gi = np.cumsum(first) - 1  # group ordinal of each sorted row
            bucket_s = loc_bucket[gi]
            elsewhere = p_s != loc_pid[gi]
            if self.processor == USE_OLD:
                new_pid_s = loc_pid[gi]
            else:  # SKIP_NEW: the key lives elsewhere; drop the row
                keep_s = ~elsewhere
            upd_group, upd_pid, upd_bucket = groups[new], loc_pid[new], loc_bucket[new]

        # the index learns where keys live now
        changed = ~(found[upd_group] & (opart[upd_group] == upd_pid) & (obucket[upd_group] == upd_bucket))
        upd_group, upd_pid, upd_bucket = upd_group[changed], upd_pid[changed], upd_bucket[changed]
        self.index.update(g_sk[upd_group], g_kb.take(pa.array(upd_group)) if g_kb is not None else None,
                          upd_pid, upd_bucket)

        # rows in arrival order, with the partition they go to
        bucket = np.empty(n, np.int64)
        bucket[order] = bucket_s
        keep = np.empty(n, bool)
        keep[order] = keep_s
        target_pid = np.empty(n, np.int64)
        target_pid[order] = new_pid_s
        rewrite = np.flatnonzero(keep & (target_pid != row_pid))
        out = self._rewrite_partition(data, rewrite, target_pid[rewrite])
        kept = np.flatnonzero(keep)
        out_bucket = bucket[kept]
        if len(kept) != n:
            out = out.take(pa.array(kept))
        if len(retract_rows):
            # The retraction triggered by row i goes right before row i: after every earlier row of
            # this batch in the old bucket, before any later one (a merge, O(n)).
            rs = np.argsort(retract_rows, kind="stable")
            at = np.searchsorted(kept, retract_rows[rs], side="left") + np.arange(len(rs))
            total = len(kept) + len(rs)
            is_retract = np.zeros(total, bool)
            is_retract[at] = True
            take = np.empty(total, np.int64)
            take[at] = len(kept) + rs
            take[~is_retract] = np.arange(len(kept))
            out = pa.concat_tables([out, self._retractions(data, retract_rows, retract_pid)]).take(pa.array(take))
            out_bucket = np.concatenate([out_bucket, retract_bucket])[take]
        return out, out_bucket

    def _retractions(self, data: pa.Table, rows: np.ndarray, pids: np.ndarray) -> pa.Table:
        """-D rows for keys leaving partitions ``pids``: the incoming row's values with the old
        partition (Java ``DeleteExistingProcessor``)."""
        rows_t = data.take(pa.array(rows))
        rows_t = self._rewrite_partition(rows_t, np.arange(len(rows)), pids)
        rows_t = rows_t.set_column(rows_t.schema.get_field_index(KIND), rows_t.schema.field(KIND),
                                   pa.array(np.full(len(rows), rowkind.DELETE, np.int8)))
        rk = self.table.options.rowkind_field
        if rk:
            i = rows_t.schema.get_field_index(rk)
            rows_t = rows_t.set_column(i, rows_t.schema.field(i),
                                       pa.array(["-D"] * len(rows), rows_t.schema.field(i).type))
        return rows_t

    def close(self) -> None:
        self.index.close()
