"""Which sorted runs of a bucket to compact, and to which level: Paimon's ``UniversalCompaction``,
``EarlyFullCompaction``, ``ForceUpLevel0Compaction`` and ``CompactStrategy.pickFullCompaction``
as pure functions over run metadata (no I/O, no clock: the caller passes ``now_ms``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from lake_core.lsm.levels import Levels, LevelSortedRun
from lake_core.manifest.metadata import DataFileMeta


@dataclass(frozen=True)
class CompactUnit:
    """Files to compact together and the level their output goes to (Java ``CompactUnit``): what
    a picker chooses within one bucket. A dedicated job's unit of work, one bucket with where and
    how to run it, is :class:`lake_core.compaction.plan.BucketCompactionUnit`."""

    output_level: int
    files: tuple[DataFileMeta, ...]
    reason: str = ""

    @staticmethod
    def of_runs(output_level: int, runs: Sequence[LevelSortedRun], reason: str) -> CompactUnit:
        return CompactUnit(output_level, tuple(f for r in runs for f in r.run.files), reason)


@dataclass(frozen=True)
class UniversalConfig:
    """The options of the universal strategy (Paimon's names and defaults)."""

    max_size_amp: int = 200  # compaction.max-size-amplification-percent
    size_ratio: int = 1  # compaction.size-ratio
    trigger: int = 5  # num-sorted-run.compaction-trigger
    optimization_interval_ms: int | None = None  # compaction.optimization-interval
    total_size_threshold: int | None = None  # compaction.total-size-threshold
    incremental_size_threshold: int | None = None  # compaction.incremental-size-threshold

    @staticmethod
    def from_options(options) -> UniversalConfig:
        return UniversalConfig(
            max_size_amp=options.compaction_max_size_amp,
            size_ratio=options.compaction_size_ratio,
            trigger=options.num_sorted_run_compaction_trigger,
            optimization_interval_ms=options.compaction_optimization_interval_ms,
            total_size_threshold=options.compaction_total_size_threshold,
            incremental_size_threshold=options.compaction_incremental_size_threshold,
        )


@dataclass(frozen=True)
class Pick:
    """A pick plus whether it counts as a full compaction (it restarts the optimization interval)."""

    unit: CompactUnit | None
    full: bool = False


def _total(runs: Sequence[LevelSortedRun]) -> int:
    return sum(r.total_size for r in runs)


def create_unit(runs: Sequence[LevelSortedRun], max_level: int, run_count: int, reason: str) -> Pick:
    """Java ``UniversalCompaction.createUnit``: the output level is one below the first run left
    out; never level 0 (keep absorbing runs until a level >= 1 run is in); everything picked
    means the top level."""
    if run_count == len(runs):
        output = max_level
    else:
        output = max(0, runs[run_count].level - 1)
    if output == 0:
        for nxt in runs[run_count:]:
            run_count += 1
            if nxt.level != 0:
                output = nxt.level
                break
    full = run_count == len(runs)
    if full:
        output = max_level
    return Pick(CompactUnit.of_runs(output, runs[:run_count], reason), full)


def pick_for_size_ratio(
    runs: Sequence[LevelSortedRun], max_level: int, size_ratio: int, candidate_count: int, force: bool, reason: str
) -> Pick:
    size = _total(runs[:candidate_count])
    triggered = force or candidate_count > 1
    for nxt in runs[candidate_count:]:
        if size * (100.0 + size_ratio) / 100.0 < nxt.total_size:
            # Once compaction is triggered, small runs at levels <= 1 are still absorbed.
            if not triggered or nxt.level > 1:
                break
        size += nxt.total_size
        candidate_count += 1
        triggered = True
    return create_unit(runs, max_level, candidate_count, reason) if triggered else Pick(None)


def early_full(
    runs: Sequence[LevelSortedRun], max_level: int, cfg: UniversalConfig, now_ms: int, last_full_ms: int | None
) -> Pick:
    """Java ``EarlyFullCompaction``: the optimization interval elapsed, the bucket is below
    the total size threshold, or its non-top-level data is above the incremental threshold."""
    if len(runs) == 1:
        return Pick(None)
    if cfg.optimization_interval_ms is not None and (
        last_full_ms is None or now_ms - last_full_ms > cfg.optimization_interval_ms
    ):
        return Pick(CompactUnit.of_runs(max_level, runs, "optimization interval"), True)
    if cfg.total_size_threshold is not None and _total(runs) < cfg.total_size_threshold:
        return Pick(CompactUnit.of_runs(max_level, runs, "total size threshold"), True)
    if (
        cfg.incremental_size_threshold is not None
        and sum(r.total_size for r in runs if r.level != max_level) > cfg.incremental_size_threshold
    ):
        return Pick(CompactUnit.of_runs(max_level, runs, "incremental size threshold"), True)
    return Pick(None)


def pick_universal(
    runs: Sequence[LevelSortedRun],
    num_levels: int,
    cfg: UniversalConfig,
    *,
    now_ms: int = 0,
    last_full_ms: int | None = None,
) -> Pick:
    """Java ``UniversalCompaction.pick``: early full compaction, then size amplification, size
    ratio and file count, in that order."""
    max_level = num_levels - 1
    if (
        cfg.optimization_interval_ms is not None
        or cfg.total_size_threshold is not None
        or cfg.incremental_size_threshold is not None
    ):
        p = early_full(runs, max_level, cfg, now_ms, last_full_ms)
        if p.unit is not None:
            return p
    if len(runs) >= cfg.trigger:
        # size amplification: everything newer than the oldest run, relative to it
        if _total(runs[:-1]) * 100 > cfg.max_size_amp * runs[-1].total_size:
            return Pick(CompactUnit.of_runs(max_level, runs, "size amplification"), True)
        p = pick_for_size_ratio(runs, max_level, cfg.size_ratio, 1, False, "size ratio")
        if p.unit is not None:
            return p
    if len(runs) > cfg.trigger:
        return pick_for_size_ratio(runs, max_level, cfg.size_ratio, len(runs) - cfg.trigger + 1, False, "file count")
    return Pick(None)


def force_pick_level0(runs: Sequence[LevelSortedRun], num_levels: int, cfg: UniversalConfig) -> Pick:
    """Java ``UniversalCompaction.forcePickL0``: every level-0 run, extended by size ratio."""
    count = 0
    for r in runs:
        if r.level > 0:
            break
        count += 1
    if count == 0:
        return Pick(None)
    return pick_for_size_ratio(runs, num_levels - 1, cfg.size_ratio, count, True, "force level 0 up")


def pick_full(
    runs: Sequence[LevelSortedRun], num_levels: int, must_rewrite: Callable[[DataFileMeta], bool] = lambda f: False
) -> Pick:
    """Java ``CompactStrategy.pickFullCompaction``: every run to the top level; a bucket that is
    already one top-level run only rewrites the files ``must_rewrite`` names (expired records,
    ``compaction.force-rewrite-all-files``)."""
    max_level = num_levels - 1
    if not runs:
        return Pick(None)
    if len(runs) == 1 and runs[0].level == max_level:
        files = tuple(f for f in runs[0].run.files if must_rewrite(f))
        return Pick(CompactUnit(max_level, files, "full compaction (rewrite)"), True) if files else Pick(None)
    return Pick(CompactUnit.of_runs(max_level, runs, "full compaction"), True)


def worth_running(unit: CompactUnit | None) -> bool:
    """Java ``MergeTreeCompactManager`` skips a normal pick of a single file already at its output level."""
    return unit is not None and bool(unit.files) and (len(unit.files) > 1 or unit.files[0].level != unit.output_level)


def drop_delete(unit: CompactUnit, levels: Levels) -> bool:
    """Retractions may be dropped only when nothing older can remain below the output
    (output level >= the highest non-empty level, and not level 0)."""
    return unit.output_level != 0 and unit.output_level >= levels.non_empty_highest_level()
