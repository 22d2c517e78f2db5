"""Manifest lists and manifests of one table, read through caches and written as new files.

Manifests are immutable once written, so caching them by name is safe: a handle keeps the files it
read (its own LRU), and the process keeps them for every later handle of the same storage
(:mod:`lake_core.manifest.cache`, which checks a file is still there before serving it).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Generic, TypeVar

import pyarrow as pa

from lake_core.format.binary_row.reader import deserialize_row
from lake_core.format.binary_row.writer import serialize_row
from lake_core.format.gc_pause import paused_gc
from lake_core.format.integrity import decode_metadata, read_metadata
from lake_core.io.fileio import FileIO
from lake_core.manifest.cache import manifest_cache
from lake_core.manifest.manifest_io import (
    decode_index_manifest,
    decode_manifest_entries,
    decode_manifest_list,
    encode_index_manifest,
    encode_manifest_entries,
    encode_manifest_list,
)
from lake_core.manifest.metadata import (
    FileIdentifier,
    FileKind,
    IndexManifestEntry,
    ManifestEntry,
    ManifestFileMeta,
    SimpleStats,
    merge_entries,
    merge_entries_by_id,
)
from lake_core.paths import FileNamer, TablePaths
from lake_core.snapshot.snapshot import Snapshot

V = TypeVar("V")


class _LRU(Generic[V]):
    def __init__(self, size: int):
        self.size = size
        self.data: OrderedDict[str, V] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, key: str) -> V | None:
        with self.lock:
            v = self.data.get(key)
            if v is not None:
                self.data.move_to_end(key)
            return v

    def put(self, key: str, value: V) -> None:
        with self.lock:
            self.data[key] = value
            self.data.move_to_end(key)
            while len(self.data) > self.size:
                self.data.popitem(last=False)


def may_hold_buckets(meta: ManifestFileMeta, buckets: Collection[int]) -> bool:
    """Whether a manifest may hold entries of ``buckets``, from its bucket range (unknown: yes)."""
    if meta.min_bucket is None or meta.max_bucket is None:
        return True
    return any(meta.min_bucket <= b <= meta.max_bucket for b in buckets)


class ManifestStore:
    def __init__(self, fileio: FileIO, paths: TablePaths, partition_types: Sequence[pa.DataType]):
        self.fileio = fileio
        self.paths = paths
        self.partition_types = list(partition_types)
        self._entries: _LRU[list[ManifestEntry]] = _LRU(512)
        self._lists: _LRU[list[ManifestFileMeta]] = _LRU(256)
        # a DV table's commit reads its snapshot's index manifest once per bucket compacted and
        # again in the commit's checks: read once (its name is unique, the file never changes)
        self._index: _LRU[list[IndexManifestEntry]] = _LRU(16)
        self._index_load = threading.Lock()  # the buckets' threads ask at once: one reads, the rest wait
        self._partitions: dict[bytes, tuple] = {}
        self._live: tuple[tuple[str | None, str | None], dict[FileIdentifier, ManifestEntry]] | None = None

    # -- partitions ---------------------------------------------------------------------------
    def partition_values(self, partition: bytes) -> tuple:
        v = self._partitions.get(partition)
        if v is None:
            v = tuple(deserialize_row(partition, self.partition_types)) if self.partition_types else ()
            self._partitions[partition] = v
        return v

    def partition_bounds(self, meta: ManifestFileMeta) -> tuple[tuple, tuple] | None:
        """(lowest, highest) partition values of a manifest's partition statistics, per column;
        None when unknown (no partition columns, unreadable statistics)."""
        if not self.partition_types:
            return None
        stats = meta.partition_stats
        try:
            lows = tuple(deserialize_row(stats.min_values, self.partition_types))
            highs = tuple(deserialize_row(stats.max_values, self.partition_types))
        except Exception:  # statistics of another writer's making: no pruning
            return None
        if len(lows) != len(self.partition_types) or len(highs) != len(self.partition_types):
            return None
        return lows, highs

    # -- reads --------------------------------------------------------------------------------
    def read_manifest_list(self, name: str | None) -> list[ManifestFileMeta]:
        if not name:
            return []
        found, missing = self._cached(self._lists, [name])
        if missing:
            return self._read_and_keep(self._lists, name, "manifest list", decode_manifest_list)
        return found[name]

    def read_manifest(self, name: str, *, buckets: Collection[int] | None = None) -> list[ManifestEntry]:
        """The entries of one manifest; ``buckets``: only those of these buckets."""
        return self._read_manifests([name], buckets)[0]

    def _read_manifests(self, names: Sequence[str], buckets: Collection[int] | None) -> list[list[ManifestEntry]]:
        found, missing = self._cached(self._entries, names)
        for name in missing:
            if buckets is None:
                found[name] = self._read_and_keep(self._entries, name, "manifest file", decode_manifest_entries)
            else:  # decoded for these buckets only, so not kept: a cached manifest is a whole one
                found[name] = read_metadata(
                    self.fileio,
                    self.paths.manifest(name),
                    "manifest file",
                    lambda data: decode_manifest_entries(data, buckets=buckets),
                )
        if buckets is None:
            return [found[n] for n in names]
        decoded = set(missing)  # already of the buckets; the whole manifests at hand are filtered
        return [found[n] if n in decoded else [e for e in found[n] if e.bucket in buckets] for n in names]

    def _cached(self, local: _LRU[V], names: Sequence[str]) -> tuple[dict[str, V], list[str]]:
        """(the files of ``names`` at hand, by name; the names to read). This handle's own cache
        first, then the process's, whose files are served only if still there at the size they
        were decoded at (one batch of ``stat``s or listings for all of them)."""
        found: dict[str, V] = {}
        rest = []
        for name in dict.fromkeys(names):
            v = local.get(name)
            if v is None:
                rest.append(name)
            else:
                found[name] = v
        if not rest:
            return found, []
        shared = manifest_cache()
        identity = self.fileio.identity
        paths = {name: self.paths.manifest(name) for name in rest}
        cached = shared.lookup([(identity, p) for p in paths.values()])
        sizes = self.fileio.sizes([key[1] for key in cached]) if cached else {}
        valid = []
        for key, file in cached.items():
            if sizes.get(key[1]) == file.size:
                valid.append(key)
            else:  # gone or rewritten since: read again, so the read fails or the file is named corrupt
                shared.discard(key)
        shared.touch(valid)
        missing = []
        for name in rest:
            hit = cached.get((identity, paths[name]))
            if hit is not None and sizes.get(paths[name]) == hit.size:
                found[name] = hit.value
                local.put(name, hit.value)
            else:
                missing.append(name)
        shared.record(hits=len(rest) - len(missing), misses=len(missing))
        return found, missing

    def _read_and_keep(self, local: _LRU[V], name: str, what: str, decode: Callable[[bytes], V]) -> V:
        path = self.paths.manifest(name)
        data = self.fileio.read_bytes(path)
        v = decode_metadata(path, what, decode, data)
        self._keep(local, name, v, len(data))
        return v

    def _keep(self, local: _LRU[V], name: str, value: V, size: int) -> None:
        local.put(name, value)
        weight = len(value) if isinstance(value, list) else 1
        manifest_cache().put((self.fileio.identity, self.paths.manifest(name)), value, size=size, weight=max(1, weight))

    def data_manifests(self, snapshot: Snapshot) -> list[ManifestFileMeta]:
        return self.read_manifest_list(snapshot.base_manifest_list) + self.read_manifest_list(
            snapshot.delta_manifest_list
        )

    def read_entries(
        self, metas: Iterable[ManifestFileMeta], *, buckets: Collection[int] | None = None
    ) -> list[ManifestEntry]:
        """The entries of ``metas``, in order; ``buckets``: only those of these buckets (manifests
        whose bucket range holds none of them are not read at all)."""
        if buckets is not None:
            metas = [m for m in metas if may_hold_buckets(m, buckets)]
        out: list[ManifestEntry] = []
        for entries in self._read_manifests([m.file_name for m in metas], buckets):
            out.extend(entries)
        return out

    def live_entries(
        self,
        snapshot: Snapshot | None,
        metas: Iterable[ManifestFileMeta] | None = None,
        *,
        buckets: Collection[int] | None = None,
    ) -> list[ManifestEntry]:
        """ADD entries still live at ``snapshot`` (ADD and DELETE of one file cancel out), of
        ``metas`` (default: all the snapshot's) and of ``buckets`` (default: all): a file's ADD and
        DELETE share its bucket, so selecting buckets before merging is exact."""
        if snapshot is None:
            return []
        if metas is None and (buckets is None or self.has_live_files(snapshot)):
            live = self.live_files(snapshot).values()
            return list(live) if buckets is None else [e for e in live if e.bucket in buckets]
        if metas is None:
            metas = self.data_manifests(snapshot)
        merged = merge_entries(self.read_entries(metas, buckets=buckets))
        return [e for e in merged if e.kind == FileKind.ADD]

    def has_live_files(self, snapshot: Snapshot) -> bool:
        """Whether :meth:`live_files` of ``snapshot`` is at hand (merged already)."""
        last = self._live
        return last is not None and last[0] == (snapshot.base_manifest_list, snapshot.delta_manifest_list)

    def live_files(self, snapshot: Snapshot | None) -> Mapping[FileIdentifier, ManifestEntry]:
        """:meth:`live_entries` of the whole snapshot by file identifier. The last snapshot's is
        kept (its manifest lists name it: they never change), so a plan and the commit after it,
        and a commit's several checks, merge the table's entries once. Shared: never modify it."""
        if snapshot is None:
            return {}
        key = (snapshot.base_manifest_list, snapshot.delta_manifest_list)
        last = self._live
        if last is not None and last[0] == key:
            return last[1]
        with paused_gc():
            merged = merge_entries_by_id(self.read_entries(self.data_manifests(snapshot)))
            live = {i: e for i, e in merged.items() if e.kind == FileKind.ADD}
        self._live = (key, live)
        return live

    def delta_entries(self, snapshot: Snapshot) -> list[ManifestEntry]:
        return self.read_entries(self.read_manifest_list(snapshot.delta_manifest_list))

    def changelog_entries(self, snapshot: Snapshot) -> list[ManifestEntry]:
        return self.read_entries(self.read_manifest_list(snapshot.changelog_manifest_list))

    def index_entries(self, snapshot: Snapshot | None) -> list[IndexManifestEntry]:
        if snapshot is None or not snapshot.index_manifest:
            return []
        name = snapshot.index_manifest
        entries = self._index.get(name)
        if entries is None:
            with self._index_load:
                entries = self._index.get(name)
                if entries is None:
                    path = self.paths.manifest(name)
                    entries = read_metadata(self.fileio, path, "index manifest", decode_index_manifest)
                    self._index.put(name, entries)
        return list(entries)  # the caller's own list

    # -- writes -------------------------------------------------------------------------------
    def _partition_stats(self, partitions: Iterable[bytes]) -> SimpleStats:
        types = self.partition_types
        if not types:
            return SimpleStats(serialize_row([], []), serialize_row([], []), ())
        mins: list = [None] * len(types)
        maxs: list = [None] * len(types)
        nulls = [0] * len(types)
        for p in set(partitions):
            for i, v in enumerate(self.partition_values(p)):
                if v is None:
                    nulls[i] += 1
                    continue
                if mins[i] is None or v < mins[i]:
                    mins[i] = v
                if maxs[i] is None or v > maxs[i]:
                    maxs[i] = v
        return SimpleStats(serialize_row(mins, types), serialize_row(maxs, types), tuple(nulls))

    def write_manifest(self, entries: Sequence[ManifestEntry], schema_id: int, namer: FileNamer) -> ManifestFileMeta:
        name = namer.manifest()
        data = encode_manifest_entries(entries)
        self.fileio.write_bytes(self.paths.manifest(name), data)
        self._keep(self._entries, name, list(entries), len(data))
        buckets = [e.bucket for e in entries]
        levels = [e.file.level for e in entries]
        return ManifestFileMeta(
            file_name=name,
            file_size=len(data),
            num_added_files=sum(1 for e in entries if e.kind == FileKind.ADD),
            num_deleted_files=sum(1 for e in entries if e.kind == FileKind.DELETE),
            partition_stats=self._partition_stats(e.partition for e in entries),
            schema_id=schema_id,
            min_bucket=min(buckets) if buckets else None,
            max_bucket=max(buckets) if buckets else None,
            min_level=min(levels) if levels else None,
            max_level=max(levels) if levels else None,
        )

    def write_manifests(
        self, entries: Sequence[ManifestEntry], schema_id: int, namer: FileNamer, target_entries: int = 20_000
    ) -> list[ManifestFileMeta]:
        """Roll entries into manifests of bounded size (about 8 MB of Avro at ~400 B/entry)."""
        return [
            self.write_manifest(entries[i : i + target_entries], schema_id, namer)
            for i in range(0, len(entries), target_entries)
        ]

    def write_manifest_list(self, metas: Sequence[ManifestFileMeta], namer: FileNamer) -> tuple[str, int]:
        name = namer.manifest_list()
        data = encode_manifest_list(metas)
        self.fileio.write_bytes(self.paths.manifest(name), data)
        self._keep(self._lists, name, list(metas), len(data))
        return name, len(data)

    def write_index_manifest(self, entries: Sequence[IndexManifestEntry], namer: FileNamer) -> str:
        name = namer.index_manifest()
        self.fileio.write_bytes(self.paths.manifest(name), encode_index_manifest(entries))
        return name
