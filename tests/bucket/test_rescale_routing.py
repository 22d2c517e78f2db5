"""The property the routed rescale (lake_core.maintenance.rescale._routes) rests on, for each of
Paimon's bucket functions: when one bucket count is a multiple of the other, a row's bucket under
the larger count, taken modulo the smaller, is its bucket under the smaller. So new bucket ``c`` of
a 2 -> 8 rescale holds rows of old bucket ``c mod 2`` only, and old bucket ``b`` of an 8 -> 2 one
goes whole to new bucket ``b mod 2``. It holds because every function is ``h mod n`` of a
non-negative ``h`` that does not depend on ``n``; a ``hash % n`` of a signed hash without the
absolute value (negative buckets) would break it, so it is checked here rather than assumed:
random keys of every type the bucket functions take, the int32 extremes, and random counts."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from format.test_binary_row import tables  # the random schemas/rows of the encoder tests
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lake_core.bucket.assign import assign_buckets, bucket_of_hashes

I32_MIN, I32_MAX = -(2**31), 2**31 - 1

# (small count, multiple): 1 -> N, the powers of two that rescales use, odd factors, and large counts
counts = st.tuples(st.integers(1, 64), st.integers(1, 16)) | st.tuples(
    st.integers(1, 2**15), st.integers(1, 2**15)
).filter(lambda t: t[0] * t[1] <= I32_MAX)


def _holds(columns, types, small: int, factor: int, function: str) -> None:
    large = small * factor
    under_small = assign_buckets(columns, types, small, function)
    under_large = assign_buckets(columns, types, large, function)
    assert (under_large >= 0).all() and (under_large < large).all()
    # 2 -> 8 (fan out): new bucket c holds only rows of old bucket c mod old
    # 8 -> 2 (fan in): the rows of old bucket b all go to new bucket b mod new
    assert (under_large % small == under_small).all(), (small, large, function)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(table=tables(max_rows=20), n=counts)
def test_default_bucket_function_routes(table, n):
    types, rows = table
    columns = [pa.array([r[i] for r in rows], type=t) for i, t in enumerate(types)]
    _holds(columns, types, *n, "default")


@settings(max_examples=200, deadline=None)
@given(hashes=st.lists(st.integers(I32_MIN, I32_MAX), max_size=50), n=counts)
def test_default_bucket_of_any_hash_routes(hashes, n):
    # every int32 hash, Integer.MIN_VALUE included (Math.abs(MIN_VALUE % n) is still in range)
    small, factor = n
    h = np.array([I32_MIN, I32_MAX, -1, 0, 1, *hashes], np.int64).astype(np.int32)
    assert (bucket_of_hashes(h, small * factor) % small == bucket_of_hashes(h, small)).all()


@settings(max_examples=200, deadline=None)
@given(
    values=st.lists(st.none() | st.integers(-(2**63), 2**63 - 1), max_size=30),
    wide=st.booleans(),
    n=counts,
)
def test_mod_bucket_function_routes(values, wide, n):
    # floorMod of a negative key is non-negative, so the property holds for negative keys too
    t = pa.int64() if wide else pa.int32()
    lo, hi = (-(2**63), 2**63 - 1) if wide else (I32_MIN, I32_MAX)
    values = [None if v is None else lo + (v - lo) % (hi - lo + 1) for v in [lo, hi, -1, 0, *values]]
    _holds([pa.array(values, t)], [t], *n, "mod")


_HIVE_TYPES = [
    (pa.int32(), st.integers(I32_MIN, I32_MAX)),
    (pa.int64(), st.integers(-(2**63), 2**63 - 1)),
    (pa.string(), st.text(max_size=12)),
    (pa.float64(), st.floats(allow_nan=True)),
    (pa.bool_(), st.booleans()),
]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), n=counts)
def test_hive_bucket_function_routes(data, n):
    picks = data.draw(st.lists(st.sampled_from(_HIVE_TYPES), min_size=1, max_size=3))
    rows = data.draw(st.lists(st.tuples(*[st.none() | s for _t, s in picks]), max_size=20))
    types = [t for t, _s in picks]
    columns = [pa.array([r[i] for r in rows], type=t) for i, t in enumerate(types)]
    _holds(columns, types, *n, "hive")


@pytest.mark.parametrize("function", ["default", "mod", "hive"])
def test_the_int_extremes_route(function):
    keys = pa.array([I32_MIN, I32_MIN + 1, -7, -1, 0, 1, 7, I32_MAX], pa.int32())
    for small, factor in [(1, 8), (2, 4), (3, 5), (4, 2), (7, 7), (1000, 3)]:
        _holds([keys], [pa.int32()], small, factor, function)
