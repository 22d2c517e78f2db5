"""Cross-partition upsert (a primary key that omits some partition fields, ``bucket`` = -1):
Java ``GlobalIndexAssigner`` + ``IndexBootstrap`` + ``ExistingProcessor``.

A key lives in exactly one (partition, bucket) of the table. When a write starts, a
key → (partition, bucket) index is bootstrapped from the live data of the latest snapshot (the
merged key columns of every bucket, skipping buckets whose files are all older than
``cross-partition-upsert.index-ttl``) into a ``CrossPartitionIndex`` (``key_index``). Paimon writes
no HASH index files in this mode, and neither do we.

When an incoming row's key already lives in another partition, the merge engine decides
(Java ``ExistingProcessor.create``):

* deduplicate — a ``-D`` of the key goes to the old (partition, bucket), the row goes to its
  new partition (``DeleteExistingProcessor``);
* partial-update, aggregation — the row is rewritten into the old partition and bucket and
  merges there (``UseOldExistingProcessor``);
* first-row — the new row is dropped; the old one stays (``SkipNewExistingProcessor``).

New keys fill the partition's buckets up to ``dynamic-bucket.target-row-num`` (Java
``crosspartition.BucketAssigner``). Everything is vectorized over the batch: the keys of a batch
are looked up in the index at once, and the sequential per-row rules are applied per run of equal
(key, partition) rows.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_core.bucket.assign import hash_row_bytes
from lake_core.bucket.dynamic import BucketFiller, DynamicBucketOptions, assigner_of
from lake_core.format.binary_row.writer import serialize_row
from lake_core.kv import rowkind
from lake_core.kv.system_fields import KIND
from lake_core.paths import partition_dir
from lake_core.read.split import Split
from lake_core.read.split_read import SplitRead
from lake_core.write.file_writer import local_now_millis
from lake_core.write.key_index import CrossPartitionIndex, KeyEncoder

if TYPE_CHECKING:
    from lake_core.snapshot.snapshot import Snapshot
    from lake_core.store import FileStore

log = logging.getLogger(__name__)

DEDUPLICATE, USE_OLD, SKIP_NEW = "delete-old", "use-old", "skip-new"


def _counting_argsort(values: np.ndarray) -> np.ndarray:
    """``argsort`` of distinct non-negative integers, in O(max) (a counting sort)."""
    if len(values) == 0:
        return np.zeros(0, np.int64)
    slot = np.full(int(values.max()) + 1, -1, np.int64)
    slot[values] = np.arange(len(values), dtype=np.int64)
    return slot[slot >= 0]


class CrossPartitionAssigner:
    """Routes a writer's rows in cross-partition upsert mode (see the module docstring)."""

    def __init__(
        self,
        store: FileStore,
        base: Snapshot | None,
        skip_partition: Callable[[tuple], bool] | None = None,
        tmp_root: str | None = None,
    ):
        self.store = store
        self.base = base
        schema = store.schema
        self.opts = DynamicBucketOptions.of(store.options)
        self.processor = store.merge_engine().on_partition_change
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
            self.part_values.append(
                values if values is not None else self.store.manifest_store.partition_values(partition)
            )
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
        store = self.store
        manifests = store.manifest_store
        groups: dict[tuple[bytes, int], list] = {}
        total_buckets: dict[tuple[bytes, int], int] = {}
        for e in manifests.live_entries(self.base):
            groups.setdefault((e.partition, e.bucket), []).append(e.file)
            total_buckets[(e.partition, e.bucket)] = e.total_buckets
        ttl_ms = store.options.cross_partition_upsert_index_ttl_ms
        now = local_now_millis()
        splits = []
        default_name = store.options.partition_default_name
        for (partition, bucket), files in groups.items():
            values = manifests.partition_values(partition)
            if self.skip_partition is not None and self.skip_partition(values):
                continue
            if ttl_ms is not None and not any(
                f.creation_time is not None and now <= f.creation_time + ttl_ms for f in files
            ):
                continue  # Java IndexBootstrap.filterSplit
            files = sorted(files, key=lambda f: (f.min_sequence_number, f.max_sequence_number, f.file_name))
            splits.append(
                Split(
                    snapshot_id=self.base.id,
                    partition=partition,
                    partition_values=values,
                    bucket=bucket,
                    total_buckets=total_buckets[(partition, bucket)],
                    bucket_path=store.paths.bucket_dir(
                        partition_dir(self.partition_names, values, default_name), bucket
                    ),
                    files=tuple(files),
                    raw_convertible=len(files) == 1 and files[0].delete_row_count == 0,
                )
            )
        estimated = sum(f.row_count for s in splits for f in s.files)
        counts: dict[int, dict[int, int]] = {}

        def chunks():
            # Every level is read (first-row hides level 0 from batch scans, not from the index).
            read = SplitRead(store, self.key_names)
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
        log.info(
            "cross-partition index of %s bootstrapped from snapshot %d: %d keys in %d buckets",
            store.identifier,
            self.base.id,
            self.index.size,
            len(splits),
        )

    # -- routing --------------------------------------------------------------------------------
    def _assign_new(self, pids: np.ndarray, order_key: np.ndarray, rep_rows: np.ndarray, data: pa.Table) -> np.ndarray:
        """New buckets for keys entering partitions ``pids`` (one per key, arrival ``order_key``)."""
        out = np.empty(len(pids), np.int64)
        if not len(pids):
            return out
        n_assigners = self.opts.num_assigners
        h32 = (
            self.encoder.hash32([data[k].take(pa.array(rep_rows)) for k in self.key_names])
            if n_assigners > 1
            else np.zeros(len(pids), np.int32)
        )
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
        code_pid = np.array(
            [self._part_id(serialize_row(list(v), self.partition_types), tuple(v)) for v in pvalues], np.int64
        )
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
        self.index.update(
            g_sk[upd_group], g_kb.take(pa.array(upd_group)) if g_kb is not None else None, upd_pid, upd_bucket
        )

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
        rows_t = rows_t.set_column(
            rows_t.schema.get_field_index(KIND),
            rows_t.schema.field(KIND),
            pa.array(np.full(len(rows), rowkind.DELETE, np.int8)),
        )
        rk = self.store.options.rowkind_field
        if rk:
            i = rows_t.schema.get_field_index(rk)
            rows_t = rows_t.set_column(
                i, rows_t.schema.field(i), pa.array(["-D"] * len(rows), rows_t.schema.field(i).type)
            )
        return rows_t

    def close(self) -> None:
        self.index.close()
