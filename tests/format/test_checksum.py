"""The order-independent checksum of a table's rows (rewrites verify with it): equal for the same
rows in any order or split, different when a value or a row's number of copies changes, and its
two sums are those of the hashes and of their mixed copies, modulo 2**64."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from lake_core.format.checksum import EMPTY, hashes_checksum, row_hashes, table_checksum

rows_strategy = st.lists(
    st.tuples(st.integers(-(2**63), 2**63 - 1), st.one_of(st.none(), st.text(max_size=20)), st.floats(allow_nan=False)),
    min_size=1,
    max_size=60,
)
SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("v", pa.float64())])


def _table(rows) -> pa.Table:
    return pa.Table.from_pylist([dict(zip(SCHEMA.names, r)) for r in rows], schema=SCHEMA)


@settings(max_examples=80, deadline=None)
@given(rows=rows_strategy, data=st.data())
def test_same_rows_same_checksum_whatever_the_order_or_split(rows, data):
    shuffled = data.draw(st.permutations(rows))
    cut = data.draw(st.integers(0, len(rows)))
    whole = table_checksum(_table(rows))
    assert table_checksum(_table(shuffled)) == whole
    assert table_checksum(_table(shuffled[:cut])) + table_checksum(_table(shuffled[cut:])) == whole
    assert whole - table_checksum(_table(rows[:cut])) == table_checksum(_table(rows[cut:]))


@settings(max_examples=80, deadline=None)
@given(rows=rows_strategy, data=st.data())
def test_a_changed_value_or_copy_count_changes_it(rows, data):
    i = data.draw(st.integers(0, len(rows) - 1))
    changed = list(rows)
    changed[i] = (rows[i][0] ^ 1, *rows[i][1:])
    assert table_checksum(_table(changed)) != table_checksum(_table(rows))
    assert table_checksum(_table([*rows, rows[i]])) != table_checksum(_table(rows))


@settings(max_examples=40, deadline=None)
@given(rows=rows_strategy)
def test_the_two_sums_modulo_two_to_the_64(rows):
    h = row_hashes(_table(rows))
    mod = 2**64
    plain = sum(int(x) for x in h) % mod
    mixed = sum(((int(x) ^ (int(x) >> 31)) * 0x9E3779B97F4A7C15) % mod for x in h) % mod
    got = hashes_checksum(h)
    assert got.rows == len(rows) and got.digest == f"{plain:016x}{mixed:016x}"
    assert hashes_checksum(h[:0]) == EMPTY


@settings(max_examples=60, deadline=None)
@given(
    values=st.lists(st.one_of(st.none(), st.text(max_size=30)), min_size=1, max_size=80),
    value_type=st.sampled_from([pa.string(), pa.large_string(), pa.binary(), pa.large_binary()]),
    data=st.data(),
)
def test_dictionary_columns_hash_as_their_values(values, value_type, data):
    """A dictionary column (a read that keeps them: a rescale's) hashes row by row as its decoded
    values, whatever its chunks, their dictionaries and offsets, and nulls in indices or values."""
    binary = pa.types.is_binary(value_type) or pa.types.is_large_binary(value_type)
    plain = pa.array([v.encode() if binary and v is not None else v for v in values], value_type)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(values)), max_size=3)))
    chunks = []
    for lo, hi in zip([0, *cuts], [*cuts, len(values)]):
        # nulls as null indices ("mask") or as a null in the dictionary ("encode")
        nulls = data.draw(st.sampled_from(["mask", "encode"]))
        start = data.draw(st.integers(0, lo))  # encoded from ``start``, sliced at ``lo``: an offset
        encoded = plain.slice(start, hi - start).dictionary_encode(null_encoding=nulls)
        chunks.append(encoded.slice(lo - start))
    as_plain = pa.table({"id": pa.array(range(len(values)), pa.int64()), "s": plain})
    as_dictionary = as_plain.set_column(1, "s", pa.chunked_array(chunks, type=chunks[0].type))
    assert row_hashes(as_dictionary).tolist() == row_hashes(as_plain).tolist()
    assert table_checksum(as_dictionary) == table_checksum(as_plain)
