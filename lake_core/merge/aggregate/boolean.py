"""``bool_and`` and ``bool_or`` over BOOLEAN columns."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from lake_core.merge.aggregate.base import SKIP, AggFunction, accepts_bool
from lake_core.merge.aggregate.segments import any_per_group
from lake_core.merge.aggregate.values import validity


class BoolAndAgg(AggFunction):
    name = "bool_and"
    accepts = staticmethod(accepts_bool)
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
        valid = validity(values) & (ops != SKIP)
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
