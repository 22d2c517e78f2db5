"""What a compaction unit does to each of its files (Java ``MergeTreeCompactTask``), as a pure
function: sections of overlapping files are rewritten through the merge engine; a large file that
overlaps nothing is *upgraded* (a metadata-only move to the output level) instead.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from lake_core.compaction.picker import CompactUnit
from lake_core.lsm.levels import KeyOf, interval_partition
from lake_core.manifest.metadata import DataFileMeta


@dataclass(frozen=True)
class Rewrite:
    """Merge these sections (each a list of overlapping files; sections in key order) into new files."""

    sections: tuple[tuple[DataFileMeta, ...], ...]


@dataclass(frozen=True)
class Upgrade:
    """Move ``file`` to the output level without rewriting it."""

    file: DataFileMeta


def unit_actions(
    unit: CompactUnit,
    *,
    key_of: KeyOf,
    max_level: int,
    min_file_size: int,
    is_expired: Callable[[DataFileMeta], bool] = lambda f: False,
    force_rewrite: bool = False,
    rewrite_level0: bool = False,
    rewrite_level0_retractions: bool = False,
    rewrite_upgrades: bool = False,
) -> list[Rewrite | Upgrade]:
    """The ordered actions of ``unit``. ``min_file_size`` is ``target-file-size`` x
    ``compaction.small-file-ratio``: smaller single files are rewritten with their neighbours,
    larger ones upgraded. Adjacent files are never skipped over, so the output stays ordered.
    ``rewrite_level0``: level-0 files are always rewritten (first-row's lookup drops keys that
    other levels already hold, which a metadata-only upgrade could not). ``rewrite_level0_retractions``:
    level-0 files that may hold retractions (or whose count is unknown) are rewritten, the others may
    be upgraded (Java's ``LookupMergeTreeCompactRewriter`` with deletion vectors: a file read raw must
    hold no retraction). ``rewrite_upgrades``: no file is upgraded by metadata (its changelog is
    produced by rewriting it)."""
    out: list[Rewrite | Upgrade] = []
    candidate: list[tuple[DataFileMeta, ...]] = []
    level = unit.output_level

    def rewrite_file(f: DataFileMeta) -> None:
        out.append(Rewrite(((f,),)))

    def upgrade(f: DataFileMeta) -> None:
        if f.level == level:
            # Already in place: rewritten only to drop expired records (or when forced).
            if force_rewrite or is_expired(f):
                rewrite_file(f)
            return
        if level != max_level or f.delete_row_count == 0:
            level0_rewrite = f.level == 0 and (
                rewrite_level0 or (rewrite_level0_retractions and f.delete_row_count != 0)
            )
            if force_rewrite or rewrite_upgrades or is_expired(f) or level0_rewrite:
                rewrite_file(f)
            else:
                out.append(Upgrade(f))
        else:
            rewrite_file(f)  # retractions must not reach the top level unmerged

    def flush() -> None:
        if not candidate:
            return
        if len(candidate) == 1 and len(candidate[0]) == 1:
            upgrade(candidate[0][0])  # a lone small file: nothing to merge it with
        else:
            out.append(Rewrite(tuple(candidate)))
        candidate.clear()

    for section in interval_partition(list(unit.files), key_of):
        if len(section) > 1:
            candidate.append(tuple(section))
        elif section[0].file_size < min_file_size:
            candidate.append((section[0],))
        else:
            flush()
            upgrade(section[0])
    flush()
    return out
