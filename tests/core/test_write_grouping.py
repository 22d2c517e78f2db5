"""A write's rows are split by (partition, bucket), and a rescale's by new bucket, with their input
order kept: the same groups, whichever way they are found (counted by Arrow for ids spanning up to
4,096 values, a radix sort for more, a full sort beyond 16-bit group ids)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from lake_core.merge.sort import group_positions


@settings(max_examples=150, deadline=None)
@given(
    groups=st.sampled_from([1, 2, 4, 8, 9, 64, 300, 1 << 16, (1 << 16) + 1, 1 << 20]),
    present=st.integers(1, 12),
    rows=st.integers(1, 400),
    seed=st.integers(0, 2**32 - 1),
)
def test_groups_hold_their_rows_in_input_order(groups, present, rows, seed):
    rng = np.random.default_rng(seed)
    ids = rng.choice(groups, size=min(present, groups), replace=False)
    gid = ids[rng.integers(0, len(ids), rows)].astype(np.int64)
    found = [(g, p.tolist()) for g, p in group_positions(gid, groups)]
    expected = [(int(g), np.flatnonzero(gid == g).tolist()) for g in sorted(set(gid.tolist()))]
    assert found == expected
