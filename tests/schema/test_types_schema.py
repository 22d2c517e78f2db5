"""Paimon type strings <-> arrow, and TableSchema JSON / validation."""

from __future__ import annotations

import dataclasses
import json

import pyarrow as pa
import pytest

from lake_core.errors import SchemaError
from lake_core.field_metadata import FIELD_ID_KEY
from lake_core.schema.table_schema import TableSchema, jackson_pretty
from lake_core.type_parser import from_paimon_type
from lake_core.types import DataField, arrow_field, normalize_arrow_type, to_paimon_type

# --------------------------------------------------------------------------------------------
# types
# --------------------------------------------------------------------------------------------

ATOMIC = [
    (pa.int8(), "TINYINT"),
    (pa.int16(), "SMALLINT"),
    (pa.int32(), "INT"),
    (pa.int64(), "BIGINT"),
    (pa.float32(), "FLOAT"),
    (pa.float64(), "DOUBLE"),
    (pa.string(), "STRING"),
    (pa.binary(), "BYTES"),
    (pa.bool_(), "BOOLEAN"),
    (pa.date32(), "DATE"),
    (pa.time32("ms"), "TIME(3)"),
    (pa.timestamp("s"), "TIMESTAMP(0)"),
    (pa.timestamp("ms"), "TIMESTAMP(3)"),
    (pa.timestamp("us"), "TIMESTAMP(6)"),
    (pa.timestamp("ns"), "TIMESTAMP(9)"),
    (pa.timestamp("ms", tz="UTC"), "TIMESTAMP(3) WITH LOCAL TIME ZONE"),
    (pa.timestamp("us", tz="UTC"), "TIMESTAMP(6) WITH LOCAL TIME ZONE"),
    (pa.timestamp("ns", tz="UTC"), "TIMESTAMP(9) WITH LOCAL TIME ZONE"),
    (pa.decimal128(10, 2), "DECIMAL(10, 2)"),
    (pa.decimal128(38, 10), "DECIMAL(38, 10)"),
    (pa.decimal128(1, 0), "DECIMAL(1, 0)"),
]


@pytest.mark.parametrize("t,s", ATOMIC, ids=[s for _, s in ATOMIC])
def test_atomic_round_trip(t, s):
    assert to_paimon_type(t, True) == s
    assert to_paimon_type(t, False) == s + " NOT NULL"
    assert from_paimon_type(s) == (t, True)
    assert from_paimon_type(s + " NOT NULL") == (t, False)


@pytest.mark.parametrize(
    "t,s",
    [
        (pa.large_string(), "STRING"),
        (pa.large_binary(), "BYTES"),
        (pa.binary(4), "BINARY(4)"),
        (pa.dictionary(pa.int32(), pa.string()), "STRING"),
        (pa.date64(), "DATE"),
        (pa.time32("s"), "TIME(0)"),
        (pa.timestamp("us", tz="Europe/Paris"), "TIMESTAMP(6) WITH LOCAL TIME ZONE"),
    ],
)
def test_other_arrow_spellings(t, s):
    assert to_paimon_type(t, True) == s


