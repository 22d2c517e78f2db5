"""Filters with pypaimon's ``PredicateBuilder`` names.

A predicate is evaluated two ways: exactly over Arrow data (a vectorized boolean mask), and
conservatively over file/partition statistics (min, max, null count) to skip what cannot match.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lake_core.errors import PredicateError
from lake_core.format.float_order import sortable_array, sortable_scalar

_LEAF_METHODS = (
    "equal",
    "not_equal",
    "less_than",
    "less_or_equal",
    "greater_than",
    "greater_or_equal",
    "is_null",
    "is_not_null",
    "is_in",
    "is_not_in",
    "between",
    "startswith",
)


@dataclass(frozen=True)
class Predicate:
    method: str  # a leaf method above, or "and" / "or"
    field: str | None = None
    literals: tuple[Any, ...] = ()
    children: tuple[Predicate, ...] = ()

    # -- structure ----------------------------------------------------------------------------
    def fields(self) -> set[str]:
        if self.children:
            out: set[str] = set()
            for c in self.children:
                out |= c.fields()
            return out
        return {self.field} if self.field else set()

    def leaves(self) -> list[Predicate]:
        """The leaf predicates (one column each), depth first."""
        return [leaf for c in self.children for leaf in c.leaves()] if self.children else [self]

    def restrict_to(self, allowed: set[str]) -> Predicate | None:
        """The weaker predicate using only ``allowed`` fields (None = no constraint). Safe for
        pruning: whatever the original accepts, the result accepts too."""
        if self.method == "and":
            kept = [p for c in self.children if (p := c.restrict_to(allowed)) is not None]
            return None if not kept else kept[0] if len(kept) == 1 else Predicate("and", children=tuple(kept))
        if self.method == "or":
            either: list[Predicate] = []
            for c in self.children:
                if (p := c.restrict_to(allowed)) is None:
                    return None
                either.append(p)
            return Predicate("or", children=tuple(either))
        return self if self.field in allowed else None

    # -- exact evaluation over Arrow -------------------------------------------------------------
    def mask(self, table: pa.Table) -> pa.ChunkedArray | pa.Array:
        if self.method == "and":
            out = self.children[0].mask(table)
            for c in self.children[1:]:
                out = pc.and_kleene(out, c.mask(table))
            return out
        if self.method == "or":
            out = self.children[0].mask(table)
            for c in self.children[1:]:
                out = pc.or_kleene(out, c.mask(table))
            return out
        col = table[self.field]
        m, lits = self.method, self.literals
        if pa.types.is_floating(col.type) and col.type.bit_width in (32, 64) and m not in ("is_null", "is_not_null"):
            # Java compares floats with Double.compare: NaN equals NaN (and is largest), -0.0 < 0.0.
            width = col.type.bit_width // 8
            col = sortable_array(col)
            lits = tuple(None if v is None else sortable_scalar(float(v), width) for v in lits)
        if m == "is_null":
            return pc.is_null(col)
        if m == "is_not_null":
            return pc.is_valid(col)
        if m in ("is_in", "is_not_in"):
            vs = pa.array([v for v in lits if v is not None], type=col.type)
            r = pc.is_in(col, value_set=vs)
            r = pc.if_else(pc.is_null(col), pa.scalar(None, pa.bool_()), r)
            return r if m == "is_in" else pc.invert(r)
        if m == "between":
            lo, hi = (pa.scalar(v, type=col.type) for v in lits)
            return pc.and_kleene(pc.greater_equal(col, lo), pc.less_equal(col, hi))
        if m == "startswith":
            return pc.starts_with(col, pattern=str(lits[0]))
        lit = pa.scalar(lits[0], type=col.type)
        fn = {
            "equal": pc.equal,
            "not_equal": pc.not_equal,
            "less_than": pc.less,
            "less_or_equal": pc.less_equal,
            "greater_than": pc.greater,
            "greater_or_equal": pc.greater_equal,
        }[m]
        return fn(col, lit)

    def filter(self, table: pa.Table) -> pa.Table:
        """Rows for which the predicate is TRUE (NULL counts as false, as in SQL)."""
        mask = pc.fill_null(self.mask(table), False)
        return table.filter(mask)

    # -- conservative evaluation over statistics --------------------------------------------------
    def may_match(self, stats: dict[str, tuple[Any, Any, int | None]], row_count: int) -> bool:
        """``stats[field] = (min, max, null_count)``; fields missing from ``stats`` are unknown."""
        if self.method == "and":
            return all(c.may_match(stats, row_count) for c in self.children)
        if self.method == "or":
            return any(c.may_match(stats, row_count) for c in self.children)
        st = stats.get(self.field) if self.field is not None else None
        if st is None:
            return True
        lo, hi, nulls = st
        m = self.method
        lits = self.literals
        if isinstance(lo, float) or isinstance(hi, float):
            # A float column: stats and literals compared in Java's Double.compare order (NaN largest).
            def java(v):
                return sortable_scalar(float(v)) if isinstance(v, (int, float)) and not isinstance(v, bool) else v

            lo, hi = java(lo), java(hi)
            lits = tuple(java(v) for v in lits)
        try:
            if m == "is_null":
                return nulls is None or nulls > 0
            if m == "is_not_null":
                return nulls is None or nulls < row_count
            if lo is None or hi is None:
                # all-null column (known counts) cannot satisfy a comparison
                return not (nulls is not None and nulls >= row_count)
            if m == "equal":
                return lo <= lits[0] <= hi
            if m == "not_equal":
                return not (lo == hi == lits[0])
            if m == "less_than":
                return lo < lits[0]
            if m == "less_or_equal":
                return lo <= lits[0]
            if m == "greater_than":
                return hi > lits[0]
            if m == "greater_or_equal":
                return hi >= lits[0]
            if m == "is_in":
                return any(v is not None and lo <= v <= hi for v in lits)
            if m == "between":
                return not (hi < lits[0] or lo > lits[1])
            if m == "startswith":
                p = str(lits[0])
                # truncated string stats: compare on the prefix length only
                return lo[: len(p)] <= p <= hi[: len(p)] if isinstance(lo, str) and isinstance(hi, str) else True
        except TypeError:
            return True
        return True


_MISFIT = (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError)


def literal_misfit(field: str, t: pa.DataType, values: Sequence[Any]) -> str | None:
    """Why a literal of ``values`` cannot be compared with column ``field`` of type ``t`` (None:
    they all can). One conversion of the whole list; value by value only to name a misfit."""
    values = [v for v in values if v is not None]
    try:
        pa.array(values, type=t)
        return None
    except _MISFIT:
        pass
    for v in values:
        try:
            pa.scalar(v, type=t)
        except _MISFIT as e:
            return f"filter literal {v!r} does not fit column '{field}' of type {t}: {e}"
    return f"filter literals {values!r} do not fit column '{field}' of type {t}"


class PredicateBuilder:
    """Builds predicates over the columns of one table, checking column names."""

    def __init__(
        self, field_names: Sequence[str], field_types: dict[str, pa.DataType] | None = None, *, table: str | None = None
    ):
        """``table``: how errors name what the columns belong to (e.g. a table at a snapshot)."""
        self._names = list(field_names)
        self._types = field_types or {}
        self._table = f"table {table}" if table else "the table"

    def _check(self, field: str) -> str:
        if field not in self._names:
            raise PredicateError(
                f"filter names column '{field}', which is not in {self._table}; columns: {self._names}"
            )
        return field

    def _leaf(self, method: str, field: str, *literals) -> Predicate:
        self._check(field)
        t = self._types.get(field)
        why = literal_misfit(field, t, literals) if t is not None else None
        if why:
            raise PredicateError(why)
        return Predicate(method, field, tuple(literals))

    def equal(self, field, literal):
        return self._leaf("equal", field, literal)

    def not_equal(self, field, literal):
        return self._leaf("not_equal", field, literal)

    def less_than(self, field, literal):
        return self._leaf("less_than", field, literal)

    def less_or_equal(self, field, literal):
        return self._leaf("less_or_equal", field, literal)

    def greater_than(self, field, literal):
        return self._leaf("greater_than", field, literal)

    def greater_or_equal(self, field, literal):
        return self._leaf("greater_or_equal", field, literal)

    def is_null(self, field):
        return self._leaf("is_null", field)

    def is_not_null(self, field):
        return self._leaf("is_not_null", field)

    def is_in(self, field, literals):
        return self._leaf("is_in", field, *literals)

    def is_not_in(self, field, literals):
        return self._leaf("is_not_in", field, *literals)

    def between(self, field, included_lower, included_upper):
        return self._leaf("between", field, included_lower, included_upper)

    def startswith(self, field, pattern):
        return self._leaf("startswith", field, pattern)

    @staticmethod
    def and_predicates(predicates: Sequence[Predicate]) -> Predicate:
        predicates = [p for p in predicates if p is not None]
        if not predicates:
            raise PredicateError("and_predicates needs at least one predicate")
        return predicates[0] if len(predicates) == 1 else Predicate("and", children=tuple(predicates))

    @staticmethod
    def or_predicates(predicates: Sequence[Predicate]) -> Predicate:
        predicates = [p for p in predicates if p is not None]
        if not predicates:
            raise PredicateError("or_predicates needs at least one predicate")
        return predicates[0] if len(predicates) == 1 else Predicate("or", children=tuple(predicates))
