"""Bucket hash and bucket functions: vectors computed by Java, Java semantics, vectorized ==
scalar."""

from __future__ import annotations

import datetime as dt
import decimal
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest
from format.test_binary_row import tables  # the same random schemas/rows as the encoder tests
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lake_core.bucket.assign import assign_buckets, bucket_of_hashes, hash_row_bytes, hash_rows
from lake_core.errors import FormatError, InvalidOptionError
from lake_core.format.binary_row.writer import row_bytes

I32_MIN, I32_MAX = -(2**31), 2**31 - 1


def java_int(x: int) -> int:
    x &= 0xFFFFFFFF
    return x - (1 << 32) if x >= 1 << 31 else x


# --------------------------------------------------------------------------------------------
# Hash vectors computed by Java Paimon
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "key, row_hex, expected_hash, b2, b4",
    [
        (1, "0000000000000000 0100000000000000", 1465514398, 0, 2),
        (2, "0000000000000000 0200000000000000", 1340390384, 0, 0),
        (3, "0000000000000000 0300000000000000", -771300025, 1, 1),
    ],
)
def test_format_6_4_bigint_keys(key, row_hex, expected_hash, b2, b4):
    row = bytes.fromhex(row_hex.replace(" ", ""))
    assert row_bytes([key], [pa.int64()]) == row
    assert hash_row_bytes(row) == expected_hash
    col = [pa.array([key], pa.int64())]
    assert hash_rows(col, [pa.int64()]).tolist() == [expected_hash]
    assert assign_buckets(col, [pa.int64()], 2).tolist() == [b2]
    assert assign_buckets(col, [pa.int64()], 4).tolist() == [b4]


def test_format_6_4_hash_index_bytes():
    # Java HashIndexFile: the HASH index file of keys 3, 2, 1 is d206e547 4fe4bbf0 5759f99e.
    hashes = hash_rows([pa.array([3, 2, 1], pa.int64())], [pa.int64()])
    assert hashes.astype(">i4").tobytes().hex() == "d206e5474fe4bbf05759f99e"


@pytest.mark.parametrize(
    "k1, name, row_hex, expected_hash",
    [
        (0, "abcdefg", "0000000000000000 0000000000000000 6162636465666787", 485879665),
        (1, "abcdefgh", "0000000000000000 0100000000000000 0800000018000000 6162636465666768", 577775525),
    ],
)
def test_format_6_4_composite_keys(k1, name, row_hex, expected_hash):
    types = [pa.int32(), pa.string()]
    row = bytes.fromhex(row_hex.replace(" ", ""))
    assert row_bytes([k1, name], types) == row
    assert hash_row_bytes(row) == expected_hash
    cols = [pa.array([k1], pa.int32()), pa.array([name])]
    assert hash_rows(cols, types).tolist() == [expected_hash]
    assert assign_buckets(cols, types, 5).tolist() == [0]


def test_hash_row_bytes_rejects_unaligned():
    with pytest.raises(FormatError):
        hash_row_bytes(b"\0" * 6)


# --------------------------------------------------------------------------------------------
# bucket_of_hashes: Math.abs(h % n) with truncating %
# --------------------------------------------------------------------------------------------


def test_bucket_of_hashes_java_semantics():
    hashes = np.array([0, 7, -7, I32_MIN, I32_MAX, -1], np.int32)
    assert bucket_of_hashes(hashes, 3).tolist() == [0, 1, 1, 2, 1, 1]
    assert bucket_of_hashes(hashes, 4).tolist() == [0, 3, 3, 0, 3, 1]
    assert bucket_of_hashes(hashes, 1).tolist() == [0] * 6
    assert bucket_of_hashes(hashes, 3).dtype == np.int32


