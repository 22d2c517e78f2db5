"""The universal picker, full-compaction pick, level model and unit actions, as pure functions
over file metadata (no I/O). Expected values are worked out by hand from Paimon's rules
(``UniversalCompaction``, ``EarlyFullCompaction``, ``CompactStrategy.pickFullCompaction``,
``MergeTreeCompactTask``), mirroring Java's ``UniversalCompactionTest`` cases."""

from __future__ import annotations

import itertools

import pyarrow as pa
import pytest

from lake_core.compaction.picker import (
    CompactUnit,
    UniversalConfig,
    create_unit,
    drop_delete,
    early_full,
    force_pick_level0,
    pick_full,
    pick_universal,
    worth_running,
)
from lake_core.compaction.task import Upgrade, unit_actions
from lake_core.format.binary_row.writer import serialize_row
from lake_core.lsm.levels import Levels, LevelSortedRun, SortedRun, key_decoder
from lake_core.manifest.metadata import EMPTY_STATS, DataFileMeta
from lake_core.options import CoreOptions

KEY_OF = key_decoder([pa.int64()])
_names = itertools.count()


def meta(
    size: int = 1, level: int = 0, lo: int = 0, hi: int = 100, seq: tuple[int, int] = (0, 0), deletes: int | None = 0
) -> DataFileMeta:
    return DataFileMeta(
        file_name=f"data-{next(_names)}.parquet",
        file_size=size,
        row_count=1,
        min_key=serialize_row([lo], [pa.int64()]),
        max_key=serialize_row([hi], [pa.int64()]),
        key_stats=EMPTY_STATS,
        value_stats=EMPTY_STATS,
        min_sequence_number=seq[0],
        max_sequence_number=seq[1],
        schema_id=0,
        level=level,
        delete_row_count=deletes,
    )


def runs(*spec: tuple[int, int]) -> list[LevelSortedRun]:
    """(level, size) per run, newest first."""
    return [LevelSortedRun(level, SortedRun((meta(size, level),))) for level, size in spec]


def l0(*sizes: int) -> list[LevelSortedRun]:
    return runs(*[(0, s) for s in sizes])


def sizes(unit: CompactUnit) -> list[int]:
    return [f.file_size for f in unit.files]


# -- createUnit: the output-level rule -------------------------------------------------------------
@pytest.mark.parametrize("run_count, output", [(1, 1), (2, 1), (3, 2), (4, 3), (5, 5)])
def test_output_level(run_count, output):
    levels = runs((0, 1), (0, 1), (1, 1), (3, 1), (4, 1))
    assert create_unit(levels, 5, run_count, "t").unit.output_level == output


def test_output_level_absorbs_runs_until_a_level_above_zero():
    p = create_unit(runs((0, 1), (0, 2), (0, 3), (2, 4)), 5, 1, "t")
    assert sizes(p.unit) == [1, 2, 3, 4] and p.unit.output_level == 5 and p.full  # took everything


# -- pick: size amplification, size ratio, file count -----------------------------------------------
CASES = [
    # (config, runs newest first, expected picked sizes or None, expected output level)
    (
        UniversalConfig(max_size_amp=25, size_ratio=1, trigger=3),
        l0(1, 2, 3, 3),
        [1, 2, 3, 3],
        5,
    ),  # amp: 600 > 75, to the top
    (UniversalConfig(max_size_amp=25, size_ratio=1, trigger=3), l0(1, 2), None, None),  # fewer runs than trigger
    (
        UniversalConfig(max_size_amp=200, size_ratio=1, trigger=3),
        runs((0, 1), (0, 1), (0, 1), (5, 50)),
        [1, 1, 1],
        4,
    ),  # size ratio stops at the big top-level run
    (
        UniversalConfig(max_size_amp=200, size_ratio=1, trigger=3),
        runs((0, 1), (0, 1), (0, 10), (5, 100)),
        [1, 1, 10],
        4,
    ),  # triggered: a big L0 run is still absorbed
    (
        UniversalConfig(max_size_amp=200, size_ratio=1, trigger=3),
        runs((0, 1), (0, 10), (0, 10), (5, 100)),
        [1, 10, 10],
        4,
    ),  # ratio fails at once; file count forces 2, then absorbs
    (
        UniversalConfig(max_size_amp=200, size_ratio=1, trigger=3),
        runs((0, 1), (0, 10), (5, 100)),
        None,
        None,
    ),  # 3 runs: no ratio pick, not more than trigger
    (
        UniversalConfig(max_size_amp=200, size_ratio=1, trigger=3),
        runs((0, 1), (0, 10), (3, 30), (5, 100)),
        [1, 10],
        2,
    ),  # file count: output one below the next run
    (UniversalConfig(max_size_amp=200, size_ratio=0, trigger=5), l0(1, 1, 1, 1, 1), [1, 1, 1, 1, 1], 5),  # all
    (
        UniversalConfig(max_size_amp=200, size_ratio=1, trigger=5),
        runs((0, 1), (0, 1), (1, 4), (4, 100)),
        None,
        None,
    ),  # 4 runs < trigger 5
]


