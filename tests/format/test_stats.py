"""Column statistics (Java SimpleColStatsCollector semantics)."""

from __future__ import annotations

import datetime
import math
from decimal import Decimal

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lake_core.errors import InvalidOptionError
from lake_core.format.stats import (
    COUNTS,
    DEFAULT_STATS_MODE,
    FULL,
    NONE,
    ColumnStats,
    StatsAccumulator,
    StatsMode,
    column_stats,
    parse_stats_mode,
    table_stats,
    truncate_max,
)

MAXCP = "\U0010ffff"


@pytest.mark.parametrize(
    "text,mode",
    [
        ("none", NONE),
        ("NONE", NONE),
        ("counts", COUNTS),
        ("Full", FULL),
        ("truncate(16)", StatsMode("truncate", 16)),
        ("TRUNCATE(3)", StatsMode("truncate", 3)),
        (" full ", FULL),
    ],
)
def test_parse_stats_mode(text, mode):
    assert parse_stats_mode(text) == mode


@pytest.mark.parametrize("bad", ["", "fulll", "truncate(0)", "truncate()", "truncate(-1)", "truncate(x)", "min"])
def test_parse_stats_mode_invalid(bad):
    with pytest.raises(InvalidOptionError) as ei:
        parse_stats_mode(bad)
    assert "metadata.stats-mode" in str(ei.value) and repr(bad) in str(ei.value)


def test_parse_stats_mode_names_per_field_option():
    with pytest.raises(InvalidOptionError, match="fields.a.stats-mode"):
        parse_stats_mode("bogus", "fields.a.stats-mode")


def test_default_is_truncate_16():
    assert DEFAULT_STATS_MODE == StatsMode("truncate", 16)
    assert str(DEFAULT_STATS_MODE) == "truncate(16)"


INTS = pa.array([5, None, -3, 9, None], pa.int64())


def test_modes_on_ints():
    assert column_stats(INTS, "none") == ColumnStats(None, None, None)
    assert column_stats(INTS, "counts") == ColumnStats(None, None, 2)
    assert column_stats(INTS, "full") == ColumnStats(-3, 9, 2)
    assert column_stats(INTS, "truncate(16)") == ColumnStats(-3, 9, 2)


def test_chunked_input():
    ca = pa.chunked_array([pa.array([3, None]), pa.array([1, 7])])
    assert column_stats(ca, FULL) == ColumnStats(1, 7, 1)


def test_all_null_and_empty():
    assert column_stats(pa.array([None, None], pa.int32()), FULL) == ColumnStats(None, None, 2)
    assert column_stats(pa.array([], pa.string()), DEFAULT_STATS_MODE) == ColumnStats(None, None, 0)
    assert column_stats(pa.nulls(3), FULL) == ColumnStats(None, None, 3)


def test_truncate_40_char_string():
    s40 = "abcdefghijklmnopqrstuvwxyz0123456789ABCD"
    assert len(s40) == 40
    arr = pa.array([s40, "zzz", None, "aaaa" * 10])
    st_ = column_stats(arr, "truncate(16)")
    assert st_.null_count == 1
    assert st_.min == ("aaaa" * 10)[:16]
    assert st_.max == "zzz"  # short values are not touched
    st2 = column_stats(pa.array([s40, "abc"]), "truncate(16)")
    assert st2.min == "abc"
    assert st2.max == "abcdefghijklmnoq"  # 16th char 'p' incremented to 'q'
    assert st2.max >= s40
    full = column_stats(pa.array([s40, "abc"]), FULL)
    assert full.max == s40


def test_truncate_counts_code_points_not_bytes():
    s = "é" * 20 + "x"
    st_ = column_stats(pa.array([s]), "truncate(16)")
    assert st_.min == "é" * 16
    assert st_.max == "é" * 15 + "ê"


def test_truncate_max_code_points():
    # every code point is U+10FFFF: no upper bound can be built -> min and max null (Java "failed")
    arr = pa.array([MAXCP * 20, "abc", None])
    assert column_stats(arr, "truncate(16)") == ColumnStats(None, None, 1)
    # a shorter max-code-point string needs no increment
    assert column_stats(pa.array([MAXCP * 16, "a"]), "truncate(16)") == ColumnStats("a", MAXCP * 16, 0)
    # increment falls back to an earlier code point and drops the rest
    assert truncate_max("ab" + MAXCP * 20, 16) == "ac"
    assert truncate_max("a" * 10, 3) == "aab"
    # the surrogate block is skipped
    assert truncate_max("\ud7ff" * 2, 1) == "\ue000"
    # full mode keeps such strings as they are
    assert column_stats(arr, FULL) == ColumnStats("abc", MAXCP * 20, 1)


