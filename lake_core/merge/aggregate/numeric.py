"""``sum``, ``count`` and ``product``: Java arithmetic folds over numeric columns, vectorized as
NumPy folds of each row's contribution."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_core.merge.aggregate.base import RETRACT, SKIP, AggFunction, accepts_count, accepts_numeric
from lake_core.merge.aggregate.java_arith import JavaArith
from lake_core.merge.aggregate.segments import Segments, any_per_group, seg_reduce
from lake_core.merge.aggregate.values import from_numeric, numeric_view


def _fold_contributions(
    ufunc: np.ufunc, x: np.ndarray, contrib: np.ndarray, identity, seg: Segments, t: pa.DataType
) -> pa.Array:
    """Per group, ``ufunc`` over the rows where ``contrib`` holds (the others count as
    ``identity``); NULL for a group with no such row. Floats fold in row order because their
    rounding depends on it (Java's accumulator is a left fold)."""
    x = np.where(contrib, x, np.full(1, identity, x.dtype))
    if seg.count == 0:
        return pa.array([], type=t)
    res = seg_reduce(ufunc, x, seg, ordered=x.dtype.kind == "f")
    return from_numeric(res, any_per_group(seg, contrib), t)


class _ArithAgg(AggFunction):
    """``sum`` and ``product``: Java arithmetic (``JavaArith``) on numeric columns."""

    accepts = staticmethod(accepts_numeric)
    accepted_types = "DECIMAL, TINYINT, SMALLINT, INTEGER, BIGINT, FLOAT, DOUBLE"
    retract_supported = True
    commutative = True

    def __init__(self, column, dtype, options=None):
        super().__init__(column, dtype, options)
        self.ar = JavaArith(dtype)


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
        num = numeric_view(values, 0)
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
    accepts = staticmethod(accepts_count)
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
        x, _ = numeric_view(values, 0)
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
        num = None if pa.types.is_decimal(t) else numeric_view(values, 1)
        if num is None or (ops == RETRACT).any():
            return self.reduce_seq(values, seg, ops)
        x, valid = num
        return _fold_contributions(np.multiply, x, valid & (ops != SKIP), 1, seg, t)
