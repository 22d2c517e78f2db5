"""What a writer hands its committer across process boundaries: commit messages, plain frozen
dataclasses, so they pickle (Spark, Dagster). Splits, what a planner hands its readers, are in
:mod:`lake_core.read.split`."""

from __future__ import annotations

from dataclasses import dataclass

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
        return not (
            self.new_files
            or self.changelog_files
            or self.deleted_files
            or self.compact_before
            or self.compact_after
            or self.compact_changelog
            or self.new_index_files
            or self.deleted_index_files
        )

    @property
    def has_compaction(self) -> bool:
        return bool(self.compact_before or self.compact_after or self.compact_changelog)


def with_base_snapshot(message: CommitMessage, snapshot_id: int | None) -> CommitMessage:
    """``replace(message, base_snapshot_id=snapshot_id)``, without ``replace``'s cost per call
    (a compaction commits one message per bucket, by the hundred thousand)."""
    out = object.__new__(CommitMessage)
    out.__dict__.update(message.__dict__)
    object.__setattr__(out, "base_snapshot_id", snapshot_id)
    return out
