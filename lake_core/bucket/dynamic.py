"""Dynamic bucket mode (``bucket`` = -1 on a primary-key table whose key holds every partition
field): Java ``HashBucketAssigner``/``PartitionIndex`` + ``DynamicBucketIndexMaintainer``.

Rules (as Java ``HashBucketAssigner``):

* a key whose hash is already in the partition's HASH index keeps that bucket (two keys with
  the same 32-bit hash therefore share a bucket, exactly as in Java);
* a new key goes to the lowest-numbered bucket holding fewer than
  ``dynamic-bucket.target-row-num`` keys, else to the lowest bucket id not used yet; with
  ``dynamic-bucket.max-buckets`` reached, to one of the existing buckets (picked by hash here,
  at random in Java);
* ``dynamic-bucket.initial-buckets`` = N emulates N parallel assigners: a new key belongs to
  assigner ``(|partHash % N| + |keyHash % N|) % N`` (Java ``computeAssigner``) and assigner g only
  fills buckets ``b % N == g``, so a fresh partition starts with N buckets;
* every bucket that gains keys gets a complete new HASH file; the commit replaces the old one.

Only partitions being written are loaded. Per partition the index is one sorted int64 array of
``hash << 16 | bucket`` (8 bytes per key; Paimon's ``Int2ShortHashMap`` is about 10), and
assignment is vectorized: ``searchsorted`` for known hashes, a cumulative sum of the free
capacity of the buckets for new ones.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from lake_core.bucket.assign import hash_row_bytes
from lake_core.bucket.hash_index import HASH_INDEX, as_delete, read_hash_index, write_hash_index
from lake_core.errors import InvalidOptionError, LakeError
from lake_core.manifest.metadata import IndexManifestEntry
from lake_core.paths import FileNamer

if TYPE_CHECKING:
    from lake_core.snapshot.snapshot import Snapshot
    from lake_core.store import FileStore

log = logging.getLogger(__name__)

MAX_DYNAMIC_BUCKETS = 32768  # Java CoreOptions.MAX_DYNAMIC_BUCKETS (bucket ids are shorts)
_BUCKET_MASK = np.int64(0xFFFF)


@dataclass(frozen=True)
class DynamicBucketOptions:
    target_row_num: int
    max_buckets: int  # -1 = unlimited (up to MAX_DYNAMIC_BUCKETS)
    num_assigners: int  # dynamic-bucket.initial-buckets, default 1

    @staticmethod
    def of(options) -> DynamicBucketOptions:
        target = options.dynamic_bucket_target_row_num
        max_buckets = options.dynamic_bucket_max_buckets
        initial = options.dynamic_bucket_initial_buckets
        n = 1 if initial is None else initial
        validate(target, max_buckets, n)
        return DynamicBucketOptions(target, max_buckets, n)


def validate(target: int, max_buckets: int, initial_buckets: int | None) -> None:
    if target < 1:
        raise InvalidOptionError(
            f"option 'dynamic-bucket.target-row-num' = {target} must be a positive number of keys per bucket"
        )
    if max_buckets != -1 and not 1 <= max_buckets <= MAX_DYNAMIC_BUCKETS:
        raise InvalidOptionError(
            f"option 'dynamic-bucket.max-buckets' = {max_buckets} must be -1 (unlimited) or "
            f"between 1 and {MAX_DYNAMIC_BUCKETS}"
        )
    if initial_buckets is not None:
        if initial_buckets < 1:
            raise InvalidOptionError(f"option 'dynamic-bucket.initial-buckets' = {initial_buckets} must be positive")
        if max_buckets != -1 and initial_buckets > max_buckets:
            raise InvalidOptionError(
                f"option 'dynamic-bucket.initial-buckets' = {initial_buckets} exceeds 'dynamic-bucket.max-buckets' = "
                f"{max_buckets}: some assigners would have no bucket to write to; lower initial-buckets"
            )


def java_abs_mod(values: np.ndarray, n: int) -> np.ndarray:
    """``Math.abs(v % n)`` for int32 ``v`` (Java's ``%`` truncates toward zero)."""
    return np.abs(np.fmod(np.asarray(values, dtype=np.int64), n))


def assigner_of(partition_hash: int, key_hashes: np.ndarray, n: int) -> np.ndarray:
    """Java ``BucketAssigner.computeAssigner(partitionHash, keyHash, n, n)``."""
    if n == 1:
        return np.zeros(len(key_hashes), np.int64)
    start = abs(math.fmod(partition_hash, n))
    return (int(start) + java_abs_mod(key_hashes, n)) % n


class BucketFiller:
    """Key counts per bucket of one partition, and the vectorized choice of buckets for new keys
    (Java ``PartitionIndex.assign`` steps 2-4 / cross-partition ``BucketAssigner``)."""

    def __init__(self, counts: dict[int, int], opts: DynamicBucketOptions, partition_desc: str = ""):
        self.counts = np.zeros(max(counts, default=-1) + 1, np.int64)
        self.exists = np.zeros(len(self.counts), bool)
        for b, c in counts.items():
            self.counts[b] = c
            self.exists[b] = True
        self.opts = opts
        self.desc = partition_desc

    def _grow(self, size: int) -> None:
        if size > len(self.counts):
            self.counts = np.concatenate([self.counts, np.zeros(size - len(self.counts), np.int64)])
            self.exists = np.concatenate([self.exists, np.zeros(size - len(self.exists), bool)])

    def decrement(self, buckets: np.ndarray) -> None:
        buckets = np.asarray(buckets, np.int64)
        if len(buckets):
            self._grow(int(buckets.max()) + 1)
            np.subtract.at(self.counts, buckets, 1)
            np.maximum(self.counts, 0, out=self.counts)

    def assign(self, hashes: np.ndarray, groups: np.ndarray) -> np.ndarray:
        """Buckets for new keys (in arrival order) with their hashes and assigner groups."""
        n_assigners = self.opts.num_assigners
        if n_assigners == 1:
            out = self._assign_group(0, hashes, 1)
        else:
            out = np.empty(len(hashes), np.int64)
            for g in np.unique(groups).tolist():
                sel = np.flatnonzero(groups == g)
                out[sel] = self._assign_group(int(g), hashes[sel], n_assigners)
        if len(out):
            self._grow(int(out.max()) + 1)
            added = np.bincount(out, minlength=len(self.counts))
            self.counts += added
            self.exists |= added > 0
        return out

    def _assign_group(self, g: int, hashes: np.ndarray, n_assigners: int) -> np.ndarray:
        n = len(hashes)
        target = self.opts.target_row_num
        own = np.flatnonzero(self.exists)
        own = own[own % n_assigners == g]
        non_full = own[self.counts[own] < target]
        caps = target - self.counts[non_full]
        slots = non_full
        free = int(caps.sum())
        if n > free:
            need = -(-(n - free) // target)
            max_id = (MAX_DYNAMIC_BUCKETS if self.opts.max_buckets == -1 else self.opts.max_buckets) - 1
            candidates = np.arange(g, max_id + 1, n_assigners, dtype=np.int64)
            used = self.exists[candidates[candidates < len(self.exists)]]
            candidates = np.concatenate([candidates[: len(used)][~used], candidates[len(used) :]])
            fresh = candidates[:need]
            if len(fresh) < need and self.opts.max_buckets == -1:
                raise LakeError(
                    f"partition {self.desc} would need more than {MAX_DYNAMIC_BUCKETS} dynamic buckets of "
                    f"{target} keys; raise the option 'dynamic-bucket.target-row-num'"
                )
            slots = np.concatenate([non_full, fresh])
            caps = np.concatenate([caps, np.full(len(fresh), target, np.int64)])
        cum = np.cumsum(caps)
        pos = np.searchsorted(cum, np.arange(n, dtype=np.int64), side="right")
        out = np.empty(n, np.int64)
        inside = pos < len(slots)
        out[inside] = slots[pos[inside]]
        if not inside.all():
            # max-buckets reached: Java picks one of the assigner's buckets at random; a pick by hash
            # is as good and deterministic.
            pool = np.union1d(own, slots)
            if len(pool) == 0:
                raise LakeError(
                    f"dynamic bucket assigner {g} of partition {self.desc} has no bucket below "
                    f"'dynamic-bucket.max-buckets' = {self.opts.max_buckets}; lower "
                    "'dynamic-bucket.initial-buckets' or raise max-buckets"
                )
            rest = ~inside
            out[rest] = pool[java_abs_mod(hashes[rest], len(pool))]
        return out


def _lookup_sorted(comb: np.ndarray, hashes: np.ndarray, out: np.ndarray) -> None:
    """Fill ``out`` (bucket per hash, -1 = unknown) from one sorted ``hash << 16 | bucket`` array."""
    if len(comb) == 0 or len(hashes) == 0:
        return
    pos = np.searchsorted(comb, hashes.astype(np.int64) << 16, side="left")
    ok = pos < len(comb)
    hit = np.zeros(len(hashes), bool)
    hit[ok] = (comb[pos[ok]] >> 16) == hashes[ok]
    out[hit] = comb[pos[hit]] & _BUCKET_MASK


@dataclass
class _PartitionIndex:
    """``comb``: the loaded keys; ``delta``: keys this writer added (merged into ``comb`` only when
    it grows large, so a batch never copies a big partition's array)."""

    partition: bytes
    partition_hash: int
    comb: np.ndarray  # sorted int64: hash << 16 | bucket
    filler: BucketFiller
    files: dict[int, IndexManifestEntry]  # the HASH file each bucket has in the table now
    modified: set[int] = field(default_factory=set)
    delta: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    def lookup(self, hashes: np.ndarray) -> np.ndarray:
        """Bucket of each hash (ascending hashes search fastest), -1 where unknown."""
        out = np.full(len(hashes), -1, np.int64)
        _lookup_sorted(self.comb, hashes, out)
        if len(self.delta):
            miss = np.flatnonzero(out < 0)
            sub = np.full(len(miss), -1, np.int64)
            _lookup_sorted(self.delta, hashes[miss], sub)
            out[miss] = sub
        return out

    def add_sorted(self, hashes: np.ndarray, buckets: np.ndarray) -> None:
        """Index new keys; ``hashes`` ascending and not indexed yet."""
        new = (hashes.astype(np.int64) << 16) | buckets.astype(np.int64)
        d = self.delta
        self.delta = np.insert(d, np.searchsorted(d, new), new) if len(d) else new
        if len(self.delta) > max(1 << 20, len(self.comb) // 4):
            c = np.concatenate([self.comb, self.delta])
            c.sort(kind="stable")  # two sorted runs: a linear merge for timsort
            self.comb, self.delta = c, np.zeros(0, np.int64)
        self.modified.update(np.flatnonzero(np.bincount(buckets)).tolist())

    def modified_bucket_hashes(self) -> dict[int, np.ndarray]:
        """Sorted hashes of every modified bucket, in one pass over the index."""
        if not self.modified:
            return {}
        wanted = np.zeros(MAX_DYNAMIC_BUCKETS, bool)
        wanted[list(self.modified)] = True
        parts = []
        for arr in (self.comb, self.delta):
            if len(arr):
                parts.append(arr[wanted[arr & _BUCKET_MASK]])
        sub = np.concatenate(parts) if len(parts) > 1 else parts[0]
        sub.sort(kind="stable")
        buckets = (sub & _BUCKET_MASK).astype(np.int16)
        order = np.argsort(buckets, kind="stable")  # radix sort; keeps hashes ascending per bucket
        sub = sub[order]
        ids, starts = np.unique(buckets[order], return_index=True)
        ends = np.r_[starts[1:], len(sub)]
        return {int(b): (sub[a:e] >> 16).astype(np.int32) for b, a, e in zip(ids, starts, ends)}


def _arrival_order(first_rows: np.ndarray, n: int) -> np.ndarray:
    """``argsort(first_rows)`` for distinct row numbers below ``n``, in O(n) (a counting sort)."""
    slot = np.full(n, -1, np.int64)
    slot[first_rows] = np.arange(len(first_rows), dtype=np.int64)
    return slot[slot >= 0]


class DynamicBucketAssigner:
    """Assigns dynamic buckets for one writer and maintains the HASH index files.

    ``base``: the snapshot the writer starts from. ``data_buckets(partition)`` gives the buckets
    that hold live data files, to detect a table whose HASH index is incomplete.
    ``ignore_existing``: start every partition empty (overwrite).
    """

    def __init__(
        self,
        store: FileStore,
        base: Snapshot | None,
        data_buckets: Callable[[bytes], Iterable[int]],
        ignore_existing: bool = False,
    ):
        self.store = store
        self.base = base
        self.opts = DynamicBucketOptions.of(store.options)
        self.data_buckets = data_buckets
        self.ignore_existing = ignore_existing
        self.key_names = list(store.schema.trimmed_primary_keys)
        self.key_types = [store.schema.field(k).type for k in self.key_names]
        self._parts: dict[bytes, _PartitionIndex] = {}
        self._entries: dict[bytes, list[IndexManifestEntry]] | None = None

    # -- loading --------------------------------------------------------------------------------
    def _index_entries(self) -> dict[bytes, list[IndexManifestEntry]]:
        if self._entries is None:
            by_part: dict[bytes, list[IndexManifestEntry]] = {}
            if self.base is not None and not self.ignore_existing:
                for e in self.store.manifest_store.index_entries(self.base):
                    if e.index_type == HASH_INDEX:
                        by_part.setdefault(e.partition, []).append(e)
            self._entries = by_part
        return self._entries

    def _describe(self, partition: bytes) -> str:
        values = self.store.manifest_store.partition_values(partition)
        return str(dict(zip(self.store.schema.partition_keys, values))) if values else "(unpartitioned)"

    def _load(self, partition: bytes) -> _PartitionIndex:
        entries = self._index_entries().get(partition, [])
        files: dict[int, IndexManifestEntry] = {}
        for e in entries:
            if not 0 <= e.bucket < MAX_DYNAMIC_BUCKETS:
                raise LakeError(
                    f"HASH index file {e.file_name} of {self.store.identifier} names bucket {e.bucket}, "
                    f"outside 0..{MAX_DYNAMIC_BUCKETS - 1}; the index is corrupt"
                )
            if e.bucket in files:
                raise LakeError(
                    f"partition {self._describe(partition)} of {self.store.identifier} lists two HASH index files "
                    f"for bucket {e.bucket} ({files[e.bucket].file_name}, {e.file_name}); the index manifest is "
                    "corrupt — overwrite the partition to rebuild it"
                )
            files[e.bucket] = e
        if not self.ignore_existing:
            missing = sorted(set(self.data_buckets(partition)) - set(files))
            if missing:
                raise LakeError(
                    f"partition {self._describe(partition)} of dynamic-bucket table {self.store.identifier} has data "
                    f"in bucket(s) {missing} but no HASH index for them (written by a writer that does not maintain "
                    "Paimon's dynamic-bucket index?); new keys could be duplicated, so nothing was written. "
                    "Overwrite the partition to rebuild its index"
                )
        ordered = sorted(files.values(), key=lambda e: e.bucket)
        total = sum(e.row_count for e in ordered)
        comb = np.empty(total, np.int64)
        at = 0
        counts = {}

        def fill(e, h):  # one file at a time into the partition's array (8 bytes per key)
            nonlocal at
            seg = comb[at : at + len(h)]
            np.left_shift(h.astype(np.int64), 16, out=seg)
            seg |= e.bucket
            at += len(h)
            counts[e.bucket] = len(h)

        if len(ordered) > 1 and self.store.fileio.reads_are_remote:
            with ThreadPoolExecutor(max_workers=4) as pool:
                for e, h in zip(ordered, pool.map(lambda e: read_hash_index(self.store, e), ordered)):
                    fill(e, h)
        else:
            for e in ordered:
                fill(e, read_hash_index(self.store, e))
        comb.sort(kind="stable")  # timsort: the files hold sorted runs (we and pypaimon write them sorted)
        desc = self._describe(partition)
        log.debug("loaded HASH index of partition %s: %d keys in %d buckets", desc, total, len(files))
        return _PartitionIndex(
            partition, hash_row_bytes(partition[4:]), comb, BucketFiller(counts, self.opts, desc), files
        )

    def partition_index(self, partition: bytes) -> _PartitionIndex:
        idx = self._parts.get(partition)
        if idx is None:
            idx = self._parts[partition] = self._load(partition)
        return idx

    # -- assignment -----------------------------------------------------------------------------
    def assign(self, partition: bytes, key_hashes: np.ndarray) -> np.ndarray:
        """Bucket of every row of one partition, given the rows' key hashes (input order)."""
        idx = self.partition_index(partition)
        key_hashes = np.asarray(key_hashes, np.int32)
        # Sorted queries keep searchsorted cache-friendly. Sorting hash << 32 | row (a value sort,
        # faster than argsort) puts each hash's first arrival first among its equals.
        packed = (key_hashes.astype(np.int64) << 32) | np.arange(len(key_hashes), dtype=np.int64)
        packed.sort()
        hs = (packed >> 32).astype(np.int32)
        order = packed & np.int64(0xFFFFFFFF)
        del packed
        start = np.empty(len(hs), bool)
        start[:1] = True
        np.not_equal(hs[1:], hs[:-1], out=start[1:])
        uniq = hs[start]
        b_u = idx.lookup(uniq)
        new = np.flatnonzero(b_u < 0)
        if len(new):
            arrival = _arrival_order(order[start][new], len(key_hashes))  # Java assigns in arrival order
            hashes = uniq[new][arrival]
            groups = assigner_of(idx.partition_hash, hashes, self.opts.num_assigners)
            assigned = idx.filler.assign(hashes, groups)
            b_u[new[arrival]] = assigned
            idx.add_sorted(uniq[new], b_u[new])
        buckets = np.empty(len(key_hashes), np.int64)
        buckets[order] = b_u[np.cumsum(start) - 1]
        return buckets

    # -- commit ---------------------------------------------------------------------------------
    def prepare_commit(self, namer: FileNamer) -> dict[tuple[bytes, int], tuple[IndexManifestEntry, ...]]:
        """Write a complete new HASH file for every bucket that gained keys. Returns, per
        (partition, bucket), the index changes: DELETE of the file it replaces (if any), ADD."""
        out: dict[tuple[bytes, int], tuple[IndexManifestEntry, ...]] = {}
        for part, idx in self._parts.items():
            for b, hashes in sorted(idx.modified_bucket_hashes().items()):
                new = write_hash_index(self.store, part, b, hashes, namer)
                old = idx.files.get(b)
                out[(part, b)] = (as_delete(old), new) if old is not None else (new,)
                idx.files[b] = new  # a reused writer's next commit replaces this file
            idx.modified.clear()
        return out
