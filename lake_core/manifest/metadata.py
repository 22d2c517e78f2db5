"""Typed, immutable views of Paimon's manifest metadata records.

These mirror Java's ``SimpleStats``, ``DataFileMeta``, ``ManifestEntry``, ``ManifestFileMeta``,
``DeletionVectorMeta`` and ``IndexManifestEntry``. Every row-valued field
(partition, min/max key, stats min/max values) is kept exactly as serialized in the manifest:
``[int32 BE arity] ++ BinaryRow bytes``. Decoding those bytes is another module's job; keeping
them opaque lets a manifest be read and rewritten without any loss.

All classes are frozen, slotted dataclasses and can be pickled (so they can travel between
processes). Avro encoding and decoding live in :mod:`lake_core.manifest.manifest_io`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from enum import IntEnum
from typing import Any, NamedTuple

from lake_core.errors import FormatError, LakeError
from lake_core.paths import data_file_in

__all__ = [
    "EMPTY_ROW_BYTES",
    "EMPTY_STATS",
    "SimpleStats",
    "FileSource",
    "DataFileMeta",
    "FileKind",
    "FileIdentifier",
    "ManifestEntry",
    "ManifestFileMeta",
    "DeletionVectorMeta",
    "IndexManifestEntry",
    "merge_entries",
    "merge_entries_by_id",
]

#: A serialized arity-0 BinaryRow: 4-byte big-endian arity 0, then the 8-byte header/null-bit word.
EMPTY_ROW_BYTES: bytes = b"\x00\x00\x00\x00" + b"\x00" * 8


@dataclass(frozen=True, slots=True)
class SimpleStats:
    """Java ``SimpleStats``: min/max rows (serialized BinaryRow bytes) and per-field null counts.

    ``null_counts`` is None only when the writer stored a null array; stats switched off are
    written as arity-0 rows with ``null_counts == ()`` (:data:`EMPTY_STATS`).
    """

    min_values: bytes
    max_values: bytes
    null_counts: tuple[int | None, ...] | None


#: Java ``SimpleStats.EMPTY_STATS``: arity-0 min/max rows and an empty null-count array.
EMPTY_STATS = SimpleStats(EMPTY_ROW_BYTES, EMPTY_ROW_BYTES, ())


class FileSource(IntEnum):
    """Java ``FileSource`` (``_FILE_SOURCE``): how a data file came to be."""

    APPEND = 0
    COMPACT = 1


@dataclass(frozen=True, slots=True)
class DataFileMeta:
    """Java ``DataFileMeta`` (the ``_FILE`` record of a manifest entry), field for field.

    ``creation_time`` is epoch milliseconds of the writer's *local* wall clock encoded as if it
    were UTC (Java ``Timestamp.fromLocalDateTime(LocalDateTime.now())``); None if absent.
    ``file_source`` is 0 (APPEND) / 1 (COMPACT) or None. ``value_stats_cols`` None means
    "stats for every field of the file's schema", ``()`` means "no value stats".
    """

    file_name: str
    file_size: int
    row_count: int
    min_key: bytes
    max_key: bytes
    key_stats: SimpleStats
    value_stats: SimpleStats
    min_sequence_number: int
    max_sequence_number: int
    schema_id: int
    level: int
    extra_files: tuple[str, ...] = ()
    creation_time: int | None = None
    delete_row_count: int | None = None
    embedded_file_index: bytes | None = None
    file_source: int | None = None
    value_stats_cols: tuple[str, ...] | None = None
    external_path: str | None = None
    first_row_id: int | None = None
    write_cols: tuple[str, ...] | None = None
    write_cols_sequences: tuple[int, ...] | None = None

    def path_in(self, bucket_dir: str) -> str:
        """Where the file is: its external path, else its name in ``bucket_dir``."""
        return self.external_path or data_file_in(bucket_dir, self.file_name)

    def upgrade(self, new_level: int) -> DataFileMeta:
        """Copy of this file moved to ``new_level`` (Java ``DataFileMeta.upgrade``).

        Like Java, the new level must be strictly higher than the current one.
        """
        if new_level <= self.level:
            raise LakeError(
                f"cannot upgrade data file {self.file_name!r} from level {self.level} to "
                f"level {new_level}: an upgrade must move a file to a higher level"
            )
        return replace(self, level=new_level)

    def identifier(self) -> tuple[int, str, tuple[str, ...], bytes | None, str | None]:
        """The file-level part of Java ``FileEntry.Identifier``.

        ``(level, file_name, extra_files, embedded_file_index, external_path)``; a manifest entry
        adds its partition and bucket (:meth:`ManifestEntry.identifier`).
        """
        return (
            self.level,
            self.file_name,
            self.extra_files,
            self.embedded_file_index,
            self.external_path,
        )

    def add_row_count(self) -> int | None:
        """Rows that are not retractions (``row_count - delete_row_count``), if known."""
        if self.delete_row_count is None:
            return None
        return self.row_count - self.delete_row_count


class FileKind(IntEnum):
    """Java ``FileKind`` (``_KIND``)."""

    ADD = 0
    DELETE = 1


class FileIdentifier(NamedTuple):
    """Java ``FileEntry.Identifier``: two entries with equal identifiers name the same file."""

    partition: bytes
    bucket: int
    level: int
    file_name: str
    extra_files: tuple[str, ...]
    embedded_file_index: bytes | None
    external_path: str | None


_new_tuple = tuple.__new__


@dataclass(frozen=True, slots=True)
class ManifestEntry:
    """Java ``ManifestEntry``: one ADD or DELETE of a data file in a (partition, bucket).

    ``total_buckets`` is N for fixed-bucket tables, -1 for dynamic/unaware and -2 for postpone.
    """

    kind: FileKind
    partition: bytes
    bucket: int
    total_buckets: int
    file: DataFileMeta

    def identifier(self) -> FileIdentifier:
        f = self.file
        # tuple.__new__: a NamedTuple's own __new__ is a Python function, several times slower
        return _new_tuple(
            FileIdentifier,
            (self.partition, self.bucket, f.level, f.file_name, f.extra_files, f.embedded_file_index, f.external_path),
        )


@dataclass(frozen=True, slots=True)
class ManifestFileMeta:
    """Java ``ManifestFileMeta``: one manifest file as listed in a manifest list."""

    file_name: str
    file_size: int
    num_added_files: int
    num_deleted_files: int
    partition_stats: SimpleStats
    schema_id: int
    min_bucket: int | None = None
    max_bucket: int | None = None
    min_level: int | None = None
    max_level: int | None = None
    min_row_id: int | None = None
    max_row_id: int | None = None


@dataclass(frozen=True, slots=True)
class DeletionVectorMeta:
    """Java ``DeletionVectorMeta``: where one data file's deletion vector sits in a DV index file.

    Avro fields ``f0`` (data file name), ``f1`` (offset), ``f2`` (length), ``_CARDINALITY``.
    """

    data_file_name: str
    offset: int
    length: int
    cardinality: int | None = None


@dataclass(frozen=True, slots=True)
class IndexManifestEntry:
    """Java ``IndexManifestEntry`` with its ``IndexFileMeta`` flattened in.

    ``index_type`` is ``"HASH"``, ``"DELETION_VECTORS"`` or a global index type. ``dv_ranges`` is
    set for deletion-vector index files. ``global_index`` is the ``_GLOBAL_INDEX`` record as a
    dict with keys ``row_range_start``, ``row_range_end``, ``index_field_id``,
    ``extra_field_ids`` (tuple or None), ``index_meta`` and ``source_meta`` (bytes or None);
    fields unknown to lake_core that a reader met are kept under their lower-cased Avro name
    without the leading underscore. It does not take part in hashing (dicts are unhashable).
    """

    kind: FileKind
    partition: bytes
    bucket: int
    index_type: str
    file_name: str
    file_size: int
    row_count: int
    dv_ranges: tuple[DeletionVectorMeta, ...] | None = None
    external_path: str | None = None
    global_index: dict[str, Any] | None = field(default=None, hash=False)


def merge_entries(entries: Iterable[ManifestEntry]) -> list[ManifestEntry]:
    """Java ``FileEntry.mergeEntries``: fold ADD/DELETE entries by file identifier.

    An ADD followed by a DELETE of the same identifier cancel out; a DELETE of a file not added
    in ``entries`` is kept (its ADD lives in an older manifest). The result keeps first-seen
    order. Adding the same file twice means the manifests are corrupt: :class:`FormatError`.
    """
    return list(merge_entries_by_id(entries).values())


def merge_entries_by_id(entries: Iterable[ManifestEntry]) -> dict[FileIdentifier, ManifestEntry]:
    """:func:`merge_entries` keyed by each entry's identifier (in the same order)."""
    merged: dict[FileIdentifier, ManifestEntry] = {}
    for entry in entries:
        ident = entry.identifier()
        kind = entry.kind
        if kind == FileKind.ADD:
            old = merged.get(ident)
            if old is not None:
                raise FormatError(
                    f"manifest entries add data file {ident.file_name!r} (bucket {ident.bucket}, "
                    f"level {ident.level}) twice, or add it again while an unmatched DELETE of it "
                    "is pending; the manifests are corrupt. Restore the table from a tag or an "
                    "earlier snapshot"
                )
            merged[ident] = entry
        elif kind == FileKind.DELETE:
            if ident in merged:
                del merged[ident]
            else:
                merged[ident] = entry
        else:  # pragma: no cover - FileKind has two members
            raise FormatError(f"unknown manifest entry kind {kind!r}")
    return merged
