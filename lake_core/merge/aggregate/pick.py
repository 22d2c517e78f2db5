"""The functions whose result is one row of the group: ``first_value``, ``first_non_null_value``,
``last_value`` and ``last_non_null_value``. They pick a row index per group, so the merge can take
any column by index without folding it."""

from __future__ import annotations

import numpy as np

from lake_core.merge.aggregate.base import ADD, ADD_REVERSED, RETRACT, SKIP, AggFunction
from lake_core.merge.aggregate.segments import first_index, last_index, take_or_null
from lake_core.merge.aggregate.values import validity


class _PickAgg(AggFunction):
    """A function whose result is one row of the group (see ``pick``)."""

    def pick(self, valid, seg, ops):
        raise NotImplementedError

    def reduce_vec(self, values, seg, ops):
        return take_or_null(values, self.pick(validity(values), seg, ops))


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
