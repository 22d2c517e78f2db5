"""The files of commit messages whose commit certainly did not land (Java ``TableCommit.abort``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from lake_core.commit.messages import CommitMessage

if TYPE_CHECKING:
    from lake_core.store import FileStore


def remove_uncommitted(store: FileStore, messages: Sequence[CommitMessage]) -> None:
    """Delete the data files of ``messages``, whose commit certainly did not land (a
    ``CommitConflictError``): nothing references them."""
    for m in messages:
        bucket_dir = store.bucket_dir(m.partition, m.bucket)
        # an upgrade moves a file by metadata only: the same name before and after, still an input
        upgraded = {f.file_name for f in m.compact_before} & {f.file_name for f in m.compact_after}
        for f in m.new_files + m.changelog_files + m.compact_after + m.compact_changelog:
            if f.file_name in upgraded and f not in m.new_files:
                continue
            store.fileio.delete(f.path_in(bucket_dir))
