"""The process-wide cache of decoded manifests and manifest lists, shared by every table handle.

A sensor tick or a planning call opens its table afresh, so a cache per handle (the
``ManifestStore``'s own) is empty each time and the same manifests are decoded again and again.
Manifests and manifest lists are immutable and uniquely named, so their decoded contents can be
kept for the whole process, keyed by where they live: the :attr:`FileIO.identity` of their storage
(so two warehouses, or two S3 endpoints with a bucket of the same name, never share an entry) and
their full path.

Bounded by the number of decoded entries it holds (a manifest's entries, a list's manifest
metadata), least recently used first out: ``LAKE_MANIFEST_CACHE_ENTRIES`` in the environment or
:func:`configure_manifest_cache`; 0 turns it off. :func:`clear_manifest_cache` empties it.

What is immutable is the name, not the storage: a file can still be deleted, or damaged, after it
was read. So a hit is served only after the file was seen again at the size it had when it was
decoded (a ``stat`` locally; on object stores one listing per batch of a writer's manifests, see
:meth:`FileIO.sizes`): a missing file raises ``FileNotFoundError`` as a read would, and a file of
another size is read and decoded again (which names it corrupt if it is). Damage that keeps the
size is not seen, as Java Paimon's manifest cache does not see it: the decoded copy is the content
the table's metadata refers to.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from lake_core.errors import InvalidOptionError
from lake_core.io.lru import WeightedLru

ENV_VAR = "LAKE_MANIFEST_CACHE_ENTRIES"
# Decoded entries held at most. An entry with its file's statistics takes about 0.9 KB of Python
# objects for a narrow table (measured: 10,000 entries of the scale benchmark's table), more with
# many columns' statistics, so the default holds about 250 MB: a table of 100 buckets x 1,000
# partitions (100,000 live files) fits twice over, or a lake of hundreds of small tables.
DEFAULT_MAX_ENTRIES = 250_000


@dataclass(frozen=True)
class CachedFile:
    """A decoded file: its value, the file's size when it was decoded, and its weight in entries."""

    value: Any
    size: int
    weight: int


@dataclass(frozen=True)
class ManifestCacheStats:
    """What the cache holds and how it served (since the process started or it was last cleared)."""

    files: int
    entries: int
    max_entries: int
    hits: int
    misses: int


class ManifestCache:
    """An LRU of :class:`CachedFile` by (storage identity, path), bounded by total weight."""

    def __init__(self, max_entries: int):
        self._lru = WeightedLru(max_entries)
        self._lock = threading.Lock()  # the hit counts
        self._hits = 0
        self._misses = 0

    @property
    def max_entries(self) -> int:
        return self._lru.max_weight

    def lookup(self, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], CachedFile]:
        """The cached files among ``keys`` (not yet checked against the storage)."""
        return cast("dict[tuple[str, str], CachedFile]", self._lru.peek(keys))

    def record(self, *, hits: int, misses: int) -> None:
        with self._lock:
            self._hits += hits
            self._misses += misses

    def touch(self, keys: Sequence[tuple[str, str]]) -> None:
        self._lru.touch(keys)

    def put(self, key: tuple[str, str], value: Any, *, size: int, weight: int) -> None:
        self._lru.put(key, CachedFile(value, size, weight), weight=weight)

    def discard(self, key: tuple[str, str]) -> None:
        self._lru.discard(key)

    def resize(self, max_entries: int) -> None:
        self._lru.resize(max_entries)

    def clear(self) -> None:
        self._lru.clear()
        with self._lock:
            self._hits = self._misses = 0

    def stats(self) -> ManifestCacheStats:
        with self._lock:
            return ManifestCacheStats(len(self._lru), self._lru.weight, self.max_entries, self._hits, self._misses)


def _max_entries_from_env() -> int:
    text = os.environ.get(ENV_VAR)
    if text is None or not text.strip():
        return DEFAULT_MAX_ENTRIES
    try:
        return _checked(int(text.strip().replace("_", "")))
    except ValueError:
        raise InvalidOptionError(
            f"{ENV_VAR}={text!r}: expected a whole number of manifest entries (0 turns the cache off)"
        ) from None


def _checked(max_entries: Any) -> int:
    if isinstance(max_entries, bool) or not isinstance(max_entries, int) or max_entries < 0:
        raise InvalidOptionError(
            f"manifest cache max_entries={max_entries!r}: expected a whole number >= 0 (0 turns the cache off)"
        )
    return max_entries


_cache: ManifestCache | None = None
_cache_lock = threading.Lock()


def manifest_cache() -> ManifestCache:
    """The process's cache, sized from the environment on first use."""
    global _cache
    if _cache is None:
        with _cache_lock:
            if _cache is None:
                _cache = ManifestCache(_max_entries_from_env())
    return _cache


def configure_manifest_cache(*, max_entries: int) -> None:
    """Bound the process-wide manifest cache to ``max_entries`` decoded entries (0: off); evicts
    the least recently used files at once if it holds more."""
    manifest_cache().resize(_checked(max_entries))


def clear_manifest_cache() -> None:
    """Forget every decoded manifest and manifest list of this process (and the hit counts)."""
    manifest_cache().clear()


def manifest_cache_stats() -> ManifestCacheStats:
    """Files and entries held, the bound, and hits and misses since the last clear."""
    return manifest_cache().stats()
