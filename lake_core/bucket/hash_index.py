"""Paimon's dynamic-bucket HASH index files (Java ``HashIndexFile``).

One file per (partition, bucket): the big-endian int32 ``BinaryRow(trimmedPK).hashCode()`` of
every key in that bucket, no header, no particular order (we write them sorted). Listed in the
index manifest with index type ``HASH`` and ``_ROW_COUNT`` = number of hashes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from lake_core.errors import FormatError
from lake_core.manifest.metadata import FileKind, IndexManifestEntry
from lake_core.paths import FileNamer

if TYPE_CHECKING:
    from lake_core.store import FileStore

HASH_INDEX = "HASH"


def encode_hashes(hashes: np.ndarray) -> bytes:
    """Big-endian int32 bytes of ``hashes`` (written sorted, so files are deterministic)."""
    return np.sort(np.asarray(hashes, dtype=np.int32), kind="stable").astype(">i4").tobytes()


def decode_hashes(data: bytes, where: str = "HASH index file") -> np.ndarray:
    if len(data) % 4:
        raise FormatError(
            f"{where} holds {len(data)} bytes, not a multiple of 4: it is truncated or not a "
            "HASH index; restore it from a backup or rewrite the partition"
        )
    return np.frombuffer(data, dtype=">i4").astype(np.int32)


def index_file_path(store: FileStore, entry: IndexManifestEntry) -> str:
    return entry.external_path or store.paths.index_file(entry.file_name)


def read_hash_index(store: FileStore, entry: IndexManifestEntry) -> np.ndarray:
    """The int32 hashes of one HASH index file."""
    path = index_file_path(store, entry)
    hashes = decode_hashes(store.fileio.read_bytes(path), f"HASH index file {path}")
    if entry.row_count is not None and entry.row_count != len(hashes):
        raise FormatError(
            f"HASH index file {path} holds {len(hashes)} hashes but the index manifest says "
            f"{entry.row_count}; the table's index is corrupt"
        )
    return hashes


def write_hash_index(
    store: FileStore, partition: bytes, bucket: int, hashes: np.ndarray, namer: FileNamer
) -> IndexManifestEntry:
    """Write one complete HASH index file and return its ADD entry for the index manifest."""
    name = namer.index_file()
    data = encode_hashes(hashes)
    store.fileio.write_bytes(store.paths.index_file(name), data)
    return IndexManifestEntry(
        kind=FileKind.ADD,
        partition=partition,
        bucket=bucket,
        index_type=HASH_INDEX,
        file_name=name,
        file_size=len(data),
        row_count=len(data) // 4,
    )


def as_delete(entry: IndexManifestEntry) -> IndexManifestEntry:
    return IndexManifestEntry(
        kind=FileKind.DELETE,
        partition=entry.partition,
        bucket=entry.bucket,
        index_type=entry.index_type,
        file_name=entry.file_name,
        file_size=entry.file_size,
        row_count=entry.row_count,
        dv_ranges=entry.dv_ranges,
        external_path=entry.external_path,
        global_index=entry.global_index,
    )
