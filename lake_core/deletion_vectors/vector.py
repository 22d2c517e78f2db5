"""One data file's deletion vector: Java ``BitmapDeletionVector`` (32-bit, magic 1581511376 written
big-endian) or ``Bitmap64DeletionVector`` (``deletion-vectors.bitmap64``, magic 1681511377 written
little-endian, body little-endian). :meth:`DeletionVector.to_bytes` is what a DV index file stores
between its size and CRC32 (the CRC covers magic + bitmap)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from lake_core.deletion_vectors.roaring import deserialize32, deserialize64, serialize32, serialize64
from lake_core.errors import FormatError
from lake_core.merge.sort import sorted_find

MAGIC_32 = 1581511376
MAGIC_64 = 1681511377


@dataclass(frozen=True, eq=False)
class DeletionVector:
    """Sorted unique deleted row positions (uint64) of one data file."""

    positions: np.ndarray
    bitmap64: bool = False

    @staticmethod
    def of(positions, *, bitmap64: bool = False) -> DeletionVector:
        return DeletionVector(np.unique(np.asarray(positions, dtype=np.uint64)), bitmap64)

    @property
    def cardinality(self) -> int:
        return int(self.positions.size)

    def union(self, positions) -> DeletionVector:
        return DeletionVector.of(
            np.concatenate([self.positions, np.asarray(positions, dtype=np.uint64)]), bitmap64=self.bitmap64
        )

    def contains(self, positions: np.ndarray) -> np.ndarray:
        """Whether each of ``positions`` (any order) is deleted."""
        return sorted_find(self.positions, np.asarray(positions, dtype=np.uint64))[1]

    def keep_mask(self, start: int, n: int) -> np.ndarray | None:
        """Boolean mask of the rows ``[start, start + n)`` that are NOT deleted (None: all kept)."""
        p = self.positions
        lo, hi = np.searchsorted(p, [start, start + n])
        if lo == hi:
            return None
        keep = np.ones(n, dtype=bool)
        keep[(p[lo:hi] - np.uint64(start)).astype(np.int64)] = False
        return keep

    def filter_rows(self, rows: pa.Table, start: int) -> pa.Table:
        """``rows`` (the file's rows from position ``start`` on, a chunk of it) without the deleted ones."""
        keep = self.keep_mask(start, rows.num_rows)
        return rows if keep is None else rows.filter(pa.array(keep))

    def to_bytes(self) -> bytes:
        if self.bitmap64:
            return np.array([MAGIC_64], "<i4").tobytes() + serialize64(self.positions)
        return np.array([MAGIC_32], ">i4").tobytes() + serialize32(self.positions)

    @staticmethod
    def from_bytes(data: bytes | memoryview, where: str = "deletion vector") -> DeletionVector:
        mv = memoryview(data)
        if len(mv) < 4:
            raise FormatError(f"{where} is truncated ({len(mv)} bytes)")
        if int(np.frombuffer(mv, ">i4", 1, 0)[0]) == MAGIC_32:
            values, end = deserialize32(mv, 4, where)
            bitmap64 = False
        elif int(np.frombuffer(mv, "<i4", 1, 0)[0]) == MAGIC_64:
            values, end = deserialize64(mv, 4, where)
            bitmap64 = True
        else:
            raise FormatError(
                f"{where}: invalid magic number {int(np.frombuffer(mv, '>i4', 1, 0)[0])}; expected "
                f"{MAGIC_32} (BitmapDeletionVector) or {MAGIC_64} (Bitmap64DeletionVector)"
            )
        if end != len(mv):
            raise FormatError(f"{where}: the bitmap ends at byte {end} of {len(mv)}; the vector is corrupt")
        return DeletionVector(values.astype(np.uint64), bitmap64)
