"""Java Paimon 1.0 reads what lake_core writes, and lake_core reads what Java writes: every type,
partitions, several buckets, every file format."""

from __future__ import annotations

import pyarrow as pa
import pytest

from fixtures.java_paimon import JavaPaimonError, assert_same_rows

from .data import ALL_TYPES, all_types_for, all_types_rows, lake_open, lake_table

FORMATS = ["parquet", "orc", "avro"]


@pytest.mark.parametrize("file_format", FORMATS)
def test_java_reads_all_types_we_write(java_paimon, warehouse, file_format):
    table = lake_table(
        warehouse,
        "db.t",
        all_types_for(file_format),
        primary_keys=["id", "part"],
        partition_keys=["part"],
        options={"bucket": "3", "file.format": file_format},
    )
    first = all_types_for(file_format, all_types_rows(range(40)))
    table.write_arrow(first)
    second = all_types_for(file_format, all_types_rows(range(20, 60), salt=5))  # updates 20..39, inserts 40..59
    table.write_arrow(second)
    expected = pa.concat_tables([first.slice(0, 20), second])

    assert_same_rows(java_paimon.read(table), expected)
    assert_same_rows(java_paimon.read(table, snapshot_id=1), first)
    # Java sees our layout: three buckets per partition, level-0 files with our row counts.
    files = java_paimon.files(table)
    assert {f.bucket for f in files} == {0, 1, 2}
    assert {f.partition for f in files} == {("a",), ("b",), ("c",)}
    assert sum(f.row_count for f in files) == 80
    assert {f.file_format for f in files} == {file_format}


@pytest.mark.parametrize("file_format", FORMATS)
def test_we_read_all_types_java_writes(java_paimon, warehouse, file_format):
    path = java_paimon.create_table(
        warehouse,
        "db.t",
        all_types_for(file_format),
        primary_keys=["id", "part"],
        partition_keys=["part"],
        options={"bucket": "3", "file.format": file_format},
    )
    first = all_types_for(file_format, all_types_rows(range(40)))
    java_paimon.write(path, first)
    second = all_types_for(file_format, all_types_rows(range(20, 60), salt=5))
    java_paimon.write(path, second)

    table = lake_open(warehouse, "db.t")
    expected = pa.concat_tables([first.slice(0, 20), second])
    assert_same_rows(table.to_arrow(), expected)
    assert_same_rows(table.to_arrow(snapshot_id=1), first)
    assert_same_rows(java_paimon.read(path), expected)  # the oracle agrees with itself


@pytest.mark.parametrize("file_format", ["orc", "avro"])
def test_we_stream_and_compact_java_files_in_small_chunks(java_paimon, warehouse, file_format):
    """Java's ORC and Avro files merged ``read.batch-size`` = 2 rows per file at a time (a stripe or
    a few container blocks decoded, then cut): every type reads as Java reads it, and a full
    compaction that streams them leaves rows Java reads back the same."""
    path = java_paimon.create_table(
        warehouse,
        "db.t",
        all_types_for(file_format),
        primary_keys=["id", "part"],
        partition_keys=["part"],
        options={"bucket": "3", "file.format": file_format, "read.batch-size": "2"},
    )
    first = all_types_for(file_format, all_types_rows(range(40)))
    java_paimon.write(path, first)
    second = all_types_for(file_format, all_types_rows(range(20, 60), salt=5))
    java_paimon.write(path, second)
    expected = pa.concat_tables([first.slice(0, 20), second])

    table = lake_open(warehouse, "db.t")
    assert max(f.row_count for f in java_paimon.files(path)) > 2  # files are read in several chunks
    assert_same_rows(table.to_arrow(), expected)
    assert_same_rows(table.to_arrow_batch_reader().read_all(), expected)
    table.maintenance.compact(full=True)
    assert_same_rows(table.to_arrow(), expected)
    assert_same_rows(java_paimon.read(path), expected)


