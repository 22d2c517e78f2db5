"""The key columns of data files kept in memory between lookups (Paimon's lookup cache).

Deletion-vector compaction looks every written key up in the bucket's older files, commit after
commit, and those files rarely change: reading a file's keys once and probing them from memory
afterwards turns each later lookup into a hash join, with no Parquet read. Data files are immutable
and uniquely named, so an entry keyed by the file's path and size never goes stale; a file's deletion
vector, which does change, is applied at probe time, not cached.

The cache is shared by the process (writers and compactions of any table), bounded in bytes
(least recently used entries go first, :data:`DEFAULT_MAX_BYTES` like Paimon's
``lookup.cache-max-memory-size``), and safe to use from the writer threads.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pyarrow as pa

from lake_core.io.lru import WeightedLru
from lake_core.manifest.metadata import DataFileMeta

DEFAULT_MAX_BYTES = 256 * 1024 * 1024


class LookupKeyCache:
    """Least-recently-used tables of file keys, at most ``max_bytes`` in all."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self._lru = WeightedLru(max_bytes)

    def get(
        self,
        *,
        path: str,
        f: DataFileMeta,
        schema_id: int,
        columns: Sequence[str],
        read: Callable[[], pa.Table],
    ) -> pa.Table:
        """The columns ``columns`` of the whole file ``f`` at ``path`` (no deletion vector applied),
        from memory when cached, else from ``read()`` (then cached if it fits)."""
        key = (path, f.file_size, schema_id, tuple(columns))
        hit = self._lru.get(key)
        if hit is not None:
            return hit
        table = read()  # unlocked: other threads look their own files up meanwhile
        self._lru.put(key, table, weight=table.nbytes)
        return table

    def clear(self) -> None:
        self._lru.clear()

    @property
    def cached_bytes(self) -> int:
        return self._lru.weight


#: the process's cache (lookups of every table share the budget)
LOOKUP_KEYS = LookupKeyCache()


__all__ = ["DEFAULT_MAX_BYTES", "LOOKUP_KEYS", "LookupKeyCache"]
