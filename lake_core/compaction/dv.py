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

from lake_core.compaction.kv_read import kv_schema
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
        found = lookup_latest(
            self.store,
            bucket_dir=self.bucket_dir,
            files=self.outside,
            keys=rows,
            deletion_vectors=self.vectors.vectors,
            with_rows=not positions_only,
        )
        if found.num_rows == 0:
            return rows
        files = found.column(LOOKUP_FILE)
        positions = found.column(LOOKUP_POSITION).to_numpy()
        for name in pc.unique(files).to_pylist():
            self.vectors.delete(name, positions[pc.equal(files, name).to_numpy(zero_copy_only=False)])
        if positions_only:
            return rows
        old = found.select(kv_schema(self.store).names).cast(rows.schema)
        return pa.concat_tables([old, rows])


def unit_vectors(vectors: BucketDeletionVectors | None, rewritten: Sequence[DataFileMeta]) -> None:
    """A rewritten file's vector goes away with it (its live rows are in the new files)."""
    if vectors is not None:
        vectors.remove(f.file_name for f in rewritten)


__all__ = ["DvCompaction", "unit_vectors"]
