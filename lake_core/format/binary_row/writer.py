"""The scalar ``BinaryRow`` writer (Java ``BinaryRowWriter``): one row of Python values to bytes with
``struct``, the readable reference the vectorized ``column_encoder`` is tested against.
``serialize_row`` is the manifest form (Java ``SerializationUtils.serializeBinaryRow``)."""

from __future__ import annotations

import datetime as _dt
import decimal
import operator
import struct
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from lake_core.errors import SchemaMismatchError
from lake_core.format.binary_row.layout import (
    DECIMAL_CONTEXT,
    EPOCH_DATE_ORDINAL,
    EPOCH_UTC,
    INLINE_MARK,
    MAX_INLINE,
    U32,
    U64,
    FieldLayout,
    field_layout,
    null_bits_size,
    round8,
)


def _epoch_nanos(v: Any) -> int:
    """Nanoseconds since the epoch: naive datetimes are wall clock read as UTC, aware ones the
    instant (the same rule pyarrow uses when it builds timestamp arrays)."""
    if not isinstance(v, _dt.datetime):
        raise TypeError
    delta = v - (EPOCH_UTC if v.tzinfo is not None else EPOCH_UTC.replace(tzinfo=None))
    micros = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    return micros * 1000 + int(getattr(v, "nanosecond", 0))


def _unscaled(f: FieldLayout, v: Any) -> int:
    """Unscaled integer of ``v`` at the field's scale (Java Decimal.fromBigDecimal: HALF_UP)."""
    if isinstance(v, bool) or not isinstance(v, (decimal.Decimal, int, float, str)):
        raise TypeError
    d = v if isinstance(v, decimal.Decimal) else decimal.Decimal(repr(v) if isinstance(v, float) else v)
    if not d.is_finite():
        raise ValueError(f"{v!r} is not a finite decimal")
    q = DECIMAL_CONTEXT.quantize(d, decimal.Decimal(1).scaleb(-f.scale))
    sign, digits, _ = q.as_tuple()
    unscaled = int("".join(map(str, digits)) or "0") * (-1 if sign else 1)
    if abs(unscaled) >= 10**f.precision:
        raise ValueError(f"{v!r} does not fit DECIMAL({f.precision}, {f.scale})")
    return unscaled


def _encode_value(f: FieldLayout, v: Any) -> tuple[int, bytes | None, int]:
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
        if n <= MAX_INLINE:
            # Java writeBytesToFixLenPart: data in bytes 0..n-1, 0x80|len in byte 7.
            return int.from_bytes(data, "little") | ((INLINE_MARK | n) << 56), None, 0
        return n, data, round8(n)
    if k == "date":
        days = v if isinstance(v, int) else v.toordinal() - EPOCH_DATE_ORDINAL
        return days & U32, None, 0
    if k == "time":
        if isinstance(v, int):
            millis = v * f.unit_nanos // 1_000_000
        elif isinstance(v, _dt.time):
            millis = ((v.hour * 60 + v.minute) * 60 + v.second) * 1000 + v.microsecond // 1000
        else:
            raise TypeError
        return millis & U32, None, 0
    if k == "ts":
        # ints are raw values in the Arrow unit; datetimes are floored to the unit first so a
        # Python value encodes like the same value in an Arrow column of this type.
        units = v if isinstance(v, int) else _epoch_nanos(v) // f.unit_nanos
        nanos = units * f.unit_nanos
        millis, nano_of_milli = divmod(nanos, 1_000_000)
        if f.compact:
            return millis & U64, None, 0
        return nano_of_milli, struct.pack("<q", millis), 8
    if k == "dec":
        unscaled = _unscaled(f, v)
        if f.compact:
            return unscaled & U64, None, 0
        # Java BigInteger.toByteArray(): minimal big-endian two's complement.
        raw = unscaled.to_bytes(_signed_len(unscaled), "big", signed=True)
        return len(raw), raw, 16
    raise AssertionError(k)


def _signed_len(x: int) -> int:
    """Length of Java ``BigInteger.toByteArray()`` = bitLength/8 + 1."""
    return (x if x >= 0 else ~x).bit_length() // 8 + 1


def row_bytes(values: Sequence[Any], types: Sequence[pa.DataType]) -> bytes:
    """BinaryRow bytes (no arity prefix) of one row, RowKind byte 0 (+I)."""
    fields = [field_layout(t) for t in types]
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
            # Java's writeDecimal/writeTimestamp(null) reserve zeroed var bytes and still
            # store their offset; every other type is slot 0.
            reserve = f.null_var_size
            slots.append((fixed_len + len(var)) << 32 if reserve else 0)
            var += bytes(reserve)
            continue
        try:
            slot, payload, reserved = _encode_value(f, v)
        except (TypeError, ValueError, OverflowError, struct.error, decimal.InvalidOperation) as e:
            raise SchemaMismatchError(
                f"field {i}: cannot encode {v!r} ({type(v).__name__}) as {types[i]}" + (f": {e}" if str(e) else "")
            ) from None
        if payload is not None:
            slot |= (fixed_len + len(var)) << 32
            var += payload.ljust(reserved, b"\0")
        slots.append(slot)
    return bytes(header) + struct.pack(f"<{len(slots)}Q", *slots) + bytes(var)


def serialize_row(values: Sequence[Any], types: Sequence[pa.DataType]) -> bytes:
    """Manifest form (``SerializationUtils.serializeBinaryRow``): BIG-endian int32 arity + row."""
    return struct.pack(">i", len(types)) + row_bytes(values, types)


EMPTY_ROW: bytes = serialize_row((), ())
