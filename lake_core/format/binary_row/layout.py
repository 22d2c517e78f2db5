"""How each Paimon field type is laid out in a ``BinaryRow``: ``[null bit set][8-byte slot per
field][variable part]`` (Java ``BinaryRow``/``BinarySection``), the null bit set's width, and the
constants of the encoding shared by the scalar and the vectorized paths.

Types are pyarrow DataTypes (the project maps Paimon types 1:1 onto them, see ``field_layout``)."""

from __future__ import annotations

import datetime as _dt
import decimal
import functools
from dataclasses import dataclass

import pyarrow as pa

from lake_core.errors import SchemaError

# Java BinarySection.MAX_FIX_PART_DATA_SIZE: strings/bytes up to 7 bytes live inside the slot.
MAX_INLINE = 7
INLINE_MARK = 0x80
U64 = (1 << 64) - 1
U32 = (1 << 32) - 1
_NANOS_PER_UNIT = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}
EPOCH_DATE_ORDINAL = _dt.date(1970, 1, 1).toordinal()
EPOCH_UTC = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
# Java Decimal.fromBigDecimal rounds HALF_UP; a wide context so 38-digit values are never rounded
# by Python's default 28-digit precision.
DECIMAL_CONTEXT = decimal.Context(prec=100, rounding=decimal.ROUND_HALF_UP)


@dataclass(frozen=True)
class FieldLayout:
    """How one Paimon field is laid out.

    kind: bool | int | float | bytes | date | time | ts | dec | nested.
    ``width`` is the little-endian byte width of int/float/date/time slots; ``compact`` tells
    whether a TIMESTAMP/DECIMAL lives in the slot (p<=3 / p<=18) or in an 8/16-byte var slot
    that is reserved even when the value is null (``null_var_size``).
    """

    kind: str
    width: int = 8
    unit_nanos: int = 1  # ts/time: nanoseconds per stored Arrow unit
    compact: bool = True
    precision: int = 0
    scale: int = 0
    is_text: bool = False  # STRING (decode as UTF-8) vs BYTES
    tz_aware: bool = False  # TIMESTAMP_LTZ

    @property
    def null_var_size(self) -> int:
        if self.compact or self.kind not in ("ts", "dec"):
            return 0
        return 16 if self.kind == "dec" else 8


@functools.cache
def field_layout(t: pa.DataType) -> FieldLayout:
    if pa.types.is_boolean(t):
        return FieldLayout("bool", 1)
    if pa.types.is_integer(t):
        if t.bit_width == 64 and pa.types.is_unsigned_integer(t):
            raise SchemaError(f"unsigned 64-bit type {t} has no Paimon equivalent; use int64")
        if pa.types.is_unsigned_integer(t):
            raise SchemaError(f"unsigned integer type {t} has no Paimon equivalent; cast to the next wider signed type")
        return FieldLayout("int", t.bit_width // 8)
    if pa.types.is_float32(t):
        return FieldLayout("float", 4)
    if pa.types.is_float64(t):
        return FieldLayout("float", 8)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return FieldLayout("bytes", is_text=True)
    if (
        pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_binary_view(t)
        or pa.types.is_fixed_size_binary(t)
    ):
        return FieldLayout("bytes")
    if pa.types.is_date32(t):
        return FieldLayout("date", 4)
    if pa.types.is_time(t):
        # Paimon TIME of any precision is stored as int millis of the day.
        return FieldLayout("time", 4, unit_nanos=_NANOS_PER_UNIT[t.unit])
    if pa.types.is_timestamp(t):
        # s/ms -> TIMESTAMP(0..3), compact epoch millis; us/ns -> TIMESTAMP(6/9), var slot.
        return FieldLayout(
            "ts", unit_nanos=_NANOS_PER_UNIT[t.unit], compact=t.unit in ("s", "ms"), tz_aware=t.tz is not None
        )
    if pa.types.is_decimal(t):
        if t.precision > 38:
            raise SchemaError(f"{t}: Paimon DECIMAL precision is at most 38")
        return FieldLayout("dec", compact=t.precision <= 18, precision=t.precision, scale=t.scale)
    if pa.types.is_nested(t) or pa.types.is_null(t):
        # ARRAY/MAP/ROW never appear in partition/key rows; stats rows store them as null.
        return FieldLayout("nested")
    raise SchemaError(f"type {t} cannot be encoded in a Paimon BinaryRow")


def null_bits_size(arity: int) -> int:
    """Java ``BinaryRow.calculateBitSetWidthInBytes``: header byte + one bit per field, in words."""
    return ((arity + 63 + 8) // 64) * 8


def round8(n):
    return (n + 7) & ~7
