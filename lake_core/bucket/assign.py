"""Fixed-bucket assignment, bit-exact with Java Paimon (Java ``FixedBucketRowKeyExtractor`` and ``BucketFunction``).

``bucket-function.type``:

* ``default`` — ``DefaultBucketFunction``: ``Math.abs(BinaryRow(bucketKey).hashCode() % n)``,
  where ``hashCode`` is ``MurmurHashUtils.hashBytesByWords`` (MurmurHash3_x86_32 over 4-byte
  little-endian words, seed 42) of the row bytes without the arity prefix.
* ``mod`` — ``ModBucketFunction``: ``Math.floorMod(key, n)`` for one INT/BIGINT key.
* ``hive`` — ``HiveBucketFunction``: Hive's ``ObjectInspectorUtils.hashCode`` fold
  ``h = 31 * h + fieldHash`` (``HiveHasher``), bucket ``(h & Integer.MAX_VALUE) % n``.

All integer arithmetic emulates Java ``int``: uint32 NumPy arrays whose wraparound is intended.
"""

from __future__ import annotations

import decimal
import functools
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from lake_core import arrow_memory
from lake_core.errors import FormatError, InvalidOptionError
from lake_core.format.binary_row.arrow_buffers import as_array, bytes_layout, fixed_values, null_mask, ragged_index
from lake_core.format.binary_row.column_encoder import encode_column, encode_rows_and_nulls
from lake_core.format.binary_row.layout import DECIMAL_CONTEXT, field_layout, null_bits_size

__all__ = ["assign_buckets", "bucket_of_hashes", "hash_row_bytes", "hash_rows"]

SEED = 42
_U32 = 0xFFFFFFFF
_C1 = np.uint32(0xCC9E2D51)
_C2 = np.uint32(0x1B873593)
_N = np.uint32(0xE6546B64)
_F1 = np.uint32(0x85EBCA6B)
_F2 = np.uint32(0xC2B2AE35)
_BUCKET_FUNCTIONS = ("default", "mod", "hive")


# --------------------------------------------------------------------------------------------
# MurmurHash3 (MurmurHashUtils.hashBytesByWords)
# --------------------------------------------------------------------------------------------


def _mix_scalar(h: int, k: int) -> int:
    k = (k * 0xCC9E2D51) & _U32
    k = ((k << 15) | (k >> 17)) & _U32
    k = (k * 0x1B873593) & _U32
    h ^= k
    h = ((h << 13) | (h >> 19)) & _U32
    return (h * 5 + 0xE6546B64) & _U32


def _fmix_scalar(h: int, length: int) -> int:
    h ^= length
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _U32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _U32
    return h ^ (h >> 16)


def _to_int32(h: int) -> int:
    return h - (1 << 32) if h & 0x80000000 else h


def hash_row_bytes(row: bytes) -> int:
    """``BinaryRow.hashCode()`` of BinaryRow bytes (no arity prefix) as a signed int32."""
    row = bytes(row)
    if len(row) % 4:
        raise FormatError(f"BinaryRow of {len(row)} bytes is not word aligned")
    h = SEED
    for (k,) in np.frombuffer(row, "<u4").reshape(-1, 1).tolist():
        h = _mix_scalar(h, k)
    return _to_int32(_fmix_scalar(h, len(row)))


@functools.cache
def _seed_after_zero_words(count: int) -> int:
    """Hash state after ``count`` zero words: the header of a row without null bits is all
    zero, so its words need not be hashed per row."""
    h = SEED
    for _ in range(count):
        h = _mix_scalar(h, 0)
    return h


def _mix(h: np.ndarray, k: np.ndarray, t: np.ndarray | None = None) -> np.ndarray:
    """One MurmurHash3 body step on uint32 arrays (in place; ``k`` is clobbered; ``t``: scratch
    of the same length, clobbered too)."""
    k *= _C1
    t = np.right_shift(k, 17, out=t)
    k <<= 15
    k |= t
    k *= _C2
    h ^= k
    np.right_shift(h, 19, out=t)
    h <<= 13
    h |= t
    h *= np.uint32(5)
    h += _N
    return h


