"""Java Paimon writes an Avro data file's top-level schema as ["null", record]."""

from __future__ import annotations

import io

import fastavro
import pyarrow as pa
import pytest

from lake_core.errors import FormatError
from lake_core.format.data_file import read_data_file, read_file_schema

RECORD = {
    "type": "record",
    "name": "record",
    "namespace": "org.apache.paimon.avro.generated",
    "fields": [{"name": "k", "type": "int"}, {"name": "v", "type": ["null", "string"], "default": None}],
}


def _avro(schema, records) -> bytes:
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(schema), records)
    return out.getvalue()


def test_reads_nullable_record_top_level():
    raw = _avro(["null", RECORD], [{"k": 1, "v": "a"}, {"k": 2, "v": None}])
    target = pa.schema([pa.field("k", pa.int32(), nullable=False), ("v", pa.string())])
    assert read_data_file(io.BytesIO(raw), "avro", arrow_schema=target).to_pylist() == [
        {"k": 1, "v": "a"},
        {"k": 2, "v": None},
    ]
    assert read_file_schema(io.BytesIO(raw), "avro").names == ["k", "v"]


@pytest.mark.parametrize(
    "schema, records, message",
    [
        ("int", [1], "does not hold records"),
        (["null", "int"], [1], "does not hold records"),
        (["null", RECORD], [None], "holds a NULL row"),
    ],
)
def test_refuses_what_is_not_rows(schema, records, message):
    with pytest.raises(FormatError, match=message):
        read_data_file(io.BytesIO(_avro(schema, records)), "avro")