@pytest.mark.parametrize("cfg, rs, expected, level", CASES)
def test_universal_pick(cfg, rs, expected, level):
    p = pick_universal(rs, 6, cfg)
    if expected is None:
        assert p.unit is None
    else:
        assert sizes(p.unit) == expected and p.unit.output_level == level


def test_file_count_forces_candidates_across_levels():
    cfg = UniversalConfig(max_size_amp=200, size_ratio=1, trigger=2)
    p = pick_universal(runs((2, 1), (3, 10), (5, 100)), 6, cfg)
    # runs (3) > trigger (2): 2 candidates forced (sizes 1, 10), 100 is too big and at level 5
    assert sizes(p.unit) == [1, 10] and p.unit.output_level == 4 and p.unit.reason == "file count"


def test_size_amplification_sequence():
    """Java testSizeAmplification: append a size-1 run and pick by size amplification only."""
    cfg = UniversalConfig(max_size_amp=25, size_ratio=0, trigger=1)
    state: list[int] = []
    seen = []
    for _ in range(8):
        rs = l0(1, *state)
        p = pick_universal(rs, 6, cfg)
        if p.unit is not None and p.unit.reason == "size amplification":
            state = [sum(r.total_size for r in rs)]
        else:
            state = [r.total_size for r in rs]
        seen.append(list(state))
    # 1+1 -> 2, 1+2 -> 3, 1+3 -> 4 (100 > 75), then 1 vs 4 is exactly 25%: kept apart,
    # then 2 > 25% of 4: merged to 6, and so on
    assert seen[:6] == [[1], [2], [3], [4], [1, 4], [6]]


def test_early_full_compaction():
    cfg = UniversalConfig(optimization_interval_ms=1000)
    rs = runs((0, 1), (5, 100))
    assert early_full(rs, 5, cfg, now_ms=5000, last_full_ms=None).unit.output_level == 5  # never compacted
    assert early_full(rs, 5, cfg, now_ms=5000, last_full_ms=4500).unit is None  # within the interval
    assert early_full(rs, 5, cfg, now_ms=5000, last_full_ms=3000).full
    assert early_full(runs((5, 100)), 5, cfg, now_ms=5000, last_full_ms=None).unit is None  # one run
    small = UniversalConfig(total_size_threshold=200)
    assert sizes(pick_universal(rs, 6, small).unit) == [1, 100]  # below the total size threshold
    assert pick_universal(rs, 6, UniversalConfig(total_size_threshold=50)).unit is None
    inc = UniversalConfig(incremental_size_threshold=0)
    assert pick_universal(rs, 6, inc).unit.output_level == 5  # 1 byte outside the top level > 0


def test_force_pick_level0():
    cfg = UniversalConfig()
    p = force_pick_level0(runs((0, 1), (3, 100)), 6, cfg)
    assert sizes(p.unit) == [1] and p.unit.output_level == 2
    p = force_pick_level0(runs((0, 1), (0, 1), (1, 1), (5, 100)), 6, cfg)
    assert sizes(p.unit) == [1, 1, 1] and p.unit.output_level == 4  # L1 absorbed by size ratio
    assert force_pick_level0(runs((2, 1), (5, 100)), 6, cfg).unit is None


def test_pick_full():
    assert pick_full([], 6).unit is None
    top = runs((5, 100))
    assert pick_full(top, 6).unit is None  # already one top-level run
    f = top[0].run.files[0]
    assert pick_full(top, 6, lambda x: x is f).unit.files == (f,)  # unless it must be rewritten
    p = pick_full(runs((0, 1), (2, 5), (5, 100)), 6)
    assert sizes(p.unit) == [1, 5, 100] and p.unit.output_level == 5


