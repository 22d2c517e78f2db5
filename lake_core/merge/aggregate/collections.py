"""The functions over collection values: ``collect`` (ARRAY), ``merge_map`` (MAP) and
``nested_update`` (ARRAY<ROW>). They fold per key group in Python over Python lists and dicts."""

from __future__ import annotations

import pyarrow as pa

from lake_core.errors import InvalidOptionError
from lake_core.merge.aggregate.base import AggFunction, accepts_array, accepts_array_of_row, accepts_map


class CollectAgg(AggFunction):
    """``collect``: concatenates arrays (``fields.<f>.distinct``: keeps first occurrences; Java
    uses a hash set, whose order is unspecified). Folds per group in Python."""

    name = "collect"
    accepts = staticmethod(accepts_array)
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
    accepts = staticmethod(accepts_map)
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
    accepts = staticmethod(accepts_array_of_row)
    accepted_types = "ARRAY<ROW>"
    retract_supported = True
    may_change_single = True

    def __init__(self, column, dtype, options=None):
        super().__init__(column, dtype, options)
        nk = self.option("nested-key")
        self.keys = [k.strip() for k in nk.split(",") if k.strip()] if nk else []
        limit = self.option("count-limit")
        self.limit = int(limit) if limit else 2**31 - 1
        if accepts_array_of_row(dtype):
            names = [dtype.value_type.field(i).name for i in range(dtype.value_type.num_fields)]
            missing = [k for k in self.keys if k not in names]
            if missing:
                raise InvalidOptionError(
                    f"option 'fields.{column}.nested-key' names {missing}, which are not fields of the "
                    f"nested row of column '{column}' (fields: {names})"
                )

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
            rows += [r for r in v if r is not None][: max(room, 0)]
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
