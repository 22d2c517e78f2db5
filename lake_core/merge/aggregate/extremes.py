"""``min`` and ``max`` over comparable columns (Java ``FieldMinAgg``/``FieldMaxAgg``): NumPy folds for
numeric and temporal columns (NaN is the largest double, as ``Double.compare``), Arrow's hash
aggregation for strings and wide decimals."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_core.merge.aggregate.base import SKIP, AggFunction, accepts_comparable
from lake_core.merge.aggregate.segments import any_per_group, seg_reduce
from lake_core.merge.aggregate.values import from_numeric, numeric_view, validity


class _ExtremeAgg(AggFunction):
    accepts = staticmethod(accepts_comparable)
    accepted_types = (
        "CHAR, VARCHAR, DECIMAL, TINYINT, SMALLINT, INTEGER, BIGINT, FLOAT, DOUBLE, DATE, "
        "TIME, TIMESTAMP, TIMESTAMP_LTZ"
    )
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
        num = numeric_view(values, 0)
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
            return from_numeric(res.astype(x.dtype, copy=False), has, t)
        # strings, wide decimals: Arrow's hash aggregation over the group numbers
        mask = validity(values) & contrib_ops
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
