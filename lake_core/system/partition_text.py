"""A serialized partition (or partition statistics row) as Java's system tables print it:
``Arrays.toString`` of its values (``[2024-01-01, 3]``; ``[]`` for an unpartitioned table)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import pyarrow as pa

from lake_core.format.binary_row.reader import deserialize_row
from lake_core.system.java_text import java_array_text

if TYPE_CHECKING:
    from lake_core.table import FileStoreTable


class PartitionText:
    """Each distinct serialized partition of ``table`` printed once (a table has few partitions,
    its files many)."""

    def __init__(self, table: FileStoreTable):
        schema = table.schema
        self.types = [schema.field(n).type for n in schema.partition_keys]
        self._cache: dict[bytes, str] = {}

    def __call__(self, partition: bytes) -> str:
        text = self._cache.get(partition)
        if text is None:
            values = deserialize_row(partition, self.types) if self.types else []
            text = self._cache[partition] = java_array_text(values, self.types)
        return text

    def column(self, partitions: Iterable[bytes]) -> pa.Array:
        return pa.array([self(p) for p in partitions], pa.string())
