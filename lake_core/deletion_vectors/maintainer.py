"""The deletion vectors of one (partition, bucket) across a compaction (Java
``DeletionVectorsMaintainer``): loaded from the snapshot's DV index entries, updated with new
deletions of looked-up rows and with the vectors of rewritten files removed, then written back as
one new complete index file that replaces the old ones in the index manifest."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from lake_core.bucket.hash_index import as_delete
from lake_core.deletion_vectors.index_file import DV_INDEX, read_dv_index, write_dv_index
from lake_core.deletion_vectors.vector import DeletionVector
from lake_core.manifest.metadata import IndexManifestEntry
from lake_core.paths import FileNamer

if TYPE_CHECKING:
    from lake_core.snapshot.snapshot import Snapshot
    from lake_core.store import FileStore


def bucket_dv_entries(store: FileStore, snapshot: Snapshot | None) -> dict[tuple[bytes, int], list[IndexManifestEntry]]:
    out: dict[tuple[bytes, int], list[IndexManifestEntry]] = {}
    if snapshot is None:
        return out
    for e in store.manifest_store.index_entries(snapshot):
        if e.index_type == DV_INDEX:
            out.setdefault((e.partition, e.bucket), []).append(e)
    return out


def load_vectors(store: FileStore, entries: Iterable[IndexManifestEntry]) -> dict[str, DeletionVector]:
    out: dict[str, DeletionVector] = {}
    for e in entries:
        out.update(read_dv_index(store, e))
    return out


def needs_full_for_dv(levels, dv_index) -> bool:
    """A bucket with no DV index yet whose levels >= 1 overlap in key range may hold a key live twice
    (a merge-on-read table whose option was just switched on): only a full compaction makes every
    key live once, after which lookups keep it so."""
    if dv_index:
        return False
    ranges = [
        (levels.key_of(f.min_key), levels.key_of(f.max_key), lv)
        for lv in range(1, levels.max_level + 1)
        for f in levels.level(lv)
    ]
    ranges.sort(key=lambda r: (r[0], r[1]))
    bound, bound_level = None, None
    for lo, hi, lv in ranges:
        if bound is not None and lo <= bound and lv != bound_level:
            return True
        if bound is None or hi > bound:
            bound, bound_level = hi, lv
    return False


@dataclass
class BucketDeletionVectors:
    partition: bytes
    bucket: int
    entries: tuple[IndexManifestEntry, ...]
    vectors: dict[str, DeletionVector]
    bitmap64: bool = False
    modified: bool = False
    _new: list = field(default_factory=list)

    @staticmethod
    def load(
        store: FileStore, partition: bytes, bucket: int, entries: Iterable[IndexManifestEntry]
    ) -> BucketDeletionVectors:
        entries = tuple(entries)
        return BucketDeletionVectors(
            partition, bucket, entries, load_vectors(store, entries), store.options.deletion_vectors_bitmap64
        )

    def get(self, file_name: str) -> DeletionVector | None:
        return self.vectors.get(file_name)

    def delete(self, file_name: str, positions: np.ndarray) -> None:
        if not len(positions):
            return
        old = self.vectors.get(file_name)
        self.vectors[file_name] = (
            old.union(positions) if old is not None else DeletionVector.of(positions, bitmap64=self.bitmap64)
        )
        self.modified = True

    def remove(self, file_names: Iterable[str]) -> None:
        for name in file_names:
            if self.vectors.pop(name, None) is not None:
                self.modified = True

    def changes(
        self, store: FileStore, namer: FileNamer
    ) -> tuple[tuple[IndexManifestEntry, ...], tuple[IndexManifestEntry, ...]]:
        """(new index files, deleted index files) for the commit message; both empty if unchanged."""
        if not self.modified:
            return (), ()
        new = write_dv_index(store, self.partition, self.bucket, self.vectors, namer)
        return ((new,) if new is not None else ()), tuple(as_delete(e) for e in self.entries)