@given(
    hashes=st.lists(st.integers(I32_MIN, I32_MAX), min_size=1, max_size=50),
    n=st.one_of(st.integers(1, 64), st.integers(1, I32_MAX), st.sampled_from([2**k for k in range(31)])),
)
def test_bucket_of_hashes_is_javas_abs_of_the_truncated_remainder(hashes, n):
    quotients = [-(-h // n) if h < 0 else h // n for h in hashes]  # Java's / truncates toward zero
    java = [abs(h - n * q) for h, q in zip(hashes, quotients)]
    assert bucket_of_hashes(np.array(hashes, np.int32), n).tolist() == java


@pytest.mark.parametrize("n", [0, -1, 2**31, 1.5, True])
def test_invalid_bucket_count(n):
    with pytest.raises(InvalidOptionError, match="bucket"):
        bucket_of_hashes(np.zeros(1, np.int32), n)
    with pytest.raises(InvalidOptionError, match="bucket"):
        assign_buckets([pa.array([1])], [pa.int64()], n)


# --------------------------------------------------------------------------------------------
# Fast paths vs the general path
# --------------------------------------------------------------------------------------------


def scalar_hashes(columns, types):
    # Dates as raw day ints (accepted by row_bytes): extreme days have no datetime.date.
    rows = zip(*[(c.view(pa.int32()) if pa.types.is_date32(c.type) else c).to_pylist() for c in columns])
    return [hash_row_bytes(row_bytes(list(r), types)) for r in rows]


@pytest.mark.parametrize("t", [pa.int64(), pa.int32(), pa.date32(), pa.int16(), pa.int8()], ids=str)
def test_single_int_column_paths(t):
    rng = np.random.default_rng(1)
    info = np.iinfo(f"int{t.bit_width}")
    values = rng.integers(info.min, info.max, 500, endpoint=True).astype(f"int{t.bit_width}")
    values[:4] = [info.min, info.max, 0, -1]
    arr = pa.array(values).view(t)
    assert hash_rows([arr], [t]).tolist() == scalar_hashes([arr], [t])
    with_nulls = pa.concat_arrays([arr.slice(0, 50), pa.nulls(1, t)])
    assert hash_rows([with_nulls], [t]).tolist() == scalar_hashes([with_nulls], [t])
    sliced = arr.slice(7, 30)
    assert hash_rows([sliced], [t]).tolist() == scalar_hashes([sliced], [t])


def test_mixed_length_rows_are_masked():
    types = [pa.int32(), pa.string()]
    names = ["", "a", "abcdefg", "abcdefgh", "x" * 100, None, "é" * 9, "日本語テキスト" * 5]
    cols = [pa.array(range(len(names)), pa.int32()), pa.array(names)]
    assert hash_rows(cols, types).tolist() == scalar_hashes(cols, types)


def test_nulls_in_bucket_key_hash_header():
    # A null bit changes header word 0 for that row only; the no-null shortcut must not apply.
    cols = [pa.array([1, None, 3], pa.int64()), pa.array(["a", "b", None])]
    types = [pa.int64(), pa.string()]
    assert hash_rows(cols, types).tolist() == scalar_hashes(cols, types)


def test_empty_input():
    assert hash_rows([pa.array([], pa.int64())], [pa.int64()]).shape == (0,)
    assert assign_buckets([pa.array([], pa.string())], [pa.string()], 3).shape == (0,)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables())
def test_property_hash_rows_equals_scalar(table):
    types, rows = table
    columns = [pa.array([r[i] for r in rows], type=t) for i, t in enumerate(types)]
    expected = [hash_row_bytes(row_bytes(r, types)) for r in rows]
    assert hash_rows(columns, types).tolist() == expected
    n = 7
    assert assign_buckets(columns, types, n).tolist() == [abs(int(np.fmod(x, n))) for x in expected]


# --------------------------------------------------------------------------------------------
# bucket-function.type = mod
# --------------------------------------------------------------------------------------------


def test_mod_floor_mod():
    values = [17, -3, 5, 0, -1, I32_MIN, I32_MAX]
    expected = [v % 5 for v in values]  # Python % is floorMod
    assert assign_buckets([pa.array(values, pa.int32())], [pa.int32()], 5, "mod").tolist() == expected
    big = [2**62 + 3, -(2**63), 2**63 - 1]
    assert assign_buckets([pa.array(big, pa.int64())], [pa.int64()], 7, "MOD").tolist() == [v % 7 for v in big]


@pytest.mark.parametrize(
    "columns, types",
    [
        ([pa.array(["a"])], [pa.string()]),
        ([pa.array([1], pa.int16())], [pa.int16()]),
        ([pa.array([1]), pa.array([2])], [pa.int64(), pa.int64()]),
    ],
)
def test_mod_rejects_other_keys(columns, types):
    with pytest.raises(InvalidOptionError, match="bucket-function.type"):
        assign_buckets(columns, types, 4, "mod")


def test_unknown_bucket_function():
    with pytest.raises(InvalidOptionError, match="bucket-function.type"):
        assign_buckets([pa.array([1])], [pa.int64()], 4, "murmur")


# --------------------------------------------------------------------------------------------
# bucket-function.type = hive (Java HiveBucketFunction / HiveHasher)
# --------------------------------------------------------------------------------------------


def hive(values, t, n=128):
    return assign_buckets([pa.array(values, t)], [t], n, "hive").tolist()


def test_hive_java_test_vector():
    # Java HiveBucketFunctionTest: (7, "hello", {1,2,3}, 12.3400 DECIMAL(10,4)); the hash is
    # 31*(31*(31*7 + 99162322) + 1026) + 38256 = 805989529 in int arithmetic.
    assert java_int(31 * (31 * (31 * 7 + 99162322) + 1026) + 38256) == 805989529
    types = [pa.int32(), pa.string(), pa.binary(), pa.decimal128(10, 4)]
    cols = [
        pa.array([7], types[0]),
        pa.array(["hello"]),
        pa.array([b"\x01\x02\x03"]),
        pa.array([Decimal("12.3400")], types[3]),
    ]
    assert assign_buckets(cols, types, 8, "hive").tolist() == [805989529 % 8]
    assert assign_buckets(cols, types, 128, "hive").tolist() == [25]


def test_hive_per_type_hashes():
    assert hive([0, 1, 127, 128, -1, I32_MIN, I32_MAX], pa.int32()) == [0, 1, 127, 0, 127, 0, 127]
    assert hive([True, False], pa.bool_()) == [1, 0]
    # Long.hashCode: (int)(v ^ (v >>> 32))
    assert hive([0, 100, 2**32, 2**63 - 1, -1], pa.int64()) == [0, 100, 1, 0, 0]
    assert hive([0.0, -0.0, 1.0, -1.0], pa.float32()) == [0, 0, 0, 0]
    assert hive([0.0, -0.0, 1.0], pa.float64()) == [0, 0, 0]
    assert hive(["hello", "", "a"], pa.string()) == [82, 0, 97]
    assert hive(["hello"], pa.string(), 10) == [2]
    assert hive([dt.date(1970, 1, 1) + dt.timedelta(days=2000)], pa.date32()) == [80]
    assert hive([100], pa.int64(), 7) == [2]
    assert hive([42, 0], pa.int32(), 5) == [2, 0]


def test_hive_multi_field_and_nulls():
    types = [pa.bool_(), pa.int32(), pa.int64(), pa.float32(), pa.float64(), pa.string()]
    cols = [
        pa.array([True], types[0]),
        pa.array([42], types[1]),
        pa.array([100], types[2]),
        pa.array([0.0], types[3]),
        pa.array([0.0], types[4]),
        pa.array(["a"]),
    ]
    assert assign_buckets(cols, types, 128, "hive").tolist() == [70]
    null_cols = [pa.array([None], pa.int32()), pa.array([None], pa.string()), pa.array([None], pa.int64())]
    assert assign_buckets(null_cols, [pa.int32(), pa.string(), pa.int64()], 128, "hive").tolist() == [0]


def java_bytes_hash(data: bytes) -> int:
    h = 0
    for b in data:
        h = java_int(31 * h + (b - 256 if b > 127 else b))
    return h


def test_hive_string_hash_signed_bytes():
    # Non-ASCII UTF-8 bytes are negative Java bytes; long strings wrap many times.
    values = ["é", "日本語", "x" * 1000, "hello", "", None, "\x7f\x80"]
    expected = [0 if v is None else (java_bytes_hash(v.encode()) & 0x7FFFFFFF) % 1000 for v in values]
    assert hive(values, pa.string(), 1000) == expected
    assert hive([b"\xff\x00\x80"], pa.binary(), 1000) == [(java_bytes_hash(b"\xff\x00\x80") & 0x7FFFFFFF) % 1000]


@pytest.mark.parametrize(
    "value, t, java_hash",
    [
        ("12.3400", pa.decimal128(10, 4), 31 * 1234 + 2),  # strip trailing zeros
        ("1.50", pa.decimal128(10, 2), 31 * 15 + 1),
        ("100", pa.decimal128(10, 0), 31 * 100),  # 1E+2 -> setScale(0)
        ("0.00", pa.decimal128(10, 2), 0),  # BigDecimal.ZERO
        ("4294967296", pa.decimal128(20, 0), 31 * 31),  # magnitude words [1, 0]
        ("-4294967296", pa.decimal128(20, 0), java_int(-31 * 31)),
        ("-1", pa.decimal128(38, 10), java_int(31 * -1)),
    ],
)
def test_hive_decimal_hash(value, t, java_hash):
    assert hive([Decimal(value)], t, 2**31 - 1) == [(java_hash & 0x7FFFFFFF) % (2**31 - 1)]


def test_hive_big_decimal_matches_biginteger_fold():
    # BigInteger.hashCode folds 32-bit big-endian magnitude words: h = 31*h + word.
    unscaled = 12345678901234567890123456789012345671  # no trailing zero, scale 10
    words = [(unscaled >> s) & 0xFFFFFFFF for s in (96, 64, 32, 0)]
    h = 0
    for w in words:
        h = java_int(31 * h + w)
    expected = java_int(31 * java_int(-h) + 10)  # negative value
    t = pa.decimal128(38, 10)
    value = Decimal(-unscaled).scaleb(-10, decimal.Context(prec=100))
    assert hive([value], t, 2**31 - 1) == [(expected & 0x7FFFFFFF) % (2**31 - 1)]


@pytest.mark.parametrize("t", [pa.timestamp("us"), pa.timestamp("ms"), pa.list_(pa.int32())], ids=str)
def test_hive_unsupported_types(t):
    with pytest.raises(InvalidOptionError, match="hive"):
        assign_buckets([pa.array([None], t)], [t], 4, "hive")


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.one_of(st.none(), st.text(max_size=30)), max_size=30),
    st.lists(st.integers(I32_MIN, I32_MAX), min_size=30, max_size=30),
)
def test_property_hive_matches_java_fold(names, ints):
    ints = ints[: len(names)]
    expected = []
    for name, i in zip(names, ints):
        h = java_int(31 * i + (0 if name is None else java_bytes_hash(name.encode())))
        expected.append((h & 0x7FFFFFFF) % 13)
    cols = [pa.array(ints, pa.int32()), pa.array(names, pa.string())]
    assert assign_buckets(cols, [pa.int32(), pa.string()], 13, "hive").tolist() == expected
