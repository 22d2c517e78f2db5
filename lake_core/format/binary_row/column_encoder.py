"""The vectorized ``BinaryRow`` encoder: whole Arrow columns to the bytes of every row with NumPy (no
per-row Python code), for bucket hashing of millions of keys. Tests check it against the scalar
``writer`` and against Java's bytes."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from lake_core.errors import SchemaMismatchError
from lake_core.format.binary_row.arrow_buffers import (
    LOW_BYTES,
    as_array,
    bytes_layout,
    fixed_values,
    null_mask,
    ragged_index,
    unaligned_words,
)
from lake_core.format.binary_row.layout import INLINE_MARK, MAX_INLINE, field_layout, null_bits_size, round8


@dataclass
class _ColumnEncoding:
    """One column of ``encode_rows``.

    ``slot`` is the low part of the 8-byte slot; rows with ``var_size > 0`` get
    ``var offset << 32`` OR-ed in once offsets are known, and ``fill(flat, starts)`` writes
    their var bytes at the flat-buffer positions ``starts``.
    """

    slot: np.ndarray
    null: np.ndarray | None = None
    var_size: np.ndarray | None = None
    fill: Callable[[np.ndarray, np.ndarray], None] | None = None


def _write_blocks(flat: np.ndarray, starts: np.ndarray, block: np.ndarray) -> None:
    """Write row i's ``block[i]`` (fixed width) at ``flat[starts[i]:]``."""
    idx = starts[:, None] + np.arange(block.shape[1], dtype=np.int64)
    flat[idx] = block


_BIT_LENGTH_U8 = np.array([i.bit_length() for i in range(256)], dtype=np.int64)


