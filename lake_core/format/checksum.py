"""An order-independent checksum of a table's rows, vectorized (used to verify rewrites).

Each row is hashed over all its columns (polars ``hash_rows``), and the hashes are summed
modulo 2**64: the result does not depend on row order or on how rows are split into
files, yet changes when any value, or the number of copies of a row, changes. Both sides of a
comparison must run in one process (polars' hash is stable within a version, not across).

Being sums, checksums add up (``+``) and take away (``-``): the checksum of a table is the sum of
its parts' (chunks, buckets, units), and that of the rows kept the checksum of all rows minus the
dropped ones', so a task can checksum each batch as it streams by and hold nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from lake_core import arrow_memory

_SEED = 0x9E3779B9
_MOD = 2**64


@dataclass(frozen=True)
class Checksum:
    rows: int
    digest: str  # 32 hex digits

    def __str__(self) -> str:
        return f"{self.rows} rows / {self.digest}"

    def _parts(self) -> tuple[int, int]:
        return int(self.digest[:16], 16), int(self.digest[16:], 16)

    def _combine(self, other: Checksum, sign: int) -> Checksum:
        a, b = self._parts(), other._parts()
        parts = ((a[0] + sign * b[0]) % _MOD, (a[1] + sign * b[1]) % _MOD)
        return Checksum(self.rows + sign * other.rows, "".join(f"{p:016x}" for p in parts))

    def __add__(self, other: Checksum) -> Checksum:
        """The checksum of both tables' rows together."""
        return self._combine(other, 1)

    def __sub__(self, other: Checksum) -> Checksum:
        """The checksum of this table's rows without ``other``'s (which must be among them)."""
        return self._combine(other, -1)


EMPTY = Checksum(0, "0" * 32)  # of no rows; the neutral element of ``+``


def _view_type(t: pa.DataType) -> pa.DataType | None:
    """The view type of a string or binary type (None for other types)."""
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return pa.string_view()
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return pa.binary_view()
    return None


def _dictionary_views(chunk: pa.DictionaryArray, view: pa.DataType) -> pa.Array:
    """A dictionary of strings or binaries as an array of views of its values: each row gathers its
    value's 16-byte view, which points into the dictionary's characters (decoding copies every
    row's characters: ~10x the time). Hashed as the decoded values are."""
    values = chunk.dictionary.cast(view)
    if chunk.indices.null_count or values.null_count:  # rare: decoded (a null's view is not gathered)
        return chunk.cast(chunk.type.value_type).cast(view)
    buffers = values.buffers()
    each = pa.Array.from_buffers(pa.binary(16), len(values), [None, buffers[1]], offset=values.offset)
    views = each.take(chunk.indices).buffers()[1]
    return pa.Array.from_buffers(view, len(chunk), [None, views, *buffers[2:]])


def _polars_ready(c: pa.ChunkedArray) -> pa.ChunkedArray:
    """``c`` in the layout polars takes without converting: strings and binaries as views (Arrow's
    cast to views costs a third of polars' own conversion, which then is zero-copy; the hashes are
    the same), dictionaries of them too (polars would make categoricals, whose hashes differ from
    their values'); a map as its list of key/value structs (polars has no MAP type; same values)."""
    t = c.type
    if pa.types.is_dictionary(t) and (view := _view_type(t.value_type)) is not None:
        return pa.chunked_array([_dictionary_views(ch, view) for ch in c.chunks], type=view)
    view = _view_type(t)
    if view is not None:
        return c.cast(view)
    if pa.types.is_map(t):
        return pa.chunked_array([ch.cast(pa.list_(pa.struct([t.key_field, t.item_field]))) for ch in c.chunks])
    return c


def row_hashes(table: pa.Table) -> np.ndarray:
    """The 64-bit hash of each row of ``table`` (columns in the given order), as ``table_checksum``
    sums them; a caller splitting rows by a mask sums the parts of one hashing (no filtered copies)."""
    import polars as pl  # noqa: PLC0415 - polars (about 0.3 s and 35 MB to import) only where a checksum or diff is computed, not in every process importing lake_core

    cols = [_polars_ready(c) for c in table.columns]
    # from_arrow without rechunk: hash_rows hashes chunk by chunk, and concatenating the chunks
    # (what the DataFrame constructor does) cost as much as the hashing.
    df = pl.from_arrow(pa.Table.from_arrays(cols, names=[f"c{i}" for i in range(len(cols))]), rechunk=False)
    assert isinstance(df, pl.DataFrame)  # a Table becomes a DataFrame (for the type checker)
    return df.hash_rows(seed=_SEED).to_numpy()


def hashes_checksum(h: np.ndarray) -> Checksum:
    """The checksum of rows whose :func:`row_hashes` are ``h``."""
    if not len(h):
        return EMPTY
    # Two order-independent sums (wrapping modulo 2**64 by design): of the hashes and of a
    # mixed copy of them, so that two changes cancelling out in one sum rarely do in both. The
    # copy is mixed in place, in Arrow's pool (a rewrite checksums every chunk it streams).
    mixed = np.right_shift(h, np.uint64(31), out=arrow_memory.empty(len(h), np.uint64))
    np.bitwise_xor(mixed, h, out=mixed)
    np.multiply(mixed, np.uint64(0x9E3779B97F4A7C15), out=mixed)
    parts = (int(h.sum(dtype=np.uint64)), int(mixed.sum(dtype=np.uint64)))
    return Checksum(len(h), "".join(f"{p:016x}" for p in parts))


def table_checksum(table: pa.Table) -> Checksum:
    """Checksum of ``table``'s rows (columns in the given order)."""
    if table.num_rows == 0:
        return EMPTY
    return hashes_checksum(row_hashes(table))