def test_bytes():
    arr = pa.array([b"\xff\x00", b"\x01", None, b""])
    assert column_stats(arr, FULL) == ColumnStats(b"", b"\xff\x00", 1)
    # Java: truncate only handles strings; byte[] is not Comparable -> no min/max
    assert column_stats(arr, "truncate(16)") == ColumnStats(None, None, 1)
    assert column_stats(arr, COUNTS) == ColumnStats(None, None, 1)


def test_nested_types_have_counts_only():
    lst = pa.array([[1, 2], None, []], pa.list_(pa.int32()))
    mp = pa.array([[("a", 1)], None], pa.map_(pa.string(), pa.int64()))
    for mode in (FULL, DEFAULT_STATS_MODE):
        assert column_stats(lst, mode) == ColumnStats(None, None, 1)
        assert column_stats(mp, mode) == ColumnStats(None, None, 1)


def test_floats_nan_and_zero():
    assert column_stats(pa.array([1.0, float("nan"), None]), FULL) == ColumnStats(None, None, 1)
    assert column_stats(pa.array([float("nan")], pa.float32()), FULL) == ColumnStats(None, None, 0)
    st_ = column_stats(pa.array([0.0, 1.5]), FULL)
    assert st_.min == 0.0 and math.copysign(1, st_.min) < 0 and st_.max == 1.5
    st_ = column_stats(pa.array([-0.0, -2.0]), FULL)
    assert st_.max == 0.0 and math.copysign(1, st_.max) > 0
    assert column_stats(pa.array([-1.5, 2.5], pa.float32()), FULL) == ColumnStats(-1.5, 2.5, 0)
    assert column_stats(pa.array([float("-inf"), float("inf")]), FULL) == ColumnStats(float("-inf"), float("inf"), 0)


def test_other_types():
    assert column_stats(pa.array([True, None, False]), FULL) == ColumnStats(False, True, 1)
    assert column_stats(pa.array([True, True]), FULL) == ColumnStats(True, True, 0)
    dec = pa.array([Decimal("1.50"), Decimal("-2.25"), None], pa.decimal128(10, 2))
    assert column_stats(dec, "truncate(16)") == ColumnStats(Decimal("-2.25"), Decimal("1.50"), 1)
    d = pa.array([datetime.date(2024, 1, 2), datetime.date(1999, 1, 1)])
    assert column_stats(d, FULL) == ColumnStats(datetime.date(1999, 1, 1), datetime.date(2024, 1, 2), 0)
    ts = pa.array([datetime.datetime(2024, 1, 1, 12, 0, 0, 123456), None], pa.timestamp("us"))
    assert column_stats(ts, FULL) == ColumnStats(
        datetime.datetime(2024, 1, 1, 12, 0, 0, 123456), datetime.datetime(2024, 1, 1, 12, 0, 0, 123456), 1
    )
    ns = column_stats(pa.array([1704110400123456789, 5], pa.timestamp("ns")), FULL)
    assert isinstance(ns.max, datetime.datetime) and ns.max.nanosecond == 789
    ltz = column_stats(pa.array([0, 1000], pa.timestamp("ms", tz="UTC")), FULL)
    assert ltz.max == datetime.datetime(1970, 1, 1, 0, 0, 1, tzinfo=datetime.UTC)
    tm = column_stats(pa.array([1000, 5], pa.time32("ms")), FULL)
    assert tm == ColumnStats(datetime.time(0, 0, 0, 5000), datetime.time(0, 0, 1), 0)
    small = column_stats(pa.array([-128, 127, None], pa.int8()), DEFAULT_STATS_MODE)
    assert small == ColumnStats(-128, 127, 1)
    dic = pa.array(["b", "a", "b", None]).dictionary_encode()
    assert column_stats(dic, FULL) == ColumnStats("a", "b", 1)


def test_string_order_is_code_point_order():
    # UTF-8 byte order == code point order (what Java's BinaryString compares), not UTF-16 order
    arr = pa.array(["\uffff", "\U00010000", "a"])
    assert column_stats(arr, FULL) == ColumnStats("a", "\U00010000", 0)


