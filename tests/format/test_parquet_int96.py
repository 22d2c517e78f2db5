"""TIMESTAMP(7..9) columns written as Parquet INT96, one column at a time."""

from __future__ import annotations

import io

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lake_core.format.data_file import read_data_file, write_data_file
from lake_core.format.parquet_int96 import declare_int96, to_int96_columns

NS = pa.timestamp("ns")
EDGE = [
    0,
    -1,
    1,
    -86_400_000_000_000,
    86_399_999_999_999,
    -(2**63) + 1,
    2**63 - 1,
    1_700_000_000_123_456_789,
    -2_208_988_800_000_000_001,
]


def _fields(schema: pa.Schema) -> list[pa.Field]:
    ids = iter(range(1000))

    def with_ids(t):
        if pa.types.is_struct(t):
            return pa.struct(
                [
                    pa.field(c.name, with_ids(c.type), c.nullable, {b"PARQUET:field_id": str(next(ids) + 100).encode()})
                    for c in t
                ]
            )
        if pa.types.is_list(t):
            return pa.list_(with_ids(t.value_type))
        return t

    return [
        pa.field(f.name, with_ids(f.type), f.nullable, {b"PARQUET:field_id": str(i).encode()})
        for i, f in enumerate(schema)
    ]


def _roundtrip(table: pa.Table) -> tuple[pa.Table, pq.ParquetFile]:
    fields = _fields(table.schema)
    sink = io.BytesIO()
    write_data_file(table, fields, "parquet", sink)
    raw = sink.getvalue()
    return read_data_file(io.BytesIO(raw), "parquet", arrow_schema=pa.schema(fields)), pq.ParquetFile(io.BytesIO(raw))


def test_nanosecond_columns_are_int96_and_others_untouched():
    n = len(EDGE)
    struct_t = pa.struct([("a", NS), ("b", pa.int32())])
    table = pa.table(
        {
            "ts9": pa.array(EDGE, NS),
            "ltz9": pa.array([None if i % 3 == 0 else v for i, v in enumerate(EDGE)], pa.timestamp("ns", tz="UTC")),
            "ts6": pa.array(range(n), pa.timestamp("us")),
            "ts3": pa.array(range(n), pa.timestamp("ms")),
            "arr": pa.array([[v, None] if i % 2 else None for i, v in enumerate(EDGE)], pa.list_(NS)),
            "m": pa.array([[("k", v)] for v in EDGE], pa.map_(pa.string(), NS)),
            "row": pa.array([{"a": v, "b": i} if i % 4 else None for i, v in enumerate(EDGE)], struct_t),
            "s": [str(v) for v in EDGE],
        }
    )
    back, pf = _roundtrip(table)
    assert back.equals(table.cast(back.schema))
    physical = {pf.schema.column(i).path: pf.schema.column(i).physical_type for i in range(len(pf.schema))}
    assert physical == {
        "ts9": "INT96",
        "ltz9": "INT96",
        "ts6": "INT64",
        "ts3": "INT64",
        "arr.list.element": "INT96",
        "m.key_value.key": "BYTE_ARRAY",
        "m.key_value.value": "INT96",
        "row.a": "INT96",
        "row.b": "INT32",
        "s": "BYTE_ARRAY",
    }
    text = str(pf.schema)
    assert "field_id=100 a" in text and "field_id=101 b" in text  # nested field ids survive
    # no statistics for INT96 leaves (their byte order is not the value order), the rest keep them
    rg = pf.metadata.row_group(0)
    stats = {rg.column(i).path_in_schema: rg.column(i).is_stats_set for i in range(rg.num_columns)}
    assert not stats["ts9"] and not stats["row.a"] and stats["ts6"] and stats["s"]


def test_sliced_and_chunked_input():
    full = pa.array([None if i % 5 == 0 else i * 1_000_000_007 - 10**15 for i in range(100)], NS)
    table = pa.Table.from_batches(
        [pa.record_batch([full.slice(3, 40)], names=["t"]), pa.record_batch([full.slice(50, 30)], names=["t"])]
    )
    back, _ = _roundtrip(table)
    assert back["t"].to_pylist() == table["t"].to_pylist()


def test_no_nanoseconds_no_rewrite():
    table = pa.table({"t": pa.array([1, 2], pa.timestamp("us"))})
    assert to_int96_columns(table) == (table, set())


def test_declare_int96_refuses_other_types():
    sink = io.BytesIO()
    pq.write_table(pa.table({"x": pa.array([1], pa.int64())}), sink)
    with pytest.raises(ValueError, match="not FIXED_LEN_BYTE_ARRAY"):
        declare_int96(sink.getvalue(), {"x"})