def _encode_bytes_column(arr: pa.Array, null: np.ndarray | None) -> _ColumnEncoding:
    n = len(arr)
    starts, lens, data = bytes_layout(arr)
    valid = np.ones(n, bool) if null is None else ~null
    inline = valid & (lens <= MAX_INLINE)
    out_of_line = valid & (lens > MAX_INLINE)
    words = unaligned_words(data)

    # Inline: data bytes at 0..len-1 and 0x80|len in byte 7 (little-endian slot).
    inline_slot = (words[starts] & LOW_BYTES[np.minimum(lens, 8)]) | (
        (INLINE_MARK | lens).astype(np.uint64) << np.uint64(56)
    )
    slot = np.where(inline, inline_slot, np.where(out_of_line, lens, 0).astype(np.uint64))

    var_size = np.where(out_of_line, round8(lens), 0)
    rows = np.flatnonzero(out_of_line)

    def fill(flat: np.ndarray, row_starts: np.ndarray) -> None:
        # Var offsets and row strides are multiples of 8, so copy whole words; the last word of
        # each value is masked so its padding bytes are zero.
        n_words = var_size[rows] // 8
        first, within = ragged_index(n_words)
        chunk = words[np.repeat(starts[rows], n_words) + 8 * within]
        chunk[first + n_words - 1] &= LOW_BYTES[(lens[rows] - 1) % 8 + 1]
        flat.view("<u8")[np.repeat(row_starts[rows] // 8, n_words) + within] = chunk

    return _ColumnEncoding(slot, null, var_size if rows.size else None, fill)


def _decimal_words(arr: pa.Array, null: np.ndarray | None) -> np.ndarray:
    """[n, 16] little-endian two's-complement int128 bytes of a decimal128 column."""
    n = len(arr)
    raw = np.frombuffer(arr.buffers()[1], np.uint8, count=(arr.offset + n) * 16)
    raw = raw[arr.offset * 16 :].reshape(n, 16)
    return np.where(null[:, None], 0, raw).astype(np.uint8) if null is not None else raw


def encode_column(col: Any, t: pa.DataType) -> _ColumnEncoding:
    f = field_layout(t)
    if f.kind == "nested":
        n = len(col)
        return _ColumnEncoding(np.zeros(n, np.uint64), np.ones(n, bool))
    arr = as_array(col, t)
    n = len(arr)
    null = null_mask(arr)
    k = f.kind
    if k == "bool":
        values = arr.fill_null(False).to_numpy(zero_copy_only=False)
        return _ColumnEncoding(values.astype(np.uint64), null)
    if k in ("int", "date"):
        values = fixed_values(arr, f"<i{f.width}", null)
        # Zero-extend the little-endian bytes: the unused slot bytes stay 0.
        return _ColumnEncoding(values.view(f"<u{f.width}").astype(np.uint64), null)
    if k == "float":
        values = fixed_values(arr, f"<u{f.width}", null)  # raw IEEE bits, like putFloat
        return _ColumnEncoding(values.astype(np.uint64), null)
    if k == "time":
        width = arr.type.bit_width // 8
        values = fixed_values(arr, f"<i{width}", null).astype(np.int64)
        millis = (
            values * f.unit_nanos // 1_000_000 if f.unit_nanos < 1_000_000 else values * (f.unit_nanos // 1_000_000)
        )
        return _ColumnEncoding(millis.astype(np.int32).view(np.uint32).astype(np.uint64), null)
    if k == "ts":
        values = fixed_values(arr, "<i8", null)
        if f.compact:
            millis = values * (f.unit_nanos // 1_000_000) if f.unit_nanos > 1_000_000 else values
            return _ColumnEncoding(millis.view(np.uint64), null)
        per_milli = 1_000_000 // f.unit_nanos
        millis, rest = np.divmod(values, per_milli)  # floor: nanoOfMilli is never negative
        slot = (rest * f.unit_nanos).astype(np.uint64)
        block = np.ascontiguousarray(millis, dtype="<i8").view(np.uint8).reshape(n, 8)
        # Null rows: millis 0 and slot low part 0, but the 8 var bytes are still reserved (as Java writes a null non-compact TIMESTAMP).
        return _ColumnEncoding(
            slot, null, np.full(n, 8, np.int64), lambda flat, starts: _write_blocks(flat, starts, block)
        )
    if k == "dec":
        le = _decimal_words(arr, null)
        if f.compact:
            return _ColumnEncoding(np.ascontiguousarray(le[:, :8]).view("<u8").ravel(), null)
        be = le[:, ::-1]
        # Minimal two's-complement length (BigInteger.toByteArray): bitLength(x)/8 + 1 with
        # x = v for v >= 0 and ~v for v < 0.
        mag = np.where((be[:, :1] & 0x80).astype(bool), ~be, be)
        nonzero = mag != 0
        first = np.where(nonzero.any(axis=1), nonzero.argmax(axis=1), 16)
        top = mag[np.arange(n), np.minimum(first, 15)]
        bit_len = np.where(first < 16, (15 - first) * 8 + _BIT_LENGTH_U8[top], 0)
        length = bit_len // 8 + 1
        if null is not None:
            length[null] = 0
        # Left-align the last `length` big-endian bytes inside the 16-byte var slot.
        src = (16 - length)[:, None] + np.arange(16)
        inside = src < 16
        block = np.where(inside, be[np.arange(n)[:, None], np.minimum(src, 15)], 0)
        block = block.astype(np.uint8)
        return _ColumnEncoding(
            length.astype(np.uint64),
            null,
            np.full(n, 16, np.int64),
            lambda flat, starts: _write_blocks(flat, starts, block),
        )
    if k == "bytes":
        return _encode_bytes_column(arr, null)
    raise AssertionError(k)


def encode_rows(columns: Sequence[Any], types: Sequence[pa.DataType]) -> tuple[np.ndarray, np.ndarray]:
    """BinaryRow bytes (no arity prefix) of every row of ``columns``, vectorized.

    Returns ``(buf, lengths)``: ``buf`` is a C-contiguous uint8 array ``[n_rows, max_len]``
    (row i is ``buf[i, :lengths[i]]``, zero padded after it) and ``lengths`` int64. Every
    length is a multiple of 8.
    """
    buf, lengths, _ = encode_rows_and_nulls(columns, types)
    return buf, lengths


def encode_rows_and_nulls(columns: Sequence[Any], types: Sequence[pa.DataType]) -> tuple[np.ndarray, np.ndarray, bool]:
    """``encode_rows`` plus whether any null bit is set (the bucket hash skips the all-zero
    header words when none is)."""
    if len(columns) != len(types):
        raise SchemaMismatchError(f"{len(columns)} columns but {len(types)} types")
    arity = len(types)
    n = len(columns[0]) if arity else 0
    encs = [encode_column(c, t) for c, t in zip(columns, types)]
    for i, c in enumerate(columns):
        if len(c) != n:
            raise SchemaMismatchError(f"column {i} has {len(c)} rows, column 0 has {n}")

    nb = null_bits_size(arity)
    header_words = nb // 8
    fixed_len = nb + 8 * arity
    fixed = np.zeros((n, header_words + arity), "<u8")
    var_len = np.zeros(n, np.int64)
    var_columns = []
    any_null = False
    for i, enc in enumerate(encs):
        fixed[:, header_words + i] = enc.slot
        if enc.null is not None and enc.null.any():
            any_null = True
            bit = i + 8  # bit 0..7 of the header is the RowKind byte
            fixed[:, bit >> 6] |= enc.null.astype(np.uint64) << np.uint64(bit & 63)
        if enc.var_size is not None:
            offset = fixed_len + var_len
            has_var = enc.var_size > 0
            fixed[has_var, header_words + i] |= offset[has_var].astype(np.uint64) << np.uint64(32)
            var_columns.append((enc, offset))
            var_len += enc.var_size
    lengths = fixed_len + var_len
    fixed_bytes = fixed.view(np.uint8).reshape(n, fixed_len)
    if not var_columns or n == 0:
        return fixed_bytes, lengths, any_null
    width = int(lengths.max())
    buf = np.zeros((n, width), np.uint8)
    buf[:, :fixed_len] = fixed_bytes
    flat = buf.reshape(-1)
    row_base = np.arange(n, dtype=np.int64) * width
    for enc, offset in var_columns:
        assert enc.fill is not None  # every variable-size encoding has one
        enc.fill(flat, row_base + offset)
    return buf, lengths, any_null
