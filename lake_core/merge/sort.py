"""Ordering a bucket's rows for merging, vectorized (one lexsort, no per-row Python).

Rows of several sorted runs (or one unsorted write batch) are ordered by
(key, user sequence fields, _SEQUENCE_NUMBER); every merge engine then reduces each key group.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_core import arrow_memory
from lake_core.format.float_order import sortable_array, sortable_bits
from lake_core.kv.system_fields import KIND, SEQ


@dataclass(frozen=True)
class Groups:
    """``order`` gathers rows into merge order; ``starts``/``ends`` delimit key groups in it."""

    order: np.ndarray  # int64 indices into the input
    starts: np.ndarray  # int64 positions (into order) where each key group starts
    ends: np.ndarray  # exclusive ends

    @property
    def last(self) -> np.ndarray:
        """Input index of the newest row of every group."""
        return self.order[self.ends - 1]

    @property
    def first(self) -> np.ndarray:
        return self.order[self.starts]

    @property
    def count(self) -> int:
        return len(self.starts)


def numpy_column(col: pa.ChunkedArray) -> np.ndarray:
    """A null-free primitive column as one NumPy array (zero-copy when it is one chunk)."""
    return arrow_memory.one_array(col).to_numpy()


def numpy_key(col: pa.ChunkedArray | pa.Array) -> np.ndarray | None:
    """NumPy view of a null-free primitive column, or None when it needs Arrow's comparator.
    Floats become integers ordered as Java's ``Double.compare`` (one NaN, -0.0 < 0.0)."""
    col = arrow_memory.one_array(col)
    t = col.type
    if col.null_count:
        return None
    if pa.types.is_floating(t) and t.bit_width in (32, 64):
        return sortable_bits(col.to_numpy(zero_copy_only=False))
    if pa.types.is_integer(t) or pa.types.is_boolean(t):
        return col.to_numpy(zero_copy_only=False)
    if pa.types.is_date(t) or pa.types.is_timestamp(t) or pa.types.is_time(t):
        return col.cast(pa.int64() if t.bit_width == 64 else pa.int32()).to_numpy(zero_copy_only=False)
    return None


def numpy_orderable(t: pa.DataType) -> bool:
    """Whether :func:`numpy_key` maps a null-free column of type ``t`` to NumPy values in Java's
    order (the types a key column's order can be taken from without Arrow's comparator)."""
    return (
        pa.types.is_integer(t)
        or pa.types.is_boolean(t)
        or (pa.types.is_floating(t) and t.bit_width in (32, 64))
        or pa.types.is_date(t)
        or pa.types.is_timestamp(t)
        or pa.types.is_time(t)
    )


#: below this many rows the sort is cheap whatever it does
_RADIX_MIN_ROWS = 4096
#: an integer key spanning fewer bits is sorted digit by digit (at most four passes; a comparison
#: sort of a write batch costs about what eight do)
_RADIX_MAX_BITS = 48
#: bits per digit: Arrow's sort counts values spanning at most 4,096 (one pass, 0.7 ms for 250k
#: rows), and compares beyond that (20 ms); NumPy radix-sorts 16-bit digits in 2.4 ms
_DIGIT_BITS = 12


