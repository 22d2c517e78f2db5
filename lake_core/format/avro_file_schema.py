"""The Avro schema of an Avro data file, both ways, as Java ``AvroSchemaConverter`` maps it: record
``org.apache.paimon.avro.generated.record``, nullable = ``["null", T]`` with default null,
TINYINT/SMALLINT/INT ``int``, DECIMAL ``bytes`` + ``decimal`` logical type, TIMESTAMP(p<=3/p<=6)
``timestamp-millis``/``-micros``, TIMESTAMP_LTZ ``local-timestamp-*``, DATE ``date``, TIME
``time-millis``, MAP with STRING key an Avro map, other keys an array of ``{key, value}`` records
with logical type ``map``. TIMESTAMP(7..9) has no Java Avro mapping (Java refuses it); lake_core
writes ``timestamp-nanos`` / ``local-timestamp-nanos`` so its own files round-trip."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from lake_core.errors import FormatError
from lake_core.format.conform import as_arrow_fields

__all__ = ["AVRO_ROOT", "avro_schema_for", "avro_to_arrow"]

AVRO_ROOT = "org.apache.paimon.avro.generated.record"


def _avro_type(t: pa.DataType, nullable: bool, row_name: str, column: str) -> Any:
    s: Any
    if pa.types.is_boolean(t):
        s = "boolean"
    elif pa.types.is_int8(t) or pa.types.is_int16(t) or pa.types.is_int32(t):
        s = "int"
    elif pa.types.is_int64(t):
        s = "long"
    elif pa.types.is_float32(t):
        s = "float"
    elif pa.types.is_float64(t):
        s = "double"
    elif pa.types.is_string(t) or pa.types.is_large_string(t):
        s = "string"
    elif pa.types.is_decimal(t):
        s = {"type": "bytes", "logicalType": "decimal", "precision": t.precision, "scale": t.scale}
    elif pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        s = "bytes"
    elif pa.types.is_timestamp(t):
        suffix = {"s": "millis", "ms": "millis", "us": "micros", "ns": "nanos"}[t.unit]
        prefix = "local-timestamp-" if t.tz is not None else "timestamp-"
        s = {"type": "long", "logicalType": prefix + suffix}
    elif pa.types.is_date(t):
        s = {"type": "int", "logicalType": "date"}
    elif pa.types.is_time32(t):
        s = {"type": "int", "logicalType": "time-millis"}
    elif pa.types.is_list(t) or pa.types.is_large_list(t):
        vf = t.value_field
        s = {"type": "array", "items": _avro_type(vf.type, vf.nullable, row_name, column)}
    elif pa.types.is_map(t):
        kf, vf = t.key_field, t.item_field
        if pa.types.is_string(kf.type) or pa.types.is_large_string(kf.type):
            s = {"type": "map", "values": _avro_type(vf.type, vf.nullable, row_name, column)}
        else:
            value_schema: dict = {
                "name": "value",
                "type": _avro_type(vf.type, vf.nullable, row_name + "_value", column),
            }
            if vf.nullable:
                value_schema["default"] = None
            s = {
                "type": "array",
                "logicalType": "map",
                "items": {
                    "type": "record",
                    "name": row_name,
                    "fields": [
                        {"name": "key", "type": _avro_type(kf.type, False, row_name + "_key", column)},
                        value_schema,
                    ],
                },
            }
    elif pa.types.is_struct(t):
        s = _avro_record(list(t), row_name, column)
    else:
        raise FormatError(f"Column '{column}' of type {t} cannot be written to Avro")
    return ["null", s] if nullable else s


def _avro_record(fields: Sequence[pa.Field], row_name: str, column: str | None = None) -> dict:
    out = []
    for f in fields:
        fs: dict = {"name": f.name, "type": _avro_type(f.type, f.nullable, row_name + "_" + f.name, column or f.name)}
        if f.nullable:
            fs["default"] = None
        out.append(fs)
    return {"type": "record", "name": row_name, "fields": out}


def avro_schema_for(fields: Sequence[Any] | pa.Schema) -> dict:
    """The Avro schema (as Java ``AvroSchemaConverter`` builds it) of a data file's columns."""
    return _avro_record(as_arrow_fields(fields), AVRO_ROOT)


def avro_to_arrow(s: Any) -> tuple[pa.DataType, bool]:
    """Arrow type (and nullability) of an Avro (sub)schema as fastavro returns it."""
    if isinstance(s, list):
        non_null = [x for x in s if x != "null"]
        if len(non_null) != 1:
            raise FormatError(f"Unsupported Avro union {s}")
        t, _ = avro_to_arrow(non_null[0])
        return t, True
    if isinstance(s, str):
        prim = {
            "boolean": pa.bool_(),
            "int": pa.int32(),
            "long": pa.int64(),
            "float": pa.float32(),
            "double": pa.float64(),
            "string": pa.string(),
            "bytes": pa.binary(),
            "null": pa.null(),
        }
        if s not in prim:
            raise FormatError(f"Unsupported Avro type {s!r}")
        return prim[s], s == "null"
    if isinstance(s, dict):
        typ = s.get("type")
        lt = s.get("logicalType")
        if typ == "long" and lt:
            unit = {"millis": "ms", "micros": "us", "nanos": "ns"}
            for prefix, tz in (("timestamp-", None), ("local-timestamp-", "UTC")):
                if lt.startswith(prefix) and lt[len(prefix) :] in unit:
                    return pa.timestamp(unit[lt[len(prefix) :]], tz=tz), False
            if lt == "time-micros":
                return pa.time64("us"), False
        if typ == "int" and lt == "date":
            return pa.date32(), False
        if typ == "int" and lt == "time-millis":
            return pa.time32("ms"), False
        if typ in ("bytes", "fixed") and lt == "decimal":
            return pa.decimal128(int(s["precision"]), int(s.get("scale", 0))), False
        if typ == "fixed":
            return pa.binary(), False
        if typ == "enum":
            return pa.string(), False
        if typ == "array":
            items = s["items"]
            if lt == "map" and isinstance(items, dict) and items.get("type") == "record":
                fs = {f["name"]: f["type"] for f in items["fields"]}
                kt, _ = avro_to_arrow(fs["key"])
                vt, vn = avro_to_arrow(fs["value"])
                return pa.map_(pa.field("key", kt, False), pa.field("value", vt, vn)), False
            et, en = avro_to_arrow(items)
            return pa.list_(pa.field("item", et, en)), False
        if typ == "map":
            vt, vn = avro_to_arrow(s["values"])
            return pa.map_(pa.field("key", pa.string(), False), pa.field("value", vt, vn)), False
        if typ == "record":
            children = []
            for f in s["fields"]:
                ct, cn = avro_to_arrow(f["type"])
                children.append(pa.field(f["name"], ct, cn))
            return pa.struct(children), False
        if isinstance(typ, (str, list, dict)):
            return avro_to_arrow(typ)
    raise FormatError(f"Unsupported Avro schema {s!r}")
