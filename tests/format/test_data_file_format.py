"""Data file encode / decode (Parquet, ORC, Avro)."""

from __future__ import annotations

import datetime
import io
import json
import math
import re
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lake_core.errors import FormatError, InvalidOptionError, SchemaMismatchError
from lake_core.format import avro
from lake_core.format.avro_file import _decimal_bytes
from lake_core.format.avro_file_schema import avro_schema_for
from lake_core.format.data_file import iter_data_file, read_data_file, read_file_schema, write_data_file
from lake_core.format.file_format import file_extension
from lake_core.schema.table_schema import TableSchema

FORMATS = ["parquet", "orc", "avro"]

ALL_TYPES = pa.schema(
    [
        ("dt", pa.string()),
        ("id", pa.int64()),
        ("t8", pa.int8()),
        ("t16", pa.int16()),
        ("i", pa.int32()),
        ("f", pa.float32()),
        ("d", pa.float64()),
        ("s", pa.string()),
        ("b", pa.binary()),
        ("flag", pa.bool_()),
        ("day", pa.date32()),
        ("tm", pa.time32("ms")),
        ("ts0", pa.timestamp("s")),
        ("ts3", pa.timestamp("ms")),
        ("ts6", pa.timestamp("us")),
        ("ts9", pa.timestamp("ns")),
        ("ltz3", pa.timestamp("ms", tz="UTC")),
        ("ltz6", pa.timestamp("us", tz="UTC")),
        ("ltz9", pa.timestamp("ns", tz="UTC")),
        ("d9", pa.decimal128(9, 2)),
        ("d18", pa.decimal128(18, 4)),
        ("d38", pa.decimal128(38, 10)),
        ("arr", pa.list_(pa.int32())),
        ("m", pa.map_(pa.string(), pa.int64())),
        ("mi", pa.map_(pa.int32(), pa.decimal128(38, 10))),
        ("st", pa.struct([("a", pa.int32()), ("ts", pa.timestamp("ns"))])),
        ("ats", pa.list_(pa.timestamp("ns"))),
    ]
)

ROWS = {
    "dt": ["a", "a", "b"],
    "id": [1, 2, 3],
    "t8": [-128, None, 127],
    "t16": [1, None, -32768],
    "i": [2**31 - 1, None, -(2**31)],
    "f": [1.5, None, float("nan")],
    "d": [2.5, None, -0.0],
    "s": ["x" * 40, None, "é\U0010ffff"],
    "b": [b"\x00\xff", None, b""],
    "flag": [True, None, False],
    "day": [datetime.date(2024, 1, 1), None, datetime.date(1, 1, 1)],
    "tm": [datetime.time(12, 0, 0, 123000), None, datetime.time(0)],
    "ts0": [datetime.datetime(2024, 1, 1, 12), None, datetime.datetime(1900, 1, 1)],
    "ts3": [datetime.datetime(2024, 1, 1, 12, 0, 0, 123000), None, datetime.datetime(1969, 12, 31, 23, 59, 59, 999000)],
    "ts6": [datetime.datetime(2024, 1, 1, 12, 0, 0, 123456), None, datetime.datetime(1901, 1, 1)],
    "ts9": [1704110400123456789, None, -1],
    "ltz3": [1704110400123, None, 0],
    "ltz6": [1704110400123456, None, -5],
    "ltz9": [1704110400123456789, None, 7],
    "d9": [Decimal("1234567.89"), None, Decimal("-0.01")],
    "d18": [Decimal("12345678901234.5678"), None, Decimal("-1")],
    "d38": [Decimal("1234567890123456789012345678.0123456789"), None, Decimal("-0.0000000001")],
    "arr": [[1, None, 3], None, []],
    "m": [[("k", 1), ("z", None)], None, []],
    "mi": [[(1, Decimal("1.5"))], None, [(2, None)]],
    "st": [{"a": 1, "ts": 5}, None, {"a": None, "ts": None}],
    "ats": [[1, None], None, []],
}


@pytest.fixture(scope="module")
def schema() -> TableSchema:
    return TableSchema.create(ALL_TYPES, ["dt"], ["dt", "id"])


@pytest.fixture(scope="module")
def kv_table(schema) -> pa.Table:
    data = pa.table(ROWS, schema=schema.arrow_schema())
    return (
        data.append_column("_KEY_id", data.column("id"))
        .append_column("_SEQUENCE_NUMBER", pa.array([0, 1, 2], pa.int64()))
        .append_column("_VALUE_KIND", pa.array([0, 0, 3], pa.int8()))
    )


