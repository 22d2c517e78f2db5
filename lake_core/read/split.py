"""What a planner hands its readers across process boundaries: one Split per (partition, bucket), a
plain frozen dataclass, so it pickles (Spark, Dagster). Readers never import the commit package."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lake_core.manifest.metadata import DataFileMeta, IndexManifestEntry


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
