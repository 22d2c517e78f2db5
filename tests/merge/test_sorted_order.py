"""``sorted_order`` gives NumPy's stable order and the key in it whichever way it sorts: presorted
runs packed with their positions and sorted in place (or NumPy's timsort when the span leaves no
room for the positions), few rows or wide spans by NumPy, 12-bit digits counted by Arrow otherwise
(one to four passes)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from lake_core.merge.sort import _RADIX_MIN_ROWS, sorted_order

dtypes = st.sampled_from([np.int64, np.int32, np.uint64, np.uint32, np.int16])


@settings(max_examples=60, deadline=None)
@given(
    dtype=dtypes,
    rows=st.sampled_from([10, _RADIX_MIN_ROWS - 1, _RADIX_MIN_ROWS, 20_000]),
    span_bits=st.sampled_from([0, 1, 11, 12, 13, 24, 25, 36, 47, 48, 49, 50, 52, 60, 64]),
    base=st.sampled_from(["zero", "low", "high"]),
    runs=st.sampled_from([0, 1, 2]),
    seed=st.integers(0, 2**32 - 1),
)
def test_the_order_is_numpys_stable_order(dtype, rows, span_bits, base, runs, seed):
    info = np.iinfo(dtype)
    lowest = {"zero": max(0, int(info.min)), "low": int(info.min), "high": int(info.min)}[base]
    span = min(1 << span_bits, int(info.max) - lowest)
    start = int(info.max) - span if base == "high" else lowest
    rng = np.random.default_rng(seed)
    offsets = rng.integers(0, span, rows, dtype=np.uint64, endpoint=True)
    key = (np.array(start, dtype=object) + offsets.astype(object)).astype(dtype)
    if runs:  # sorted runs one after another, as a merge-on-read concatenates them
        key = np.concatenate([np.sort(part) for part in np.array_split(key, runs + 1)])
    order, ordered = sorted_order(key)
    expected = np.argsort(key, kind="stable")
    assert np.array_equal(order, expected)
    assert ordered.dtype == key.dtype and np.array_equal(ordered, key[expected])
