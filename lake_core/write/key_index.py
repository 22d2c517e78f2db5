"""The key index of cross-partition upsert: key → (partition id, bucket) for one writer.

Java ``GlobalIndexAssigner`` keeps it in RocksDB; here it is sorted NumPy/Arrow shards, spilled to
Arrow IPC files in a temporary directory and memory-mapped when the table has more keys than
:attr:`CrossPartitionIndex.spill_rows`, plus an in-memory overlay of the keys the writer moved.
Keys are looked up with ``searchsorted`` on a 64-bit sort key (``KeyEncoder``): the key itself for
one integer column, else a 64-bit hash verified against the exact BinaryRow bytes of the key.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_core import arrow_memory
from lake_core.bucket.assign import _hash_word_matrix, hash_rows
from lake_core.format.binary_row.column_encoder import encode_rows
from lake_core.format.binary_row.layout import field_layout

log = logging.getLogger(__name__)

_SEED2 = 0x9747B28C
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


class KeyEncoder:
    """Sort key (int64) of every key, plus its exact BinaryRow bytes unless the sort key *is* the
    key (one integer-like column)."""

    def __init__(self, types: Sequence[pa.DataType]):
        self.types = list(types)
        f = field_layout(types[0]) if len(types) == 1 else None
        self.exact = f is not None and f.kind in ("int", "date") and f.width <= 8

    def encode(self, columns: Sequence[Any]) -> tuple[np.ndarray, pa.Array | None]:
        if self.exact:
            col = columns[0]
            col = arrow_memory.one_array(col)
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
        sk = (h1.view(np.uint32).astype(np.uint64) << np.uint64(32)) | h2.view(np.uint32).astype(np.uint64)
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
    assert qkb is not None  # a store with key bytes (an exact encoder) is queried with key bytes
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
    def empty(with_kb: bool) -> _Store:
        return _Store(
            np.zeros(0, np.int64),
            pa.array([], pa.large_binary()) if with_kb else None,
            np.zeros(0, np.int32),
            np.zeros(0, np.int32),
        )

    @staticmethod
    def sorted_from(sk, kb, part, bucket) -> _Store:
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
    def from_table(t: pa.Table) -> _Store:
        def np_col(name):
            return arrow_memory.one_array(t.column(name)).to_numpy(zero_copy_only=False)

        kb = None
        if "kb" in t.column_names:
            kb = arrow_memory.one_array(t.column("kb"))
        return _Store(np_col("sk"), kb, np_col("part"), np_col("bucket"))

    def lookup(self, qsk, qkb):
        pos = _search(self.sk, self.kb, qsk, qkb)
        hit = pos >= 0
        part = np.full(len(qsk), -1, np.int32)
        bucket = np.full(len(qsk), -1, np.int32)
        part[hit] = self.part[pos[hit]]
        bucket[hit] = self.bucket[pos[hit]]
        return hit, part, bucket

    def upsert(self, sk, kb, part, bucket) -> _Store:
        """New store with these (unique) keys set; they replace existing entries. A merge of
        two sorted runs: O(n + m log m)."""
        new = (
            _Store.sorted_from(sk, kb, part, bucket)
            if len(sk) > 1 and (sk[1:] < sk[:-1]).any()
            else _Store(sk, kb, part, bucket)
        )
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
        return _Store(
            merged(old_sk, new.sk, np.int64),
            all_kb,
            merged(self.part[idx], new.part, np.int32),
            merged(self.bucket[idx], new.bucket, np.int32),
        )


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
        self._finalizer: weakref.finalize[..., Any] | None = None
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
                        pending[s].append(t.take(pa.array(order[cuts[s] : cuts[s + 1]])))
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
        tmpdir = self.tmpdir
        assert tmpdir is not None  # made above, as this build spills
        self.shards = []
        for s in range(n_shards):
            run = os.path.join(tmpdir, f"run-{s}")
            final = os.path.join(tmpdir, f"shard-{s}.arrow")
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
                    n_dup = int(
                        pc.sum(pc.equal(store.kb.take(pa.array(i)), store.kb.take(pa.array(i + 1)))).as_py() or 0
                    )
                if n_dup:
                    log.warning(
                        "cross-partition index: %d key(s) are live in more than one (partition, bucket) "
                        "(concurrent writers, or keys older than 'cross-partition-upsert.index-ttl'); a later "
                        "write of such a key retracts only one copy",
                        n_dup,
                    )
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
