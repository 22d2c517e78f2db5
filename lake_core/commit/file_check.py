"""A commit refuses files that are not on storage.

A writer's files can sit uncommitted for a long time (a long Spark job, a paused writer) and be
deleted meanwhile by ``remove_orphan_files``, whose age floor (one day by default) is the caller's
rule, as in Paimon. A snapshot naming a missing file would make every later read of the whole table
fail, so before its first attempt a commit checks every file it adds: data and changelog files, the
files a compaction wrote (not the ones it only moves up a level), index files (HASH, deletion
vectors). The size must match too: a truncated or replaced file is as bad as a missing one.

Cost: one bulk :meth:`FileIO.sizes` call per snapshot a commit creates: a ``stat`` per file on local
disk, on S3 one LIST per writer and bucket directory, in parallel (see there).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lake_core.bucket.hash_index import index_file_path
from lake_core.errors import CommitFilesMissingError
from lake_core.manifest.metadata import FileKind, IndexManifestEntry, ManifestEntry

if TYPE_CHECKING:
    from lake_core.store import FileStore

_SHOWN = 5  # files named in the message; the error's ``files`` has them all


@dataclass(frozen=True)
class _NewFile:
    path: str
    size: int
    partition: bytes
    bucket: int


def _new_files(
    store: FileStore, entries: Iterable[ManifestEntry], index_changes: Iterable[IndexManifestEntry]
) -> list[_NewFile]:
    entries = list(entries)
    # a compaction that only moves a file up a level ADDs it under the name it DELETEs: not new
    moved = {(e.partition, e.bucket, e.file.file_name) for e in entries if e.kind == FileKind.DELETE}
    bucket_dirs: dict[tuple[bytes, int], str] = {}
    out = []
    for e in entries:
        if e.kind != FileKind.ADD or (e.partition, e.bucket, e.file.file_name) in moved:
            continue
        where = bucket_dirs.get((e.partition, e.bucket))
        if where is None:
            where = bucket_dirs[(e.partition, e.bucket)] = store.bucket_dir(e.partition, e.bucket)
        out.append(_NewFile(e.file.path_in(where), e.file.file_size, e.partition, e.bucket))
    out += [
        _NewFile(index_file_path(store, c), c.file_size, c.partition, c.bucket)
        for c in index_changes
        if c.kind == FileKind.ADD
    ]
    return out


def check_new_files(
    store: FileStore,
    entries: Iterable[ManifestEntry],
    index_changes: Iterable[IndexManifestEntry],
    *,
    describe_partition: Callable[[bytes], str],
) -> None:
    """Raise ``CommitFilesMissingError`` unless every file ``entries`` and ``index_changes`` add is
    on storage with the size they record."""
    files = _new_files(store, entries, index_changes)
    if not files:
        return
    sizes = store.fileio.sizes([f.path for f in files])
    bad = [(f, sizes.get(f.path)) for f in files if sizes.get(f.path) != f.size]
    if not bad:
        return
    shown = "; ".join(
        f"{f.path} (partition {describe_partition(f.partition)}, bucket {f.bucket}: "
        + ("missing)" if size is None else f"{size} bytes on storage, {f.size} in its commit message)")
        for f, size in bad[:_SHOWN]
    )
    more = f"; and {len(bad) - _SHOWN} more" if len(bad) > _SHOWN else ""
    raise CommitFilesMissingError(
        f"commit to {store.identifier} refused: {len(bad)} of the {len(files)} files it adds are not on storage as "
        f"written: {shown}{more}. Most likely remove_orphan_files deleted them because they were written longer "
        "than its older_than floor (default one day) before this commit (or they were deleted by hand); commit "
        "sooner or keep the floor above the longest write-to-commit time. Nothing was committed — write the data "
        "again",
        [f.path for f, _size in bad],
    )
