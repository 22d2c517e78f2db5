"""The portable RoaringBitmap serialization (org.roaringbitmap, CRoaring, pyroaring share it), with
NumPy: 32-bit bitmaps and the 64-bit layout Iceberg and Paimon's ``Bitmap64DeletionVector`` use
(little-endian count of 32-bit bitmaps, each prefixed by its high 32 bits).

Writing emits array and bitmap containers (no run containers: valid for every reader); reading
accepts all three container kinds, as Java run-optimizes before it serializes. Work is per
container of 65,536 positions, never per position.
"""

from __future__ import annotations

import numpy as np

from lake_core.errors import FormatError

_COOKIE_NO_RUN = 12346
_COOKIE_RUN = 12347
_ARRAY_MAX = 4096  # containers with more values are bitmaps
_NO_OFFSET_THRESHOLD = 4  # run-cookie bitmaps with fewer containers omit the offset header


def serialize32(values: np.ndarray) -> bytes:
    """Portable serialization of the set ``values`` (unsigned 32-bit, any order, duplicates allowed)."""
    v = np.unique(np.asarray(values, dtype=np.uint64))
    if v.size and int(v[-1]) > 0xFFFFFFFF:
        raise ValueError(f"position {int(v[-1])} does not fit a 32-bit roaring bitmap")
    v = v.astype(np.uint32)
    high = (v >> 16).astype(np.uint16)
    low = (v & 0xFFFF).astype(np.uint16)
    keys, starts, counts = np.unique(high, return_index=True, return_counts=True)
    n = len(keys)
    bodies = []
    for i in range(n):
        lo = low[starts[i] : starts[i] + counts[i]]
        if counts[i] > _ARRAY_MAX:
            bits = np.zeros(65536, dtype=np.uint8)
            bits[lo] = 1
            bodies.append(np.packbits(bits, bitorder="little").tobytes())
        else:
            bodies.append(lo.astype("<u2").tobytes())
    header = np.array([_COOKIE_NO_RUN, n], dtype="<u4").tobytes()
    desc = np.empty(2 * n, dtype="<u2")
    desc[0::2] = keys
    desc[1::2] = (counts - 1).astype(np.uint16)
    sizes = np.array([len(b) for b in bodies], dtype=np.int64)
    first = len(header) + 4 * n + 4 * n
    offsets = (first + np.concatenate([[0], np.cumsum(sizes)[:-1]])).astype("<u4") if n else np.empty(0, "<u4")
    return header + desc.tobytes() + offsets.tobytes() + b"".join(bodies)


def deserialize32(buf: bytes | memoryview, pos: int = 0, where: str = "roaring bitmap") -> tuple[np.ndarray, int]:
    """The sorted uint32 values of the bitmap serialized at ``buf[pos:]`` and the end offset."""
    mv = memoryview(buf)
    try:
        cookie = int(np.frombuffer(mv, "<u4", 1, pos)[0])
        p = pos + 4
        if cookie & 0xFFFF == _COOKIE_RUN:
            n = (cookie >> 16) + 1
            run_flags = np.unpackbits(np.frombuffer(mv, np.uint8, (n + 7) // 8, p), bitorder="little")[:n]
            p += (n + 7) // 8
            has_offsets = n >= _NO_OFFSET_THRESHOLD
        elif cookie == _COOKIE_NO_RUN:
            n = int(np.frombuffer(mv, "<u4", 1, p)[0])
            p += 4
            run_flags = np.zeros(n, np.uint8)
            has_offsets = True
        else:
            raise FormatError(f"{where}: unknown roaring cookie {cookie}; the file is not a roaring bitmap")
        desc = np.frombuffer(mv, "<u2", 2 * n, p).astype(np.uint32)
        p += 4 * n
        keys, cards = desc[0::2], desc[1::2] + 1
        if has_offsets:
            p += 4 * n  # containers follow in order; the offsets are only for random access
        parts = []
        for i in range(n):
            if run_flags[i]:
                nruns = int(np.frombuffer(mv, "<u2", 1, p)[0])
                runs = np.frombuffer(mv, "<u2", 2 * nruns, p + 2).astype(np.int64)
                p += 2 + 4 * nruns
                starts, lens = runs[0::2], runs[1::2] + 1
                idx = np.repeat(starts - np.concatenate([[0], np.cumsum(lens)[:-1]]), lens) + np.arange(lens.sum())
                lo = idx.astype(np.uint32)
            elif cards[i] > _ARRAY_MAX:
                bits = np.unpackbits(np.frombuffer(mv, np.uint8, 8192, p), bitorder="little")
                p += 8192
                lo = np.flatnonzero(bits).astype(np.uint32)
            else:
                lo = np.frombuffer(mv, "<u2", int(cards[i]), p).astype(np.uint32)
                p += 2 * int(cards[i])
            parts.append((keys[i] << 16) | lo)
    except (ValueError, IndexError) as e:  # np.frombuffer past the end
        raise FormatError(f"{where} is truncated or corrupt ({e})") from None
    values = np.concatenate(parts) if parts else np.empty(0, np.uint32)
    return values.astype(np.uint32), p


def serialize64(values: np.ndarray) -> bytes:
    """Iceberg/Paimon 64-bit layout: int64 LE bitmap count, then per high-32 key (0..max, empty ones
    included) the uint32 LE key and its 32-bit portable bitmap."""
    v = np.unique(np.asarray(values, dtype=np.uint64))
    if not v.size:
        return np.array([0], "<i8").tobytes()
    high = (v >> 32).astype(np.uint64)
    top = int(high[-1])
    out = [np.array([top + 1], "<i8").tobytes()]
    for key in range(top + 1):
        out.append(np.array([key], "<u4").tobytes())
        out.append(serialize32(v[high == key] & 0xFFFFFFFF))
    return b"".join(out)


def deserialize64(
    buf: bytes | memoryview, pos: int = 0, where: str = "64-bit roaring bitmap"
) -> tuple[np.ndarray, int]:
    mv = memoryview(buf)
    try:
        count = int(np.frombuffer(mv, "<i8", 1, pos)[0])
    except ValueError as e:
        raise FormatError(f"{where} is truncated ({e})") from None
    if count < 0:
        raise FormatError(f"{where}: negative bitmap count {count}")
    p = pos + 8
    parts = []
    for _ in range(count):
        key = int(np.frombuffer(mv, "<u4", 1, p)[0])
        low, p = deserialize32(mv, p + 4, where)
        parts.append((np.uint64(key) << np.uint64(32)) | low.astype(np.uint64))
    return (np.concatenate(parts) if parts else np.empty(0, np.uint64)), p
