"""BinaryRow encoding: worked examples of Java's bytes, Java null layout, edge values,
and the vectorized encoder against the scalar one."""

from __future__ import annotations

import copy
import datetime as dt
import decimal
import pickle
import struct
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lake_core.errors import FormatError, LakeError, SchemaError, SchemaMismatchError
from lake_core.format.binary_row.column_encoder import encode_rows
from lake_core.format.binary_row.layout import null_bits_size
from lake_core.format.binary_row.nano_datetime import NanoDatetime
from lake_core.format.binary_row.reader import deserialize_row
from lake_core.format.binary_row.writer import EMPTY_ROW, row_bytes, serialize_row

UTC = dt.UTC


def h(s: str) -> bytes:
    """Hex with spaces/newlines, as Java's bytes are printed here."""
    return bytes.fromhex("".join(s.split()))


def slot(row: bytes, i: int, arity: int) -> int:
    """Slot of field i of a BinaryRow without prefix, as an unsigned 64-bit int."""
    return struct.unpack_from("<Q", row, null_bits_size(arity) + 8 * i)[0]


def is_null(row: bytes, i: int) -> bool:
    return bool(row[(i + 8) // 8] >> ((i + 8) % 8) & 1)


def vector_rows(columns, types) -> list[bytes]:
    buf, lengths = encode_rows(columns, types)
    assert buf.dtype == np.uint8 and buf.ndim == 2 and lengths.dtype == np.int64
    assert (lengths % 8 == 0).all()
    out = []
    for i, n in enumerate(lengths):
        assert not buf[i, n:].any(), "padding after a row must be zero"
        out.append(bytes(buf[i, :n]))
    return out


def assert_both_paths(rows, types):
    """row_bytes of each row == encode_rows of the same data as Arrow columns."""
    columns = [pa.array([r[i] for r in rows], type=t) for i, t in enumerate(types)]
    assert vector_rows(columns, types) == [row_bytes(r, types) for r in rows]


# --------------------------------------------------------------------------------------------
# Worked examples (bytes from Java's BinaryRowWriter)
# --------------------------------------------------------------------------------------------


def test_format_6_2_partition_row():
    expected = h("""00000001 0000000000000000 0a00000010000000
                    323032342d30312d 3031000000000000""")
    assert serialize_row(["2024-01-01"], [pa.string()]) == expected
    assert deserialize_row(expected, [pa.string()]) == ["2024-01-01"]


def test_format_6_2_min_key():
    expected = h("00000001 0000000000000000 0700000000000000")
    assert serialize_row([7], [pa.int64()]) == expected
    assert deserialize_row(expected, [pa.int64()]) == [7]


STATS_TYPES = [
    pa.string(),
    pa.int64(),
    pa.int32(),
    pa.int64(),
    pa.float64(),
    pa.string(),
    pa.bool_(),
    pa.timestamp("us"),
    pa.decimal128(10, 2),
]
STATS_ROW_1 = [
    "2024-01-01",
    7,
    -5,
    1234567890123,
    2.5,
    "hello world!!",
    True,
    dt.datetime(2024, 1, 1, 12, 0, 0, 123456),
    Decimal("12.34"),
]
STATS_ROW_2 = [
    "2024-01-01",
    8,
    None,
    1234567890123,
    2.5,
    "abc",
    True,
    dt.datetime(2024, 1, 1, 12, 0, 0, 123456),
    Decimal("-0.01"),
]
STATS_BYTES_1 = h("""
    00000009
    0000000000000000
    0a00000050000000 0700000000000000 fbffffff00000000 cb04fb711f010000
    0000000000000440 0d00000060000000 0100000000000000 40f5060070000000
    d204000000000000
    323032342d30312d3031000000000000
    68656c6c6f20776f726c642121000000
    7b22e5c48c010000""")
# Row 2 differs as follows: null bit of field 2, zero slot, inline 'abc', dec -1; the
# var part loses the 16 bytes of 'hello world!!', so the timestamp's millis move to offset 96.
STATS_BYTES_2 = h("""
    00000009
    0004000000000000
    0a00000050000000 0800000000000000 0000000000000000 cb04fb711f010000
    0000000000000440 6162630000000083 0100000000000000 40f5060060000000
    ffffffffffffffff
    323032342d30312d3031000000000000
    7b22e5c48c010000""")


def test_format_6_3_stats_rows_byte_exact():
    assert len(STATS_BYTES_1) == 124
    assert serialize_row(STATS_ROW_1, STATS_TYPES) == STATS_BYTES_1
    assert serialize_row(STATS_ROW_2, STATS_TYPES) == STATS_BYTES_2


def test_format_6_3_stats_rows_decode():
    assert deserialize_row(STATS_BYTES_1, STATS_TYPES) == STATS_ROW_1
    assert deserialize_row(STATS_BYTES_2, STATS_TYPES) == STATS_ROW_2


def test_format_6_3_vectorized():
    assert_both_paths([STATS_ROW_1, STATS_ROW_2], STATS_TYPES)
    columns = [pa.array([a, b], type=t) for a, b, t in zip(STATS_ROW_1, STATS_ROW_2, STATS_TYPES)]
    assert vector_rows(columns, STATS_TYPES) == [STATS_BYTES_1[4:], STATS_BYTES_2[4:]]


def test_empty_row():
    assert EMPTY_ROW == bytes(12)
    assert serialize_row([], []) == EMPTY_ROW
    assert deserialize_row(EMPTY_ROW, []) == []


# --------------------------------------------------------------------------------------------
# Nulls, including Java's non-compact DECIMAL/TIMESTAMP layout
# --------------------------------------------------------------------------------------------

COMPACT_NULL_TYPES = [
    pa.bool_(),
    pa.int8(),
    pa.int16(),
    pa.int32(),
    pa.int64(),
    pa.float32(),
    pa.float64(),
    pa.string(),
    pa.large_string(),
    pa.binary(),
    pa.large_binary(),
    pa.date32(),
    pa.time32("ms"),
    pa.timestamp("ms"),
    pa.timestamp("s"),
    pa.timestamp("ms", tz="UTC"),
    pa.decimal128(18, 4),
    pa.list_(pa.int32()),
    pa.map_(pa.string(), pa.int32()),
    pa.struct([("a", pa.int32())]),
]


@pytest.mark.parametrize("t", COMPACT_NULL_TYPES, ids=str)
def test_null_compact_types_zero_slot(t):
    row = row_bytes([None], [t])
    assert row == h("0001000000000000 0000000000000000")
    assert deserialize_row(serialize_row([None], [t]), [t]) == [None]
    assert vector_rows([pa.array([None], type=t)], [t]) == [row]


@pytest.mark.parametrize(
    "t, reserved",
    [
        (pa.decimal128(19, 2), 16),
        (pa.decimal128(38, 10), 16),
        (pa.timestamp("us"), 8),
        (pa.timestamp("ns"), 8),
        (pa.timestamp("us", tz="UTC"), 8),
        (pa.timestamp("ns", tz="UTC"), 8),
    ],
    ids=str,
)
def test_null_non_compact_types_java_layout(t, reserved):
    # Java writeDecimal/writeTimestamp(null): null bit, zeroed var bytes, slot = offset << 32.
    row = row_bytes([None], [t])
    assert row == h("0001000000000000") + struct.pack("<Q", 16 << 32) + bytes(reserved)
    assert deserialize_row(serialize_row([None], [t]), [t]) == [None]
    assert vector_rows([pa.array([None], type=t)], [t]) == [row]


def test_null_non_compact_offsets_follow_earlier_var_parts():
    types = [pa.string(), pa.decimal128(38, 10), pa.timestamp("ns"), pa.string()]
    values = ["x" * 9, None, None, "y" * 8]
    row = row_bytes(values, types)
    fixed = 8 + 8 * 4
    assert slot(row, 0, 4) == (fixed << 32) | 9
    assert slot(row, 1, 4) == (fixed + 16) << 32  # after the 16-byte string
    assert slot(row, 2, 4) == (fixed + 32) << 32  # after the 16 reserved bytes
    assert slot(row, 3, 4) == ((fixed + 40) << 32) | 8
    assert len(row) == fixed + 16 + 16 + 8 + 8
    assert [is_null(row, i) for i in range(4)] == [False, True, True, False]
    assert_both_paths([values, ["a", Decimal(1), 5, None]], types)


def test_nested_values_are_encoded_as_null():
    t = pa.list_(pa.int32())
    assert row_bytes([[1, 2]], [t]) == row_bytes([None], [t])
    assert vector_rows([pa.array([[1], None], type=t)], [t]) == [row_bytes([None], [t])] * 2


def test_null_bits_beyond_56_fields():
    assert [null_bits_size(n) for n in (0, 1, 56, 57, 120, 121)] == [8, 8, 8, 16, 16, 24]
    types = [pa.int32()] * 60
    values = list(range(60))
    values[0] = values[55] = values[56] = values[59] = None
    row = row_bytes(values, types)
    assert len(row) == 16 + 8 * 60
    assert [i for i in range(60) if is_null(row, i)] == [0, 55, 56, 59]
    assert row[8] & 1  # field 56 -> bit 64 -> byte 8, bit 0
    assert deserialize_row(serialize_row(values, types), types) == values
    assert_both_paths([values, list(range(60))], types)


# --------------------------------------------------------------------------------------------
# Edge values
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text", ["", "a", "abcdefg", "abcdefgh", "x" * 100, "héllo", "日本語テキスト", "🙂🙂", "é" * 50]
)
def test_string_layout(text):
    data = text.encode("utf-8")
    row = row_bytes([text], [pa.string()])
    if len(data) <= 7:
        assert len(row) == 16
        assert row[8:16] == data + bytes(7 - len(data)) + bytes([0x80 | len(data)])
    else:
        padded = (len(data) + 7) // 8 * 8
        assert len(row) == 16 + padded
        assert slot(row, 0, 1) == (16 << 32) | len(data)
        assert row[16:] == data + bytes(padded - len(data))
    assert deserialize_row(serialize_row([text], [pa.string()]), [pa.string()]) == [text]
    assert deserialize_row(serialize_row([data], [pa.binary()]), [pa.binary()]) == [data]
    assert_both_paths([[text]], [pa.string()])
    assert_both_paths([[data]], [pa.binary()])


@pytest.mark.parametrize(
    "value, hex_bytes",
    [
        (0, "00"),
        (1, "01"),
        (-1, "ff"),
        (127, "7f"),
        (128, "0080"),
        (-128, "80"),
        (-129, "ff7f"),
        (255, "00ff"),
        (-32768, "8000"),
        (10**38 - 1, "4b3b4ca85a86c47a098a223fffffffff"),
        (-(10**38 - 1), "b4c4b357a5793b85f675ddc000000001"),
    ],
)
def test_big_decimal_minimal_twos_complement(value, hex_bytes):
    # Java BigInteger.toByteArray(): e.g. -128 is the single byte 0x80 (pypaimon 2.1.0 writes
    # two bytes for -2^(8k-1), which Java would not).
    t = pa.decimal128(38, 0)
    raw = bytes.fromhex(hex_bytes)
    row = row_bytes([Decimal(value)], [t])
    assert slot(row, 0, 1) == (16 << 32) | len(raw)
    assert row[16:] == raw + bytes(16 - len(raw))
    assert deserialize_row(serialize_row([Decimal(value)], [t]), [t]) == [Decimal(value)]
    assert_both_paths([[Decimal(value)]], [t])


@pytest.mark.parametrize(
    "value",
    [
        "0.0000000001",
        "-0.0000000001",
        "-1.5",
        "1234567890.0123456789",
        "9999999999999999999999999999.9999999999",
        "-9999999999999999999999999999.9999999999",
        "0",
    ],
)
def test_decimal_38_10_round_trip(value):
    t = pa.decimal128(38, 10)
    d = Decimal(value)
    [back] = deserialize_row(serialize_row([d], [t]), [t])
    assert back == d and back.as_tuple().exponent == -10
    assert_both_paths([[d], [None], [d.copy_negate()]], [t])  # unary minus would round to 28 digits


def test_compact_decimal_negative_and_rescaled():
    t = pa.decimal128(10, 2)
    assert slot(row_bytes([Decimal("-0.01")], [t]), 0, 1) == (1 << 64) - 1
    assert slot(row_bytes([Decimal("-123.45")], [t]), 0, 1) == (1 << 64) - 12345
    # Rescaled HALF_UP like Java Decimal.fromBigDecimal; ints are accepted too.
    assert row_bytes([Decimal("1.005")], [t]) == row_bytes([Decimal("1.01")], [t])
    assert row_bytes([3], [t]) == row_bytes([Decimal("3.00")], [t])
    assert deserialize_row(serialize_row([Decimal("-1.5")], [t]), [t]) == [Decimal("-1.50")]
    assert_both_paths([[Decimal("-0.01")], [Decimal("99999999.99")], [None]], [t])


def test_decimal_overflow_rejected():
    with pytest.raises(SchemaMismatchError, match="DECIMAL"):
        row_bytes([Decimal("100000000.00")], [pa.decimal128(10, 2)])
    with pytest.raises(SchemaMismatchError):
        row_bytes([Decimal("NaN")], [pa.decimal128(10, 2)])


def test_timestamp_9_with_nanos():
    t = pa.timestamp("ns")
    nanos = 1_704_110_400_123_456_789
    row = row_bytes([nanos], [t])
    assert slot(row, 0, 1) == (16 << 32) | 456_789
    assert row[16:] == struct.pack("<q", 1_704_110_400_123)
    [back] = deserialize_row(serialize_row([nanos], [t]), [t])
    assert isinstance(back, NanoDatetime)
    assert back.nanosecond == 789
    assert back == NanoDatetime(2024, 1, 1, 12, 0, 0, 123456, nanosecond=789)
    assert serialize_row([back], [t]) == serialize_row([nanos], [t])
    assert_both_paths([[nanos], [None], [-1]], [t])


def test_timestamp_before_epoch_nano_of_milli_is_positive():
    # Java Timestamp: millis = floorDiv, nanoOfMillisecond = floorMod (never negative).
    t = pa.timestamp("ns")
    row = row_bytes([-1], [t])
    assert slot(row, 0, 1) == (16 << 32) | 999_999
    assert row[16:] == struct.pack("<q", -1)
    value = dt.datetime(1969, 12, 31, 23, 59, 59, 999999)
    assert deserialize_row(serialize_row([value], [pa.timestamp("us")]), [pa.timestamp("us")]) == [value]
    assert slot(row_bytes([value], [pa.timestamp("ms")]), 0, 1) == (1 << 64) - 1


def test_timestamp_precisions_and_ltz():
    naive = dt.datetime(2024, 1, 1, 12, 0, 0, 123456)
    aware = naive.replace(tzinfo=UTC)
    millis = 1_704_110_400_123
    assert slot(row_bytes([naive], [pa.timestamp("ms")]), 0, 1) == millis
    assert slot(row_bytes([naive], [pa.timestamp("s")]), 0, 1) == millis // 1000 * 1000
    # LTZ: an aware datetime is the instant, in any zone.
    plus2 = aware.astimezone(dt.timezone(dt.timedelta(hours=2)))
    t_ltz = pa.timestamp("us", tz="UTC")
    assert row_bytes([plus2], [t_ltz]) == row_bytes([naive], [pa.timestamp("us")])
    assert deserialize_row(serialize_row([plus2], [t_ltz]), [t_ltz]) == [aware]
    assert deserialize_row(serialize_row([naive], [pa.timestamp("ms")]), [pa.timestamp("ms")]) == [
        naive.replace(microsecond=123000)
    ]
    assert_both_paths([[aware], [None]], [t_ltz])
    assert_both_paths([[naive], [None]], [pa.timestamp("ms")])


@pytest.mark.parametrize(
    "day", [dt.date(1969, 12, 31), dt.date(1900, 1, 1), dt.date(1, 1, 1), dt.date(1970, 1, 1), dt.date(9999, 12, 31)]
)
def test_dates(day):
    days = (day - dt.date(1970, 1, 1)).days
    row = row_bytes([day], [pa.date32()])
    assert row[8:] == struct.pack("<i", days) + bytes(4)
    assert deserialize_row(serialize_row([day], [pa.date32()]), [pa.date32()]) == [day]
    assert_both_paths([[day]], [pa.date32()])


def test_fixed_width_slots():
    types = [pa.bool_(), pa.int8(), pa.int16(), pa.int32(), pa.float32(), pa.time32("ms"), pa.time64("us")]
    values = [True, -1, -2, -3, 1.5, dt.time(12, 34, 56, 789000), dt.time(0, 0, 1, 500)]
    row = row_bytes(values, types)
    assert [slot(row, i, 7) for i in range(7)] == [1, 0xFF, 0xFFFE, 0xFFFFFFFD, 0x3FC00000, 45_296_789, 1000]
    back = deserialize_row(serialize_row(values, types), types)
    assert back == values[:6] + [dt.time(0, 0, 1)]  # TIME keeps millis only
    assert_both_paths([values, [None] * 7], types)


def test_float_special_values():
    types = [pa.float32(), pa.float64()]
    for values in ([-0.0, -0.0], [float("inf"), float("-inf")], [3.4028234663852886e38, 5e-324]):
        assert deserialize_row(serialize_row(values, types), types) == values
        assert_both_paths([values], types)
    assert slot(row_bytes([-0.0], [pa.float64()]), 0, 1) == 1 << 63


def test_int_range_and_type_checked():
    with pytest.raises(SchemaMismatchError, match="field 0"):
        row_bytes([128], [pa.int8()])
    with pytest.raises(SchemaMismatchError):
        row_bytes([1.5], [pa.int32()])
    with pytest.raises(SchemaMismatchError):
        row_bytes([5], [pa.string()])
    with pytest.raises(SchemaMismatchError, match="values"):
        row_bytes([1, 2], [pa.int32()])
    assert row_bytes([np.int64(5)], [pa.int64()]) == row_bytes([5], [pa.int64()])


@pytest.mark.parametrize("t", [pa.uint32(), pa.uint64(), pa.date64(), pa.duration("s"), pa.decimal256(40, 2)], ids=str)
def test_unsupported_types(t):
    with pytest.raises(SchemaError):
        row_bytes([None], [t])


# --------------------------------------------------------------------------------------------
# Decoding errors
# --------------------------------------------------------------------------------------------


def test_deserialize_errors_are_format_errors():
    good = serialize_row(["hello world!!"], [pa.string()])
    with pytest.raises(FormatError, match="arity"):
        deserialize_row(good, [pa.string(), pa.int32()])
    with pytest.raises(FormatError):
        deserialize_row(good[:3], [pa.string()])
    with pytest.raises(FormatError):
        deserialize_row(good[:12], [pa.string()])
    with pytest.raises(FormatError, match="outside"):
        deserialize_row(good[:-8], [pa.string()])
    bad_utf8 = serialize_row([b"\xff\xfe"], [pa.binary()])
    with pytest.raises(FormatError, match="UTF-8"):
        deserialize_row(bad_utf8, [pa.string()])
    bad_ts = serialize_row([0], [pa.timestamp("ns")])
    bad_ts = bad_ts[:12] + struct.pack("<Q", (16 << 32) | 1_000_000) + bad_ts[20:]
    with pytest.raises(FormatError, match="nanoOfMillisecond"):
        deserialize_row(bad_ts, [pa.timestamp("ns")])
    assert issubclass(FormatError, LakeError)


# --------------------------------------------------------------------------------------------
# NanoDatetime
# --------------------------------------------------------------------------------------------


def test_nano_datetime_compares_and_copies():
    base = dt.datetime(2024, 1, 1, 0, 0, 0, 1)
    a = NanoDatetime(2024, 1, 1, 0, 0, 0, 1, nanosecond=5)
    b = NanoDatetime(2024, 1, 1, 0, 0, 0, 1, nanosecond=6)
    assert a > base and base < a and a != base and base != a
    assert a < b and b > a and a <= a and a >= a
    assert a < dt.datetime(2024, 1, 1, 0, 0, 0, 2)
    assert a == NanoDatetime(2024, 1, 1, 0, 0, 0, 1, nanosecond=5)
    assert len({a, NanoDatetime(2024, 1, 1, 0, 0, 0, 1, nanosecond=5)}) == 1
    assert sorted([b, base, a]) == [base, a, b]
    for clone in (copy.deepcopy(a), pickle.loads(pickle.dumps(a))):
        assert clone == a and clone.nanosecond == 5
    aware = NanoDatetime(2024, 1, 1, tzinfo=UTC, nanosecond=1)
    assert pickle.loads(pickle.dumps(aware)) == aware


# --------------------------------------------------------------------------------------------
# encode_rows specifics
# --------------------------------------------------------------------------------------------


def test_encode_rows_accepts_chunked_sliced_dictionary_and_casts():
    values = ["a", None, "abcdefgh", "x" * 30, "", "日本語テキスト"]
    types = [pa.string()]
    expected = [row_bytes([v], types) for v in values]
    arr = pa.array(["zzzzzzzzzz", "q"] + values)
    assert vector_rows([arr.slice(2)], types) == expected
    chunked = pa.chunked_array([pa.array(values[:3]), pa.array(values[3:])])
    assert vector_rows([chunked], types) == expected
    assert vector_rows([pa.array(values).dictionary_encode()], types) == expected
    assert vector_rows([pa.array(values, pa.large_string())], types) == expected
    assert vector_rows([pa.array(values, pa.string_view())], types) == expected
    ints = pa.array([1, None, -3], pa.int32())
    assert vector_rows([ints], [pa.int64()]) == [row_bytes([v], [pa.int64()]) for v in [1, None, -3]]
    sliced_dec = pa.array([Decimal(1), Decimal(-128), None], pa.decimal128(20, 0)).slice(1)
    assert vector_rows([sliced_dec], [pa.decimal128(20, 0)]) == [
        row_bytes([v], [pa.decimal128(20, 0)]) for v in [Decimal(-128), None]
    ]


def test_encode_rows_shapes():
    buf, lengths = encode_rows([pa.array([], pa.string())], [pa.string()])
    assert buf.shape[0] == 0 and lengths.shape == (0,)
    buf, lengths = encode_rows([pa.array([1, 2], pa.int64())], [pa.int64()])
    assert buf.shape == (2, 16) and lengths.tolist() == [16, 16]
    buf, lengths = encode_rows([pa.array(["a", "b" * 20])], [pa.string()])
    assert buf.shape == (2, 40) and lengths.tolist() == [16, 40]
    with pytest.raises(SchemaMismatchError):
        encode_rows([pa.array([1]), pa.array([1, 2])], [pa.int64(), pa.int64()])
    with pytest.raises(SchemaMismatchError):
        encode_rows([pa.array(["x"])], [pa.int64()])


# --------------------------------------------------------------------------------------------
# Property tests
# --------------------------------------------------------------------------------------------


def _ints(bits):
    return st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)