def _assert_tables_equal(got: pa.Table, exp: pa.Table):
    assert got.schema.names == exp.schema.names
    for name in exp.schema.names:
        g, e = got.column(name), exp.column(name)
        assert g.type == e.type, name
        gl, el = g.to_pylist(), e.to_pylist()
        if pa.types.is_floating(e.type):
            assert [None if v is None else (str(v) if math.isnan(v) else v) for v in gl] == [
                None if v is None else (str(v) if math.isnan(v) else v) for v in el
            ], name
        else:
            assert gl == el, name


def _write(table, fields, fmt, **kw) -> bytes:
    buf = io.BytesIO()
    write_data_file(table, fields, fmt, buf, **kw)
    return buf.getvalue()


@pytest.mark.parametrize("fmt", FORMATS)
def test_round_trip_every_type(fmt, schema, kv_table):
    raw = _write(kv_table, schema.kv_fields(), fmt)
    kv = schema.kv_arrow_schema()
    back = read_data_file(io.BytesIO(raw), fmt, arrow_schema=kv)
    assert back.schema.equals(kv, check_metadata=True)
    _assert_tables_equal(back, kv_table.select(kv.names).cast(kv))
    assert read_file_schema(io.BytesIO(raw), fmt).names == kv.names


@pytest.mark.parametrize("fmt", FORMATS)
def test_round_trip_from_path_and_projection(fmt, schema, kv_table, tmp_path):
    path = tmp_path / f"data-x-0.{file_extension(fmt)}"
    with open(path, "wb") as fo:
        write_data_file(kv_table, schema.kv_fields(), fmt, fo)
    target = pa.schema([("id", pa.int64()), ("added", pa.string()), ("d38", pa.decimal128(38, 10))])
    t = read_data_file(str(path), fmt, columns=["d38", "added", "id"], arrow_schema=target)
    assert t.column_names == ["d38", "added", "id"]
    assert t.column("added").type == pa.string() and t.column("added").null_count == 3
    assert t.column("id").to_pylist() == [1, 2, 3]
    # no arrow_schema: file types; unknown column -> null type
    t2 = read_data_file(str(path), fmt, columns=["s", "nope"])
    assert t2.column("s").to_pylist() == ROWS["s"]
    assert t2.column("nope").type == pa.null() and len(t2) == 3
    # no columns at all requested that exist
    t3 = read_data_file(str(path), fmt, columns=["nope"])
    assert t3.num_rows == 3
    # default: every column of the file
    assert read_data_file(str(path), fmt).column_names == schema.kv_arrow_schema().names


@pytest.mark.parametrize("fmt", FORMATS)
def test_empty_file(fmt, schema, kv_table):
    raw = _write(kv_table.slice(0, 0), schema.kv_fields(), fmt)
    t = read_data_file(io.BytesIO(raw), fmt, arrow_schema=schema.kv_arrow_schema())
    assert t.num_rows == 0 and t.schema.names == schema.kv_arrow_schema().names


def test_parquet_physical_types(schema, kv_table):
    raw = _write(kv_table, schema.kv_fields(), "parquet")
    pf = pq.ParquetFile(io.BytesIO(raw))
    cols = {pf.schema.column(i).path: pf.schema.column(i) for i in range(len(pf.schema))}
    assert cols["d9"].physical_type == "INT32"
    assert cols["d18"].physical_type == "INT64"
    assert cols["d38"].physical_type == "FIXED_LEN_BYTE_ARRAY" and cols["d38"].length == 16
    assert cols["t8"].physical_type == "INT32" and "Int(bitWidth=8" in str(cols["t8"].logical_type)
    assert cols["t16"].physical_type == "INT32"
    assert cols["ts3"].physical_type == "INT64" and "milliseconds" in str(cols["ts3"].logical_type)
    assert "isAdjustedToUTC=false" in str(cols["ts6"].logical_type)
    assert "isAdjustedToUTC=true" in str(cols["ltz6"].logical_type)
    # TIMESTAMP(7..9) as INT96, as Java Paimon writes and reads it (lake_core.format.parquet_int96)
    assert cols["ts9"].physical_type == "INT96"
    assert "arr.list.element" in cols and "m.key_value.key" in cols and "m.key_value.value" in cols
    arrow_schema = pf.schema_arrow
    # field ids and repetition
    text = str(pf.metadata.schema)
    assert "required int64 field_id=1073741824 _KEY_id" in text
    assert "required int64 field_id=2147483646 _SEQUENCE_NUMBER" in text
    assert "required int32 field_id=2147483645 _VALUE_KIND" in text
    assert "required binary field_id=0 dt" in text
    assert "required int64 field_id=1 id" in text
    assert "optional int32 field_id=2 t8" in text
    for f in schema.fields:
        assert arrow_schema.field(f.name).metadata[b"PARQUET:field_id"] == str(f.id).encode()
    rg = pf.metadata.row_group(0)
    assert all(rg.column(i).compression == "ZSTD" for i in range(rg.num_columns))


