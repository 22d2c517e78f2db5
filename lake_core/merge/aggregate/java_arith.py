"""Scalar arithmetic with Java's semantics for one column type: integers wrap on overflow, integer
division truncates toward zero, FLOAT rounds to 32 bits, DECIMAL rounds HALF_UP to its scale and
becomes NULL when its precision is exceeded (Java ``Decimal.fromBigDecimal``)."""

from __future__ import annotations

import decimal
import math

import numpy as np
import pyarrow as pa

from lake_core.errors import InvalidDataError

_INT_BITS = {pa.int8(): 8, pa.int16(): 16, pa.int32(): 32, pa.int64(): 64}


def _wrap(v: int, bits: int) -> int:
    m = 1 << bits
    v &= m - 1
    return v - m if v >= (m >> 1) else v


def _java_div(a: int, b: int) -> int:
    if b == 0:
        raise InvalidDataError("integer division by zero while retracting a 'product' aggregate")
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _decimal_fit(v: decimal.Decimal | None, t: pa.DataType) -> decimal.Decimal | None:
    """Java ``Decimal.fromBigDecimal``: round HALF_UP to the scale, NULL when the precision is
    exceeded."""
    if v is None:
        return None
    q = v.quantize(
        decimal.Decimal(1).scaleb(-t.scale), rounding=decimal.ROUND_HALF_UP, context=decimal.Context(prec=200)
    )
    digits = len(q.as_tuple().digits) if q != 0 else 1
    if digits > t.precision:
        return None
    return q


class JavaArith:
    """add / sub / mul / div / neg with Java's semantics for one column type."""

    def __init__(self, t: pa.DataType):
        self.t = t
        self.bits = _INT_BITS.get(t)
        self.f32 = pa.types.is_float32(t)
        self.dec = pa.types.is_decimal(t)

    def _fix(self, v):
        if self.bits:
            return _wrap(int(v), self.bits)
        if self.f32:
            return float(np.float32(v))
        if self.dec:
            return _decimal_fit(v, self.t)
        return float(v)

    def add(self, a, b):
        if self.f32:
            return float(np.float32(a) + np.float32(b))
        if self.dec:
            return _decimal_fit(decimal.Context(prec=200).add(a, b), self.t)
        return self._fix(a + b)

    def sub(self, a, b):
        if self.f32:
            return float(np.float32(a) - np.float32(b))
        if self.dec:
            return _decimal_fit(decimal.Context(prec=200).subtract(a, b), self.t)
        return self._fix(a - b)

    def mul(self, a, b):
        if self.f32:
            return float(np.float32(a) * np.float32(b))
        if self.dec:
            return _decimal_fit(decimal.Context(prec=200).multiply(a, b), self.t)
        return self._fix(a * b)

    def div(self, a, b):
        if self.bits:
            return _wrap(_java_div(int(a), int(b)), self.bits)
        if self.f32:
            with np.errstate(all="ignore"):
                return float(np.float32(a) / np.float32(b))
        if self.dec:
            if b == 0:
                raise InvalidDataError("division by zero while retracting a 'product' aggregate")
            return _decimal_fit(decimal.Context(prec=200).divide(a, b), self.t)
        if b == 0:
            return math.copysign(math.inf, a) * math.copysign(1.0, b) if a != 0 else math.nan
        return a / b

    def neg(self, a):
        if a is None:
            return None
        if self.dec:
            return _decimal_fit(-a, self.t)
        return self._fix(-a)