@pytest.mark.parametrize(
    "s,t,nullable",
    [
        ("VARCHAR(2147483647)", pa.string(), True),
        ("VARCHAR(10) NOT NULL", pa.string(), False),
        ("CHAR(3)", pa.string(), True),
        ("char", pa.string(), True),
        ("BINARY(16)", pa.binary(), True),
        ("VARBINARY(2147483647) NOT NULL", pa.binary(), False),
        ("INTEGER", pa.int32(), True),
        ("int not null", pa.int32(), False),
        ("INT NULL", pa.int32(), True),
        ("NUMERIC(5, 1)", pa.decimal128(5, 1), True),
        ("DEC(12)", pa.decimal128(12, 0), True),
        ("DECIMAL", pa.decimal128(10, 0), True),
        ("DECIMAL(10,2)", pa.decimal128(10, 2), True),
        ("DOUBLE PRECISION", pa.float64(), True),
        ("TIMESTAMP", pa.timestamp("us"), True),
        ("TIMESTAMP(1)", pa.timestamp("ms"), True),
        ("TIMESTAMP(4)", pa.timestamp("us"), True),
        ("TIMESTAMP(7)", pa.timestamp("ns"), True),
        ("TIMESTAMP(3) WITHOUT TIME ZONE", pa.timestamp("ms"), True),
        ("TIMESTAMP_LTZ(6)", pa.timestamp("us", tz="UTC"), True),
        ("TIMESTAMP_LTZ(3) NOT NULL", pa.timestamp("ms", tz="UTC"), False),
        ("TIMESTAMP(6) WITH LOCAL TIME ZONE NOT NULL", pa.timestamp("us", tz="UTC"), False),
        ("TIME", pa.time32("ms"), True),
        ("TIME(0)", pa.time32("ms"), True),
        ("ARRAY<INT NOT NULL>", pa.list_(pa.field("item", pa.int32(), False)), True),
        ("MAP<STRING, BIGINT> NOT NULL", pa.map_(pa.string(), pa.int64()), False),
        ("INT ARRAY", pa.list_(pa.int32()), True),
    ],
)
def test_java_spellings_parse(s, t, nullable):
    got_t, got_n = from_paimon_type(s)
    assert got_t == t
    assert got_n is nullable


def test_nested_json_round_trip():
    arr_json = {"type": "ARRAY", "element": "INT"}
    t, n = from_paimon_type(arr_json)
    assert t == pa.list_(pa.int32()) and n
    assert to_paimon_type(t, True) == arr_json

    map_json = {"type": "MAP NOT NULL", "key": "STRING NOT NULL", "value": "BIGINT"}
    t, n = from_paimon_type(map_json)
    assert t == pa.map_(pa.string(), pa.int64()) and not n
    assert to_paimon_type(t, False) == map_json

    # pypaimon adds "nullable": accepted
    t, n = from_paimon_type({"type": "ARRAY", "element": "INT NOT NULL", "nullable": True})
    assert t == pa.list_(pa.field("item", pa.int32(), False)) and n

    # Java writes nullable map keys ("STRING"); arrow keys are never null
    t, _ = from_paimon_type({"type": "MAP", "key": "STRING", "value": "INT"})
    assert t == pa.map_(pa.string(), pa.int32())

    nested = {
        "type": "ARRAY",
        "element": {"type": "MAP", "key": "INT NOT NULL", "value": {"type": "ARRAY", "element": "DECIMAL(38, 10)"}},
    }
    t, _ = from_paimon_type(nested)
    assert to_paimon_type(t, True) == nested


def test_row_type_keeps_nested_ids():
    row = {
        "type": "ROW",
        "fields": [
            {"id": 5, "name": "a", "type": "INT NOT NULL"},
            {"id": 6, "name": "b", "type": "STRING", "description": "bee"},
        ],
    }
    t, n = from_paimon_type(row)
    assert pa.types.is_struct(t) and n
    assert t.field(0).metadata[FIELD_ID_KEY] == b"5"
    assert not t.field(0).nullable
    assert to_paimon_type(t, True) == row


def test_struct_without_ids_is_refused():
    with pytest.raises(SchemaError, match="'st'"):
        to_paimon_type(pa.struct([("a", pa.int32())]), True, column="st")


@pytest.mark.parametrize(
    "t",
    [pa.uint32(), pa.float16(), pa.time64("us"), pa.null(), pa.decimal256(40, 2), pa.list_(pa.uint8())],
)
def test_unsupported_arrow_types_name_the_column(t):
    with pytest.raises(SchemaError) as ei:
        to_paimon_type(t, True, column="my_col")
    assert "my_col" in str(ei.value)


