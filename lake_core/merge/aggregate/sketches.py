"""Unions of serialized summaries in VARBINARY columns: RoaringBitmaps (``rbm32``, ``rbm64``,
pyroaring) and DataSketches sketches (``hll_sketch``, ``theta_sketch``). A value that does not
deserialize raises ``InvalidDataError`` naming the column."""

from __future__ import annotations

import pyroaring
from datasketches import compact_theta_sketch, hll_sketch, hll_union, tgt_hll_type, theta_union

from lake_core.errors import InvalidDataError
from lake_core.merge.aggregate.base import AggFunction, accepts_varbinary


class _BlobUnionAgg(AggFunction):
    accepts = staticmethod(accepts_varbinary)
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
                f"serialized {self.what}: {e}"
            ) from e

    def agg_reversed(self, acc, v):
        return self.agg(v, acc)


class _RoaringUnionAgg(_BlobUnionAgg):
    bitmap = ""  # the pyroaring class

    def union(self, a, b):
        cls = getattr(pyroaring, self.bitmap)
        r = cls.deserialize(a) | cls.deserialize(b)
        r.run_optimize()
        return r.serialize()


class Rbm32Agg(_RoaringUnionAgg):
    """``rbm32``: union of serialized 32-bit RoaringBitmaps (portable format, run-optimized, as
    Paimon's RoaringBitmap32.serialize)."""

    name = "rbm32"
    what = "32-bit RoaringBitmap"
    bitmap = "BitMap"


class Rbm64Agg(_RoaringUnionAgg):
    """``rbm64``: union of serialized 64-bit Roaring bitmaps in the portable 64-bit format
    (pyroaring BitMap64 / CRoaring; Java Roaring64NavigableMap.serializePortable)."""

    name = "rbm64"
    what = "64-bit RoaringBitmap (portable format)"
    bitmap = "BitMap64"


class HllSketchAgg(_BlobUnionAgg):
    """``hll_sketch``: union of serialized DataSketches HLL sketches, result HLL_4 compact (as
    Java's FieldHllSketchAgg: ``Union.heapify(input).update(acc).getResult(HLL_4)``)."""

    name = "hll_sketch"
    what = "HLL sketch"

    def union(self, a, b):
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
        u = theta_union()
        u.update(compact_theta_sketch.deserialize(a))
        u.update(compact_theta_sketch.deserialize(b))
        return u.get_result().serialize()
