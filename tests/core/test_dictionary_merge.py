"""A merge-on-read keeps the string columns lake_core wrote as dictionaries encoded until it has
gathered each key's newest row: files whose dictionaries differ, or where one file stored the
column plain, or that an option change left under an older schema, still read as the newest row
of each key, as plain strings. Both gathers are covered: the newest row by run order (one NumPy
key) and the engine's pick (a two-column key)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lake_core import Catalog, SchemaChange
from lake_core.decode_threads import one_of_several_workers
from lake_core.format.checksum import EMPTY, table_checksum
from lake_core.format.parquet_file import DICTIONARY_COLUMNS_KEY
from lake_core.read.split_read import SplitRead

SCHEMA = pa.schema(
    [("id", pa.int64()), ("g", pa.int32()), ("city", pa.string()), ("tag", pa.binary()), ("v", pa.int64())]
)


def _rows(ids: np.ndarray, cities: list[str], seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    n = len(ids)
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "g": pa.array(np.asarray(ids) % 3, pa.int32()),
            "city": pa.array(
                [cities[i] for i in rng.integers(0, len(cities), n)] if cities else [f"unique-{i}" for i in range(n)]
            ),
            "tag": pa.array([f"t{i % 3}".encode() for i in rng.integers(0, 3, n)], pa.binary()),
            "v": pa.array(rng.integers(0, 1000, n), pa.int64()),
        },
        schema=SCHEMA,
    )


def _three_files(tmp_path, keys: list[str], plain_second: bool = True):
    """A one-bucket table of three files in commit order: ``city`` a dictionary of 30 values, plain
    (every value distinct; else a dictionary of 5), a dictionary of 12; the first file under the
    table's first schema. Returns the table and the model of its rows (each key's newest, by id)."""
    cat = Catalog(f"file://{tmp_path}")
    cat.create_database("db")
    opts = {"bucket": "1", "read.batch-size": "700"}
    t = cat.create_table("db.t", schema=SCHEMA, primary_keys=keys, options=opts)
    rng = np.random.default_rng(0)
    model: dict[int, dict] = {}
    commits = [
        _rows(np.arange(6000), [f"city-{i}" for i in range(30)], 1),  # a dictionary of 30 values
        _rows(rng.choice(6000, 900, replace=False), [] if plain_second else [f"v-{i}" for i in range(5)], 2),
        _rows(rng.choice(6000, 2500, replace=False), [f"town-{i}" for i in range(12)], 3),  # another dictionary
    ]
    for i, rows in enumerate(commits):
        t.write_arrow(rows)
        model.update((r["id"], r) for r in rows.to_pylist())
        if i == 0:  # the first file stays under the table's first schema
            t = cat.alter_table("db.t", [SchemaChange.set_option("snapshot.num-retained.min", 5)])
    return t, sorted(model.values(), key=lambda r: r["id"])


@pytest.mark.parametrize("keys", [["id"], ["id", "g"]])
def test_merge_gathers_dictionaries_of_differing_files(tmp_path, keys):
    t, expected = _three_files(tmp_path, keys)
    (split,) = t.new_read_builder().new_scan().plan().splits()
    files = sorted(split.files, key=lambda f: f.min_sequence_number)  # in commit order
    paths = [split.file_path(f).removeprefix("file://") for f in files]
    marked = [pq.ParquetFile(p).metadata.metadata.get(DICTIONARY_COLUMNS_KEY, b"[]") for p in paths]
    assert [b'"city"' in m for m in marked] == [True, False, True]  # the case this test is about

    whole = t.to_arrow()
    assert whole.schema.types == SCHEMA.types and whole.to_pylist() == expected
    streamed = pa.Table.from_batches(list(t.to_arrow_batch_reader()))
    assert streamed.schema.types == SCHEMA.types and streamed.to_pylist() == expected
    projected = t.to_arrow(columns=["city", "id"])
    assert projected.to_pylist() == [{"city": r["city"], "id": r["id"]} for r in expected]
    filtered = t.to_arrow(filter=t.predicate_builder().equal("city", "town-3"))
    assert filtered.to_pylist() == [r for r in expected if r["city"] == "town-3"]


@pytest.mark.parametrize("plain_second", [True, False], ids=["one-file-plain", "all-dictionaries"])
@pytest.mark.parametrize("keys", [["id"], ["id", "g"]])
def test_a_read_that_keeps_dictionaries(tmp_path, keys, plain_second):
    """A read asked to keep dictionaries (a rescale's: it checksums and cuts rows before decoding
    them) returns dictionary chunks where the merge gathered them, which decode to the newest row of
    each key and checksum as the decoded rows do; decoding in the reading thread changes nothing.
    (A round with a file that stored the column plain is decoded whole.)"""
    t, expected = _three_files(tmp_path, keys, plain_second)
    (split,) = t.new_read_builder().new_scan().plan().splits()
    reader = SplitRead(t.store, dictionaries=True)
    with one_of_several_workers():  # decoded in this thread
        chunks = list(reader.iter_split(split))
    assert any(pa.types.is_dictionary(c.schema.field("city").type) for c in chunks) == (not plain_second)
    decoded = [reader.decoded(c) for c in chunks]
    assert all(c.schema.types == SCHEMA.types for c in decoded)
    assert pa.concat_tables(decoded).to_pylist() == expected
    raw = EMPTY
    for c in chunks:
        raw = raw + table_checksum(c)
    assert raw == table_checksum(pa.concat_tables(decoded)) and raw.rows == len(expected)

    only = t.predicate_builder().equal("city", "town-3")  # a filter sees decoded values
    filtered = SplitRead(t.store, predicate=only, dictionaries=True).read_split(split)
    assert filtered.to_pylist() == [r for r in expected if r["city"] == "town-3"]