_WIDE = decimal.Context(prec=100)


def _decimals(p, s):
    # scaleb with a wide context: the default 28-digit one would round 38-digit values.
    return st.integers(-(10**p) + 1, 10**p - 1).map(lambda u: Decimal(u).scaleb(-s, _WIDE))


_TS_NANOS = st.integers(-(2**62), 2**62)
# (type, strategy of Python values acceptable to both pa.array and row_bytes)
_TYPE_STRATEGIES = [
    (pa.bool_(), st.booleans()),
    (pa.int8(), _ints(8)),
    (pa.int16(), _ints(16)),
    (pa.int32(), _ints(32)),
    (pa.int64(), _ints(64)),
    (pa.float32(), st.floats(width=32, allow_nan=False)),
    (pa.float64(), st.floats(allow_nan=False)),
    (pa.string(), st.text(max_size=20)),
    (pa.large_string(), st.text(max_size=40)),
    (pa.binary(), st.binary(max_size=20)),
    (pa.date32(), st.dates()),
    (pa.time32("ms"), st.times().map(lambda t: t.replace(microsecond=t.microsecond // 1000 * 1000))),
    (pa.timestamp("ms"), _TS_NANOS.map(lambda n: n // 10**6)),
    (pa.timestamp("us"), st.datetimes()),
    (pa.timestamp("ns"), _TS_NANOS),
    (pa.timestamp("us", tz="UTC"), st.datetimes(timezones=st.just(UTC))),
    (pa.decimal128(10, 2), _decimals(10, 2)),
    (pa.decimal128(18, 0), _decimals(18, 0)),
    (pa.decimal128(38, 10), _decimals(38, 10)),
    (pa.decimal128(20, 0), _decimals(20, 0)),
]


@st.composite
def tables(draw, max_rows=12):
    picks = draw(st.lists(st.sampled_from(_TYPE_STRATEGIES), min_size=1, max_size=6))
    n = draw(st.integers(0, max_rows))
    types = [t for t, _ in picks]
    rows = [[draw(st.none() | s) for _, s in picks] for _ in range(n)]
    return types, rows


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables())
def test_property_vectorized_equals_scalar(table):
    types, rows = table
    assert_both_paths(rows, types)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(max_rows=3))
def test_property_round_trip(table):
    types, rows = table
    for values in rows:
        data = serialize_row(values, types)
        back = deserialize_row(data, types)
        assert serialize_row(back, types) == data  # bytes are a fixed point
        for v, b, t in zip(values, back, types):
            if isinstance(v, int) and pa.types.is_timestamp(t):
                continue  # raw epoch ints come back as datetimes
            if pa.types.is_float32(t) and v is not None:
                assert b == struct.unpack("<f", struct.pack("<f", v))[0]
            else:
                assert b == v, (t, v, b)