@pytest.mark.parametrize(
    "s", ["FOO", "DECIMAL(50, 2)", "DECIMAL(5, 7)", "TIMESTAMP(12)", "VARIANT", "INT INT", "MULTISET<INT>"]
)
def test_unparseable_types(s):
    with pytest.raises(SchemaError) as ei:
        from_paimon_type(s, column="c1")
    assert "c1" in str(ei.value)


def test_normalize_arrow_type():
    assert normalize_arrow_type(pa.large_string()) == pa.string()
    assert normalize_arrow_type(pa.timestamp("us", tz="Asia/Tokyo")) == pa.timestamp("us", tz="UTC")


def test_data_field_json():
    f = DataField(3, "price", pa.decimal128(10, 2), False, "the price")
    assert f.to_json() == {"id": 3, "name": "price", "type": "DECIMAL(10, 2) NOT NULL", "description": "the price"}
    assert DataField.from_json(f.to_json()) == f
    af = arrow_field(f)
    assert af.metadata[FIELD_ID_KEY] == b"3" and not af.nullable and af.type == pa.decimal128(10, 2)


def test_data_field_keeps_java_spelling_and_default_value():
    d = {"id": 1, "name": "c", "type": "VARCHAR(10) NOT NULL", "defaultValue": "x"}
    f = DataField.from_json(d)
    assert f.type == pa.string() and not f.nullable and f.default_value == "x"
    assert f.to_json() == d
    # the raw spelling is dropped once it no longer describes the field
    f2 = dataclasses.replace(f, type=pa.int64())
    assert f2.to_json()["type"] == "BIGINT NOT NULL"
    f3 = f.with_nullable(True)
    assert f3.to_json()["type"] == "STRING"


# --------------------------------------------------------------------------------------------
# schema JSON
# --------------------------------------------------------------------------------------------

FORMAT_42_SCHEMA = pa.schema(
    [
        ("dt", pa.string()),
        ("id", pa.int64()),
        ("i", pa.int32()),
        ("b", pa.int64()),
        ("d", pa.float64()),
        ("s", pa.string()),
        ("flag", pa.bool_()),
        ("ts", pa.timestamp("us")),
        ("dec", pa.decimal128(10, 2)),
    ]
)

FORMAT_42_JSON = """{
  "version" : 3,
  "id" : 0,
  "fields" : [ {
    "id" : 0,
    "name" : "dt",
    "type" : "STRING NOT NULL"
  }, {
    "id" : 1,
    "name" : "id",
    "type" : "BIGINT NOT NULL"
  }, {
    "id" : 2,
    "name" : "i",
    "type" : "INT"
  }, {
    "id" : 3,
    "name" : "b",
    "type" : "BIGINT"
  }, {
    "id" : 4,
    "name" : "d",
    "type" : "DOUBLE"
  }, {
    "id" : 5,
    "name" : "s",
    "type" : "STRING"
  }, {
    "id" : 6,
    "name" : "flag",
    "type" : "BOOLEAN"
  }, {
    "id" : 7,
    "name" : "ts",
    "type" : "TIMESTAMP(6)"
  }, {
    "id" : 8,
    "name" : "dec",
    "type" : "DECIMAL(10, 2)"
  } ],
  "highestFieldId" : 8,
  "partitionKeys" : [ "dt" ],
  "primaryKeys" : [ "dt", "id" ],
  "options" : {
    "bucket" : "2"
  },
  "comment" : "pk test",
  "timeMillis" : 1795308974872
}"""


def _format42() -> TableSchema:
    s = TableSchema.create(FORMAT_42_SCHEMA, ["dt"], ["dt", "id"], {"bucket": "2"}, "pk test")
    return dataclasses.replace(s, time_millis=1795308974872)


