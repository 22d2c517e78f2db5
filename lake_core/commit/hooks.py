"""The calls the stages below the table make upward, as one protocol the table implements.

Commit and write sit below compaction and maintenance in the import graph, yet a commit runs the
table's expiry and tags after it lands and re-compacts the buckets whose bundled compaction lost a
race, and a writer compacts the buckets it wrote. They are handed these three calls instead of the
table, as Java's ``TableCommitImpl`` is given its expire and tag maintainers and pypaimon's commit
its ``CommitCallback``s.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from lake_core.commit.messages import CommitMessage
    from lake_core.format.parquet_file import DictionaryChoice
    from lake_core.manifest.metadata import DataFileMeta
    from lake_core.paths import FileNamer
    from lake_core.snapshot.snapshot import Snapshot


class TableHooks(Protocol):
    def after_commit(self) -> None:
        """Expiry and tags after a successful commit, unless ``write-only`` (Java ``TableCommitImpl``)."""

    def recompact_buckets(
        self, snapshot: Snapshot | None, buckets: Iterable[tuple[bytes, int, int]]
    ) -> list[CommitMessage]:
        """Full compactions of ``buckets`` ((partition, bucket, total_buckets)) as live at ``snapshot``
        (a first-row commit whose own compaction lost a race); writes files, commits nothing."""

    def compact_written_bucket(
        self,
        partition: bytes,
        bucket: int,
        total_buckets: int,
        live: Sequence[DataFileMeta],
        new_files: Sequence[DataFileMeta],
        namer: FileNamer,
        *,
        dictionary: DictionaryChoice | None = None,
        latest: Snapshot | None = None,
    ) -> CommitMessage | None:
        """A writer's inline compaction of one bucket after it wrote ``new_files`` over ``live``
        (None: nothing to compact); writes files, commits nothing. ``dictionary``: the write's
        Parquet dictionary columns, for the files the compaction writes too. ``latest``: the
        table's latest snapshot, read once for all the buckets of a commit (its deletion vectors)."""