def sorted_find(ascending: np.ndarray, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each of ``wanted`` (any order) is in ``ascending`` (sorted, each value once), by binary
    search: ``(at, found)``, ``at`` a position (meaningful where ``found``)."""
    at = np.searchsorted(ascending, wanted)
    if not len(ascending):
        return at, np.zeros(len(wanted), dtype=bool)
    np.minimum(at, len(ascending) - 1, out=at)
    return at, ascending[at] == wanted


def counted_order(values: np.ndarray) -> np.ndarray:
    """The stable order (int64 positions) of non-negative integers below 4,096: Arrow sorts values
    of so small a span by counting them into place, in one pass."""
    return arrow_memory.computed(pc.array_sort_indices(pa.array(values))).view(np.int64)


def sorted_order(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(np.argsort(key, kind="stable"), key in that order)``, faster on integer keys:

    - a few presorted runs (the runs of a merge-on-read): NumPy's timsort merges them in linear
      time, but hands back a fresh array of its own allocator, faulted in page by page on every
      read; when the key's span leaves room, each key is packed with its position into one
      unsigned integer of Arrow's pool and those are sorted in place (the same timsort; distinct
      values, so any order of them is the stable one), and the order and the sorted key are
      unpacked from it;
    - a write batch in arrival order: NumPy's timsort of 64-bit integers costs n log n; an LSD radix
      sort over 12-bit digits, each a stable counting sort by Arrow, is ~10x faster."""
    n = len(key)
    if n < _RADIX_MIN_ROWS or key.dtype.kind not in "iu" or key.dtype.itemsize < 4:
        order = np.argsort(key, kind="stable")
        return order, key[order]
    descents = np.less(key[1:], key[:-1], out=arrow_memory.empty(n - 1, bool))
    lo, hi = int(key.min()), int(key.max())
    span = hi - lo
    # key - lo is within [0, span]: no overflow in the key's own width, unsigned keys stay unsigned.
    dtype = np.dtype(np.int64) if key.dtype.itemsize < 8 else key.dtype
    if np.count_nonzero(descents) * 64 < n:  # a few long runs: timsort merges them
        bits = (n - 1).bit_length()
        if span >> (64 - bits):
            order = np.argsort(key, kind="stable")
            return order, arrow_memory.take(key, order)
        return _packed_sort(key, lo, dtype, bits)
    if span >= 1 << _RADIX_MAX_BITS:
        order = np.argsort(key, kind="stable")
        return order, arrow_memory.take(key, order)
    # The working arrays and the digits' orders live in Arrow's pool (lake_core.arrow_memory).
    offset = np.subtract(key, dtype.type(lo), out=arrow_memory.empty(n, dtype), dtype=dtype)
    digits = arrow_memory.empty(n, np.uint16)
    radix: np.ndarray | None = None
    for shift in range(0, max(span.bit_length(), 1), _DIGIT_BITS):
        source = offset if radix is None else arrow_memory.take(offset, radix)
        np.right_shift(source, shift, out=digits, casting="unsafe")  # the low 16 bits of it
        np.bitwise_and(digits, (1 << _DIGIT_BITS) - 1, out=digits)
        step = counted_order(digits)
        radix = step if radix is None else arrow_memory.take(radix, step)
    assert radix is not None
    return radix, arrow_memory.take(key, radix)


def _packed_sort(key: np.ndarray, lo: int, dtype: np.dtype, bits: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`sorted_order` of ``key`` (minimum ``lo``) whose span fits ``64 - bits`` bits, the
    positions ``bits``: ``(key - lo) << bits | position`` sorted in place."""
    n = len(key)
    packed = np.subtract(key, dtype.type(lo), out=arrow_memory.empty(n, dtype), dtype=dtype).view(np.uint64)
    np.left_shift(packed, np.uint64(bits), out=packed)
    np.bitwise_or(packed, arrow_memory.arange(0, n).view(np.uint64), out=packed)
    packed.sort(kind="stable")
    ordered = np.right_shift(packed, np.uint64(bits), out=arrow_memory.empty(n, np.uint64)).view(dtype)
    np.add(ordered, dtype.type(lo), out=ordered)
    if ordered.dtype != key.dtype:
        ordered = ordered.astype(key.dtype)  # a 32-bit key, offset in 64 bits
    np.bitwise_and(packed, np.uint64((1 << bits) - 1), out=packed)
    return packed.view(np.int64), ordered


#: group ids spanning at most this many values are counted into place by Arrow's stable sort
#: (0.8 ms for 4 buckets of 200k rows, against 0.9 ms for a comparison pass per group), in
#: memory of Arrow's pool (see lake_core.arrow_memory)
_COUNTED_SPAN = 4096


def group_positions(gid: np.ndarray, groups: int) -> Iterator[tuple[int, np.ndarray]]:
    """``(group, the increasing positions of its rows)`` for each group id in ``gid`` (each in
    ``range(groups)``), in group order."""
    if not len(gid):
        return
    lo, hi = int(gid.min()), int(gid.max())
    if lo == hi:
        yield lo, arrow_memory.arange(0, len(gid))
        return
    if hi - lo < _COUNTED_SPAN:
        digits = np.subtract(gid, lo, out=arrow_memory.empty(len(gid), np.uint16), casting="unsafe")
        order = counted_order(digits)
        ordered = arrow_memory.take(digits, order)
        bounds = np.searchsorted(ordered, np.arange(hi - lo + 2, dtype=np.uint16))
        for d in range(hi - lo + 1):
            s, e = int(bounds[d]), int(bounds[d + 1])
            if e > s:
                yield lo + d, order[s:e]
        return
    if groups <= 1 << 16:
        # stable: keeps input order inside a group; NumPy radix-sorts 8/16-bit integers (O(n))
        counts = np.bincount(gid, minlength=groups)
        present = np.flatnonzero(counts)
        order = np.argsort(gid.astype(np.uint8 if groups <= 1 << 8 else np.uint16), kind="stable")
        sizes = counts[present]
    else:  # too many groups to count them all: from the sorted group ids
        order = np.argsort(gid, kind="stable")
        sorted_gid = gid[order]
        firsts = np.flatnonzero(np.concatenate([[True], sorted_gid[1:] != sorted_gid[:-1]]))
        present = sorted_gid[firsts]
        sizes = np.diff(np.append(firsts, len(order)))
    ends = np.cumsum(sizes)
    for g, s, e in zip(present.tolist(), (ends - sizes).tolist(), ends.tolist()):
        yield g, order[s:e]


def merge_order(
    rows: pa.Table,
    key_columns: tuple[str, ...],
    sequence_fields: tuple[str, ...] = (),
    sequence_descending: bool = False,
    rowkind_tiebreak: bool = False,
) -> np.ndarray:
    """Indices ordering rows by key, then user sequence, then _SEQUENCE_NUMBER (all stable).

    ``rowkind_tiebreak`` ('sequence.auto-padding' = 'row-kind-flag'): on equal user sequence
    values, -U/-D rows sort before +I/+U rows."""
    n = rows.num_rows
    seq = rows[SEQ].to_numpy()
    if not sequence_fields and len(key_columns) == 1:
        key = numpy_key(rows[key_columns[0]])
        if key is not None:
            # Runs arrive oldest -> newest, so a stable sort on the key alone usually leaves each
            # group in sequence order; verify cheaply and fall back to a full lexsort if not.
            order, ks = sorted_order(key)
            ss = seq[order]
            same = ks[1:] == ks[:-1]
            if not np.any(same & (ss[1:] < ss[:-1])):
                return order
            return np.lexsort((seq, key))
    # NULL user sequence values sort first: they lose against any set value (Java comparator).
    sort_keys = [(k, "ascending", "at_start") for k in key_columns]
    direction = "descending" if sequence_descending else "ascending"
    sort_keys += [(f, direction, "at_start") for f in sequence_fields]
    flag_col = "__lake_core_add_flag"
    tiebreak = rowkind_tiebreak and bool(sequence_fields)
    if tiebreak:
        sort_keys.append((flag_col, "ascending", "at_start"))
    sort_keys.append((SEQ, "ascending", "at_start"))
    cols = list(dict.fromkeys([k[0] for k in sort_keys if k[0] != flag_col]))
    sel = _java_ordered_keys(rows.select(cols), key_columns)
    if tiebreak:
        kinds = rows[KIND].to_numpy()
        sel = sel.append_column(flag_col, pa.array(((kinds == 0) | (kinds == 2)).astype(np.int8)))
    idx = pc.sort_indices(sel, sort_keys=sort_keys)
    return idx.to_numpy().astype(np.int64, copy=False) if n else np.zeros(0, np.int64)


def _one_key_groups(rows: pa.Table, key_column: str) -> tuple[np.ndarray, np.ndarray] | None:
    """``merge_order`` and ``_boundaries`` of one NumPy-ordered key without user sequence fields,
    the sorted key gathered once for both (None: the key needs Arrow's comparator)."""
    key = numpy_key(rows[key_column])
    if key is None:
        return None
    order, new = _key_groups(key)
    if new.all():  # each key once (a write batch of distinct keys): no sequence order to check
        return order, new
    repeat = np.flatnonzero(~new[1:])  # sorted row i + 1 has the key of sorted row i
    if len(repeat):  # a key held more than once: its rows must be in sequence order
        # only the repeated rows' sequence numbers are gathered, not the column
        pairs = rows[SEQ].take(pa.array(np.concatenate([order[repeat], order[repeat + 1]])))
        pairs = (pairs.combine_chunks() if isinstance(pairs, pa.ChunkedArray) else pairs).to_numpy()
        if np.any(pairs[len(repeat) :] < pairs[: len(repeat)]):
            order = np.lexsort((rows[SEQ].to_numpy(), key))  # runs did not arrive oldest first
    return order, new


def last_rows(rows: pa.Table, key_columns: tuple[str, ...]) -> np.ndarray:
    """``group_rows(rows, key_columns).last`` (no user sequence fields): the input index of each
    key's newest row, in key order, without the group bounds."""
    if len(key_columns) == 1 and rows.num_rows:
        fast = _one_key_groups(rows, key_columns[0])
        if fast is not None:
            return _group_lasts(*fast)
    return group_rows(rows, key_columns).last


def last_of_each_key(key: np.ndarray) -> np.ndarray:
    """The index of each key's last row, in key order, for rows that are sorted runs one after
    another (a stable sort merges them; a key's rows keep their run order)."""
    if len(key) == 0:
        return np.zeros(0, np.int64)
    return _group_lasts(*_key_groups(key))


def _key_groups(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(stable order of the non-empty ``key``, True at each sorted position where a new key starts)."""
    order, ks = sorted_order(key)
    new = arrow_memory.empty(len(ks), bool)
    new[0] = True
    np.not_equal(ks[1:], ks[:-1], out=new[1:])
    return order, new


def _group_lasts(order: np.ndarray, new: np.ndarray) -> np.ndarray:
    """The input index of each group's last row, from :func:`_key_groups`'s two arrays."""
    last = arrow_memory.empty(len(new), bool)
    last[:-1] = new[1:]
    last[-1] = True
    return arrow_memory.compress(last, order)


def _java_ordered_keys(sel: pa.Table, key_columns: tuple[str, ...]) -> pa.Table:
    """Float key columns replaced by integers in Java's ``Double.compare`` order."""
    for i, name in enumerate(sel.column_names):
        t = sel.schema.field(i).type
        if name in key_columns and pa.types.is_floating(t) and t.bit_width in (32, 64):
            sel = sel.set_column(i, name, sortable_array(sel.column(i)))
    return sel


def _boundaries(rows: pa.Table, key_columns: tuple[str, ...], order: np.ndarray) -> np.ndarray:
    """Boolean mask over sorted positions: True where a new key group starts."""
    n = len(order)
    new = np.zeros(n, dtype=bool)
    if n == 0:
        return new
    new[0] = True
    for k in key_columns:
        arr = numpy_key(rows[k])
        if arr is not None:
            s = arr[order]
            new[1:] |= s[1:] != s[:-1]
        else:
            s = (
                rows[k].take(pa.array(order)).combine_chunks()
                if isinstance(rows[k], pa.ChunkedArray)
                else rows[k].take(order)
            )
            diff = pc.not_equal(s.slice(1), s.slice(0, n - 1))
            # NULL vs value counts as different; NULL vs NULL as equal.
            both_null = pc.and_(pc.is_null(s.slice(1)), pc.is_null(s.slice(0, n - 1)))
            diff = pc.if_else(pc.is_null(diff), pc.invert(both_null), diff)
            new[1:] |= diff.to_numpy(zero_copy_only=False)
    return new


def group_rows(
    rows: pa.Table,
    key_columns: tuple[str, ...],
    sequence_fields: tuple[str, ...] = (),
    sequence_descending: bool = False,
    rowkind_tiebreak: bool = False,
) -> Groups:
    new = None
    if not sequence_fields and len(key_columns) == 1 and rows.num_rows:
        fast = _one_key_groups(rows, key_columns[0])
        if fast is not None:
            order, new = fast
    if new is None:
        order = merge_order(rows, key_columns, sequence_fields, sequence_descending, rowkind_tiebreak)
        new = _boundaries(rows, key_columns, order)
    starts = np.flatnonzero(new).astype(np.int64)
    ends = np.empty_like(starts)
    if len(starts):
        ends[:-1] = starts[1:]
        ends[-1] = len(order)
    return Groups(order=order, starts=starts, ends=ends)