def _fmix(h: np.ndarray, lengths: Any, t: np.ndarray | None = None) -> np.ndarray:
    """MurmurHash3's finalizer, in place on ``h`` (``t``: scratch of its length)."""
    h ^= np.asarray(lengths).astype(np.uint32)
    for shift, factor in ((16, _F1), (13, _F2), (16, None)):
        t = np.right_shift(h, shift, out=t)
        h ^= t
        if factor is not None:
            h *= factor
    return h.view(np.int32)


def _hash_word_matrix(words: np.ndarray, n_words: np.ndarray, start: int, h0: int, lengths: Any) -> np.ndarray:
    """Hash rows given as a uint32 matrix ``words[n, W]`` (row i has ``n_words[i]`` words).

    Words before ``start`` are known to be zero for every row and folded into ``h0``.
    """
    n = words.shape[0]
    h = np.full(n, h0, np.uint32)
    shortest = int(n_words.min()) if n else 0
    for w in range(start, words.shape[1]):
        k = words[:, w].copy()  # always a fresh copy: _mix writes into it (a 1-row column would be a view)
        if w < shortest:
            h = _mix(h, k)
        else:  # some rows already ended: keep their state
            h = np.where(w < n_words, _mix(h.copy(), k), h)
    return _fmix(h, lengths)


def _fast_single_int(columns: Sequence[Any], types: Sequence[pa.DataType]):
    """Hashes for one INT/BIGINT-like column without nulls, or None if not applicable.

    Its rows are 16 bytes: 8 zero header bytes and the little-endian value zero-extended to 8
    bytes, so only two words vary and no row bytes need to be materialised.
    """
    if len(types) != 1:
        return None
    f = field_layout(types[0])
    if f.kind not in ("int", "date") or f.width not in (4, 8):
        return None
    arr = as_array(columns[0], types[0])
    if arr.null_count:
        return None
    # the three working arrays in Arrow's pool (see lake_core.arrow_memory): a write's hashing
    # otherwise maps and faults in a dozen fresh arrays of 4 bytes a row
    n = len(arr)
    h, k, t = (arrow_memory.empty(n, np.uint32) for _ in range(3))
    h.fill(_seed_after_zero_words(2))
    if f.width == 8:
        words = fixed_values(arr, "<u8", None)
        np.bitwise_and(words, np.uint64(_U32), out=k, casting="unsafe")
        h = _mix(h, k, t)
        np.right_shift(words, np.uint64(32), out=k, casting="unsafe")
        h = _mix(h, k, t)
    else:
        np.copyto(k, fixed_values(arr, "<u4", None))
        h = _mix(h, k, t)
        k.fill(0)
        h = _mix(h, k, t)
    return _fmix(h, 16, t)