def test_table_stats():
    t = pa.table({"a": [1, None, 3], "s": ["x" * 20, "y", None], "f": [1.0, 2.0, None]})
    res = table_stats(t, ["s", "a"], {"s": "truncate(4)", "a": "counts"})
    assert res == [ColumnStats("xxxx", "y", 1), ColumnStats(None, None, 1)]
    # columns without an entry use truncate(16)
    assert table_stats(t, ["s"], {}) == [ColumnStats("x" * 16, "y", 1)]
    assert table_stats(t, ["a", "f"], "full") == [ColumnStats(1, 3, 1), ColumnStats(1.0, 2.0, 1)]
    with pytest.raises(InvalidOptionError, match="fields.a.stats-mode"):
        table_stats(t, ["a"], {"a": "nope"})


# --------------------------------------------------------------------------------------------
# property tests against a Python oracle
# --------------------------------------------------------------------------------------------


def _oracle(values):
    present = [v for v in values if v is not None]
    nulls = len(values) - len(present)
    if not present:
        return ColumnStats(None, None, nulls)
    return ColumnStats(min(present), max(present), nulls)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(st.none(), st.integers(min_value=-(2**63), max_value=2**63 - 1)), max_size=40))
def test_ints_match_oracle(values):
    assert column_stats(pa.array(values, pa.int64()), FULL) == _oracle(values)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(st.none(), st.floats(allow_nan=False, width=64)), max_size=40))
def test_floats_match_oracle(values):
    got = column_stats(pa.array(values, pa.float64()), FULL)
    exp = _oracle(values)
    assert got.null_count == exp.null_count
    assert got.min == exp.min and got.max == exp.max  # -0.0 == 0.0


@settings(max_examples=150, deadline=None)
@given(
    chunks=st.lists(
        st.lists(st.one_of(st.none(), st.floats(width=32), st.sampled_from([0.0, -0.0])), max_size=20),
        min_size=1,
        max_size=4,
    ),
    width=st.sampled_from([pa.float32(), pa.float64()]),
)
def test_float_stats_of_a_file_in_chunks_match_the_whole(chunks, width):
    """A file's float stats (accumulated chunk by chunk: NumPy's min/max for null-free chunks,
    Arrow's otherwise) are those of the whole column: no stats when a NaN is in, zeros widened
    to -0.0 / 0.0 whichever zero a chunk held."""
    acc = StatsAccumulator(["f"], {"f": FULL})
    for values in chunks:
        acc.add(pa.table({"f": pa.array(values, width)}))
    (got,) = acc.result()
    whole = column_stats(pa.chunked_array([pa.array(v, width) for v in chunks], width), FULL)
    assert got.null_count == whole.null_count
    same = (got.min, got.max) == (whole.min, whole.max)
    signs = [math.copysign(1, x) for x in (got.min, got.max, whole.min, whole.max) if x is not None]
    assert same and signs[: len(signs) // 2] == signs[len(signs) // 2 :]


_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=30)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.none(), _text), max_size=30))
def test_strings_match_oracle(values):
    arr = pa.array(values, pa.string())
    assert column_stats(arr, FULL) == _oracle(values)
    exp = _oracle(values)
    got = column_stats(arr, StatsMode("truncate", 5))
    assert got.null_count == exp.null_count
    if exp.min is None:
        assert got == exp
        return
    if got.max is None:  # only when the max starts with 5 x U+10FFFF and is longer
        assert exp.max.startswith(MAXCP * 5) and len(exp.max) > 5
        assert got.min is None
        return
    assert got.min == exp.min[:5]
    assert got.min <= exp.min
    assert got.max >= exp.max
    assert len(got.max) <= 5
    assert all(got.min <= v <= got.max for v in values if v is not None)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(st.none(), st.binary(max_size=10)), max_size=30))
def test_bytes_match_oracle(values):
    assert column_stats(pa.array(values, pa.binary()), FULL) == _oracle(values)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.one_of(st.none(), st.decimals(min_value=-(10**6), max_value=10**6, places=3, allow_nan=False)), max_size=30
    )
)
def test_decimals_match_oracle(values):
    assert column_stats(pa.array(values, pa.decimal128(12, 3)), DEFAULT_STATS_MODE) == _oracle(values)
