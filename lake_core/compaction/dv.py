"""Deletion-vector compaction (Paimon's ``LookupMergeTreeCompactRewriter`` with a
``DeletionVectorsMaintainer``): every key a compaction writes is looked up in the bucket's files
outside the unit (older, higher levels). A found row is merged in as the oldest input of the key,
and its position is marked deleted in that file's vector, so each key is stored live exactly once
at levels >= 1 and every file can be read raw with its vector applied."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from lake_core.compaction.kv_read import iter_kv_file, kv_schema
from lake_core.compaction.lookup import LOOKUP_FILE, LOOKUP_POSITION, lookup_latest
from lake_core.deletion_vectors.maintainer import BucketDeletionVectors
from lake_core.manifest.metadata import DataFileMeta

if TYPE_CHECKING:
    from lake_core.store import FileStore


@dataclass
class DvCompaction:
    store: FileStore
    bucket_dir: str
    outside: Sequence[DataFileMeta]  # the bucket's files the unit does not rewrite
    vectors: BucketDeletionVectors

    def absorb(self, rows: pa.Table) -> pa.Table:
        """``rows`` (complete key groups, unmerged) preceded by each key's older stored row, whose
        position is marked deleted. Merged afterwards in one pass, as Java's ``LookupMergeFunction``
        adds the looked-up row first: a delete among the new rows must still reset the old value."""
        if not self.outside or rows.num_rows == 0:
            return rows
        # deduplicate by arrival order: the newer rows win whatever the old one held, so only its
        # position is needed, and a keys-only read is enough
        positions_only = not self.store.merge_engine().lookup_needs_old_value
        found = self._mask_older(rows, with_rows=not positions_only)
        if positions_only or found.num_rows == 0:
            return rows
        old = found.select(kv_schema(self.store).names).cast(rows.schema)
        return pa.concat_tables([old, rows])

    def absorb_upgraded(self, f: DataFileMeta, chunk_rows: int) -> None:
        """``f``, a level-0 file moved up without a rewrite (no retractions, and the newest row of a
        key wins whatever the older one held): the older stored row of each of its live keys is
        marked deleted, as Java's lookup rewriter does when it upgrades a file (reading it, writing
        nothing). Only the key columns are read."""
        if not self.outside:
            return
        key_names = list(self.store.schema.trimmed_primary_keys)
        deletion = self.vectors.vectors.get(f.file_name)
        for keys in iter_kv_file(self.store, self.bucket_dir, f, chunk_rows, deletion=deletion, columns=key_names):
            if keys.num_rows:
                self._mask_older(keys, with_rows=False)

    def _mask_older(self, keys: pa.Table, *, with_rows: bool) -> pa.Table:
        """Look ``keys`` up in the files outside the unit and mark each found row deleted."""
        found = lookup_latest(
            self.store,
            bucket_dir=self.bucket_dir,
            files=self.outside,
            keys=keys,
            deletion_vectors=self.vectors.vectors,
            with_rows=with_rows,
        )
        if found.num_rows:
            files = found.column(LOOKUP_FILE)
            positions = found.column(LOOKUP_POSITION).to_numpy()
            for name in pc.unique(files).to_pylist():
                self.vectors.delete(name, positions[pc.equal(files, name).to_numpy(zero_copy_only=False)])
        return found


def unit_vectors(vectors: BucketDeletionVectors | None, rewritten: Sequence[DataFileMeta]) -> None:
    """A rewritten file's vector goes away with it (its live rows are in the new files)."""
    if vectors is not None:
        vectors.remove(f.file_name for f in rewritten)


__all__ = ["DvCompaction", "unit_vectors"]