def test_format_md_example_exact_text():
    s = _format42()
    assert [f.to_json()["type"] for f in s.fields] == [
        "STRING NOT NULL",
        "BIGINT NOT NULL",
        "INT",
        "BIGINT",
        "DOUBLE",
        "STRING",
        "BOOLEAN",
        "TIMESTAMP(6)",
        "DECIMAL(10, 2)",
    ]
    assert s.to_json() == FORMAT_42_JSON
    back = TableSchema.from_json(FORMAT_42_JSON)
    assert back == s
    assert back.to_json() == FORMAT_42_JSON


def test_field_order_and_optional_comment():
    s = dataclasses.replace(_format42(), comment=None, options={})
    d = json.loads(s.to_json())
    assert list(d) == [
        "version",
        "id",
        "fields",
        "highestFieldId",
        "partitionKeys",
        "primaryKeys",
        "options",
        "timeMillis",
    ]
    assert '"options" : { }' in s.to_json()


def test_compact_json_from_format_md_parses():
    text = """{ "version": 3, "id": 0,
  "fields": [ {"id":0,"name":"dt","type":"STRING NOT NULL"}, {"id":1,"name":"id","type":"BIGINT NOT NULL"},
              {"id":2,"name":"i","type":"INT"}, {"id":3,"name":"b","type":"BIGINT"}, {"id":4,"name":"d","type":"DOUBLE"},
              {"id":5,"name":"s","type":"STRING"}, {"id":6,"name":"flag","type":"BOOLEAN"},
              {"id":7,"name":"ts","type":"TIMESTAMP(6)"}, {"id":8,"name":"dec","type":"DECIMAL(10, 2)"} ],
  "highestFieldId": 8, "partitionKeys": ["dt"], "primaryKeys": ["dt","id"],
  "options": {"bucket": "2"}, "comment": "pk test", "timeMillis": 1795308974872 }"""
    s = TableSchema.from_json(text)
    assert s == _format42()
    assert s.to_json() == FORMAT_42_JSON


def test_pypaimon_style_schema_round_trips_its_type_spellings():
    text = json.dumps(
        {
            "version": 3,
            "id": 0,
            "fields": [
                {"id": 0, "name": "k", "type": "BIGINT NOT NULL"},
                {"id": 1, "name": "ltz", "type": "TIMESTAMP_LTZ(6)"},
                {"id": 2, "name": "arr", "type": {"type": "ARRAY", "element": "INT", "nullable": True}},
                {
                    "id": 3,
                    "name": "st",
                    "type": {"type": "ROW", "fields": [{"id": 4, "name": "a", "type": "INT"}], "nullable": True},
                },
            ],
            "highestFieldId": 4,
            "partitionKeys": [],
            "primaryKeys": ["k"],
            "options": {},
            "timeMillis": 1,
        },
        indent=2,
    )
    s = TableSchema.from_json(text)
    assert s.field("ltz").type == pa.timestamp("us", tz="UTC")
    again = json.loads(s.to_json())
    assert again == json.loads(text)


def test_nested_schema_ids_and_json():
    sch = pa.schema(
        [
            ("id", pa.int64()),
            ("st", pa.struct([("a", pa.int32()), ("b", pa.string())])),
            ("arr", pa.list_(pa.int32())),
            ("m", pa.map_(pa.string(), pa.int64())),
            ("z", pa.int8()),
        ]
    )
    s = TableSchema.create(sch, primary_keys=["id"])
    assert [f.id for f in s.fields] == [0, 1, 4, 5, 6]
    assert s.highest_field_id == 6
    st = s.to_dict()["fields"][1]["type"]
    assert st == {
        "type": "ROW",
        "fields": [{"id": 2, "name": "a", "type": "INT"}, {"id": 3, "name": "b", "type": "STRING"}],
    }
    assert s.to_dict()["fields"][3]["type"] == {"type": "MAP", "key": "STRING NOT NULL", "value": "BIGINT"}
    assert TableSchema.from_json(s.to_json()).to_json() == s.to_json()
    assert '"fields" : [ {\n        "id" : 2,' in s.to_json()


