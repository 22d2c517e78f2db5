"""Java-compatible Paimon ``BinaryRow`` encoding (Java ``BinaryRow``/``BinaryRowWriter``).

A BinaryRow is ``[null bit set][8-byte slot per field][variable part]``. It is the wire form of
partition values, min/max keys and stats rows in manifests, and the input of the bucket hash, so
the bytes must equal what Java's ``BinaryRowWriter`` produces (``RowHelper.copyInto``), including
its null encoding for non-compact DECIMAL/TIMESTAMP (``BinaryRowWriter.writeDecimal``/``writeTimestamp`` with null).

Two independent implementations live here on purpose:

* ``row_bytes``/``serialize_row``/``deserialize_row`` work on one row of Python values with
  ``struct``; they are the readable reference.
* ``encode_rows`` encodes whole Arrow columns with NumPy (no per-row Python code) for bucket
  hashing of millions of keys. Tests check both against each other and against Java's bytes.

Types are pyarrow DataTypes (the project maps Paimon types 1:1 onto them, see ``_field``).
"""
from __future__ import annotations

import datetime as _dt
import decimal
import functools
import operator
import struct
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

import numpy as np
import pyarrow as pa

from lake_core.errors import FormatError, SchemaError, SchemaMismatchError

__all__ = [
    "EMPTY_ROW",
    "NanoDatetime",
    "deserialize_row",
    "encode_rows",
    "null_bits_size",
    "row_bytes",
    "serialize_row",
]

# Java BinarySection.MAX_FIX_PART_DATA_SIZE: strings/bytes up to 7 bytes live inside the slot.
_MAX_INLINE = 7
_INLINE_MARK = 0x80
_U64 = (1 << 64) - 1
_U32 = (1 << 32) - 1
_NANOS_PER_UNIT = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}
_EPOCH_DATE_ORDINAL = _dt.date(1970, 1, 1).toordinal()
_EPOCH_UTC = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
# Java Decimal.fromBigDecimal rounds HALF_UP; a wide context so 38-digit values are never rounded
# by Python's default 28-digit precision.
_DEC_CTX = decimal.Context(prec=100, rounding=decimal.ROUND_HALF_UP)


# --------------------------------------------------------------------------------------------
# Type classification
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _Field:
    """How one Paimon field is laid out.

    kind: bool | int | float | bytes | date | time | ts | dec | nested.
    ``width`` is the little-endian byte width of int/float/date/time slots; ``compact`` tells
    whether a TIMESTAMP/DECIMAL lives in the slot (p<=3 / p<=18) or in an 8/16-byte var slot
    that is reserved even when the value is null (``null_var_size``, P9).
    """

    kind: str
    width: int = 8
    unit_nanos: int = 1          # ts/time: nanoseconds per stored Arrow unit
    compact: bool = True
    precision: int = 0
    scale: int = 0
    is_text: bool = False        # STRING (decode as UTF-8) vs BYTES
    tz_aware: bool = False       # TIMESTAMP_LTZ

    @property
    def null_var_size(self) -> int:
        if self.compact or self.kind not in ("ts", "dec"):
            return 0
        return 16 if self.kind == "dec" else 8


