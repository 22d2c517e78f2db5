"""Paimon's field aggregate functions, in one place for the aggregation engine and for
partial-update's per-field aggregates (``fields.<f>.aggregate-function``).

Every function has two faces:

* a **scalar** face mirroring Java's ``FieldAggregator`` (``agg``, ``agg_reversed``, ``retract``,
  ``reset``), used by the per-group fallback and as the definition of the semantics;
* a **vectorized** face, :meth:`AggFunction.reduce`, that folds every key group of a sorted
  column at once (NumPy ``reduceat``/segmented scans, Arrow kernels).

``reduce`` receives the column already in merge order, the key-group ``Segments`` and one op per
row: ``ADD`` (``agg``), ``ADD_REVERSED`` (partial-update sequence groups: a row older than the
group's stored sequence, Java ``aggReversed``), ``RETRACT`` (``-U``/``-D``) or ``SKIP``. The fold
of a group starts from NULL, exactly as Java starts from an empty ``GenericRow``.

Functions whose values are opaque blobs or nested collections (rbm32, rbm64, hll_sketch,
theta_sketch, collect, merge_map, nested_update) and a few rare combinations (listagg with
``distinct``, DECIMAL wider than 18 digits, ``product`` with retractions, order-sensitive
functions fed ``ADD_REVERSED`` rows) fold per key group in Python: those are per-group loops over
library objects (pyroaring, datasketches) or Python collections, not per-row loops over the
numeric/string data path.
"""
from __future__ import annotations

import decimal
import math
import re
from dataclasses import dataclass
from functools import cached_property
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_core.errors import InvalidDataError, InvalidOptionError, SchemaError
from lake_core.options import CoreOptions

SKIP, ADD, ADD_REVERSED, RETRACT = 0, 1, 2, 3

# ------------------------------------------------------------------------------------------------
# Segments (key groups over rows already in merge order)
# ------------------------------------------------------------------------------------------------


SMALL_GROUP = 64


