"""The ``BinaryRow`` reader: the manifest form (arity prefix + BinaryRow) back to Python values,
refusing rows whose bytes do not fit the expected field types."""

from __future__ import annotations

import datetime as _dt
import decimal
import struct
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from lake_core.errors import FormatError
from lake_core.format.binary_row.layout import (
    EPOCH_DATE_ORDINAL,
    EPOCH_UTC,
    MAX_INLINE,
    U32,
    FieldLayout,
    field_layout,
    null_bits_size,
)
from lake_core.format.binary_row.nano_datetime import nano_datetime_from_parts


def _decode_value(f: FieldLayout, slot: int, data: bytes, fixed_len: int, where: str) -> Any:
    k = f.kind
    if k == "bool":
        return bool(slot & 0xFF)
    if k in ("int", "date", "time"):
        bits = f.width * 8
        low = slot & ((1 << bits) - 1)
        value = low - (1 << bits) if low >> (bits - 1) else low
        if k == "int":
            return value
        if k == "date":
            return _dt.date.fromordinal(value + EPOCH_DATE_ORDINAL)
        if not 0 <= value < 86_400_000:
            raise FormatError(f"{where}: TIME millis {value} out of range")
        return (_dt.datetime.min + _dt.timedelta(milliseconds=value)).time()
    if k == "float":
        fmt = "<f" if f.width == 4 else "<d"
        return struct.unpack(fmt, slot.to_bytes(8, "little")[: f.width])[0]

    def var_bytes(offset: int, length: int) -> bytes:
        if offset < fixed_len or offset + length > len(data):
            raise FormatError(f"{where}: var part [{offset}, {offset + length}) outside the {len(data)}-byte row")
        return data[offset : offset + length]

    signed = slot - (1 << 64) if slot >> 63 else slot
    if k == "bytes":
        if slot >> 63:  # inline mark
            n = (slot >> 56) & 0x7F
            if n > MAX_INLINE:
                raise FormatError(f"{where}: inline length {n} > 7")
            raw = slot.to_bytes(8, "little")[:n]
        else:
            raw = var_bytes(slot >> 32, slot & U32)
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
            nano = slot & U32
            if nano >= 1_000_000:
                raise FormatError(f"{where}: nanoOfMillisecond {nano} out of range")
            millis = struct.unpack("<q", var_bytes(slot >> 32, 8))[0]
        micros, sub = divmod(millis * 1_000_000 + nano, 1000)
        try:
            when = EPOCH_UTC + _dt.timedelta(microseconds=micros)
        except OverflowError:
            raise FormatError(f"{where}: timestamp millis {millis} out of range") from None
        if not f.tz_aware:
            when = when.replace(tzinfo=None)
        return nano_datetime_from_parts(when, sub) if sub else when
    if k == "dec":
        if f.compact:
            unscaled = signed
        else:
            n = slot & U32
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
    fields = [field_layout(t) for t in types]
    if len(data) < 4:
        raise FormatError(f"BinaryRow of {len(data)} bytes has no arity prefix")
    arity = struct.unpack_from(">i", data)[0]
    if arity != len(fields):
        raise FormatError(f"BinaryRow arity {arity} does not match the {len(fields)} expected field types")
    row = data[4:]
    nb = null_bits_size(arity)
    fixed_len = nb + 8 * arity
    if len(row) < fixed_len:
        raise FormatError(f"BinaryRow of arity {arity} needs at least {fixed_len} bytes, got {len(row)}")
    slots = struct.unpack_from(f"<{arity}Q", row, nb)
    out: list[Any] = []
    for i, (f, slot) in enumerate(zip(fields, slots)):
        if row[(i + 8) >> 3] >> ((i + 8) & 7) & 1:
            out.append(None)
        else:
            out.append(_decode_value(f, slot, row, fixed_len, f"field {i} ({types[i]})"))
    return out