def test_jackson_pretty_escapes():
    assert jackson_pretty({"a": [], "b": {}, "c": 'q"\\\n\x01é'}) == (
        '{\n  "a" : [ ],\n  "b" : { },\n  "c" : "q\\"\\\\\\n\\u0001é"\n}'
    )
    assert jackson_pretty([1, "x", None, True]) == '[ 1, "x", null, true ]'


# --------------------------------------------------------------------------------------------
# TableSchema.create validation and accessors
# --------------------------------------------------------------------------------------------

BASE = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.float64()), ("arr", pa.list_(pa.int32()))])


def test_create_basics():
    s = TableSchema.create(BASE, ["dt"], ["dt", "id"], {"bucket": "4"})
    assert [f.id for f in s.fields] == [0, 1, 2, 3]
    assert s.highest_field_id == 3
    assert not s.field("dt").nullable and not s.field("id").nullable and s.field("v").nullable
    assert s.trimmed_primary_keys == ("id",)
    assert s.bucket_keys() == ("id",)
    assert s.field_names == ["dt", "id", "v", "arr"]
    assert s.arrow_schema().field("id").metadata[FIELD_ID_KEY] == b"1"
    assert s.version == 3 and s.id == 0 and s.time_millis > 0


def test_create_normalizes_types():
    s = TableSchema.create(
        pa.schema([("k", pa.int64()), ("s", pa.large_string()), ("t", pa.timestamp("us", tz="Europe/Paris"))]),
        primary_keys=["k"],
    )
    assert s.field("s").type == pa.string()
    assert s.field("t").type == pa.timestamp("us", tz="UTC")


def test_kv_arrow_schema():
    s = TableSchema.create(BASE, ["dt"], ["dt", "id"])
    kv = s.kv_arrow_schema()
    assert kv.names == ["_KEY_id", "_SEQUENCE_NUMBER", "_VALUE_KIND", "dt", "id", "v", "arr"]
    ids = [int(f.metadata[FIELD_ID_KEY]) for f in kv]
    assert ids == [1073741823 + 1, 2147483646, 2147483645, 0, 1, 2, 3]
    assert [f.nullable for f in kv] == [False, False, False, False, False, True, True]
    assert kv.field("_VALUE_KIND").type == pa.int8()
    assert kv.field("_SEQUENCE_NUMBER").type == pa.int64()


def test_cross_partition_pk_is_allowed():
    s = TableSchema.create(BASE, ["dt"], ["id"])
    assert s.trimmed_primary_keys == ("id",)
    assert s.field("dt").nullable  # not part of the PK


def test_bucket_key_option():
    s = TableSchema.create(BASE, ["dt"], ["dt", "id"], {"bucket-key": "id"})
    assert s.bucket_keys() == ("id",)
    append = TableSchema.create(BASE, [], [], {"bucket-key": "v"})
    assert append.bucket_keys() == ("v",)
    assert TableSchema.create(BASE).bucket_keys() == ("dt", "id", "v", "arr")
    with pytest.raises(SchemaError, match="nope"):
        TableSchema.create(BASE, [], ["id"], {"bucket-key": "nope"})
    with pytest.raises(SchemaError, match="partition"):
        TableSchema.create(BASE, ["dt"], ["dt", "id"], {"bucket-key": "dt"})
    with pytest.raises(SchemaError, match="primary key"):
        TableSchema.create(BASE, [], ["id"], {"bucket-key": "v"})


def test_missing_primary_key_column_is_named():
    with pytest.raises(SchemaError) as ei:
        TableSchema.create(BASE, [], ["idd"])
    msg = str(ei.value)
    assert "'idd'" in msg and "dt" in msg and "arr" in msg


def test_missing_partition_column_is_named():
    with pytest.raises(SchemaError) as ei:
        TableSchema.create(BASE, ["day"], ["id"])
    assert "'day'" in str(ei.value) and "[dt, id, v, arr]" in str(ei.value)