@dataclass(frozen=True)
class Segments:
    """Contiguous key groups: group ``g`` spans rows ``starts[g]:ends[g]`` (never empty)."""

    starts: np.ndarray
    ends: np.ndarray

    @property
    def count(self) -> int:
        return len(self.starts)

    @property
    def n(self) -> int:
        return int(self.ends[-1]) if len(self.ends) else 0

    @cached_property
    def sizes(self) -> np.ndarray:
        return self.ends - self.starts

    @cached_property
    def seg_id(self) -> np.ndarray:
        """Group number of every row."""
        return np.repeat(np.arange(self.count, dtype=np.int64), self.sizes)

    @cached_property
    def positions(self) -> np.ndarray:
        return np.arange(self.n, dtype=np.int64)

    @cached_property
    def rounds(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """For j = 1, 2, ...: (groups of at most SMALL_GROUP rows having a row j, that row's
        position). Folding round by round visits every small group's rows in order, vectorized
        across groups; most groups hold one or two rows, so this beats ``ufunc.reduceat`` (whose
        cost is per group)."""
        sizes = self.sizes
        active = np.flatnonzero((sizes > 1) & (sizes <= SMALL_GROUP))
        out = []
        j = 1
        while len(active):
            out.append((active, self.starts[active] + j))
            j += 1
            active = active[sizes[active] > j]
        return out

    @cached_property
    def large(self) -> np.ndarray:
        return np.flatnonzero(self.sizes > SMALL_GROUP)

    def subset(self, groups: np.ndarray) -> tuple["Segments", np.ndarray]:
        """The segments of ``groups`` (sorted group numbers) re-based onto their gathered rows,
        and the row indices to gather."""
        sizes = self.sizes[groups]
        new_ends = np.cumsum(sizes)
        new_starts = new_ends - sizes
        rows = np.repeat(self.starts[groups] - new_starts, sizes) + np.arange(int(sizes.sum()), dtype=np.int64)
        return Segments(new_starts.astype(np.int64), new_ends.astype(np.int64)), rows


def seg_reduce(ufunc: np.ufunc, x: np.ndarray, seg: Segments, ordered: bool = False) -> np.ndarray:
    """Per-group ``ufunc`` fold. With ``ordered`` (floating-point add/multiply) the fold is the
    exact left fold ``((x0 op x1) op x2) ...``, as Java's accumulator computes it."""
    if seg.count == 0:
        return x[:0].copy()
    out = x[seg.starts]
    for groups, rows in seg.rounds:
        out[groups] = ufunc(out[groups], x[rows])
    large = seg.large
    if len(large):
        if ordered:
            for g in large.tolist():
                out[g] = ufunc.accumulate(x[seg.starts[g]:seg.ends[g]])[-1]
        else:
            sub, rows = seg.subset(large)
            out[large] = ufunc.reduceat(x[rows], sub.starts, dtype=x.dtype)
    return out


def last_index(seg: Segments, mask: np.ndarray) -> np.ndarray:
    """Per group, the last row where ``mask`` holds (-1: none)."""
    return seg_reduce(np.maximum, np.where(mask, seg.positions, -1), seg)


def first_index(seg: Segments, mask: np.ndarray) -> np.ndarray:
    """Per group, the first row where ``mask`` holds (-1: none)."""
    big = np.int64(seg.n)
    r = seg_reduce(np.minimum, np.where(mask, seg.positions, big), seg)
    r[r == big] = -1
    return r


def any_per_group(seg: Segments, mask: np.ndarray) -> np.ndarray:
    return seg_reduce(np.logical_or, np.asarray(mask, dtype=bool), seg)


def take_or_null(values: pa.Array, idx: np.ndarray) -> pa.Array:
    """``values[idx]`` with NULL where ``idx < 0``."""
    neg = idx < 0
    if neg.any():
        return values.take(pa.array(np.where(neg, 0, idx), type=pa.int64(), mask=neg))
    return values.take(pa.array(idx, type=pa.int64()))


def combine_groups(fast: pa.Array, slow: pa.Array, slow_groups: np.ndarray) -> pa.Array:
    """``fast`` with the entries of ``slow_groups`` replaced by ``slow`` (any Arrow type)."""
    if len(slow_groups) == 0:
        return fast
    both = pa.concat_arrays([fast, slow.cast(fast.type) if slow.type != fast.type else slow])
    perm = np.arange(len(fast), dtype=np.int64)
    perm[slow_groups] = len(fast) + np.arange(len(slow_groups), dtype=np.int64)
    return both.take(pa.array(perm))


# ------------------------------------------------------------------------------------------------
# Arrow <-> NumPy helpers
# ------------------------------------------------------------------------------------------------


def _valid(values: pa.Array) -> np.ndarray:
    if values.null_count == 0:
        return np.ones(len(values), bool)
    return values.is_valid().to_numpy(zero_copy_only=False)


def _is_temporal(t: pa.DataType) -> bool:
    return pa.types.is_date(t) or pa.types.is_timestamp(t) or pa.types.is_time(t) or pa.types.is_duration(t)


def _int_view_type(t: pa.DataType) -> pa.DataType:
    return pa.int64() if t.bit_width == 64 else pa.int32()


def _numeric(values: pa.Array, fill) -> tuple[np.ndarray, np.ndarray] | None:
    """(NumPy values with NULLs replaced by ``fill``, validity) for ints, floats, temporal types
    and DECIMAL(p<=18) (as unscaled int64); None when the type has no NumPy form."""
    t = values.type
    valid = _valid(values)
    if pa.types.is_integer(t) or pa.types.is_floating(t):
        arr = values
    elif _is_temporal(t):
        arr = values.view(_int_view_type(t))
    elif pa.types.is_decimal128(t) and t.precision <= 18:
        x = _decimal_to_int64(values)
        if not valid.all():
            x = np.where(valid, x, fill)
        return x, valid
    else:
        return None
    if arr.null_count:
        arr = pc.fill_null(arr, pa.scalar(fill, arr.type))
    return arr.to_numpy(zero_copy_only=False), valid


def _from_numeric(x: np.ndarray, valid: np.ndarray | None, t: pa.DataType) -> pa.Array:
    mask = None if valid is None or valid.all() else ~valid
    if pa.types.is_integer(t) or pa.types.is_floating(t):
        return pa.array(x.astype(t.to_pandas_dtype(), copy=False), type=t, mask=mask)
    if _is_temporal(t):
        vt = _int_view_type(t)
        return pa.array(x.astype(vt.to_pandas_dtype(), copy=False), type=vt, mask=mask).view(t)
    if pa.types.is_decimal128(t):
        return _int64_to_decimal(x.astype(np.int64, copy=False), mask, t)
    raise TypeError(t)


def _decimal_to_int64(values: pa.Array) -> np.ndarray:
    """Unscaled int64 of a decimal128 array whose values fit in 64 bits (precision <= 18)."""
    buf = values.buffers()[1]
    words = np.frombuffer(buf, dtype=np.int64, count=2 * (len(values) + values.offset))
    return words[2 * values.offset::2].copy()


def _int64_to_decimal(x: np.ndarray, mask: np.ndarray | None, t: pa.DataType) -> pa.Array:
    words = np.empty(2 * len(x), np.int64)
    words[0::2] = x
    words[1::2] = x >> 63  # sign extension of the 128-bit two's complement
    validity = None
    null_count = 0
    if mask is not None and mask.any():
        validity = pa.array(~mask).buffers()[1]
        null_count = int(mask.sum())
    return pa.Array.from_buffers(t, len(x), [validity, pa.py_buffer(words.tobytes())], null_count=null_count)


# ------------------------------------------------------------------------------------------------
# Scalar helpers (Java arithmetic)
# ------------------------------------------------------------------------------------------------

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
    q = v.quantize(decimal.Decimal(1).scaleb(-t.scale), rounding=decimal.ROUND_HALF_UP,
                   context=decimal.Context(prec=200))
    digits = len(q.as_tuple().digits) if q != 0 else 1
    if digits > t.precision:
        return None
    return q


class _Arith:
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


# Java Character.isWhitespace (StringUtils.isBlank): space separators except no-break ones,
# plus \t \n \x0b \f \r and \x1c-\x1f.
_BLANK_RE = "^[\t\n\x0b\f\r\x1c-\x1f \u1680\u2000-\u2006\u2008-\u200a\u2028\u2029\u205f\u3000]*$"
_BLANK_PY = re.compile(_BLANK_RE)


def _is_blank(s: str | None) -> bool:
    return s is None or _BLANK_PY.match(s) is not None


def _split_whole(s: str, sep: str) -> list[str]:
    """commons-lang ``splitByWholeSeparatorPreserveAllTokens`` (non-empty separator)."""
    if s == "":
        return []
    return s.split(sep) if sep else s.split()


# ------------------------------------------------------------------------------------------------
# Type predicates (the types each function accepts, as the seeds list them)
# ------------------------------------------------------------------------------------------------


def _t_numeric(t):  # DECIMAL, TINYINT, SMALLINT, INTEGER, BIGINT, FLOAT, DOUBLE
    return pa.types.is_integer(t) and t.bit_width <= 64 and pa.types.is_signed_integer(t) \
        or pa.types.is_floating(t) and t.bit_width >= 32 or pa.types.is_decimal(t)


def _t_count(t):  # INTEGER, BIGINT
    return t in (pa.int32(), pa.int64())


def _t_comparable(t):  # CHAR, VARCHAR, numeric, DATE, TIME, TIMESTAMP, TIMESTAMP_LTZ
    return _t_numeric(t) or pa.types.is_string(t) or pa.types.is_large_string(t) \
        or pa.types.is_date(t) or pa.types.is_time(t) or pa.types.is_timestamp(t)


def _t_any(t):
    return True


def _t_string(t):
    return pa.types.is_string(t) or pa.types.is_large_string(t)


def _t_bool(t):
    return pa.types.is_boolean(t)


def _t_array(t):
    return pa.types.is_list(t) or pa.types.is_large_list(t)


def _t_array_of_row(t):
    return _t_array(t) and pa.types.is_struct(t.value_type)


def _t_map(t):
    return pa.types.is_map(t)


def _t_varbinary(t):
    return pa.types.is_binary(t) or pa.types.is_large_binary(t)


# ------------------------------------------------------------------------------------------------
# The functions
# ------------------------------------------------------------------------------------------------


class AggFunction:
    """One column's aggregate. Subclasses override the scalar face and, when they can, ``reduce``."""

    name = ""
    accepts: Callable[[pa.DataType], bool] = staticmethod(_t_any)
    accepted_types = "all types"
    retract_supported = False
    #: ``agg_reversed`` == ``agg`` (the fold ignores row order), so ADD_REVERSED folds like ADD.
    commutative = False
    #: merging a lone +I row may not reproduce the row (Java passes single rows through).
    may_change_single = False

    def __init__(self, column: str, dtype: pa.DataType, options: CoreOptions | None = None):
        self.column = column
        self.type = dtype
        self.options = options or CoreOptions({})

    def option(self, suffix: str, default: str | None = None) -> str | None:
        return self.options.raw.get(f"fields.{self.column}.{suffix}", default)

    # -- scalar face (Java FieldAggregator) -------------------------------------------------------
    def reset(self) -> None:
        pass

    def agg(self, acc, v):
        raise NotImplementedError

    def agg_reversed(self, acc, v):
        return self.agg(v, acc)

    def retract(self, acc, v):
        raise InvalidDataError(retract_error(self.column, self.name))

    # -- vectorized face -------------------------------------------------------------------------
    def reduce(self, values: pa.Array, seg: Segments, ops: np.ndarray) -> pa.Array:
        """Fold every group; handles ADD_REVERSED by commutativity or a per-group fallback."""
        if self.commutative:
            ops = np.where(ops == ADD_REVERSED, ADD, ops).astype(np.int8)
        elif (ops == ADD_REVERSED).any():
            slow_groups = np.flatnonzero(any_per_group(seg, ops == ADD_REVERSED))
            fast = self.reduce_vec(values, seg, np.where(ops == ADD_REVERSED, SKIP, ops).astype(np.int8))
            sub, rows = seg.subset(slow_groups)
            idx = pa.array(rows)
            slow = self.reduce_seq(values.take(idx), sub, ops[rows])
            return combine_groups(fast, slow, slow_groups)
        return self.reduce_vec(values, seg, ops)

    def reduce_vec(self, values: pa.Array, seg: Segments, ops: np.ndarray) -> pa.Array:
        """Vectorized fold for ops in {SKIP, ADD, RETRACT}; default: per-group fallback."""
        return self.reduce_seq(values, seg, ops)

    def pick(self, valid: np.ndarray, seg: Segments, ops: np.ndarray) -> np.ndarray | None:
        """For a function whose result is one row of the group (first/last value): that row per
        group (-1: NULL), so the merge can take any column by index without folding it; None for
        the others. ``valid``: rows whose value is not NULL; ops in {SKIP, ADD, RETRACT}."""
        return None

    def to_py(self, values: pa.Array) -> list:
        return values.to_pylist()

    def from_py(self, out: list) -> pa.Array:
        return pa.array(out, type=self.type)

    def reduce_seq(self, values: pa.Array, seg: Segments, ops: np.ndarray) -> pa.Array:
        """Per-group fold with the scalar face (Java's loop, one group at a time)."""
        vals = self.to_py(values)
        ops_l = ops.tolist()
        out = []
        for s, e in zip(seg.starts.tolist(), seg.ends.tolist()):
            self.reset()
            acc = None
            for i in range(s, e):
                op = ops_l[i]
                if op == ADD:
                    acc = self.agg(acc, vals[i])
                elif op == RETRACT:
                    acc = self.retract(acc, vals[i])
                elif op == ADD_REVERSED:
                    acc = self.agg_reversed(acc, vals[i])
            out.append(acc)
        return self.from_py(out)


def retract_error(column: str, function: str) -> str:
    return (f"column '{column}': aggregate function '{function}' does not support retraction "
            f"(-U/-D rows); set 'fields.{column}.ignore-retract' = 'true' to ignore retractions "
            f"for this column, or 'aggregation.remove-record-on-delete' = 'true' to delete the "
            f"whole row on -D")


def _fold_contributions(ufunc: np.ufunc, x: np.ndarray, contrib: np.ndarray, identity,
                        seg: Segments, t: pa.DataType) -> pa.Array:
    """Per group, ``ufunc`` over the rows where ``contrib`` holds (the others count as
    ``identity``); NULL for a group with no such row. Floats fold in row order because their
    rounding depends on it (Java's accumulator is a left fold)."""
    x = np.where(contrib, x, np.full(1, identity, x.dtype))
    if seg.count == 0:
        return pa.array([], type=t)
    res = seg_reduce(ufunc, x, seg, ordered=x.dtype.kind == "f")
    return _from_numeric(res, any_per_group(seg, contrib), t)


class _ArithAgg(AggFunction):
    """``sum`` and ``product``: Java arithmetic (``_Arith``) on numeric columns."""

    accepts = staticmethod(_t_numeric)
    accepted_types = "DECIMAL, TINYINT, SMALLINT, INTEGER, BIGINT, FLOAT, DOUBLE"
    retract_supported = True
    commutative = True

    def __init__(self, column, dtype, options=None):
        super().__init__(column, dtype, options)
        self.ar = _Arith(dtype)


class SumAgg(_ArithAgg):
    name = "sum"

    def agg(self, acc, v):
        if acc is None or v is None:
            return v if acc is None else acc
        return self.ar.add(acc, v)

    def retract(self, acc, v):
        if acc is None or v is None:
            return self.ar.neg(v) if acc is None else acc
        return self.ar.sub(acc, v)

    def reduce_vec(self, values, seg, ops):
        t = values.type
        num = _numeric(values, 0)
        if num is None or (pa.types.is_decimal(t) and t.precision > 18):
            return self.reduce_seq(values, seg, ops)
        x, valid = num
        contrib = valid & (ops != SKIP)
        retract = ops == RETRACT
        if retract.any():
            x = np.where(retract, -x, x)  # integer negation wraps like Java's
        return _fold_contributions(np.add, x, contrib, 0, seg, t)


class CountAgg(SumAgg):
    """``count``: the number of non-NULL inputs (INT/BIGINT). Java's old FieldCountAgg counted
    ``accumulator + 1`` and so re-counted an already folded count as 1 when files were merged
    again; here :func:`count_contributions` turns every incoming value into its contribution (1 or
    0) when the row enters the table (``prepare_input``), and the merge sums contributions, which
    folds and re-merges exactly."""

    name = "count"
    accepts = staticmethod(_t_count)
    accepted_types = "INTEGER, BIGINT"

    def agg(self, acc, v):
        v = 0 if v is None else v
        return v if acc is None else self.ar.add(acc, v)

    def retract(self, acc, v):
        v = 0 if v is None else v
        return self.ar.neg(v) if acc is None else self.ar.sub(acc, v)

    def reduce_vec(self, values, seg, ops):
        # values are contributions (prepare_input's 0/1; a NULL counts 0): a group with any
        # non-SKIP row has a count, so validity plays no part
        x, _ = _numeric(values, 0)
        x = np.where(ops == RETRACT, -x, x)
        return _fold_contributions(np.add, x, ops != SKIP, 0, seg, values.type)


def count_contributions(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    """The contribution of raw input values to a ``count`` column: 1 for a value, 0 for NULL."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    return pc.cast(values.is_valid(), values.type)


class ProductAgg(_ArithAgg):
    name = "product"
    commutative = True  # for ADD; retractions (division) fold per group in order

    def agg(self, acc, v):
        if acc is None or v is None:
            return v if acc is None else acc
        return self.ar.mul(acc, v)

    def retract(self, acc, v):
        if acc is None or v is None:
            return v if acc is None else acc
        return self.ar.div(acc, v)

    def reduce_vec(self, values, seg, ops):
        t = values.type
        num = None if pa.types.is_decimal(t) else _numeric(values, 1)
        if num is None or (ops == RETRACT).any():
            return self.reduce_seq(values, seg, ops)
        x, valid = num
        return _fold_contributions(np.multiply, x, valid & (ops != SKIP), 1, seg, t)


class _ExtremeAgg(AggFunction):
    accepts = staticmethod(_t_comparable)
    accepted_types = ("CHAR, VARCHAR, DECIMAL, TINYINT, SMALLINT, INTEGER, BIGINT, FLOAT, DOUBLE, DATE, "
                      "TIME, TIMESTAMP, TIMESTAMP_LTZ")
    commutative = True
    is_max = True

    def _better(self, a, b) -> bool:
        """True when ``b`` replaces the accumulator ``a`` (Java compare(acc, input) < 0 for max)."""
        if isinstance(a, float) or isinstance(b, float):
            # Double.compare: NaN is the largest value
            ka = (1, 0.0) if a != a else (0, a)
            kb = (1, 0.0) if b != b else (0, b)
            return kb > ka if self.is_max else kb < ka
        if isinstance(a, str):
            a, b = a.encode(), b.encode()
        return b > a if self.is_max else b < a

    def agg(self, acc, v):
        if acc is None or v is None:
            return v if acc is None else acc
        return v if self._better(acc, v) else acc

    def reduce_vec(self, values, seg, ops):
        t = values.type
        if seg.count == 0:
            return pa.array([], type=t)
        contrib_ops = ops != SKIP
        num = _numeric(values, 0)
        if num is not None:
            x, valid = num
            contrib = valid & contrib_ops
            has = any_per_group(seg, contrib)
            if x.dtype.kind == "f":
                nan = np.isnan(x) & contrib
                plain = contrib & ~nan
                if self.is_max:
                    filled = np.where(plain, x, -np.inf)
                    res = seg_reduce(np.maximum, filled, seg)
                    res = np.where(any_per_group(seg, nan), np.nan, res)
                else:
                    filled = np.where(plain, x, np.inf)
                    res = seg_reduce(np.minimum, filled, seg)
                    res = np.where(any_per_group(seg, plain), res, np.nan)
            else:
                info = np.iinfo(x.dtype)
                filled = np.where(contrib, x, info.min if self.is_max else info.max)
                uf = np.maximum if self.is_max else np.minimum
                res = seg_reduce(uf, filled, seg)
            return _from_numeric(res.astype(x.dtype, copy=False), has, t)
        # strings, wide decimals: Arrow's hash aggregation over the group numbers
        mask = _valid(values) & contrib_ops
        vals = values if mask.all() else pc.if_else(pa.array(mask), values, pa.scalar(None, t))
        tbl = pa.table({"g": seg.seg_id, "v": vals})
        agg = tbl.group_by("g", use_threads=False).aggregate([("v", "max" if self.is_max else "min")])
        out = agg.column(1).combine_chunks()
        g = agg.column(0).to_numpy()
        if not np.array_equal(g, np.arange(seg.count)):
            out = out.take(pa.array(np.argsort(g)))
        return out


class MaxAgg(_ExtremeAgg):
    name = "max"
    is_max = True


class MinAgg(_ExtremeAgg):
    name = "min"
    is_max = False


class _PickAgg(AggFunction):
    """A function whose result is one row of the group (see ``pick``)."""

    def pick(self, valid, seg, ops):
        raise NotImplementedError

    def reduce_vec(self, values, seg, ops):
        return take_or_null(values, self.pick(_valid(values), seg, ops))


def _unless_retracted(idx: np.ndarray, ops: np.ndarray) -> np.ndarray:
    """``idx`` with -1 (NULL) where the picked last row is a retraction: it removed the value."""
    if len(idx):
        idx = np.where((idx >= 0) & (ops[np.maximum(idx, 0)] == RETRACT), -1, idx)
    return idx


class LastValueAgg(_PickAgg):
    name = "last_value"
    retract_supported = True

    def agg(self, acc, v):
        return v

    def agg_reversed(self, acc, v):
        return acc

    def retract(self, acc, v):
        return None

    def reduce(self, values, seg, ops):
        # agg_reversed keeps the accumulator: an ADD_REVERSED row changes nothing.
        return self.reduce_vec(values, seg, np.where(ops == ADD_REVERSED, SKIP, ops).astype(np.int8))

    def pick(self, valid, seg, ops):
        return _unless_retracted(last_index(seg, ops != SKIP), ops)


class LastNonNullValueAgg(_PickAgg):
    name = "last_non_null_value"
    retract_supported = True

    def agg(self, acc, v):
        return acc if v is None else v

    def retract(self, acc, v):
        return None if v is not None else acc

    def pick(self, valid, seg, ops):
        return _unless_retracted(last_index(seg, valid & (ops != SKIP)), ops)


class FirstValueAgg(_PickAgg):
    name = "first_value"

    def __init__(self, column, dtype, options=None):
        super().__init__(column, dtype, options)
        self.initialized = False

    def reset(self):
        self.initialized = False

    def agg(self, acc, v):
        if not self.initialized:
            self.initialized = True
            return v
        return acc

    def pick(self, valid, seg, ops):
        return first_index(seg, ops == ADD)


class FirstNonNullValueAgg(FirstValueAgg):
    name = "first_non_null_value"

    def agg(self, acc, v):
        if not self.initialized and v is not None:
            self.initialized = True
            return v
        return acc

    def pick(self, valid, seg, ops):
        return first_index(seg, (ops == ADD) & valid)


class ListaggAgg(AggFunction):
    name = "listagg"
    accepts = staticmethod(_t_string)
    accepted_types = "STRING (VARCHAR)"

    def __init__(self, column, dtype, options=None):
        super().__init__(column, dtype, options)
        self.delimiter = self.option("list-agg-delimiter", ",")
        self.distinct = (self.option("distinct", "false") or "false").strip().lower() == "true"
        self.may_change_single = True  # a lone blank string stays as it is in Java

    def agg(self, acc, v):
        if _is_blank(v):
            return acc
        if _is_blank(acc):
            return v
        if self.distinct:
            seen = set(_split_whole(acc, self.delimiter))
            parts = [acc]
            for tok in _split_whole(v, self.delimiter):
                if _is_blank(tok) or tok in seen:
                    continue
                seen.add(tok)
                parts.append(tok)
            return self.delimiter.join(parts) if len(parts) > 1 else acc
        return acc + self.delimiter + v

    def reduce_vec(self, values, seg, ops):
        if self.distinct:
            return self.reduce_seq(values, seg, ops)
        keep = (ops == ADD) & _valid(values)
        if keep.any():
            blank = pc.fill_null(pc.match_substring_regex(values, _BLANK_RE), True)
            keep &= ~blank.to_numpy(zero_copy_only=False)
        counts = seg_reduce(np.add, keep.astype(np.int64), seg)
        kept = values.filter(pa.array(keep))
        if pa.types.is_large_string(values.type):
            lists = pa.LargeListArray.from_arrays(pa.array(np.concatenate([[0], np.cumsum(counts)])), kept)
        else:
            lists = pa.ListArray.from_arrays(
                pa.array(np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)), kept)
        joined = pc.binary_join(lists, self.delimiter)
        return pc.if_else(pa.array(counts > 0), joined, pa.scalar(None, values.type))


class BoolAndAgg(AggFunction):
    name = "bool_and"
    accepts = staticmethod(_t_bool)
    accepted_types = "BOOLEAN"
    commutative = True
    is_and = True

    def agg(self, acc, v):
        if acc is None or v is None:
            return v if acc is None else acc
        return (acc and v) if self.is_and else (acc or v)

    def reduce_vec(self, values, seg, ops):
        if seg.count == 0:
            return pa.array([], type=pa.bool_())
        valid = _valid(values) & (ops != SKIP)
        x = pc.fill_null(values, False).to_numpy(zero_copy_only=False)
        has = any_per_group(seg, valid)
        if self.is_and:
            res = ~any_per_group(seg, valid & ~x)
        else:
            res = any_per_group(seg, valid & x)
        return pa.array(res, type=pa.bool_(), mask=~has)


class BoolOrAgg(BoolAndAgg):
    name = "bool_or"
    is_and = False


class CollectAgg(AggFunction):
    """``collect``: concatenates arrays (``fields.<f>.distinct``: keeps first occurrences; Java
    uses a hash set, whose order is unspecified). Folds per group in Python."""

    name = "collect"
    accepts = staticmethod(_t_array)
    accepted_types = "ARRAY"
    retract_supported = True
    commutative = True  # Java's aggReversed is agg(acc, input)

    def __init__(self, column, dtype, options=None):
        super().__init__(column, dtype, options)
        self.distinct = (self.option("distinct", "false") or "false").strip().lower() == "true"
        self.may_change_single = self.distinct

    @staticmethod
    def _key(x):
        return _hashable(x)

    def agg(self, acc, v):
        if acc is None and v is None:
            return None
        if (acc is None or v is None) and not self.distinct:
            return v if acc is None else acc
        items = (acc or []) + (v or [])
        if not self.distinct:
            return items
        seen, out = set(), []
        for e in items:
            k = self._key(e)
            if k not in seen:
                seen.add(k)
                out.append(e)
        return out

    def agg_reversed(self, acc, v):
        return self.agg(acc, v)

    def retract(self, acc, v):
        if acc is None:
            return None
        if v is None:
            return acc
        pending = [self._key(e) for e in v]
        out = []
        for e in acc:
            k = self._key(e)
            if k in pending:
                pending.remove(k)
            else:
                out.append(e)
        return out


def _hashable(x):
    if isinstance(x, dict):
        return tuple(sorted((k, _hashable(v)) for k, v in x.items()))
    if isinstance(x, list):
        return tuple(_hashable(v) for v in x)
    if isinstance(x, float) and x != x:
        return ("nan",)
    return x


class MergeMapAgg(AggFunction):
    """``merge_map``: later maps override keys of earlier ones; a retraction removes its keys.
    Key order: first insertion (Java's HashMap order is unspecified). Folds per group in Python."""

    name = "merge_map"
    accepts = staticmethod(_t_map)
    accepted_types = "MAP"
    retract_supported = True

    def to_py(self, values):
        return [None if m is None else dict((_hashable(k), (k, v)) for k, v in m) for m in values.to_pylist()]

    def from_py(self, out):
        return pa.array([None if m is None else list(m.values()) for m in out], type=self.type)

    def agg(self, acc, v):
        if acc is None or v is None:
            return v if acc is None else acc
        merged = dict(acc)
        merged.update(v)
        return merged

    def retract(self, acc, v):
        if acc is None:
            return None
        if v is None:
            return acc
        return {k: kv for k, kv in acc.items() if k not in v}


class NestedUpdateAgg(AggFunction):
    """``nested_update`` over ARRAY<ROW>: ``fields.<f>.nested-key`` rows replace rows with the
    same key (insertion order kept; Java's HashMap order is unspecified), without a key rows are
    appended; ``fields.<f>.count-limit`` caps the number of rows. Folds per group in Python."""

    name = "nested_update"
    accepts = staticmethod(_t_array_of_row)
    accepted_types = "ARRAY<ROW>"
    retract_supported = True
    may_change_single = True

    def __init__(self, column, dtype, options=None):
        super().__init__(column, dtype, options)
        nk = self.option("nested-key")
        self.keys = [k.strip() for k in nk.split(",") if k.strip()] if nk else []
        limit = self.option("count-limit")
        self.limit = int(limit) if limit else 2**31 - 1
        if _t_array_of_row(dtype):
            names = [dtype.value_type.field(i).name for i in range(dtype.value_type.num_fields)]
            missing = [k for k in self.keys if k not in names]
            if missing:
                raise InvalidOptionError(
                    f"option 'fields.{column}.nested-key' names {missing}, which are not fields of the "
                    f"nested row of column '{column}' (fields: {names})")

    def _k(self, row):
        return tuple(_hashable(row.get(k)) for k in self.keys)

    def agg(self, acc, v):
        if v is None:
            return acc
        if not self.keys:
            rows = [r for r in (acc or []) if r is not None]
            room = self.limit - len(rows) if acc is not None else self.limit
            if acc is not None and len(acc) >= self.limit:
                return acc
            rows += [r for r in v if r is not None][:max(room, 0)]
            return rows
        m: dict = {}
        for r in acc or []:
            if r is not None:
                m[self._k(r)] = r
        for r in v:
            if r is None:
                continue
            k = self._k(r)
            if k in m or len(m) < self.limit:
                m[k] = r
        return list(m.values())

    def retract(self, acc, v):
        if acc is None or v is None:
            return acc
        if not self.keys:
            rows = [r for r in acc if r is not None]
            for rr in v:
                if rr is None:
                    continue
                h = _hashable(rr)
                rows = [r for r in rows if _hashable(r) != h]
            return rows
        m = {self._k(r): r for r in acc if r is not None}
        for rr in v:
            if rr is not None:
                m.pop(self._k(rr), None)
        return list(m.values())


class _BlobUnionAgg(AggFunction):
    accepts = staticmethod(_t_varbinary)
    accepted_types = "VARBINARY (BYTES)"
    commutative = True

    def union(self, a: bytes, b: bytes) -> bytes:
        raise NotImplementedError

    def agg(self, acc, v):
        if acc is None or v is None:
            return v if acc is None else acc
        try:
            return self.union(acc, v)
        except (ValueError, RuntimeError, TypeError, IndexError, KeyError, OverflowError) as e:
            raise InvalidDataError(
                f"column '{self.column}': cannot aggregate with '{self.name}', a value is not a valid "
                f"serialized {self.what}: {e}") from e

    def agg_reversed(self, acc, v):
        return self.agg(v, acc)


class Rbm32Agg(_BlobUnionAgg):
    """``rbm32``: union of serialized 32-bit RoaringBitmaps (portable format, run-optimized, as
    Paimon's RoaringBitmap32.serialize)."""

    name = "rbm32"
    what = "32-bit RoaringBitmap"

    def union(self, a, b):
        from pyroaring import BitMap
        r = BitMap.deserialize(a) | BitMap.deserialize(b)
        r.run_optimize()
        return r.serialize()


class Rbm64Agg(_BlobUnionAgg):
    """``rbm64``: union of serialized 64-bit Roaring bitmaps in the portable 64-bit format
    (pyroaring BitMap64 / CRoaring; Java Roaring64NavigableMap.serializePortable)."""

    name = "rbm64"
    what = "64-bit RoaringBitmap (portable format)"

    def union(self, a, b):
        from pyroaring import BitMap64
        r = BitMap64.deserialize(a) | BitMap64.deserialize(b)
        r.run_optimize()
        return r.serialize()


class HllSketchAgg(_BlobUnionAgg):
    """``hll_sketch``: union of serialized DataSketches HLL sketches, result HLL_4 compact (as
    Java's FieldHllSketchAgg: ``Union.heapify(input).update(acc).getResult(HLL_4)``)."""

    name = "hll_sketch"
    what = "HLL sketch"

    def union(self, a, b):
        from datasketches import hll_sketch, hll_union, tgt_hll_type
        sb = hll_sketch.deserialize(b)
        u = hll_union(sb.lg_config_k)
        u.update(sb)
        u.update(hll_sketch.deserialize(a))
        return u.get_result(tgt_hll_type.HLL_4).serialize_compact()


class ThetaSketchAgg(_BlobUnionAgg):
    """``theta_sketch``: union of serialized compact Theta sketches (default union, ordered
    compact result, as Paimon's ThetaSketch.union)."""

    name = "theta_sketch"
    what = "Theta sketch"

    def union(self, a, b):
        from datasketches import compact_theta_sketch, theta_union
        u = theta_union()
        u.update(compact_theta_sketch.deserialize(a))
        u.update(compact_theta_sketch.deserialize(b))
        return u.get_result().serialize()


class PrimaryKeyAgg(AggFunction):
    name = "primary-key"

    def agg(self, acc, v):
        return v


FUNCTIONS: dict[str, type[AggFunction]] = {
    c.name: c for c in (SumAgg, ProductAgg, CountAgg, MaxAgg, MinAgg, LastValueAgg, LastNonNullValueAgg,
                        FirstValueAgg, FirstNonNullValueAgg, ListaggAgg, BoolAndAgg, BoolOrAgg, CollectAgg,
                        MergeMapAgg, NestedUpdateAgg, Rbm32Agg, Rbm64Agg, HllSketchAgg, ThetaSketchAgg)
}
ALIASES = {"first_not_null_value": "first_non_null_value"}


def create_function(column: str, dtype: pa.DataType, name: str, options: CoreOptions,
                    type_sql: str | None = None) -> AggFunction:
    """The aggregate for ``column``; raises naming the column and the function when the function
    is unknown or does not accept the column's type (checked at table creation)."""
    key = ALIASES.get(name.strip().lower(), name.strip().lower())
    cls = FUNCTIONS.get(key)
    if cls is None:
        raise InvalidOptionError(
            f"column '{column}': unknown aggregate function {name!r} (option "
            f"'fields.{column}.aggregate-function' or 'fields.default-aggregate-function'); supported: "
            + ", ".join(sorted(FUNCTIONS)))
    if not cls.accepts(dtype):
        raise SchemaError(
            f"column '{column}' of type {type_sql or dtype} cannot use aggregate function '{key}': "
            f"'{key}' accepts {cls.accepted_types}")
    return cls(column, dtype, options)


def ignore_retract(options: CoreOptions, column: str) -> bool:
    return (options.raw.get(f"fields.{column}.ignore-retract", "false") or "false").strip().lower() == "true"


__all__ = ["ADD", "ADD_REVERSED", "RETRACT", "SKIP", "Segments", "AggFunction", "FUNCTIONS", "ALIASES",
           "create_function", "count_contributions", "ignore_retract", "retract_error", "last_index",
           "first_index", "any_per_group", "take_or_null", "seg_reduce", "combine_groups"]
