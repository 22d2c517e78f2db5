"""Avro binary encoding of many records at once, column by column, with numpy.

A record's Avro encoding is its fields' encodings one after the other, so the records of a batch
are built as *pieces*, one per field (or part of one: a union's branch, a length prefix): a piece
is the flat bytes of that part for every record plus each record's length. :func:`interleave`
then lays the pieces out record after record with one gather. Integers are zig-zag varints
computed for the whole column at once; strings and bytes are joined once; values that repeat
(arrays of column names, null counts) are encoded once each.

The bytes are exactly what fastavro writes for the same records (the manifest codec's tests
compare them), and :func:`block_bounds` cuts blocks where fastavro's writer does.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np

__all__ = [
    "Piece",
    "varint",
    "varints",
    "constant",
    "raw",
    "length_prefixed",
    "optional_longs",
    "encoded_once",
    "per_value",
    "interleave",
    "block_bounds",
]

#: (every record's bytes of one part, concatenated; each record's byte count)
Piece = tuple[np.ndarray, np.ndarray]


def varint(n: int) -> bytes:
    """The zig-zag varint of one long (Avro ``int``/``long``)."""
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while z & ~0x7F:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def varints(values: Sequence[int] | np.ndarray) -> Piece:
    """The zig-zag varints of a column of longs."""
    v = np.asarray(values, dtype=np.int64)
    z = ((v << 1) ^ (v >> 63)).view(np.uint64)
    n = len(z)
    lens = np.ones(n, dtype=np.int64)
    groups = []
    rest = z.copy()
    for _ in range(10):
        low = (rest & np.uint64(0x7F)).astype(np.uint8)
        rest >>= np.uint64(7)
        more = rest != 0
        groups.append(low | (more.astype(np.uint8) << np.uint8(7)))
        if not more.any():
            break
        lens += more
    table = np.stack(groups, axis=1)
    mask = np.arange(table.shape[1]) < lens[:, None]
    return table[mask], lens


def constant(value: bytes, n: int) -> Piece:
    """The same bytes in every record."""
    return np.tile(np.frombuffer(value, dtype=np.uint8), n), np.full(n, len(value), dtype=np.int64)


def raw(items: Sequence[bytes]) -> Piece:
    """Each record's ready-made bytes, as they are."""
    lens = np.fromiter(map(len, items), dtype=np.int64, count=len(items))
    return np.frombuffer(b"".join(items), dtype=np.uint8), lens


def length_prefixed(items: Sequence[bytes]) -> list[Piece]:
    """Avro ``bytes`` (and ``string``, given its UTF-8): the length, then the bytes."""
    flat, lens = raw(items)
    return [varints(lens), (flat, lens)]


def optional_longs(values: Sequence[int | None]) -> list[Piece]:
    """A ``["null", "long"]`` union (``int`` alike): branch 0, or branch 1 and the value."""
    n = len(values)
    present = np.fromiter((v is not None for v in values), dtype=bool, count=n)
    if not present.any():
        return [constant(b"\x00", n)]
    if present.all():
        return [constant(b"\x02", n), varints([v for v in values if v is not None])]
    flat, sub_lens = varints([v for v in values if v is not None])
    lens = np.zeros(n, dtype=np.int64)
    lens[present] = sub_lens
    branch = np.where(present, np.uint8(2), np.uint8(0)).astype(np.uint8)
    return [(branch, np.ones(n, dtype=np.int64)), (flat, lens)]


def encoded_once(values: list[Hashable], encode: Callable[[Any], bytes]) -> Piece:
    """Each record's value encoded by ``encode``, every distinct value once (values that repeat)."""
    if values and values.count(values[0]) == len(values):  # one value throughout (often None or ())
        return constant(encode(values[0]), len(values))
    cache: dict[Any, bytes] = {}
    by_id: dict[int, bytes] = {}  # the same object again (files share their tuples): no hashing
    out: list[bytes] = []
    append = out.append
    for v in values:
        b = by_id.get(id(v))
        if b is None:
            b = cache.get(v)
            if b is None:
                b = cache[v] = encode(v)
            by_id[id(v)] = b
        append(b)
    return raw(out)


def per_value(values: Sequence[Any], encode: Callable[[Any], bytes], *, none: bytes | None = None) -> Piece:
    """Each record's value encoded by ``encode``; ``none``: the bytes of None, when all are None."""
    if none is not None and all(v is None for v in values):
        return constant(none, len(values))
    return raw([encode(v) for v in values])


def interleave(pieces: Sequence[Piece]) -> tuple[bytes, np.ndarray]:
    """(the records, each the concatenation of its bytes in every piece, in order; each record's
    byte count)."""
    lens = np.stack([p[1] for p in pieces], axis=1)  # (records, pieces)
    flats = [p[0] for p in pieces]
    bases = np.concatenate(([0], np.cumsum([len(f) for f in flats])[:-1])).astype(np.int64)
    starts = np.cumsum(lens, axis=0) - lens + bases  # where each (record, piece) sits in `flats` joined
    seg_len = lens.ravel()
    seg_src = starts.ravel()
    total = int(seg_len.sum())
    seg_dst = np.cumsum(seg_len) - seg_len
    index = np.repeat(seg_src - seg_dst, seg_len) + np.arange(total, dtype=np.int64)
    return np.concatenate(flats)[index].tobytes(), lens.sum(axis=1)


def block_bounds(record_lens: np.ndarray, interval: int) -> list[tuple[int, int]]:
    """(first record, end record) of each block, cut as fastavro's writer cuts: after the record
    that brings the block to ``interval`` bytes or more."""
    out = []
    start = 0
    size = 0
    for i, n in enumerate(record_lens.tolist()):
        size += n
        if size >= interval:
            out.append((start, i + 1))
            start, size = i + 1, 0
    if start < len(record_lens):
        out.append((start, len(record_lens)))
    return out