def test_worth_running_skips_a_single_file_in_place():
    f = meta(level=3)
    assert not worth_running(CompactUnit(3, (f,)))
    assert worth_running(CompactUnit(4, (f,)))
    assert not worth_running(None)


# -- levels ------------------------------------------------------------------------------------------
def test_levels_order_and_drop_delete():
    a, b, c = meta(seq=(0, 5)), meta(seq=(6, 9)), meta(seq=(3, 9))
    top = meta(level=5, lo=0, hi=10)
    mid1, mid2 = meta(level=2, lo=20, hi=30), meta(level=2, lo=0, hi=10)
    lv = Levels.of([a, b, c, top, mid1, mid2], 6, KEY_OF)
    assert [f.file_name for f in lv.level0] == [c.file_name, b.file_name, a.file_name]  # max seq desc, then min seq
    assert lv.level(2) == (mid2, mid1)  # by min key
    assert [r.level for r in lv.sorted_runs()] == [0, 0, 0, 2, 5]
    assert lv.number_of_sorted_runs == 5 and lv.non_empty_highest_level() == 5
    assert drop_delete(CompactUnit(5, ()), lv) and not drop_delete(CompactUnit(4, ()), lv)
    lower = Levels.of([a, mid1], 6, KEY_OF)
    assert drop_delete(CompactUnit(2, ()), lower) and not drop_delete(CompactUnit(0, ()), lower)
    assert Levels.of([meta(level=7)], 6, KEY_OF).max_level == 7  # restored deeper trees widen
    assert lv.overlapping_levels() == []
    assert Levels.of([meta(level=1, lo=0, hi=5), meta(level=1, lo=5, hi=9)], 6, KEY_OF).overlapping_levels() == [1]


def test_num_levels_defaults_to_trigger_plus_one():
    assert CoreOptions({}).num_levels == 6
    assert CoreOptions({"num-sorted-run.compaction-trigger": "3"}).num_levels == 4
    assert CoreOptions({"num-sorted-run.compaction-trigger": "3", "num-levels": "9"}).num_levels == 9
    assert CoreOptions({}).num_sorted_run_stop_trigger == 8


# -- unit actions: upgrade vs rewrite ----------------------------------------------------------------------
def actions(files, level, min_size=10, max_level=5, **kw):
    out = unit_actions(
        CompactUnit(level, tuple(files)), key_of=KEY_OF, max_level=max_level, min_file_size=min_size, **kw
    )
    return [
        ("up", a.file.file_name) if isinstance(a, Upgrade) else ("rw", [[f.file_name for f in s] for s in a.sections])
        for a in out
    ]


def test_large_non_overlapping_file_is_upgraded_small_ones_rewritten():
    big = meta(size=100, lo=50, hi=60)
    small1, small2 = meta(size=1, lo=0, hi=10), meta(size=1, lo=5, hi=20)  # overlap: one section
    lone_small = meta(size=1, lo=70, hi=80)
    got = actions([small1, small2, big, lone_small], level=3)
    assert got == [("rw", [[small1.file_name, small2.file_name]]), ("up", big.file_name), ("up", lone_small.file_name)]


def test_small_neighbours_are_rewritten_together():
    a, b = meta(size=1, lo=0, hi=10), meta(size=1, lo=20, hi=30)
    assert actions([a, b], level=3) == [("rw", [[a.file_name], [b.file_name]])]


def test_file_with_deletes_is_rewritten_on_the_way_to_the_top():
    big = meta(size=100, lo=0, hi=10, deletes=3)
    assert actions([big], level=5) == [("rw", [[big.file_name]])]
    assert actions([big], level=4) == [("up", big.file_name)]  # below the top: deletes may stay
    unknown = meta(size=100, deletes=None)  # an old file without a delete count: treated as having deletes
    assert actions([unknown], level=5) == [("rw", [[unknown.file_name]])]


def test_expired_and_forced_files_are_rewritten():
    big = meta(size=100, level=5)
    assert actions([big], level=5) == []  # already in place
    assert actions([big], level=5, is_expired=lambda f: True) == [("rw", [[big.file_name]])]
    other = meta(size=100, level=2)
    assert actions([other], level=4, force_rewrite=True) == [("rw", [[other.file_name]])]
