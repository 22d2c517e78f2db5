"""The LSM levels of one (partition, bucket), as Paimon's ``Levels`` keeps them.

Level 0 holds one sorted run per file, newest first; every level >= 1 is one sorted run of files
whose key ranges do not overlap. ``sorted_runs()`` is what the compaction pickers look at: the
level-0 files followed by the non-empty levels 1..n. Everything here is metadata only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from lake_core.errors import LakeError
from lake_core.format.binary_row.reader import deserialize_row
from lake_core.manifest.metadata import DataFileMeta

KeyOf = Callable[[bytes], tuple]


def key_decoder(key_types: Sequence) -> KeyOf:
    """Decodes a serialized key row into a tuple that orders as Paimon's key comparator
    (UTF-8 byte order equals code-point order, so Python's string order matches)."""
    types = list(key_types)
    cache: dict[bytes, tuple] = {}

    def key_of(raw: bytes) -> tuple:
        k = cache.get(raw)
        if k is None:
            k = cache[raw] = tuple(deserialize_row(raw, types))
        return k

    return key_of


def level0_order(f: DataFileMeta) -> tuple:
    """Java ``Levels`` level-0 comparator: newest max sequence first, then min sequence,
    creation time and file name."""
    return (-f.max_sequence_number, f.min_sequence_number, f.creation_time or 0, f.file_name)


def _by_min_key(files: Sequence[DataFileMeta], key_of: KeyOf) -> tuple[DataFileMeta, ...]:
    if len(files) < 2:
        return tuple(files)
    return tuple(sorted(files, key=lambda f: key_of(f.min_key)))


@dataclass(frozen=True)
class SortedRun:
    files: tuple[DataFileMeta, ...]

    @property
    def total_size(self) -> int:
        return sum(f.file_size for f in self.files)


@dataclass(frozen=True)
class LevelSortedRun:
    level: int
    run: SortedRun

    @property
    def total_size(self) -> int:
        return self.run.total_size


@dataclass(frozen=True)
class Levels:
    """Immutable snapshot of a bucket's levels; ``update`` returns the levels after a compaction."""

    level0: tuple[DataFileMeta, ...]  # newest first
    higher: tuple[tuple[DataFileMeta, ...], ...]  # higher[i] = level i+1, sorted by min key
    key_of: KeyOf

    @staticmethod
    def of(files: Iterable[DataFileMeta], num_levels: int, key_of: KeyOf) -> Levels:
        by_level: dict[int, list[DataFileMeta]] = {}
        for f in files:
            on = by_level.get(f.level)
            if on is None:
                by_level[f.level] = [f]
            else:
                on.append(f)
        # Java: a restored file on a level above num-levels widens the tree instead of failing.
        top = max(num_levels - 1, max(by_level, default=0))
        l0 = by_level.get(0, ())
        if len(l0) > 1:
            l0 = sorted(l0, key=level0_order)
        higher = tuple(_by_min_key(by_level.get(lv, ()), key_of) for lv in range(1, top + 1))
        return Levels(tuple(l0), higher, key_of)

    @property
    def number_of_levels(self) -> int:
        return len(self.higher) + 1

    @property
    def max_level(self) -> int:
        return len(self.higher)

    def level(self, lv: int) -> tuple[DataFileMeta, ...]:
        return self.level0 if lv == 0 else self.higher[lv - 1]

    def all_files(self) -> list[DataFileMeta]:
        return list(self.level0) + [f for lv in self.higher for f in lv]

    def non_empty_highest_level(self) -> int:
        for lv in range(self.max_level, 0, -1):
            if self.higher[lv - 1]:
                return lv
        return 0 if self.level0 else -1

    def sorted_runs(self) -> list[LevelSortedRun]:
        runs = [LevelSortedRun(0, SortedRun((f,))) for f in self.level0]
        runs += [LevelSortedRun(i + 1, SortedRun(files)) for i, files in enumerate(self.higher) if files]
        return runs

    @property
    def number_of_files(self) -> int:
        n = len(self.level0)
        for files in self.higher:
            n += len(files)
        return n

    @property
    def number_of_sorted_runs(self) -> int:
        return len(self.level0) + sum(1 for files in self.higher if files)

    def update(self, before: Iterable[DataFileMeta], after: Iterable[DataFileMeta]) -> Levels:
        gone = {(f.level, f.file_name) for f in before}
        files = [f for f in self.all_files() if (f.level, f.file_name) not in gone] + list(after)
        return Levels.of(files, self.number_of_levels, self.key_of)

    def overlapping_levels(self) -> list[int]:
        """Levels >= 1 whose files overlap in key range (an LSM invariant violation)."""
        bad = []
        for i, files in enumerate(self.higher):
            for a, b in zip(files, files[1:]):
                if self.key_of(b.min_key) <= self.key_of(a.max_key):
                    bad.append(i + 1)
                    break
        return bad


def interval_partition(files: Sequence[DataFileMeta], key_of: KeyOf) -> list[list[DataFileMeta]]:
    """Java ``IntervalPartition``: files sorted by (min key, max key), grouped into sections of
    transitively overlapping key ranges. Sections come out in key order."""
    ranged = sorted(((key_of(f.min_key), key_of(f.max_key), i) for i, f in enumerate(files)))
    sections: list[list[DataFileMeta]] = []
    bound = None
    for lo, hi, i in ranged:
        if bound is not None and lo <= bound:
            sections[-1].append(files[i])
            bound = max(bound, hi)
        else:
            sections.append([files[i]])
            bound = hi
    return sections


class LevelsError(LakeError):
    """The files of a bucket violate an LSM invariant."""
