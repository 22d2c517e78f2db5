"""Paimon's DV index file (Java ``DeletionVectorsIndexFile``, index type ``DELETION_VECTORS``):
``index/index-<uuid>-N`` holding a version byte (1) and, per data file, a big-endian int32 size
(magic + bitmap bytes), the vector (:meth:`DeletionVector.to_bytes`) and a big-endian CRC32 of it.
The index manifest entry's ``DeletionVectorMeta`` list gives each file's (offset of the size int,
size, cardinality); ``_ROW_COUNT`` is the number of vectors. One file per bucket, as Java writes
for primary-key tables."""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from lake_core.deletion_vectors.vector import DeletionVector
from lake_core.errors import FormatError
from lake_core.manifest.metadata import DeletionVectorMeta, FileKind, IndexManifestEntry
from lake_core.paths import FileNamer

if TYPE_CHECKING:
    from lake_core.store import FileStore

DV_INDEX = "DELETION_VECTORS"
VERSION = 1


def encode_index_file(vectors: Mapping[str, DeletionVector]) -> tuple[bytes, tuple[DeletionVectorMeta, ...]]:
    """The file's bytes and its ranges, vectors in data-file-name order (deterministic)."""
    out = [bytes([VERSION])]
    pos = 1
    metas = []
    for name in sorted(vectors):
        dv = vectors[name]
        if not dv.cardinality:
            continue  # Java drops empty vectors too
        body = dv.to_bytes()
        out += [np.array([len(body)], ">i4").tobytes(), body, np.array([zlib.crc32(body)], ">u4").tobytes()]
        metas.append(DeletionVectorMeta(name, pos, len(body), dv.cardinality))
        pos += 8 + len(body)
    return b"".join(out), tuple(metas)


def decode_index_file(data: bytes, ranges, where: str) -> dict[str, DeletionVector]:
    mv = memoryview(data)
    if not mv or mv[0] != VERSION:
        raise FormatError(f"DV index file {where}: version byte {mv[0] if mv else None}, expected {VERSION}")
    out = {}
    for m in ranges:
        if m.offset + 8 + m.length > len(mv):
            raise FormatError(
                f"DV index file {where}: the vector of {m.data_file_name} at offset {m.offset} "
                f"(size {m.length}) runs past the end of the {len(mv)}-byte file"
            )
        size = int(np.frombuffer(mv, ">i4", 1, m.offset)[0])
        if size != m.length:
            raise FormatError(
                f"DV index file {where}: the vector of {m.data_file_name} is {size} bytes but the "
                f"index manifest says {m.length}"
            )
        body = mv[m.offset + 4 : m.offset + 4 + size]
        crc = int(np.frombuffer(mv, ">u4", 1, m.offset + 4 + size)[0])
        if crc != zlib.crc32(body):
            raise FormatError(f"DV index file {where}: checksum mismatch in the vector of {m.data_file_name}")
        dv = DeletionVector.from_bytes(body, f"deletion vector of {m.data_file_name} in {where}")
        if m.cardinality is not None and m.cardinality != dv.cardinality:
            raise FormatError(
                f"DV index file {where}: the vector of {m.data_file_name} holds {dv.cardinality} "
                f"positions but the index manifest says {m.cardinality}"
            )
        out[m.data_file_name] = dv
    return out


def dv_index_path(store: FileStore, entry: IndexManifestEntry) -> str:
    return entry.external_path or store.paths.index_file(entry.file_name)


def read_dv_index(store: FileStore, entry: IndexManifestEntry) -> dict[str, DeletionVector]:
    path = dv_index_path(store, entry)
    return decode_index_file(store.fileio.read_bytes(path), entry.dv_ranges or (), path)


def write_dv_index(
    store: FileStore, partition: bytes, bucket: int, vectors: Mapping[str, DeletionVector], namer: FileNamer
) -> IndexManifestEntry | None:
    """Write the bucket's complete DV index file; its ADD entry (None: no deleted rows left)."""
    data, metas = encode_index_file(vectors)
    if not metas:
        return None
    name = namer.index_file()
    store.fileio.write_bytes(store.paths.index_file(name), data)
    return IndexManifestEntry(
        kind=FileKind.ADD,
        partition=partition,
        bucket=bucket,
        index_type=DV_INDEX,
        file_name=name,
        file_size=len(data),
        row_count=len(metas),
        dv_ranges=metas,
    )