def test_java_reads_our_filtered_and_projected_reads(java_paimon, warehouse):
    table = lake_table(
        warehouse, "db.t", ALL_TYPES, primary_keys=["id", "part"], partition_keys=["part"], options={"bucket": "2"}
    )
    rows = all_types_rows(range(100))
    table.write_arrow(rows)
    pb = table.predicate_builder()
    pred = pb.and_predicates([pb.greater_or_equal("id", 30), pb.is_in("part", ["a", "c"]), pb.is_not_null("dec")])
    ours = table.to_arrow(filter=pred, columns=["id", "part", "dec", "ts6"])
    theirs = java_paimon.read(table, filter=pred, projection=["id", "part", "dec", "ts6"])
    assert theirs.column_names == ["id", "part", "dec", "ts6"]
    assert ours.num_rows > 20
    assert_same_rows(theirs, ours)


def test_java_deletes_and_updates_we_read(java_paimon, warehouse):
    schema = pa.schema([pa.field("k", pa.int32(), nullable=False), ("v", pa.string())])
    path = java_paimon.create_table(warehouse, "db.t", schema, primary_keys=["k"], options={"bucket": "2"})
    java_paimon.write(path, pa.table({"k": list(range(10)), "v": [f"v{i}" for i in range(10)]}, schema=schema))
    java_paimon.write(
        path,
        pa.table({"k": [1, 2, 2, 3], "v": ["old", "old", "new", None]}, schema=schema),
        kinds=["-D", "-U", "+U", "-D"],
    )
    expected = pa.table(
        {"k": [0, 2] + list(range(4, 10)), "v": ["v0", "new"] + [f"v{i}" for i in range(4, 10)]}, schema=schema
    )
    assert_same_rows(lake_open(warehouse, "db.t").to_arrow(), expected)


NANOS = pa.schema(
    [
        pa.field("k", pa.int32(), nullable=False),
        ("ts9", pa.timestamp("ns")),
        ("ts7", pa.timestamp("ns")),
        ("ltz9", pa.timestamp("ns", tz="UTC")),
    ]
)


def _nanos_rows(values) -> pa.Table:
    values = list(values)
    return pa.table(
        {
            "k": list(range(len(values))),
            "ts9": pa.array(values, pa.timestamp("ns")),
            "ts7": pa.array([v - v % 100 for v in values], pa.timestamp("ns")),
            "ltz9": pa.array(values, pa.timestamp("ns", tz="UTC")),
        },
        schema=NANOS,
    )


def test_java_reads_our_nanosecond_timestamps_in_parquet(java_paimon, warehouse):
    """TIMESTAMP(7..9) go to Parquet as INT96, per column, as Java writes them: Java 1.0 (and every
    release before apache/paimon#7845) fails on INT64 nanoseconds with 'Unexpected type: INT64'."""
    path = java_paimon.create_table(warehouse, "db.t", NANOS, primary_keys=["k"], options={"bucket": "1"})
    java_schema = java_paimon.schema(path)  # Java's own TIMESTAMP(7) declaration
    assert [str(f.type) for f in java_schema] == ["int32", "timestamp[ns]", "timestamp[ns]", "timestamp[ns, tz=UTC]"]
    rows = _nanos_rows([0, 1, 999_999, 1_700_000_000_123_456_789, 4_102_444_800_000_000_001])
    table = lake_open(warehouse, "db.t")
    table.write_arrow(rows)
    assert_same_rows(java_paimon.read(path), rows)
    assert_same_rows(table.to_arrow(), rows)


@pytest.mark.xfail(
    strict=True,
    raises=JavaPaimonError,
    reason="Java 1.0 bug: its INT96 reader rejects pre-1970 TIMESTAMP(7..9) values with "
    "sub-millisecond digits (Timestamp.fromEpochMillis with a negative "
    "nano-of-millisecond), even in files Java wrote itself",
)
def test_java_reads_pre_1970_nanosecond_timestamps(java_paimon, warehouse):
    path = java_paimon.create_table(warehouse, "db.t", NANOS, primary_keys=["k"], options={"bucket": "1"})
    rows = _nanos_rows([-1, -86_400_000_000_001])
    java_paimon.write(path, rows)
    assert_same_rows(lake_open(warehouse, "db.t").to_arrow(), rows)  # we read Java's INT96 fine
    assert_same_rows(java_paimon.read(path), rows)


