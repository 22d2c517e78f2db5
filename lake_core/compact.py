"""Full compaction of one (partition, bucket) to the top level: a thin front kept for callers of
the original API; the machinery lives in :mod:`lake_core.compaction`."""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from .compaction.levels import Levels, key_decoder
from .compaction.picker import CompactUnit, drop_delete
from .compaction.rewrite import run_compact_unit
from .messages import CommitMessage
from .metadata import DataFileMeta
from .paths import FileNamer

if TYPE_CHECKING:
    from .table import FileStoreTable

__all__ = ["compact_bucket"]


def compact_bucket(table: "FileStoreTable", partition: bytes, bucket: int, total_buckets: int,
                   files: Sequence[DataFileMeta], extra_new_files: Sequence[DataFileMeta] = (),
                   namer: FileNamer | None = None) -> CommitMessage:
    """Merge ``files`` (live) and ``extra_new_files`` (written in this commit) into top-level files."""
    inputs = tuple(files) + tuple(extra_new_files)
    levels = Levels.of(inputs, table.options.num_levels, key_decoder(table.key_types))
    unit = CompactUnit(levels.max_level, inputs, "full compaction")
    return run_compact_unit(table, partition, bucket, total_buckets, unit, drop_delete=drop_delete(unit, levels),
                            max_level=levels.max_level, extra_new_files=extra_new_files, namer=namer).message
