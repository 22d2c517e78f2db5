"""NumPy arrays in Arrow's memory pool: the same values NumPy's own operations give, in memory the
pool accounts for (and gets back when the array goes)."""

from __future__ import annotations

import gc
import tracemalloc

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from hypothesis import given, settings
from hypothesis import strategies as st

from lake_core import arrow_memory
from lake_core.merge.sort import counted_order

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


def test_positions_arrow_computed_are_gathered_without_a_copy():
    """np.take copies read-only positions (Arrow's to_numpy) into NumPy's own memory before each
    gather: positions from compress and the counting sort are writable views instead, so a gather
    with them allocates nothing outside the pool."""
    values = np.arange(1 << 20, dtype=np.int64)
    kept = arrow_memory.compress(values % 3 != 0, values)
    order = counted_order((values % 4096).astype(np.uint16))
    assert kept.flags.writeable and order.flags.writeable
    assert np.array_equal(kept, values[values % 3 != 0])
    assert np.array_equal(order, np.argsort(values % 4096, kind="stable"))
    tracemalloc.start()
    try:
        arrow_memory.take(values, kept)
        arrow_memory.take(values, order)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20  # a copy of either would be 5-8 MB


@settings(max_examples=60, deadline=None)
@given(n=st.integers(0, 200), start=st.integers(0, 50), dtype=st.sampled_from([pa.int64(), pa.int32(), pa.uint16()]))
def test_computed_views_hold_the_arrays_values(n, start, dtype):
    values = pa.array([i * 3 for i in range(n + start)], dtype)
    array = pc.filter(values, pa.array([i % 2 == 0 for i in range(len(values))], pa.bool_()))
    array = array.slice(min(start, len(array)))  # an offset into the kernel's buffer
    view = arrow_memory.computed(array)
    assert view.dtype == dtype.to_pandas_dtype() and view.flags.writeable
    assert view.tolist() == array.to_pylist()


def test_one_array_keeps_a_single_chunk_as_it_is():
    chunk = pa.array(np.arange(1000, dtype=np.int64)).slice(10, 500)
    single = arrow_memory.one_array(pa.chunked_array([chunk]))
    assert single.buffers()[1].address == chunk.buffers()[1].address  # no copy
    assert single.to_pylist() == chunk.to_pylist()
    several = arrow_memory.one_array(pa.chunked_array([chunk, chunk.slice(3, 4)]))
    assert several.to_pylist() == chunk.to_pylist() + chunk.slice(3, 4).to_pylist()
    assert arrow_memory.one_array(pa.chunked_array([], pa.int32())).to_pylist() == []
    assert arrow_memory.one_array(chunk) is chunk
