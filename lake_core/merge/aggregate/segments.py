"""Key groups over rows already in merge order (``Segments``) and the vectorized per-group folds
every aggregate function builds on: a ``ufunc`` fold per group, the first/last row matching a
mask, and gathering one row per group."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pyarrow as pa

SMALL_GROUP = 64


@dataclass(frozen=True)
class Segments:
    """Contiguous key groups: group ``g`` spans rows ``starts[g]:ends[g]`` (never empty)."""

    starts: np.ndarray
    ends: np.ndarray

    @property
    def count(self) -> int:
        return len(self.starts)

    @property
    def n(self) -> int:
        return int(self.ends[-1]) if len(self.ends) else 0

    @cached_property
    def sizes(self) -> np.ndarray:
        return self.ends - self.starts

    @cached_property
    def seg_id(self) -> np.ndarray:
        """Group number of every row."""
        return np.repeat(np.arange(self.count, dtype=np.int64), self.sizes)

    @cached_property
    def positions(self) -> np.ndarray:
        return np.arange(self.n, dtype=np.int64)

    @cached_property
    def rounds(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """For j = 1, 2, ...: (groups of at most SMALL_GROUP rows having a row j, that row's
        position). Folding round by round visits every small group's rows in order, vectorized
        across groups; most groups hold one or two rows, so this beats ``ufunc.reduceat`` (whose
        cost is per group)."""
        sizes = self.sizes
        active = np.flatnonzero((sizes > 1) & (sizes <= SMALL_GROUP))
        out = []
        j = 1
        while len(active):
            out.append((active, self.starts[active] + j))
            j += 1
            active = active[sizes[active] > j]
        return out

    @cached_property
    def large(self) -> np.ndarray:
        return np.flatnonzero(self.sizes > SMALL_GROUP)

    def subset(self, groups: np.ndarray) -> tuple[Segments, np.ndarray]:
        """The segments of ``groups`` (sorted group numbers) re-based onto their gathered rows,
        and the row indices to gather."""
        sizes = self.sizes[groups]
        new_ends = np.cumsum(sizes)
        new_starts = new_ends - sizes
        rows = np.repeat(self.starts[groups] - new_starts, sizes) + np.arange(int(sizes.sum()), dtype=np.int64)
        return Segments(new_starts.astype(np.int64), new_ends.astype(np.int64)), rows


def seg_reduce(ufunc: np.ufunc, x: np.ndarray, seg: Segments, ordered: bool = False) -> np.ndarray:
    """Per-group ``ufunc`` fold. With ``ordered`` (floating-point add/multiply) the fold is the
    exact left fold ``((x0 op x1) op x2) ...``, as Java's accumulator computes it."""
    if seg.count == 0:
        return x[:0].copy()
    out = x[seg.starts]
    for groups, rows in seg.rounds:
        out[groups] = ufunc(out[groups], x[rows])
    large = seg.large
    if len(large):
        if ordered:
            for g in large.tolist():
                out[g] = ufunc.accumulate(x[seg.starts[g] : seg.ends[g]])[-1]
        else:
            sub, rows = seg.subset(large)
            out[large] = ufunc.reduceat(x[rows], sub.starts, dtype=x.dtype)
    return out


def last_index(seg: Segments, mask: np.ndarray) -> np.ndarray:
    """Per group, the last row where ``mask`` holds (-1: none)."""
    return seg_reduce(np.maximum, np.where(mask, seg.positions, -1), seg)


def first_index(seg: Segments, mask: np.ndarray) -> np.ndarray:
    """Per group, the first row where ``mask`` holds (-1: none)."""
    big = np.int64(seg.n)
    r = seg_reduce(np.minimum, np.where(mask, seg.positions, big), seg)
    r[r == big] = -1
    return r


def any_per_group(seg: Segments, mask: np.ndarray) -> np.ndarray:
    return seg_reduce(np.logical_or, np.asarray(mask, dtype=bool), seg)


def take_or_null(values: pa.Array, idx: np.ndarray) -> pa.Array:
    """``values[idx]`` with NULL where ``idx < 0``."""
    neg = idx < 0
    if neg.any():
        return values.take(pa.array(np.where(neg, 0, idx), type=pa.int64(), mask=neg))
    return values.take(pa.array(idx, type=pa.int64()))


def combine_groups(fast: pa.Array, slow: pa.Array, slow_groups: np.ndarray) -> pa.Array:
    """``fast`` with the entries of ``slow_groups`` replaced by ``slow`` (any Arrow type)."""
    if len(slow_groups) == 0:
        return fast
    both = pa.concat_arrays([fast, slow.cast(fast.type) if slow.type != fast.type else slow])
    perm = np.arange(len(fast), dtype=np.int64)
    perm[slow_groups] = len(fast) + np.arange(len(slow_groups), dtype=np.int64)
    return both.take(pa.array(perm))
