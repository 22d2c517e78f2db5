"""What crosses process boundaries: commit messages (writer → committer) and splits
(planner → reader). Both are plain frozen dataclasses, so they pickle (Spark, Dagster)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lake_core.manifest.metadata import DataFileMeta, IndexManifestEntry


@dataclass(frozen=True)
class CommitMessage:
    """Changes to one (partition, bucket), as Java's CommitMessageImpl."""

    partition: bytes  # serialized BinaryRow
    bucket: int
    total_buckets: int
    new_files: tuple[DataFileMeta, ...] = ()
    changelog_files: tuple[DataFileMeta, ...] = ()
    deleted_files: tuple[DataFileMeta, ...] = ()  # overwrite of a bucket's live files
    compact_before: tuple[DataFileMeta, ...] = ()
    compact_after: tuple[DataFileMeta, ...] = ()
    compact_changelog: tuple[DataFileMeta, ...] = ()
    new_index_files: tuple[IndexManifestEntry, ...] = ()
    deleted_index_files: tuple[IndexManifestEntry, ...] = ()
    # Cross-partition upsert: the snapshot the writer's key index was built from; the commit fails
    # if another job added data after it (keys could otherwise live in two partitions).
    base_snapshot_id: int | None = None

    def is_empty(self) -> bool:
        return not (self.new_files or self.changelog_files or self.deleted_files or self.compact_before
                    or self.compact_after or self.compact_changelog or self.new_index_files
                    or self.deleted_index_files)

    @property
    def has_compaction(self) -> bool:
        return bool(self.compact_before or self.compact_after or self.compact_changelog)


@dataclass(frozen=True)
class Split:
    """All live data files of one (partition, bucket) at one snapshot (or, ``streaming``, the
    delta/changelog files one snapshot added to it)."""

    snapshot_id: int
    partition: bytes
    partition_values: tuple[Any, ...]
    bucket: int
    total_buckets: int
    bucket_path: str
    files: tuple[DataFileMeta, ...]
    raw_convertible: bool = False
    # deletion-vectors tables: the bucket's DV index files (files are read raw, vectors applied)
    dv_index: tuple[IndexManifestEntry, ...] | None = None
    extra: dict = field(default_factory=dict, compare=False)
    # Java ``DataSplit.isStreaming``: the files are one snapshot's delta or changelog files, read
    # as they are (no merge, retractions kept) with each row's kind in ``_ROW_KIND``.
    streaming: bool = False
    # The rows read carry ``_ROW_KIND`` (streaming splits, and the full first plan of a stream scan
    # whose merged rows are all +I).
    row_kind: bool = False
    # Java ``DataSplit.beforeFiles``: a diff split (``incremental-between-scan-mode = diff``) holds
    # the live files of the start snapshot here, of the end snapshot in ``files``; read, the merged
    # rows of both are compared per key. None: not a diff split.
    before_files: tuple[DataFileMeta, ...] | None = None
    before_dv_index: tuple[IndexManifestEntry, ...] | None = None
    # The schema whose columns the rows are read in: the snapshot's for a time-travel scan (Java
    # reads a snapshot with the schema it was written under), the table's for the others. None:
    # the reader's own schema.
    schema_id: int | None = None

    @property
    def row_count(self) -> int:
        return sum(f.row_count for f in self.files)

    def file_path(self, f: DataFileMeta) -> str:
        return f.path_in(self.bucket_path)