def hash_rows(columns: Sequence[Any], types: Sequence[pa.DataType]) -> np.ndarray:
    """``BinaryRow(row).hashCode()`` of every row of ``columns`` (int32), vectorized over rows."""
    fast = _fast_single_int(columns, types)
    if fast is not None:
        return fast
    buf, lengths, any_null = encode_rows_and_nulls(columns, types)
    words = buf.view("<u4")
    # Without null bits the header words are zero in every row (RowKind byte is 0 too).
    start = 0 if any_null else null_bits_size(len(types)) // 4
    return _hash_word_matrix(words, lengths // 4, start, _seed_after_zero_words(start), lengths)


def bucket_of_hashes(hashes: np.ndarray, num_buckets: int) -> np.ndarray:
    """Java ``Math.abs(hash % numBuckets)`` (``%`` truncates toward zero) as int32."""
    _check_num_buckets(num_buckets)
    # |h % n| = |h| % n; |h| as unsigned 32 bits, so |INT_MIN| (which wraps to INT_MIN) reads 2**31,
    # and the unsigned remainder (a mask for a power of two) costs a tenth of a signed 64-bit fmod
    hashes = np.asarray(hashes, dtype=np.int32)
    magnitude = np.abs(hashes, out=arrow_memory.empty(len(hashes), np.int32)).view(np.uint32)
    n = np.uint32(num_buckets)
    if num_buckets & (num_buckets - 1) == 0:
        np.bitwise_and(magnitude, n - np.uint32(1), out=magnitude)
    else:
        np.remainder(magnitude, n, out=magnitude)
    return magnitude.view(np.int32)


def _check_num_buckets(num_buckets: int) -> None:
    if (
        isinstance(num_buckets, bool)
        or not isinstance(num_buckets, (int, np.integer))
        or not 0 < num_buckets <= 0x7FFFFFFF
    ):
        raise InvalidOptionError(
            f"'bucket' must be a positive number of buckets for hash bucket assignment, got {num_buckets!r}"
        )


# --------------------------------------------------------------------------------------------
# mod / hive bucket functions
# --------------------------------------------------------------------------------------------


def _mod_buckets(columns, types, num_buckets: int) -> np.ndarray:
    if len(types) != 1 or not (pa.types.is_int32(types[0]) or pa.types.is_int64(types[0])):
        raise InvalidOptionError(
            "'bucket-function.type' = 'mod' needs exactly one bucket key field of type INT or "
            f"BIGINT, got {[str(t) for t in types]}; use 'default' or change 'bucket-key'"
        )
    arr = as_array(columns[0], types[0])
    # A null key reads as 0 from the BinaryRow slot, as in Java's row.getInt/getLong.
    values = fixed_values(arr, f"<i{types[0].bit_width // 8}", null_mask(arr))
    return np.mod(values.astype(np.int64), num_buckets).astype(np.int32)  # NumPy % is floorMod


def _java_decimal_hive_hash(d: decimal.Decimal) -> int:
    """``HiveHasher.normalizeDecimal(d).hashCode()`` as an unsigned 32-bit int.

    For Paimon decimals (precision <= 38) normalisation only strips trailing zeros and clamps a
    negative scale to 0. ``BigDecimal.hashCode`` is ``31 * unscaled.hashCode() + scale`` and
    ``BigInteger.hashCode`` folds the big-endian 32-bit words of the magnitude with
    ``h = 31 * h + word``, negated for negative numbers.
    """
    if d == 0:
        return 0  # BigDecimal.ZERO
    sign, digits, exp = DECIMAL_CONTEXT.normalize(d).as_tuple()
    assert isinstance(exp, int)  # a finite decimal (NaN and infinities are not Paimon decimals)
    unscaled = int("".join(map(str, digits))) * 10 ** max(exp, 0)
    scale = max(-exp, 0)
    h = 0
    for shift in range((unscaled.bit_length() + 31) // 32 * 32 - 32, -32, -32):
        h = (31 * h + ((unscaled >> shift) & _U32)) & _U32
    if sign:
        h = -h & _U32
    return (31 * h + scale) & _U32


def _hive_column_hash(col: Any, t: pa.DataType) -> np.ndarray:
    """``HiveHasher`` hash of every value of one column, uint32; null -> 0."""
    f = field_layout(t)
    arr: Any = as_array(col, t) if f.kind != "nested" else None  # None only for nested types
    null = null_mask(arr) if arr is not None else None
    n = len(col)
    k = f.kind
    out: np.ndarray
    if k == "bool":
        out = arr.fill_null(False).to_numpy(zero_copy_only=False).astype(np.uint32)
    elif k in ("int", "date") and f.width <= 4:
        out = fixed_values(arr, f"<i{f.width}", null).astype(np.int32).view(np.uint32)
    elif k == "time":  # Paimon TIME is an Integer of millis; reuse the slot's unit conversion
        out = encode_column(arr, t).slot.astype(np.uint32)
    elif k == "int":  # BIGINT: Long.hashCode
        v = fixed_values(arr, "<u8", null)
        out = ((v ^ (v >> np.uint64(32))) & np.uint64(_U32)).astype(np.uint32)
    elif k == "float" and f.width == 4:
        v = fixed_values(arr, "<f4", null)
        bits = v.view(np.uint32).copy()
        bits[np.isnan(v)] = 0x7FC00000  # floatToIntBits' canonical NaN
        bits[v == 0] = 0  # -0.0f hashes like 0
        out = bits
    elif k == "float":
        v = fixed_values(arr, "<f8", null)
        bits64 = v.view(np.uint64).copy()
        bits64[np.isnan(v)] = 0x7FF8000000000000
        bits64[v == 0] = 0
        out = ((bits64 ^ (bits64 >> np.uint64(32))) & np.uint64(_U32)).astype(np.uint32)
    elif k == "bytes":
        out = _hive_bytes_hash(arr, null)
    elif k == "dec":
        # Arbitrary-precision normalisation; hive bucketing is rare enough for a per-value loop.
        out = np.array([0 if d is None else _java_decimal_hive_hash(d) for d in arr.to_pylist()], dtype=np.uint32)
    else:
        raise InvalidOptionError(
            f"'bucket-function.type' = 'hive' does not support bucket key type {t} (Java "
            "HiveBucketFunction only hashes BOOLEAN, integer, FLOAT, DOUBLE, STRING, BYTES, "
            "DECIMAL, DATE and TIME keys)"
        )
    if null is not None:
        out = np.where(null, np.uint32(0), out)
    assert len(out) == n
    return out


def _hive_bytes_hash(arr: pa.Array, null) -> np.ndarray:
    """Java ``h = 31 * h + b`` over the signed UTF-8/raw bytes of every value, vectorized as
    ``sum(b_j * 31^(len-1-j))`` with uint32 wraparound."""
    n = len(arr)
    starts, lens, data = bytes_layout(arr)
    rows = np.flatnonzero((lens > 0) if null is None else (lens > 0) & ~null)
    out = np.zeros(n, np.uint32)
    if rows.size == 0:
        return out
    lens = lens[rows]
    first, within = ragged_index(lens)
    signed = data[np.repeat(starts[rows], lens) + within].view(np.int8)
    pow31 = np.ones(int(lens.max()), np.uint32)
    pow31[1:] = np.cumprod(np.full(len(pow31) - 1, 31, np.uint32), dtype=np.uint32)
    terms = signed.astype(np.int32).view(np.uint32) * pow31[np.repeat(lens, lens) - 1 - within]
    out[rows] = np.add.reduceat(terms, first, dtype=np.uint32)
    return out


def _hive_buckets(columns, types, num_buckets: int) -> np.ndarray:
    n = len(columns[0]) if len(columns) else 0
    h = np.zeros(n, np.uint32)
    for col, t in zip(columns, types):
        h *= np.uint32(31)
        h += _hive_column_hash(col, t)
    # (hash & Integer.MAX_VALUE) is non-negative, so Java's mod is a plain remainder.
    return ((h & np.uint32(0x7FFFFFFF)) % np.uint32(num_buckets)).astype(np.int32)


def assign_buckets(
    columns: Sequence[Any], types: Sequence[pa.DataType], num_buckets: int, function: str = "default"
) -> np.ndarray:
    """Bucket id (int32) of every row, given the bucket-key columns and ``bucket-function.type``."""
    _check_num_buckets(num_buckets)
    name = str(function).strip().lower()
    if name not in _BUCKET_FUNCTIONS:
        raise InvalidOptionError(
            f"invalid 'bucket-function.type' = {function!r}; expected one of {', '.join(_BUCKET_FUNCTIONS)}"
        )
    if len(columns) != len(types) or not types:
        raise InvalidOptionError(
            f"bucket assignment needs at least one bucket key column with a "
            f"type each; got {len(columns)} columns and {len(types)} types"
        )
    if name == "mod":
        return _mod_buckets(columns, types, num_buckets)
    if name == "hive":
        return _hive_buckets(columns, types, num_buckets)
    return bucket_of_hashes(hash_rows(columns, types), num_buckets)
