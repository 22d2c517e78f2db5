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

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence

import pyarrow as pa

from lake_core.manifest.metadata import DataFileMeta

DEFAULT_MAX_BYTES = 256 * 1024 * 1024

_Key = tuple[str, int, int, tuple[str, ...]]


class LookupKeyCache:
    """Least-recently-used tables of file keys, at most ``max_bytes`` in all."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        self._entries: OrderedDict[_Key, pa.Table] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

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
        with self._lock:
            hit = self._entries.get(key)
            if hit is not None:
                self._entries.move_to_end(key)
                return hit
        table = read()  # outside the lock: other threads look their own files up meanwhile
        size = table.nbytes
        if size <= self.max_bytes:
            with self._lock:
                if key not in self._entries:
                    self._entries[key] = table
                    self._bytes += size
                while self._bytes > self.max_bytes:
                    _, old = self._entries.popitem(last=False)
                    self._bytes -= old.nbytes
        return table

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0

    @property
    def cached_bytes(self) -> int:
        return self._bytes


#: the process's cache (lookups of every table share the budget)
LOOKUP_KEYS = LookupKeyCache()


__all__ = ["DEFAULT_MAX_BYTES", "LOOKUP_KEYS", "LookupKeyCache"]
