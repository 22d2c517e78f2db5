"""``AggFunction``, the base of every field aggregate function (Java ``FieldAggregator``): the op of
each row (``SKIP``, ``ADD``, ``ADD_REVERSED``, ``RETRACT``), the scalar face, the vectorized
``reduce`` with its per-group fallback, and the type predicates naming the types each function
accepts."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa

from lake_core.errors import InvalidDataError
from lake_core.merge.aggregate.segments import Segments, any_per_group, combine_groups
from lake_core.options import CoreOptions

# The op of each row in a fold: ignored, Java ``agg``, Java ``aggReversed``, Java ``retract``.
SKIP, ADD, ADD_REVERSED, RETRACT = 0, 1, 2, 3


# Type predicates: the types each function accepts (Paimon's aggregate function table).


def accepts_numeric(t):  # DECIMAL, TINYINT, SMALLINT, INTEGER, BIGINT, FLOAT, DOUBLE
    return (
        pa.types.is_integer(t)
        and t.bit_width <= 64
        and pa.types.is_signed_integer(t)
        or pa.types.is_floating(t)
        and t.bit_width >= 32
        or pa.types.is_decimal(t)
    )


def accepts_count(t):  # INTEGER, BIGINT
    return t in (pa.int32(), pa.int64())


def accepts_comparable(t):  # CHAR, VARCHAR, numeric, DATE, TIME, TIMESTAMP, TIMESTAMP_LTZ
    return (
        accepts_numeric(t)
        or pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_date(t)
        or pa.types.is_time(t)
        or pa.types.is_timestamp(t)
    )


def accepts_any(t):
    return True


def accepts_string(t):
    return pa.types.is_string(t) or pa.types.is_large_string(t)


def accepts_bool(t):
    return pa.types.is_boolean(t)


def accepts_array(t):
    return pa.types.is_list(t) or pa.types.is_large_list(t)


def accepts_array_of_row(t):
    return accepts_array(t) and pa.types.is_struct(t.value_type)


def accepts_map(t):
    return pa.types.is_map(t)


def accepts_varbinary(t):
    return pa.types.is_binary(t) or pa.types.is_large_binary(t)


class AggFunction:
    """One column's aggregate. Subclasses override the scalar face and, when they can, ``reduce``."""

    name = ""
    accepts: Callable[[pa.DataType], bool] = staticmethod(accepts_any)
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
        return self.options.field_option(self.column, suffix, default)

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
    return (
        f"column '{column}': aggregate function '{function}' does not support retraction "
        f"(-U/-D rows); set 'fields.{column}.ignore-retract' = 'true' to ignore retractions "
        f"for this column, or 'aggregation.remove-record-on-delete' = 'true' to delete the "
        f"whole row on -D"
    )
