"""NumPy arrays in Arrow's memory pool: the same values NumPy's own operations give, in memory the
pool accounts for (and gets back when the array goes)."""

from __future__ import annotations

import gc

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from lake_core import arrow_memory

dtypes = st.sampled_from([np.int64, np.int32, np.uint16, np.float64, np.int8])


@settings(max_examples=120, deadline=None)
@given(dtype=dtypes, sizes=st.lists(st.integers(0, 300), min_size=1, max_size=4), seed=st.integers(0, 2**32 - 1))
def test_same_values_as_numpy(dtype, sizes, seed):
    rng = np.random.default_rng(seed)
    parts = [rng.integers(-100, 100, n).astype(dtype) for n in sizes]
    whole = arrow_memory.concatenate(parts)
    assert whole.dtype == dtype and np.array_equal(whole, np.concatenate(parts))
    positions = rng.integers(0, len(whole), rng.integers(0, 500)) if len(whole) else np.zeros(0, np.int64)
    taken = arrow_memory.take(whole, positions)
    assert taken.dtype == dtype and np.array_equal(taken, whole[positions])
    mask = rng.random(len(whole)) < 0.5
    kept = arrow_memory.compress(mask, whole)
    assert kept.dtype == dtype and np.array_equal(kept, whole[mask])
    out = arrow_memory.empty(len(whole), dtype)
    out[:] = whole  # writable
    assert np.array_equal(out, whole)


def test_arrays_live_in_the_pool_and_give_it_back():
    gc.collect()
    before = pa.total_allocated_bytes()
    values = np.arange(1 << 20, dtype=np.int64)
    arrays = [
        arrow_memory.empty(1 << 20, np.int64),
        arrow_memory.concatenate([values, values]),
        arrow_memory.take(values, values[::-1]),
        arrow_memory.compress(values % 2 == 0, values),
    ]
    held = pa.total_allocated_bytes() - before
    assert held >= (1 + 2 + 1 + 0.5) * (8 << 20)
    del arrays
    gc.collect()
    assert pa.total_allocated_bytes() - before < 1 << 20