def test_parquet_dictionary_only_for_low_cardinality():
    n = 20_000
    t = pa.table(
        {
            "uid": pa.array(range(n), pa.int64()),
            "cat": pa.array(["a", "b", "c", "d"] * (n // 4)),
            "name": pa.array([f"name-{i}" for i in range(n)]),
            # 5,000 names drawn at random: about 0.6 distinct per sampled row, where a dictionary
            # still writes and reads strings faster than plain pages do
            "customer": pa.array([f"customer-{i:05d}" for i in np.random.default_rng(1).integers(0, 5000, n)]),
        }
    )
    raw = _write(t, list(t.schema), "parquet")
    rg = pq.ParquetFile(io.BytesIO(raw)).metadata.row_group(0)
    has_dict = {rg.column(i).path_in_schema: rg.column(i).has_dictionary_page for i in range(rg.num_columns)}
    assert has_dict == {"uid": False, "cat": True, "name": False, "customer": True}
    raw = _write(t, list(t.schema), "parquet", options={"parquet.enable.dictionary": "false"})
    rg = pq.ParquetFile(io.BytesIO(raw)).metadata.row_group(0)
    assert not any(rg.column(i).has_dictionary_page for i in range(rg.num_columns))


def test_stored_key_copies_follow_their_value_column():
    """A primary key is stored twice (``_KEY_k`` and ``k``): both get the value column's encoding;
    sequence numbers, distinct in a file, never get a dictionary."""
    n = 20_000
    t = pa.table(
        {
            "_KEY_k": pa.array(["a", "b"] * (n // 2)),
            "_SEQUENCE_NUMBER": pa.array(np.zeros(n, np.int64)),
            "k": pa.array(["a", "b"] * (n // 2)),
            "v": pa.array(range(n), pa.int64()),
        }
    )
    rg = pq.ParquetFile(io.BytesIO(_write(t, list(t.schema), "parquet"))).metadata.row_group(0)
    has_dict = {rg.column(i).path_in_schema: rg.column(i).has_dictionary_page for i in range(rg.num_columns)}
    assert has_dict == {"_KEY_k": True, "_SEQUENCE_NUMBER": False, "k": True, "v": False}


def test_compression_options():
    t = pa.table({"a": [1, 2, 3]})
    raw = _write(t, list(t.schema), "parquet", options={"file.compression": "snappy"})
    assert pq.ParquetFile(io.BytesIO(raw)).metadata.row_group(0).column(0).compression == "SNAPPY"
    raw = _write(t, list(t.schema), "parquet", compression="none")
    assert pq.ParquetFile(io.BytesIO(raw)).metadata.row_group(0).column(0).compression == "UNCOMPRESSED"
    raw = _write(t, list(t.schema), "parquet", options={"file.compression.zstd-level": "9"})
    assert read_data_file(io.BytesIO(raw), "parquet").column("a").to_pylist() == [1, 2, 3]
    with pytest.raises(InvalidOptionError, match="file.compression"):
        _write(t, list(t.schema), "parquet", options={"file.compression": "lzma-9000"})
    with pytest.raises(InvalidOptionError, match="zstd-level"):
        _write(t, list(t.schema), "parquet", options={"file.compression.zstd-level": "high"})
    with pytest.raises(InvalidOptionError, match="parquet.enable.dictionary"):
        _write(t, list(t.schema), "parquet", options={"parquet.enable.dictionary": "maybe"})
    for fmt in ("orc", "avro"):
        for codec in ("zstd", "gzip", "none"):
            raw = _write(t, list(t.schema), fmt, compression=codec)
            assert read_data_file(io.BytesIO(raw), fmt).column("a").to_pylist() == [1, 2, 3]


def test_columns_zstd_barely_shrinks_are_stored_uncompressed():
    """A fixed-width column that zstd shrinks by less than a tenth on the file's sampled rows
    (random doubles, hashes) is stored uncompressed: it decodes about 3.5x faster. Key-ordered,
    repetitive and nested columns keep zstd (at the configured level); small files and other
    codecs are not sampled. Every value reads back."""
    n = 20_000
    rng = np.random.default_rng(3)
    t = pa.table(
        {
            "id": pa.array(np.arange(n) * 4, pa.int64()),  # ascending: zstd shrinks it 5x
            "price": pa.array(rng.random(n)),  # random doubles: ~6% saved
            "hash": pa.array(rng.integers(-(2**63), 2**63 - 1, n, dtype=np.int64)),
            "ts": pa.array(rng.integers(1_700_000_000_000, 1_800_000_000_000, n)),  # ~20% saved
            "name": pa.array([f"n{i % 7}" for i in range(n)]),
            "tags": pa.array([[1.5, 2.5]] * n),
        }
    )

    def codecs(raw: bytes) -> dict[str, str]:
        rg = pq.ParquetFile(io.BytesIO(raw)).metadata.row_group(0)
        return {rg.column(i).path_in_schema: rg.column(i).compression for i in range(rg.num_columns)}

    zstd = {"id": "ZSTD", "ts": "ZSTD", "name": "ZSTD", "tags.list.element": "ZSTD"}
    for options in ({}, {"file.compression.zstd-level": "9"}):
        raw = _write(t, list(t.schema), "parquet", options=options)
        assert codecs(raw) == {**zstd, "price": "UNCOMPRESSED", "hash": "UNCOMPRESSED"}
        assert read_data_file(io.BytesIO(raw), "parquet").equals(t)
    # a key's _KEY_ copy holds its value column's values: it gets the same codec, unsampled
    keyed = t.add_column(0, "_KEY_hash", t["hash"]).add_column(0, "_KEY_id", t["id"])
    assert codecs(_write(keyed, list(keyed.schema), "parquet")) == {
        **zstd,
        "_KEY_id": "ZSTD",
        "price": "UNCOMPRESSED",
        "hash": "UNCOMPRESSED",
        "_KEY_hash": "UNCOMPRESSED",
    }
    small = t.slice(0, 2000)  # too few rows to sample
    assert set(codecs(_write(small, list(t.schema), "parquet")).values()) == {"ZSTD"}
    snappy = _write(t, list(t.schema), "parquet", options={"file.compression": "snappy"})
    assert set(codecs(snappy).values()) == {"SNAPPY"}


def test_dictionary_columns_are_read_as_dictionaries_only_in_our_files():
    """lake_core's footer names the columns it wrote with dictionary pages throughout; their
    strings are decoded through the dictionary (half the work), and come back as plain strings
    whole or streamed. A file without that key (pyarrow's, Java's: their dictionary pages may fall
    back to plain ones, which read four times slower as a dictionary) is decoded directly. A merge
    may ask to keep them as dictionaries, of the types they are stored as."""
    from lake_core.format import parquet_file
    from lake_core.format.parquet_file import DICTIONARY_COLUMNS_KEY, decode_dictionaries

    n = 20_000
    t = pa.table(
        {
            "k": pa.array(range(n), pa.int64()),
            "city": pa.array([f"city-{i % 40}" for i in range(n)]),
            "tag": pa.array([f"t{i % 3}".encode() for i in range(n)], pa.binary()),
            "note": pa.array([f"note-{i}" for i in range(n)]),
        }
    )
    raw = _write(t, list(t.schema), "parquet")
    footer = pq.ParquetFile(io.BytesIO(raw)).metadata.metadata
    assert json.loads(footer[DICTIONARY_COLUMNS_KEY]) == ["city", "tag"]
    asked = []
    original = parquet_file._dictionary_reads

    def spy(pf, read_cols):
        asked.append(original(pf, read_cols))
        return asked[-1]

    parquet_file._dictionary_reads = spy
    try:
        whole = read_data_file(io.BytesIO(raw), "parquet")
        streamed = pa.concat_tables(iter_data_file(io.BytesIO(raw), "parquet", t.column_names, t.schema, 3000))
        projected = read_data_file(io.BytesIO(raw), "parquet", ["note", "city"], t.schema)
        foreign = io.BytesIO()
        pq.write_table(t, foreign)  # pyarrow's own: every column with dictionary pages, no key
        theirs = read_data_file(io.BytesIO(foreign.getvalue()), "parquet")
    finally:
        parquet_file._dictionary_reads = original
    assert asked == [["city", "tag"], ["city", "tag"], ["city"], []]
    assert whole.equals(t) and streamed.equals(t) and theirs.equals(t)
    assert projected.equals(t.select(["note", "city"]))
    # asked to keep them (a merge that gathers before decoding): dictionaries of the stored types
    kept = read_data_file(io.BytesIO(raw), "parquet", t.column_names, t.schema, keep_dictionaries=t.column_names)
    assert [str(f.type) for f in kept.schema] == [
        "int64",
        "dictionary<values=string, indices=int32, ordered=0>",
        "dictionary<values=binary, indices=int32, ordered=0>",
        "string",
    ]
    assert decode_dictionaries(kept, t.schema).equals(t)
    chunks = list(
        iter_data_file(io.BytesIO(raw), "parquet", t.column_names, t.schema, 3000, keep_dictionaries=["city", "tag"])
    )
    assert all(c.schema.equals(kept.schema) for c in chunks)
    assert decode_dictionaries(pa.concat_tables(chunks), t.schema).equals(t)
    # only the columns asked to stay dictionaries do
    city_only = read_data_file(io.BytesIO(raw), "parquet", t.column_names, t.schema, keep_dictionaries=["city"])
    assert [pa.types.is_dictionary(f.type) for f in city_only.schema] == [False, True, False, False]
    # asked as another type, or a file that is not ours: decoded as always
    wide = t.schema.set(1, pa.field("city", pa.large_string()))
    as_wide = read_data_file(io.BytesIO(raw), "parquet", t.column_names, wide, keep_dictionaries=["city", "tag"])
    assert as_wide.schema.field("city").type == pa.large_string() and pa.types.is_dictionary(
        as_wide.schema.field("tag").type
    )
    theirs = read_data_file(
        io.BytesIO(foreign.getvalue()), "parquet", t.column_names, t.schema, keep_dictionaries=["city", "tag"]
    )
    assert theirs.equals(t)
    # a footer key that is not ours (not a JSON list of names) is ignored
    for value in (b"{not json", b"7"):
        odd = io.BytesIO()
        pq.write_table(t.replace_schema_metadata({DICTIONARY_COLUMNS_KEY: value}), odd)
        assert read_data_file(io.BytesIO(odd.getvalue()), "parquet").equals(t)


def test_avro_layout(schema, kv_table):
    raw = _write(kv_table, schema.kv_fields(), "avro")
    meta, _, _ = avro.parse_container(raw)
    assert meta["avro.codec"] == b"zstandard"
    ws, recs = avro.read_records(raw, "data file")
    assert ws["name"] == "org.apache.paimon.avro.generated.record"
    f = {x["name"]: x for x in ws["fields"]}
    assert f["_SEQUENCE_NUMBER"]["type"] == "long"
    assert f["_VALUE_KIND"]["type"] == "int"
    assert f["id"]["type"] == "long" and "default" not in f["id"]
    assert f["t8"]["type"] == ["null", "int"] and f["t8"]["default"] is None
    assert f["d38"]["type"][1] == {"type": "bytes", "logicalType": "decimal", "precision": 38, "scale": 10}
    assert f["ts3"]["type"][1]["logicalType"] == "timestamp-millis"
    assert f["ts6"]["type"][1]["logicalType"] == "timestamp-micros"
    assert f["ltz6"]["type"][1]["logicalType"] == "local-timestamp-micros"
    assert f["day"]["type"][1]["logicalType"] == "date"
    assert f["tm"]["type"][1]["logicalType"] == "time-millis"
    assert f["m"]["type"][1]["type"] == "map"
    mi = f["mi"]["type"][1]
    assert mi["type"] == "array" and mi["logicalType"] == "map"
    assert mi["items"]["name"] == "org.apache.paimon.avro.generated.record_mi"
    assert [x["name"] for x in mi["items"]["fields"]] == ["key", "value"]
    assert f["st"]["type"][1]["name"] == "org.apache.paimon.avro.generated.record_st"
    assert recs[0]["m"] == {"k": 1, "z": None}
    assert recs[0]["mi"] == [{"key": 1, "value": Decimal("1.5000000000")}]


def test_avro_decimal_bytes_are_minimal_twos_complement():
    vals = [Decimal(v) for v in ("0", "1", "-1", "127", "128", "-128", "-129", "255", "32767", "-32768")]
    t = pa.table({"d": pa.array(vals, pa.decimal128(10, 0))})
    assert _decimal_bytes(t.column("d").chunk(0)) == [
        b"\x00",
        b"\x01",
        b"\xff",
        b"\x7f",
        b"\x00\x80",
        b"\x80",
        b"\xff\x7f",
        b"\x00\xff",
        b"\x7f\xff",
        b"\x80\x00",
    ]
    # sliced arrays with nulls
    arr = pa.array([None, Decimal("-2"), None, Decimal("300")], pa.decimal128(38, 0)).slice(1)
    assert _decimal_bytes(arr) == [b"\xfe", None, b"\x01\x2c"]
    raw = _write(t, [pa.field("d", pa.decimal128(10, 0), False)], "avro", compression="none")
    assert read_data_file(io.BytesIO(raw), "avro").column("d").to_pylist() == vals
    assert (
        avro_schema_for([pa.field("d", pa.decimal128(10, 0), False)])["fields"][0]["type"]["logicalType"] == "decimal"
    )


def test_reads_foreign_parquet_and_casts(tmp_path):
    # what pypaimon / pyarrow defaults produce: FLBA decimals, large_string, list<element>, INT96 ts
    t = pa.table(
        {
            "dec": pa.array([Decimal("1.25"), None], pa.decimal128(10, 2)),
            "s": pa.array(["x", None], pa.large_string()),
            "arr": pa.array([[1], None], pa.list_(pa.field("element", pa.int32()))),
            "ts": pa.array([1704110400123456789, None], pa.timestamp("ns")),
            "ltz": pa.array([5, None], pa.timestamp("us", tz="UTC")),
        }
    )
    path = str(tmp_path / "foreign.parquet")
    pq.write_table(t, path, store_schema=False, use_deprecated_int96_timestamps=True)
    assert pq.ParquetFile(path).schema.column(0).physical_type == "FIXED_LEN_BYTE_ARRAY"
    target = pa.schema(
        [
            ("dec", pa.decimal128(10, 2)),
            ("s", pa.string()),
            ("arr", pa.list_(pa.int32())),
            ("ts", pa.timestamp("ns")),
            ("ltz", pa.timestamp("us", tz="UTC")),
            ("new", pa.int64()),
        ]
    )
    got = read_data_file(path, "parquet", arrow_schema=target)
    assert got.schema == target
    assert got.to_pylist()[0]["dec"] == Decimal("1.25")
    assert got.column("ts").to_pylist()[0].nanosecond == 789
    assert got.column("ltz").cast(pa.int64()).to_pylist() == [5, None]
    assert got.column("new").null_count == 2


def test_reads_tz_aware_file_timestamp_as_naive():
    # older Java writers annotate TIMESTAMP(3) with isAdjustedToUTC=true
    t = pa.table({"ts": pa.array([1000, None], pa.timestamp("ms", tz="UTC"))})
    raw = _write(t, list(t.schema), "parquet")
    got = read_data_file(io.BytesIO(raw), "parquet", arrow_schema=pa.schema([("ts", pa.timestamp("ms"))]))
    assert got.column("ts").cast(pa.int64()).to_pylist() == [1000, None]


def test_cast_errors_name_the_column():
    t = pa.table({"s": ["abc"]})
    raw = _write(t, list(t.schema), "parquet")
    with pytest.raises(FormatError, match="'s'"):
        read_data_file(io.BytesIO(raw), "parquet", arrow_schema=pa.schema([("s", pa.int64())]))


def test_write_validation(schema, kv_table):
    with pytest.raises(SchemaMismatchError, match="'_KEY_id'"):
        _write(kv_table.drop_columns(["_KEY_id"]), schema.kv_fields(), "parquet")
    bad = kv_table.set_column(kv_table.schema.get_field_index("id"), "id", pa.array([1, None, 3], pa.int64()))
    with pytest.raises(SchemaMismatchError, match="'id'.*NOT NULL"):
        _write(bad, schema.kv_fields(), "parquet")
    bad = kv_table.set_column(kv_table.schema.get_field_index("i"), "i", pa.array(["x", "y", "z"]))
    with pytest.raises(SchemaMismatchError, match="'i'"):
        _write(bad, schema.kv_fields(), "orc")


def test_write_casts_compatible_types():
    fields = [pa.field("s", pa.string()), pa.field("n", pa.int64())]
    t = pa.table({"n": pa.array([1, 2], pa.int32()), "s": pa.array(["a", "b"]).dictionary_encode(), "extra": [0, 0]})
    for fmt in FORMATS:
        got = read_data_file(io.BytesIO(_write(t, fields, fmt)), fmt)
        assert got.schema.names == ["s", "n"]
        assert got.column("n").type == pa.int64() and got.column("s").to_pylist() == ["a", "b"]


def test_format_names():
    assert [file_extension(f) for f in FORMATS] == FORMATS
    assert file_extension("PARQUET") == "parquet"
    with pytest.raises(InvalidOptionError, match="file.format"):
        file_extension("csv")
    with pytest.raises(InvalidOptionError, match="'json'"):
        read_data_file(io.BytesIO(b""), "json")


def test_corrupt_files_raise_format_error():
    for fmt in FORMATS:
        with pytest.raises(FormatError):
            read_data_file(io.BytesIO(b"garbage" * 10), fmt)


def test_chunked_input_many_rows():
    n = 10_000
    t = pa.Table.from_batches(
        [pa.record_batch({"k": pa.array(range(i, i + 1000), pa.int64())}) for i in range(0, n, 1000)]
    )
    for fmt in FORMATS:
        got = read_data_file(io.BytesIO(_write(t, [pa.field("k", pa.int64(), False)], fmt)), fmt)
        assert got.column("k").to_pylist() == list(range(n))


def test_avro_zstandard_blocks_without_content_size_and_several_frames():
    """zstd-jni's stream (Java's Avro codec) writes frames without a content size, several per
    block; data files and manifests read them through the one container codec."""
    import zstandard

    t = pa.table({"k": pa.array(range(100), pa.int64())})
    meta, sync, ((count, payload),) = avro.parse_container(
        _write(t, [pa.field("k", pa.int64(), False)], "avro", compression="none")
    )
    half = len(payload) // 2
    frames = zstandard.ZstdCompressor(write_content_size=False).compress(
        payload[:half]
    ) + zstandard.ZstdCompressor().compress(payload[half:])
    raw = avro.build_container(meta["avro.schema"], b"zstandard", sync, [(count, frames)])
    assert read_data_file(io.BytesIO(raw), "avro").column("k").to_pylist() == list(range(100))


_values = st.lists(
    st.tuples(
        st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)),
        st.one_of(st.none(), st.text(max_size=12)),
        st.one_of(st.none(), st.decimals(min_value=-(10**8), max_value=10**8, places=2, allow_nan=False)),
    ),
    max_size=25,
)


@settings(max_examples=25, deadline=None)
@given(_values)
def test_round_trip_property(rows):
    fields = [pa.field("i", pa.int64()), pa.field("s", pa.string()), pa.field("d", pa.decimal128(12, 2))]
    t = pa.table(
        {"i": [r[0] for r in rows], "s": [r[1] for r in rows], "d": [r[2] for r in rows]}, schema=pa.schema(fields)
    )
    for fmt in FORMATS:
        got = read_data_file(io.BytesIO(_write(t, fields, fmt)), fmt, arrow_schema=pa.schema(fields))
        assert got.to_pylist() == t.to_pylist(), fmt


# ---- streamed reads (iter_data_file): merge-on-read and compaction read files this way -------------


class _CountingFile(io.RawIOBase):
    """A local file read through a file object that counts the bytes handed out (what a remote
    stream would have fetched)."""

    def __init__(self, path):
        self._f = open(path, "rb")
        self.name = str(path)
        self.bytes_read = 0

    def readable(self):
        return True

    def seekable(self):
        return True

    def seek(self, offset, whence=0):
        return self._f.seek(offset, whence)

    def tell(self):
        return self._f.tell()

    def readinto(self, b):
        n = self._f.readinto(b)
        self.bytes_read += n
        return n

    def close(self):
        self._f.close()
        super().close()


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("batch_rows", [7, 1000])
def test_streamed_chunks_are_the_whole_read(fmt, batch_rows, schema, kv_table, tmp_path):
    # 2,100 rows of every type: several Avro blocks, ORC batches cutting through lists, maps, structs
    data = pa.concat_tables([kv_table] * 700)
    path = str(tmp_path / f"data.{file_extension(fmt)}")
    write_data_file(data, schema.kv_fields(), fmt, path)
    kv = schema.kv_arrow_schema()
    # the table's schema and an evolved one: a projection, reordered, with a column the file lacks
    evolved = pa.schema(
        [
            kv.field("d38"),
            pa.field("added", pa.map_(pa.string(), pa.int64())),
            kv.field("st"),
            kv.field("id"),
            kv.field("ts9"),
        ]
    )
    for columns, target in ((kv.names, kv), (evolved.names, evolved), (["s", "nope"], None)):
        whole = read_data_file(path, fmt, columns, target)
        chunks = list(iter_data_file(path, fmt, columns, target, batch_rows))
        assert all(0 < c.num_rows <= batch_rows for c in chunks)
        assert all(c.schema.equals(whole.schema, check_metadata=True) for c in chunks)
        _assert_tables_equal(pa.concat_tables(chunks), whole)
        assert whole.num_rows == data.num_rows
    assert read_data_file(path, fmt, evolved.names, evolved).column("added").null_count == data.num_rows


def _random_rows(n: int) -> pa.Table:
    import numpy as np

    rng = np.random.default_rng(7)  # random values: the file is about as large as the data
    return pa.table(
        {
            "k": pa.array(np.arange(n)),
            "v": pa.array(rng.integers(0, 2**62, n)),
            "s": pa.array([f"value-{x}" for x in rng.integers(0, 2**62, n)]),
        }
    )


@pytest.mark.parametrize("fmt", ["orc", "avro"])
def test_streamed_read_yields_before_it_reads_the_file(fmt, tmp_path):
    t = _random_rows(200_000)
    path = tmp_path / f"data.{file_extension(fmt)}"
    if fmt == "orc":
        import pyarrow.orc as orc

        # several stripes, as Java's ORC writer cuts a large file (lake_core's writer, like Java's,
        # closes a stripe at 64 MB: a file this small would be one stripe)
        orc.write_table(t, str(path), stripe_size=256 * 1024, compression="zstd")
        assert orc.ORCFile(str(path)).nstripes >= 8
    else:
        write_data_file(t, list(t.schema), fmt, str(path))
        assert len(avro.parse_container(path.read_bytes())[2]) >= 8
    size = path.stat().st_size
    src = _CountingFile(path)
    chunks = iter_data_file(src, fmt, ["s", "k"], t.schema, 1000)
    first = next(chunks)
    # the first chunk comes from the file's first stripe / blocks, not from a decoded whole file
    assert first.num_rows == 1000 and src.bytes_read < size / 4, (src.bytes_read, size)
    rest = list(chunks)
    assert all(0 < c.num_rows <= 1000 for c in rest)
    got = pa.concat_tables([first, *rest])
    assert got.column("k").to_pylist() == t.column("k").to_pylist()
    assert got.column("s").to_pylist() == t.column("s").to_pylist()
    src.close()


@pytest.mark.parametrize("damage", ["block", "sync", "truncated"])
def test_damaged_avro_block_fails_the_stream_naming_the_file(damage, tmp_path):
    t = _random_rows(20_000)
    path = tmp_path / "data.avro"
    write_data_file(t, list(t.schema), "avro", str(path))
    raw = bytearray(path.read_bytes())
    _meta, sync, blocks = avro.parse_container(bytes(raw))
    assert len(blocks) > 6
    syncs = [i for i in range(len(raw)) if raw.startswith(sync, i)]
    at = (syncs[4] + syncs[5]) // 2  # inside the 5th data block's payload
    if damage == "block":
        raw[at] ^= 0xFF
        raw[at + 1] ^= 0xFF
    elif damage == "sync":
        raw[syncs[5]] ^= 0xFF
    else:
        del raw[at:]
    path.write_bytes(bytes(raw))
    chunks = iter_data_file(str(path), "avro", t.column_names, t.schema, 1000)
    assert next(chunks).column("k").to_pylist() == list(range(1000))  # the blocks before it read fine
    with pytest.raises(FormatError, match=re.escape(str(path))):
        list(chunks)
    with pytest.raises(FormatError, match=re.escape(str(path))):
        read_data_file(str(path), "avro", t.column_names, t.schema)


def test_the_files_of_one_write_share_one_dictionary_choice():
    """The files of one write follow one sampling, of the write's rows: a file whose own rows
    would not get a dictionary still gets one (an encoding choice only: its rows read back the
    same)."""
    from lake_core.format.parquet_file import DictionaryChoice

    n = 20_000
    repeated = pa.table({"s": pa.array(["a", "b"] * (n // 2)), "v": pa.array(range(n), pa.int64())})
    distinct = pa.table({"s": pa.array([f"name-{i}" for i in range(n)]), "v": pa.array(range(n), pa.int64())})
    from lake_core.format.data_file_writer import DataFileStreamWriter

    choice = DictionaryChoice(repeated)

    def write(t: pa.Table) -> bytes:
        sink = io.BytesIO()
        w = DataFileStreamWriter(list(t.schema), "parquet", sink, dictionary=choice)
        w.write(t)
        w.close()
        return sink.getvalue()

    raws = [write(t) for t in (repeated, distinct)]
    for raw, t in zip(raws, (repeated, distinct)):
        f = pq.ParquetFile(io.BytesIO(raw))
        assert f.metadata.row_group(0).column(0).has_dictionary_page  # "s": as the sample decided
        assert f.read().equals(t)
    alone = pq.ParquetFile(io.BytesIO(_write(distinct, list(distinct.schema), "parquet"))).metadata.row_group(0)
    assert not alone.column(0).has_dictionary_page  # sampled by itself, it gets plain pages


def test_a_local_file_read_whole_is_mapped_but_its_rows_are_copies(tmp_path):
    """A local Parquet file read whole is memory-mapped (its bytes are the page cache's, not a copy
    into fresh memory); the rows it gives own their memory: a file overwritten in place afterwards
    (as no writer of ours does: data files are immutable) does not change them. The columns cover
    every page layout a decoder might hand out as a slice of the file: uncompressed fixed-width
    (random doubles are stored uncompressed), uncompressed strings, dictionaries and nulls."""
    rng = np.random.default_rng(5)
    n = 30_000
    t = pa.table(
        {
            "k": pa.array(np.arange(n), pa.int64()),
            "d": pa.array(rng.random(n)),
            "s": pa.array([f"v{i}" for i in range(n)]),
            "c": pa.array([f"city-{i % 7}" for i in range(n)]),
            "o": pa.array([None if i % 3 else i for i in range(n)], pa.int32()),
        }
    )
    path = tmp_path / "f.parquet"
    path.write_bytes(_write(t, list(t.schema), "parquet", compression="none"))
    size = path.stat().st_size
    pf = pq.ParquetFile(path)
    assert {pf.metadata.row_group(0).column(i).compression for i in range(5)} == {"UNCOMPRESSED"}
    back = read_data_file(str(path), "parquet", t.column_names, t.schema)
    assert back.equals(t)
    with open(path, "r+b") as f:  # same size, every byte changed, in place
        f.write(bytes(b ^ 0xFF for b in path.read_bytes()))
    assert path.stat().st_size == size
    assert back.equals(t)