@pytest.mark.xfail(
    strict=True,
    raises=JavaPaimonError,
    reason="Java 1.0 has no Avro encoding for TIMESTAMP(7..9): its AvroSchemaConverter "
    "accepts precision <= 6, so it cannot create or read such an Avro table",
)
def test_avro_nanosecond_timestamps(java_paimon, warehouse):
    table = lake_table(warehouse, "db.t", NANOS, primary_keys=["k"], options={"bucket": "1", "file.format": "avro"})
    rows = _nanos_rows([1, 1_700_000_000_123_456_789])
    table.write_arrow(rows)
    assert_same_rows(table.to_arrow(), rows)
    assert_same_rows(java_paimon.read(table), rows)


@pytest.mark.xfail(
    strict=True,
    raises=JavaPaimonError,
    reason="Java 1.0's ORC reader rejects pre-1970 timestamps with a fractional second "
    "written by the C++ ORC writer (pyarrow); Java's own ORC files read fine",
)
def test_orc_pre_1970_fractional_timestamps(java_paimon, warehouse):
    schema = pa.schema([pa.field("k", pa.int32(), nullable=False), ("ts", pa.timestamp("us"))])
    table = lake_table(warehouse, "db.t", schema, primary_keys=["k"], options={"bucket": "1", "file.format": "orc"})
    rows = pa.table({"k": [1], "ts": pa.array([-1], pa.timestamp("us"))}, schema=schema)
    table.write_arrow(rows)
    assert_same_rows(java_paimon.read(table), rows)


def test_java_reads_columns_we_store_uncompressed(java_paimon, warehouse):
    """Random doubles and hashes barely shrink under zstd, so lake_core stores them uncompressed
    beside zstd columns of the same file (Parquet's codec is per column chunk): Java reads such
    files, and compacts them with its own."""
    import numpy as np
    import pyarrow.parquet as pq

    schema = pa.schema(
        [
            pa.field("id", pa.int64(), nullable=False),
            ("price", pa.float64()),
            ("hash", pa.int64()),
            ("name", pa.string()),
        ]
    )
    n = 12_000
    rng = np.random.default_rng(5)

    def rows(ids: np.ndarray) -> pa.Table:
        return pa.table(
            {
                "id": pa.array(ids, pa.int64()),
                "price": pa.array(rng.random(len(ids))),
                "hash": pa.array(rng.integers(-(2**63), 2**63 - 1, len(ids), dtype=np.int64)),
                "name": pa.array([f"name-{i % 50}" for i in ids]),
            },
            schema=schema,
        )

    table = lake_table(warehouse, "db.t", schema, primary_keys=["id"], options={"bucket": "1"})
    first, second = rows(np.arange(n)), rows(np.arange(n // 2, n + n // 2))
    table.write_arrow(first)
    table.write_arrow(second)
    data_files = [f for f in java_paimon.files(table)]
    assert len(data_files) == 2
    for f in data_files:
        rg = pq.ParquetFile(f"{table.bucket_dir(b'', 0)}/{f.file_name}".removeprefix("file://")).metadata.row_group(0)
        codecs = {rg.column(i).path_in_schema: rg.column(i).compression for i in range(rg.num_columns)}
        assert codecs["price"] == codecs["hash"] == "UNCOMPRESSED"
        assert codecs["id"] == codecs["name"] == "ZSTD"
    expected = pa.concat_tables([first.slice(0, n // 2), second])
    assert_same_rows(java_paimon.read(table), expected)
    java_paimon.compact(table)
    assert_same_rows(table.to_arrow(), expected)
