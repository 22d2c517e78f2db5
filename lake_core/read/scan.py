"""Scan planning: snapshot → manifest list → manifest entries (pruned by partition and key/value
statistics) → one Split per (partition, bucket)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING

import pyarrow as pa

from lake_core.deletion_vectors.maintainer import bucket_dv_entries
from lake_core.errors import InvalidOptionError
from lake_core.format.binary_row.reader import deserialize_row
from lake_core.manifest.metadata import DataFileMeta, ManifestEntry, ManifestFileMeta
from lake_core.paths import partition_dir
from lake_core.read.evolution import evolved_value_stats
from lake_core.read.predicate import Predicate
from lake_core.read.read_failure import LOST_FILE_ERRORS, read_failure
from lake_core.read.split import Split
from lake_core.snapshot.snapshot import Snapshot

if TYPE_CHECKING:
    from lake_core.store import FileStore


class TableScan:
    def __init__(
        self,
        store: FileStore,
        snapshot: Snapshot | None,
        predicate: Predicate | None = None,
        *,
        top_level_only: bool = False,
        all_levels: bool = False,
    ):
        """``store``: in the schema the splits are read in, which they carry
        (``Split.schema_id``): a time-travel scan's is the snapshot's (``FileStore.schema_of``).
        ``top_level_only``: only the files of the highest level of a primary-key table, read
        without merge (Java ``ReadOptimizedTable``'s level filter ``numLevels - 1``). Tables whose
        batch reads hide level 0 (deletion vectors, first-row) are read as usual, every level above
        0 with its vectors: Java's ``DataTableBatchScan`` replaces that filter by ``level > 0`` there.

        ``all_levels``: every committed row, level 0 included even where batch reads hide it (the
        level-0 files are merged over the levels above, whose vectors still apply). What anything
        that rewrites or deletes committed rows must read (rescale, ``delete_where``, verification):
        a hidden level-0 row is committed and will become visible at the next compaction."""
        if top_level_only and all_levels:
            raise InvalidOptionError(f"a scan of {store.identifier} reads either the top level only or all levels")
        self.store = store
        self.top_level_only = top_level_only
        self.all_levels = all_levels
        self.snapshot = snapshot
        self.predicate = predicate
        schema = store.schema
        self.partition_names = list(schema.partition_keys)
        self.partition_types = [schema.field(n).type for n in self.partition_names]
        self.is_pk = bool(schema.primary_keys)
        self.key_names = list(schema.trimmed_primary_keys) if self.is_pk else []
        self.key_types = [schema.field(k).type for k in self.key_names]
        self.partition_pred = predicate.restrict_to(set(self.partition_names)) if predicate else None
        self.key_pred = predicate.restrict_to(set(self.key_names)) if predicate and self.is_pk else None

    def plan(self) -> Plan:
        return Plan(self.splits())

    # -- pruning helpers --------------------------------------------------------------------------
    def _manifest_may_match(self, m: ManifestFileMeta) -> bool:
        if self.partition_pred is None or not self.partition_types:
            return True
        try:
            lo = deserialize_row(m.partition_stats.min_values, self.partition_types)
            hi = deserialize_row(m.partition_stats.max_values, self.partition_types)
        except Exception:
            return True
        nulls = m.partition_stats.null_counts or [None] * len(lo)
        stats = {n: (lo[i], hi[i], nulls[i] if i < len(nulls) else None) for i, n in enumerate(self.partition_names)}
        return self.partition_pred.may_match(stats, row_count=m.num_added_files + m.num_deleted_files)

    def _partition_matches(self, values: tuple) -> bool:
        if self.partition_pred is None:
            return True
        t = pa.table({n: pa.array([v], type=t) for n, v, t in zip(self.partition_names, values, self.partition_types)})
        return bool(self.partition_pred.filter(t).num_rows)

    def _file_stats(self, f: DataFileMeta, names: Sequence[str], types, which: str) -> dict:
        st = f.key_stats if which == "key" else f.value_stats
        try:
            lo = deserialize_row(st.min_values, types)
            hi = deserialize_row(st.max_values, types)
        except Exception:
            return {}
        nulls = st.null_counts or ()
        return {n: (lo[i], hi[i], nulls[i] if i < len(nulls) else None) for i, n in enumerate(names)}

    def _value_stats(self, f: DataFileMeta) -> dict:
        schema = self.store.schema
        if f.schema_id != schema.id:
            return evolved_value_stats(self.store, f)  # mapped by field id from the file's schema
        names = [fl.name for fl in schema.fields] if f.value_stats_cols is None else list(f.value_stats_cols)
        if not names:
            return {}
        types = [schema.field(n).type for n in names]
        return self._file_stats(f, names, types, "value")

    def _keep_file(self, f: DataFileMeta) -> bool:
        if self.is_pk:
            # Pruning a PK file by key range is safe: the keys it lacks cannot be affected by it.
            if self.key_pred is None:
                return True
            return self.key_pred.may_match(self._file_stats(f, self.key_names, self.key_types, "key"), f.row_count)
        if self.predicate is None:
            return True
        return self.predicate.may_match(self._value_stats(f), f.row_count)

    def _keep_bucket(self, files: list[DataFileMeta]) -> bool:
        """Whole-bucket pruning by value stats: only when the merged row is one of the stored rows
        (deduplicate/first-row), so no file matching means no merged row can match."""
        if not self.is_pk or self.predicate is None:
            return True
        if not self.store.merge_engine().merged_row_is_stored:
            return True
        return any(self.predicate.may_match(self._value_stats(f), f.row_count) for f in files)

    # -- planning -------------------------------------------------------------------------------
    def entries(self) -> list[ManifestEntry]:
        if self.snapshot is None:
            return []
        manifests = self.store.manifest_store
        metas = [m for m in manifests.data_manifests(self.snapshot) if self._manifest_may_match(m)]
        return manifests.live_entries(self.snapshot, metas)

    def splits(self) -> list[Split]:
        if self.snapshot is None:
            return []
        try:
            return self._splits(self.snapshot)
        except LOST_FILE_ERRORS as e:  # a manifest gone: expired meanwhile, or damage
            raise read_failure(self.store, self.snapshot.id, e) from e

    def _splits(self, snapshot: Snapshot) -> list[Split]:
        manifests = self.store.manifest_store
        groups: dict[tuple[bytes, int], list[ManifestEntry]] = defaultdict(list)
        part_ok: dict[bytes, bool] = {}
        for e in self.entries():
            ok = part_ok.get(e.partition)
            if ok is None:
                ok = part_ok[e.partition] = self._partition_matches(manifests.partition_values(e.partition))
            if ok:
                groups[(e.partition, e.bucket)].append(e)
        hide_l0 = self.store.level0_hidden and not self.all_levels
        top_level = self.store.options.num_levels - 1
        dv_entries = None
        if self.is_pk and self.store.options.deletion_vectors_enabled:
            dv_entries = bucket_dv_entries(self.store, snapshot)
        out = []
        default_name = self.store.options.partition_default_name
        in_order = sorted(groups.items(), key=lambda kv: (manifests.partition_values(kv[0][0]).__repr__(), kv[0][1]))
        for (partition, bucket), entries in in_order:
            files = [e.file for e in entries if not (hide_l0 and e.file.level == 0)]
            if self.top_level_only and self.is_pk and not hide_l0:
                files = [f for f in files if f.level == top_level]
            files = [f for f in files if self._keep_file(f)]
            if not files or not self._keep_bucket(files):
                continue
            values = manifests.partition_values(partition)
            files.sort(key=lambda f: (f.min_sequence_number, f.max_sequence_number, f.file_name))
            out.append(
                Split(
                    snapshot_id=snapshot.id,
                    partition=partition,
                    partition_values=values,
                    bucket=bucket,
                    total_buckets=entries[0].total_buckets,
                    bucket_path=self.store.paths.bucket_dir(
                        partition_dir(self.partition_names, values, default_name), bucket
                    ),
                    files=tuple(files),
                    dv_index=tuple(dv_entries.get((partition, bucket), ())) if dv_entries is not None else None,
                    raw_convertible=(not self.is_pk) or (len(files) == 1 and files[0].delete_row_count == 0),
                    schema_id=self.store.schema.id,
                )
            )
        return out


class Plan:
    def __init__(self, splits: list[Split]):
        self._splits = splits

    def splits(self) -> list[Split]:
        return self._splits