def test_duplicate_columns_and_keys():
    with pytest.raises(SchemaError, match="'?id'?"):
        TableSchema.create(pa.schema([("id", pa.int64()), ("id", pa.int32())]))
    with pytest.raises(SchemaError, match="id"):
        TableSchema.create(BASE, [], ["id", "id"])
    with pytest.raises(SchemaError, match="dt"):
        TableSchema.create(BASE, ["dt", "dt"], ["id"])


def test_pk_equal_to_partition_keys_refused():
    with pytest.raises(SchemaError, match="should not be same with partition fields"):
        TableSchema.create(BASE, ["dt"], ["dt"])


def test_nested_partition_key_refused():
    with pytest.raises(SchemaError, match="'arr'"):
        TableSchema.create(BASE, ["arr"], ["id"])
    with pytest.raises(SchemaError, match="'arr'"):
        TableSchema.create(BASE, [], ["arr"])


def test_reserved_and_unsupported_columns():
    with pytest.raises(SchemaError, match="_SEQUENCE_NUMBER"):
        TableSchema.create(pa.schema([("_SEQUENCE_NUMBER", pa.int64())]))
    with pytest.raises(SchemaError, match="_KEY_x"):
        TableSchema.create(pa.schema([("_KEY_x", pa.int64())]))
    with pytest.raises(SchemaError, match="'u'"):
        TableSchema.create(pa.schema([("id", pa.int64()), ("u", pa.uint64())]))


def test_field_lookup_error_names_column():
    s = TableSchema.create(BASE)
    with pytest.raises(SchemaError) as ei:
        s.field("zzz")
    assert "'zzz'" in str(ei.value) and "dt" in str(ei.value)


def test_from_json_errors():
    with pytest.raises(SchemaError):
        TableSchema.from_json("not json")
    with pytest.raises(SchemaError, match="fields"):
        TableSchema.from_json('{"id": 0}')
    with pytest.raises(SchemaError, match="'x'"):
        TableSchema.from_json('{"id": 0, "fields": [{"id": 0, "name": "x", "type": "WHAT"}]}')


def test_options_follow_java_hashmap_order():
    # orders seen in Java-written schema files
    # (deletion-vectors.enabled and commit.force-compact share a bucket: insertion order)
    opts = {
        "file.format": "orc",
        "deletion-vectors.enabled": "true",
        "commit.force-compact": "true",
        "manifest.format": "orc",
        "bucket": "1",
    }
    s = dataclasses.replace(_format42(), options=opts)
    assert list(json.loads(s.to_json())["options"]) == [
        "bucket",
        "manifest.format",
        "file.format",
        "deletion-vectors.enabled",
        "commit.force-compact",
    ]
    s = dataclasses.replace(_format42(), options={"changelog-producer": "input", "bucket": "1"})
    assert list(json.loads(s.to_json())["options"]) == ["bucket", "changelog-producer"]
    # a Java file re-serialises unchanged
    text = TableSchema.from_json(s.to_json()).to_json()
    assert text == s.to_json()


def test_legacy_schema_versions_get_old_defaults():
    base = {
        "id": 0,
        "fields": [{"id": 0, "name": "k", "type": "INT NOT NULL"}],
        "highestFieldId": 0,
        "partitionKeys": [],
        "primaryKeys": ["k"],
        "options": {},
        "timeMillis": 5,
    }
    v1 = TableSchema.from_json(json.dumps(base))  # no version -> Paimon 0.7
    assert v1.version == 1 and v1.options == {"bucket": "1", "file.format": "orc"}
    v2 = TableSchema.from_json(json.dumps({**base, "version": 2, "options": {"bucket": "3"}}))
    assert v2.options == {"bucket": "3", "file.format": "orc"}
    v3 = TableSchema.from_json(json.dumps({**base, "version": 3}))
    assert v3.options == {}