@functools.lru_cache(maxsize=None)
def _field(t: pa.DataType) -> _Field:
    if pa.types.is_boolean(t):
        return _Field("bool", 1)
    if pa.types.is_integer(t):
        if t.bit_width == 64 and pa.types.is_unsigned_integer(t):
            raise SchemaError(f"unsigned 64-bit type {t} has no Paimon equivalent; use int64")
        if pa.types.is_unsigned_integer(t):
            raise SchemaError(f"unsigned integer type {t} has no Paimon equivalent; "
                              "cast to the next wider signed type")
        return _Field("int", t.bit_width // 8)
    if pa.types.is_float32(t):
        return _Field("float", 4)
    if pa.types.is_float64(t):
        return _Field("float", 8)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return _Field("bytes", is_text=True)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_binary_view(t) \
            or pa.types.is_fixed_size_binary(t):
        return _Field("bytes")
    if pa.types.is_date32(t):
        return _Field("date", 4)
    if pa.types.is_time(t):
        # Paimon TIME of any precision is stored as int millis of the day.
        return _Field("time", 4, unit_nanos=_NANOS_PER_UNIT[t.unit])
    if pa.types.is_timestamp(t):
        # s/ms -> TIMESTAMP(0..3), compact epoch millis; us/ns -> TIMESTAMP(6/9), var slot.
        return _Field("ts", unit_nanos=_NANOS_PER_UNIT[t.unit], compact=t.unit in ("s", "ms"),
                      tz_aware=t.tz is not None)
    if pa.types.is_decimal(t):
        if t.precision > 38:
            raise SchemaError(f"{t}: Paimon DECIMAL precision is at most 38")
        return _Field("dec", compact=t.precision <= 18, precision=t.precision, scale=t.scale)
    if pa.types.is_nested(t) or pa.types.is_null(t):
        # ARRAY/MAP/ROW never appear in partition/key rows; stats rows store them as null.
        return _Field("nested")
    raise SchemaError(f"type {t} cannot be encoded in a Paimon BinaryRow")


def null_bits_size(arity: int) -> int:
    """Java ``BinaryRow.calculateBitSetWidthInBytes``: header byte + one bit per field, in words."""
    return ((arity + 63 + 8) // 64) * 8


def _round8(n):
    return (n + 7) & ~7


# --------------------------------------------------------------------------------------------
# Scalar path: Python values
# --------------------------------------------------------------------------------------------

class NanoDatetime(_dt.datetime):
    """A ``datetime`` carrying the sub-microsecond digits of a TIMESTAMP(9) value.

    ``deserialize_row`` returns it only when the nanoseconds are not a whole microsecond (a plain
    ``datetime`` cannot hold them); it compares and hashes consistently with ``datetime``.
    """

    __slots__ = ("_nano",)

    def __new__(cls, *args, nanosecond: int = 0, **kwargs):
        self = super().__new__(cls, *args, **kwargs)
        self._nano = nanosecond
        return self

    @property
    def nanosecond(self) -> int:
        return self._nano

    def _cmp(self, other) -> Optional[int]:
        if not isinstance(other, _dt.datetime):
            return None
        if _dt.datetime.__eq__(self, other) is True:
            nano = getattr(other, "nanosecond", 0)
            return (self._nano > nano) - (self._nano < nano)
        return -1 if _dt.datetime.__lt__(self, other) else 1

    def __eq__(self, other):
        c = self._cmp(other)
        return NotImplemented if c is None else c == 0

    def __ne__(self, other):
        c = self._cmp(other)
        return NotImplemented if c is None else c != 0

    def __lt__(self, other):
        c = self._cmp(other)
        return NotImplemented if c is None else c < 0

    def __le__(self, other):
        c = self._cmp(other)
        return NotImplemented if c is None else c <= 0

    def __gt__(self, other):
        c = self._cmp(other)
        return NotImplemented if c is None else c > 0

    def __ge__(self, other):
        c = self._cmp(other)
        return NotImplemented if c is None else c >= 0

    def __hash__(self):
        return hash((_dt.datetime.__hash__(self), self._nano))

    def __repr__(self):
        return f"{_dt.datetime.__repr__(self)[:-1]}, nanosecond={self._nano})"

    def __reduce_ex__(self, protocol):
        # datetime's own reduce would rebuild us through __new__ without the nanoseconds.
        return (_nano_datetime_from_parts,
                (_dt.datetime.combine(self.date(), self.timetz()), self._nano))


def _nano_datetime_from_parts(base: _dt.datetime, nano: int) -> NanoDatetime:
    return NanoDatetime(base.year, base.month, base.day, base.hour, base.minute, base.second,
                        base.microsecond, base.tzinfo, nanosecond=nano)


def _epoch_nanos(v: Any) -> int:
    """Nanoseconds since the epoch: naive datetimes are wall clock read as UTC, aware ones the
    instant (the same rule pyarrow uses when it builds timestamp arrays)."""
    if not isinstance(v, _dt.datetime):
        raise TypeError
    delta = v - (_EPOCH_UTC if v.tzinfo is not None else _EPOCH_UTC.replace(tzinfo=None))
    micros = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    return micros * 1000 + int(getattr(v, "nanosecond", 0))


def _unscaled(f: _Field, v: Any) -> int:
    """Unscaled integer of ``v`` at the field's scale (Java Decimal.fromBigDecimal: HALF_UP)."""
    if isinstance(v, bool) or not isinstance(v, (decimal.Decimal, int, float, str)):
        raise TypeError
    d = v if isinstance(v, decimal.Decimal) else decimal.Decimal(repr(v) if isinstance(v, float) else v)
    if not d.is_finite():
        raise ValueError(f"{v!r} is not a finite decimal")
    q = _DEC_CTX.quantize(d, decimal.Decimal(1).scaleb(-f.scale))
    sign, digits, _ = q.as_tuple()
    unscaled = int("".join(map(str, digits)) or "0") * (-1 if sign else 1)
    if abs(unscaled) >= 10 ** f.precision:
        raise ValueError(f"{v!r} does not fit DECIMAL({f.precision}, {f.scale})")
    return unscaled


def _encode_value(f: _Field, v: Any) -> tuple[int, Optional[bytes], int]:
    """Encode one non-null value.

    Returns ``(slot, payload, reserved)``: with ``payload is None`` the slot is final; otherwise
    the payload goes to the var part (``reserved`` bytes, zero padded) and the slot becomes
    ``(offset << 32) | slot``.
    """
    k = f.kind
    if k == "bool":
        return int(bool(v)), None, 0
    if k == "int":
        v = operator.index(v)  # ints and NumPy integers, never floats
        return int.from_bytes(v.to_bytes(f.width, "little", signed=True), "little"), None, 0
    if k == "float":
        fmt = "<f" if f.width == 4 else "<d"
        return int.from_bytes(struct.pack(fmt, v), "little"), None, 0
    if k == "bytes":
        if isinstance(v, str):
            data = v.encode("utf-8")
        elif isinstance(v, (bytes, bytearray, memoryview)):
            data = bytes(v)
        else:
            raise TypeError
        n = len(data)
        if n <= _MAX_INLINE:
            # Java writeBytesToFixLenPart: data in bytes 0..n-1, 0x80|len in byte 7.
            return int.from_bytes(data, "little") | ((_INLINE_MARK | n) << 56), None, 0
        return n, data, _round8(n)
    if k == "date":
        days = v if isinstance(v, int) else v.toordinal() - _EPOCH_DATE_ORDINAL
        return days & _U32, None, 0
    if k == "time":
        if isinstance(v, int):
            millis = v * f.unit_nanos // 1_000_000
        elif isinstance(v, _dt.time):
            millis = ((v.hour * 60 + v.minute) * 60 + v.second) * 1000 + v.microsecond // 1000
        else:
            raise TypeError
        return millis & _U32, None, 0
    if k == "ts":
        # ints are raw values in the Arrow unit; datetimes are floored to the unit first so a
        # Python value encodes like the same value in an Arrow column of this type.
        units = v if isinstance(v, int) else _epoch_nanos(v) // f.unit_nanos
        nanos = units * f.unit_nanos
        millis, nano_of_milli = divmod(nanos, 1_000_000)
        if f.compact:
            return millis & _U64, None, 0
        return nano_of_milli, struct.pack("<q", millis), 8
    if k == "dec":
        unscaled = _unscaled(f, v)
        if f.compact:
            return unscaled & _U64, None, 0
        # Java BigInteger.toByteArray(): minimal big-endian two's complement.
        raw = unscaled.to_bytes(_signed_len(unscaled), "big", signed=True)
        return len(raw), raw, 16
    raise AssertionError(k)


def _signed_len(x: int) -> int:
    """Length of Java ``BigInteger.toByteArray()`` = bitLength/8 + 1."""
    return (x if x >= 0 else ~x).bit_length() // 8 + 1


def row_bytes(values: Sequence[Any], types: Sequence[pa.DataType]) -> bytes:
    """BinaryRow bytes (no arity prefix) of one row, RowKind byte 0 (+I)."""
    fields = [_field(t) for t in types]
    if len(values) != len(fields):
        raise SchemaMismatchError(f"row has {len(values)} values but {len(fields)} types")
    nb = null_bits_size(len(fields))
    fixed_len = nb + 8 * len(fields)
    header = bytearray(nb)
    slots = []
    var = bytearray()
    for i, (f, v) in enumerate(zip(fields, values)):
        if v is None or f.kind == "nested":
            header[(i + 8) >> 3] |= 1 << ((i + 8) & 7)
            # P9: Java's writeDecimal/writeTimestamp(null) reserve zeroed var bytes and still
            # store their offset; every other type is slot 0.
            reserve = f.null_var_size
            slots.append((fixed_len + len(var)) << 32 if reserve else 0)
            var += bytes(reserve)
            continue
        try:
            slot, payload, reserved = _encode_value(f, v)
        except (TypeError, ValueError, OverflowError, struct.error, decimal.InvalidOperation) as e:
            raise SchemaMismatchError(
                f"field {i}: cannot encode {v!r} ({type(v).__name__}) as {types[i]}"
                + (f": {e}" if str(e) else "")) from None
        if payload is not None:
            slot |= (fixed_len + len(var)) << 32
            var += payload.ljust(reserved, b"\0")
        slots.append(slot)
    return bytes(header) + struct.pack(f"<{len(slots)}Q", *slots) + bytes(var)


def serialize_row(values: Sequence[Any], types: Sequence[pa.DataType]) -> bytes:
    """Manifest form (``SerializationUtils.serializeBinaryRow``): BIG-endian int32 arity + row."""
    return struct.pack(">i", len(types)) + row_bytes(values, types)


EMPTY_ROW: bytes = serialize_row((), ())


def _decode_value(f: _Field, slot: int, data: bytes, fixed_len: int, where: str) -> Any:
    k = f.kind
    if k == "bool":
        return bool(slot & 0xFF)
    if k in ("int", "date", "time"):
        bits = f.width * 8
        raw = slot & ((1 << bits) - 1)
        value = raw - (1 << bits) if raw >> (bits - 1) else raw
        if k == "int":
            return value
        if k == "date":
            return _dt.date.fromordinal(value + _EPOCH_DATE_ORDINAL)
        if not 0 <= value < 86_400_000:
            raise FormatError(f"{where}: TIME millis {value} out of range")
        return (_dt.datetime.min + _dt.timedelta(milliseconds=value)).time()
    if k == "float":
        fmt = "<f" if f.width == 4 else "<d"
        return struct.unpack(fmt, slot.to_bytes(8, "little")[: f.width])[0]

    def var_bytes(offset: int, length: int) -> bytes:
        if offset < fixed_len or offset + length > len(data):
            raise FormatError(f"{where}: var part [{offset}, {offset + length}) outside the "
                              f"{len(data)}-byte row")
        return data[offset: offset + length]

    signed = slot - (1 << 64) if slot >> 63 else slot
    if k == "bytes":
        if slot >> 63:  # inline mark
            n = (slot >> 56) & 0x7F
            if n > _MAX_INLINE:
                raise FormatError(f"{where}: inline length {n} > 7")
            raw = slot.to_bytes(8, "little")[:n]
        else:
            raw = var_bytes(slot >> 32, slot & _U32)
        if not f.is_text:
            return raw
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise FormatError(f"{where}: invalid UTF-8 in STRING: {e}") from None
    if k == "ts":
        if f.compact:
            millis, nano = signed, 0
        else:
            nano = slot & _U32
            if nano >= 1_000_000:
                raise FormatError(f"{where}: nanoOfMillisecond {nano} out of range")
            millis = struct.unpack("<q", var_bytes(slot >> 32, 8))[0]
        micros, sub = divmod(millis * 1_000_000 + nano, 1000)
        try:
            value = _EPOCH_UTC + _dt.timedelta(microseconds=micros)
        except OverflowError:
            raise FormatError(f"{where}: timestamp millis {millis} out of range") from None
        if not f.tz_aware:
            value = value.replace(tzinfo=None)
        return _nano_datetime_from_parts(value, sub) if sub else value
    if k == "dec":
        if f.compact:
            unscaled = signed
        else:
            n = slot & _U32
            if not 1 <= n <= 16:
                raise FormatError(f"{where}: decimal byte length {n} not in 1..16")
            unscaled = int.from_bytes(var_bytes(slot >> 32, n), "big", signed=True)
        # Build from the tuple so the exact scale is kept and no context rounding happens.
        digits = tuple(int(c) for c in str(abs(unscaled)))
        return decimal.Decimal((int(unscaled < 0), digits, -f.scale))
    if k == "nested":
        return None
    raise AssertionError(k)


def deserialize_row(data: bytes, types: Sequence[pa.DataType]) -> list[Any]:
    """Decode the manifest form (arity prefix + BinaryRow) into Python values."""
    data = bytes(data)
    fields = [_field(t) for t in types]
    if len(data) < 4:
        raise FormatError(f"BinaryRow of {len(data)} bytes has no arity prefix")
    arity = struct.unpack_from(">i", data)[0]
    if arity != len(fields):
        raise FormatError(f"BinaryRow arity {arity} does not match the {len(fields)} expected "
                          "field types")
    row = data[4:]
    nb = null_bits_size(arity)
    fixed_len = nb + 8 * arity
    if len(row) < fixed_len:
        raise FormatError(f"BinaryRow of arity {arity} needs at least {fixed_len} bytes, "
                          f"got {len(row)}")
    slots = struct.unpack_from(f"<{arity}Q", row, nb)
    out = []
    for i, (f, slot) in enumerate(zip(fields, slots)):
        if row[(i + 8) >> 3] >> ((i + 8) & 7) & 1:
            out.append(None)
        else:
            out.append(_decode_value(f, slot, row, fixed_len, f"field {i} ({types[i]})"))
    return out


# --------------------------------------------------------------------------------------------
# Vectorized path: Arrow columns
# --------------------------------------------------------------------------------------------

@dataclass
class _ColumnEncoding:
    """One column of ``encode_rows``.

    ``slot`` is the low part of the 8-byte slot; rows with ``var_size > 0`` get
    ``var offset << 32`` OR-ed in once offsets are known, and ``fill(flat, starts)`` writes
    their var bytes at the flat-buffer positions ``starts``.
    """

    slot: np.ndarray
    null: Optional[np.ndarray] = None
    var_size: Optional[np.ndarray] = None
    fill: Optional[Callable[[np.ndarray, np.ndarray], None]] = None


def _as_array(col: Any, t: pa.DataType) -> pa.Array:
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    elif not isinstance(col, pa.Array):
        col = pa.array(col, type=t)
    if pa.types.is_dictionary(col.type):
        col = col.dictionary_decode()
    if col.type != t:
        try:
            col = col.cast(t)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise SchemaMismatchError(f"column of type {col.type} cannot be encoded as {t}: {e}") \
                from None
    return col


def _null_mask(arr: pa.Array) -> Optional[np.ndarray]:
    if arr.null_count == 0:
        return None
    return arr.is_null().to_numpy(zero_copy_only=False)


def _fixed_values(arr: pa.Array, dtype: str, null: Optional[np.ndarray]) -> np.ndarray:
    """Zero-copy view of a fixed-width Arrow buffer (nulls forced to 0, like Java's zero slot)."""
    buf = arr.buffers()[1]
    if buf is None:  # e.g. an all-null array without a data buffer
        return np.zeros(len(arr), dtype)
    values = np.frombuffer(buf, dtype=dtype, count=len(arr) + arr.offset)[arr.offset:]
    if null is not None:
        values = np.where(null, 0, values).astype(dtype, copy=False)
    return values


def _write_blocks(flat: np.ndarray, starts: np.ndarray, block: np.ndarray) -> None:
    """Write row i's ``block[i]`` (fixed width) at ``flat[starts[i]:]``."""
    idx = starts[:, None] + np.arange(block.shape[1], dtype=np.int64)
    flat[idx] = block


def _ragged_index(lens: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For ragged ranges of ``lens`` items laid end to end: ``first`` (exclusive cumsum, where
    range i starts) and ``within`` (each item's position inside its own range)."""
    first = np.cumsum(lens) - lens
    within = np.arange(int(lens.sum()), dtype=np.int64) - np.repeat(first, lens)
    return first, within


def _unaligned_words(data: np.ndarray) -> np.ndarray:
    """uint64 view whose element p holds ``data[p:p+8]`` (little-endian, zero past the end), so
    any byte range can be read a word at a time."""
    padded = np.zeros(len(data) + 8, np.uint8)
    padded[: len(data)] = data
    return np.ndarray((len(data) + 1,), dtype="<u8", buffer=padded, strides=(1,))


# _LOW_BYTES[r] keeps the first r (0..8) bytes of a little-endian word.
_LOW_BYTES = np.array([(1 << (8 * r)) - 1 for r in range(9)], dtype=np.uint64)
_BIT_LENGTH_U8 = np.array([i.bit_length() for i in range(256)], dtype=np.int64)


def _bytes_layout(arr: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(starts, lens, data)`` of a string/binary column: value i is
    ``data[starts[i]:starts[i]+lens[i]]`` (meaningless for null rows)."""
    if pa.types.is_fixed_size_binary(arr.type) or pa.types.is_string_view(arr.type) \
            or pa.types.is_binary_view(arr.type):
        arr = arr.cast(pa.large_binary())
    large = pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type)
    bufs = arr.buffers()
    offsets = np.frombuffer(bufs[1], dtype=np.int64 if large else np.int32,
                            count=arr.offset + len(arr) + 1)[arr.offset:].astype(np.int64)
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None \
        else np.zeros(0, np.uint8)
    return offsets[:-1], np.diff(offsets), data


def _encode_bytes_column(arr: pa.Array, null: Optional[np.ndarray]) -> _ColumnEncoding:
    n = len(arr)
    starts, lens, data = _bytes_layout(arr)
    valid = np.ones(n, bool) if null is None else ~null
    inline = valid & (lens <= _MAX_INLINE)
    out_of_line = valid & (lens > _MAX_INLINE)
    words = _unaligned_words(data)

    # Inline: data bytes at 0..len-1 and 0x80|len in byte 7 (little-endian slot).
    inline_slot = (words[starts] & _LOW_BYTES[np.minimum(lens, 8)]) \
        | ((_INLINE_MARK | lens).astype(np.uint64) << np.uint64(56))
    slot = np.where(inline, inline_slot, np.where(out_of_line, lens, 0).astype(np.uint64))

    var_size = np.where(out_of_line, _round8(lens), 0)
    rows = np.flatnonzero(out_of_line)

    def fill(flat: np.ndarray, row_starts: np.ndarray) -> None:
        # Var offsets and row strides are multiples of 8, so copy whole words; the last word of
        # each value is masked so its padding bytes are zero.
        n_words = var_size[rows] // 8
        first, within = _ragged_index(n_words)
        chunk = words[np.repeat(starts[rows], n_words) + 8 * within]
        chunk[first + n_words - 1] &= _LOW_BYTES[(lens[rows] - 1) % 8 + 1]
        flat.view("<u8")[np.repeat(row_starts[rows] // 8, n_words) + within] = chunk

    return _ColumnEncoding(slot, null, var_size if rows.size else None, fill)


def _decimal_words(arr: pa.Array, null: Optional[np.ndarray]) -> np.ndarray:
    """[n, 16] little-endian two's-complement int128 bytes of a decimal128 column."""
    n = len(arr)
    raw = np.frombuffer(arr.buffers()[1], np.uint8, count=(arr.offset + n) * 16)
    raw = raw[arr.offset * 16:].reshape(n, 16)
    return np.where(null[:, None], 0, raw).astype(np.uint8) if null is not None else raw


def _encode_column(col: Any, t: pa.DataType) -> _ColumnEncoding:
    f = _field(t)
    if f.kind == "nested":
        n = len(col)
        return _ColumnEncoding(np.zeros(n, np.uint64), np.ones(n, bool))
    arr = _as_array(col, t)
    n = len(arr)
    null = _null_mask(arr)
    k = f.kind
    if k == "bool":
        values = arr.fill_null(False).to_numpy(zero_copy_only=False)
        return _ColumnEncoding(values.astype(np.uint64), null)
    if k in ("int", "date"):
        values = _fixed_values(arr, f"<i{f.width}", null)
        # Zero-extend the little-endian bytes: the unused slot bytes stay 0.
        return _ColumnEncoding(values.view(f"<u{f.width}").astype(np.uint64), null)
    if k == "float":
        values = _fixed_values(arr, f"<u{f.width}", null)  # raw IEEE bits, like putFloat
        return _ColumnEncoding(values.astype(np.uint64), null)
    if k == "time":
        width = arr.type.bit_width // 8
        values = _fixed_values(arr, f"<i{width}", null).astype(np.int64)
        millis = values * f.unit_nanos // 1_000_000 if f.unit_nanos < 1_000_000 \
            else values * (f.unit_nanos // 1_000_000)
        return _ColumnEncoding(millis.astype(np.int32).view(np.uint32).astype(np.uint64), null)
    if k == "ts":
        values = _fixed_values(arr, "<i8", null)
        if f.compact:
            millis = values * (f.unit_nanos // 1_000_000) if f.unit_nanos > 1_000_000 else values
            return _ColumnEncoding(millis.view(np.uint64), null)
        per_milli = 1_000_000 // f.unit_nanos
        millis, rest = np.divmod(values, per_milli)  # floor: nanoOfMilli is never negative
        slot = (rest * f.unit_nanos).astype(np.uint64)
        block = np.ascontiguousarray(millis, dtype="<i8").view(np.uint8).reshape(n, 8)
        # Null rows: millis 0 and slot low part 0, but the 8 var bytes are still reserved (as Java writes a null non-compact TIMESTAMP).
        return _ColumnEncoding(slot, null, np.full(n, 8, np.int64),
                               lambda flat, starts: _write_blocks(flat, starts, block))
    if k == "dec":
        le = _decimal_words(arr, null)
        if f.compact:
            return _ColumnEncoding(np.ascontiguousarray(le[:, :8]).view("<u8").ravel(), null)
        be = le[:, ::-1]
        # Minimal two's-complement length (BigInteger.toByteArray): bitLength(x)/8 + 1 with
        # x = v for v >= 0 and ~v for v < 0.
        mag = np.where((be[:, :1] & 0x80).astype(bool), ~be, be)
        nonzero = mag != 0
        first = np.where(nonzero.any(axis=1), nonzero.argmax(axis=1), 16)
        top = mag[np.arange(n), np.minimum(first, 15)]
        bit_len = np.where(first < 16, (15 - first) * 8 + _BIT_LENGTH_U8[top], 0)
        length = bit_len // 8 + 1
        if null is not None:
            length[null] = 0
        # Left-align the last `length` big-endian bytes inside the 16-byte var slot.
        src = (16 - length)[:, None] + np.arange(16)
        inside = src < 16
        block = np.where(inside, be[np.arange(n)[:, None], np.minimum(src, 15)], 0)
        block = block.astype(np.uint8)
        return _ColumnEncoding(length.astype(np.uint64), null, np.full(n, 16, np.int64),
                               lambda flat, starts: _write_blocks(flat, starts, block))
    if k == "bytes":
        return _encode_bytes_column(arr, null)
    raise AssertionError(k)


def encode_rows(columns: Sequence[Any], types: Sequence[pa.DataType]
                ) -> tuple[np.ndarray, np.ndarray]:
    """BinaryRow bytes (no arity prefix) of every row of ``columns``, vectorized.

    Returns ``(buf, lengths)``: ``buf`` is a C-contiguous uint8 array ``[n_rows, max_len]``
    (row i is ``buf[i, :lengths[i]]``, zero padded after it) and ``lengths`` int64. Every
    length is a multiple of 8.
    """
    buf, lengths, _ = _encode_rows(columns, types)
    return buf, lengths


def _encode_rows(columns: Sequence[Any], types: Sequence[pa.DataType]
                 ) -> tuple[np.ndarray, np.ndarray, bool]:
    """``encode_rows`` plus whether any null bit is set (the bucket hash skips the all-zero
    header words when none is)."""
    if len(columns) != len(types):
        raise SchemaMismatchError(f"{len(columns)} columns but {len(types)} types")
    arity = len(types)
    n = len(columns[0]) if arity else 0
    encs = [_encode_column(c, t) for c, t in zip(columns, types)]
    for i, c in enumerate(columns):
        if len(c) != n:
            raise SchemaMismatchError(f"column {i} has {len(c)} rows, column 0 has {n}")

    nb = null_bits_size(arity)
    header_words = nb // 8
    fixed_len = nb + 8 * arity
    fixed = np.zeros((n, header_words + arity), "<u8")
    var_len = np.zeros(n, np.int64)
    var_columns = []
    any_null = False
    for i, enc in enumerate(encs):
        fixed[:, header_words + i] = enc.slot
        if enc.null is not None and enc.null.any():
            any_null = True
            bit = i + 8  # bit 0..7 of the header is the RowKind byte
            fixed[:, bit >> 6] |= enc.null.astype(np.uint64) << np.uint64(bit & 63)
        if enc.var_size is not None:
            offset = fixed_len + var_len
            has_var = enc.var_size > 0
            fixed[has_var, header_words + i] |= offset[has_var].astype(np.uint64) << np.uint64(32)
            var_columns.append((enc, offset))
            var_len += enc.var_size
    lengths = fixed_len + var_len
    fixed_bytes = fixed.view(np.uint8).reshape(n, fixed_len)
    if not var_columns or n == 0:
        return fixed_bytes, lengths, any_null
    width = int(lengths.max())
    buf = np.zeros((n, width), np.uint8)
    buf[:, :fixed_len] = fixed_bytes
    flat = buf.reshape(-1)
    row_base = np.arange(n, dtype=np.int64) * width
    for enc, offset in var_columns:
        enc.fill(flat, row_base + offset)
    return buf, lengths, any_null
