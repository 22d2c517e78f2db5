"""Paimon data types <-> pyarrow types: the Paimon JSON of an arrow type, and DataField.

Paimon (Java ``org.apache.paimon.types``) writes atomic types into ``schema-N`` as the string of
``DataType.asSQLString()`` (``"BIGINT NOT NULL"``, ``"DECIMAL(10, 2)"``,
``"TIMESTAMP(6) WITH LOCAL TIME ZONE"``) and nested types as JSON objects
(``{"type": "ARRAY", "element": ...}``, ``{"type": "MAP", "key": ..., "value": ...}``,
``{"type": "ROW", "fields": [...]}``), as Java ``DataTypeJsonParser`` reads them.

Mapping used by lake_core:

=============================  ==========================================================
pyarrow                        Paimon
=============================  ==========================================================
int8 / int16 / int32 / int64   TINYINT / SMALLINT / INT / BIGINT
float32 / float64              FLOAT / DOUBLE
string, large_string           STRING  (= ``VARCHAR(2147483647)``)
binary, large_binary           BYTES   (= ``VARBINARY(2147483647)``)
fixed_size_binary(n)           BINARY(n)
bool                           BOOLEAN
date32 / date64                DATE
time32('s') / time32('ms')     TIME(0) / TIME(3)   (Paimon stores TIME as int millis)
timestamp(s/ms/us/ns)          TIMESTAMP(0/3/6/9)
timestamp(unit, tz=...)        TIMESTAMP(p) WITH LOCAL TIME ZONE
decimal128(p, s)               DECIMAL(p, s)
list / large_list              ARRAY
map                            MAP
struct                         ROW  (nested field ids in the child fields' metadata)
dictionary<values=T>           as T
=============================  ==========================================================

Paimon type strings are parsed back by lake_core.type_parser.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from lake_core.errors import SchemaError
from lake_core.field_metadata import DESCRIPTION_KEY, FIELD_ID_KEY, field_id_of
from lake_core.type_parser import MAX_DECIMAL_PRECISION, TypeJson, from_paimon_type, in_column

__all__ = [
    "DataField",
    "to_paimon_type",
    "arrow_field",
    "arrow_schema_of",
    "assign_nested_ids",
    "is_nested",
    "normalize_arrow_type",
]

_STRING_MAX = 2147483647


def is_nested(t: pa.DataType) -> bool:
    return (
        pa.types.is_list(t)
        or pa.types.is_large_list(t)
        or pa.types.is_map(t)
        or pa.types.is_struct(t)
        or pa.types.is_fixed_size_list(t)
    )


# ------------------------------------------------------------------------------------------------
# arrow -> Paimon
# ------------------------------------------------------------------------------------------------


def _nn(s: str, nullable: bool) -> str:
    return s if nullable else s + " NOT NULL"


_TS_PRECISION = {"s": 0, "ms": 3, "us": 6, "ns": 9}

# Arrow types, each found by one predicate, whose Paimon type takes no parameters.
_PLAIN_TO_PAIMON = (
    (pa.types.is_int8, "TINYINT"),
    (pa.types.is_int16, "SMALLINT"),
    (pa.types.is_int32, "INT"),
    (pa.types.is_int64, "BIGINT"),
    (pa.types.is_float32, "FLOAT"),
    (pa.types.is_float64, "DOUBLE"),
    (pa.types.is_boolean, "BOOLEAN"),
)


def to_paimon_type(t: pa.DataType, nullable: bool, column: str | None = None) -> TypeJson:
    """The Paimon JSON of an arrow type: Java ``asSQLString()`` for atomic types, a dict for
    ARRAY / MAP / ROW. ``column`` is only used in error messages.

    ROW children need their field ids in the child field metadata (``PARQUET:field_id``); use
    :func:`assign_nested_ids` first for a fresh struct type.
    """
    if pa.types.is_dictionary(t):
        return to_paimon_type(t.value_type, nullable, column)
    for is_type, name in _PLAIN_TO_PAIMON:
        if is_type(t):
            return _nn(name, nullable)
    if pa.types.is_string(t) or pa.types.is_large_string(t) or _is_string_view(t):
        return _nn("STRING", nullable)
    if pa.types.is_fixed_size_binary(t) and not pa.types.is_decimal(t):
        return _nn(f"BINARY({t.byte_width})", nullable)
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or _is_binary_view(t):
        return _nn("BYTES", nullable)
    if pa.types.is_date32(t) or pa.types.is_date64(t):
        return _nn("DATE", nullable)
    if pa.types.is_time32(t):
        return _nn("TIME(0)" if t.unit == "s" else "TIME(3)", nullable)
    if pa.types.is_time64(t):
        raise SchemaError(
            f"Unsupported arrow type {t}{in_column(column)}: Paimon stores TIME as int32 milliseconds; "
            f"cast the column to time32('ms')"
        )
    if pa.types.is_timestamp(t):
        p = _TS_PRECISION[t.unit]
        if t.tz is not None:
            return _nn(f"TIMESTAMP({p}) WITH LOCAL TIME ZONE", nullable)
        return _nn(f"TIMESTAMP({p})", nullable)
    if pa.types.is_decimal(t):
        if t.precision > MAX_DECIMAL_PRECISION:
            raise SchemaError(f"Unsupported arrow type {t}{in_column(column)}: Paimon DECIMAL precision is at most 38")
        return _nn(f"DECIMAL({t.precision}, {t.scale})", nullable)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        vf = t.value_field
        return {
            "type": _nn("ARRAY", nullable),
            "element": to_paimon_type(vf.type, vf.nullable, column),
        }
    if pa.types.is_map(t):
        kf, vf = t.key_field, t.item_field
        return {
            "type": _nn("MAP", nullable),
            "key": to_paimon_type(kf.type, kf.nullable, column),
            "value": to_paimon_type(vf.type, vf.nullable, column),
        }
    if pa.types.is_struct(t):
        fields = []
        for i in range(t.num_fields):
            cf = t.field(i)
            fid = field_id_of(cf)
            if fid is None:
                raise SchemaError(
                    f"Struct field '{cf.name}'{in_column(column)} has no field id; "
                    f"call lake_core.types.assign_nested_ids first"
                )
            fj: dict = {
                "id": fid,
                "name": cf.name,
                "type": to_paimon_type(cf.type, cf.nullable, f"{column}.{cf.name}" if column else cf.name),
            }
            if cf.metadata and DESCRIPTION_KEY in cf.metadata:
                fj["description"] = cf.metadata[DESCRIPTION_KEY].decode("utf-8")
            fields.append(fj)
        return {"type": _nn("ROW", nullable), "fields": fields}
    raise SchemaError(
        f"Unsupported arrow type {t}{in_column(column)}: Paimon has no equivalent "
        f"(supported: int8/16/32/64, float32/64, bool, string, binary, date32, time32, timestamp, "
        f"decimal128, list, map, struct)"
    )


def _is_string_view(t: pa.DataType) -> bool:
    f = getattr(pa.types, "is_string_view", None)
    return bool(f and f(t))


def _is_binary_view(t: pa.DataType) -> bool:
    f = getattr(pa.types, "is_binary_view", None)
    return bool(f and f(t))


def assign_nested_ids(t: pa.DataType, next_id: Callable[[], int]) -> pa.DataType:
    """Return ``t`` with a fresh field id (from ``next_id()``) on every struct child field, in
    Java's order (depth first, like ``ReassignFieldId``). Non-struct types are returned as is
    (ARRAY/MAP carry no ids in Paimon)."""
    if pa.types.is_struct(t):
        children = []
        for i in range(t.num_fields):
            cf = t.field(i)
            fid = next_id()
            ct = assign_nested_ids(cf.type, next_id)
            md = dict(cf.metadata or {})
            md[FIELD_ID_KEY] = str(fid).encode()
            children.append(pa.field(cf.name, ct, cf.nullable, metadata=md))
        return pa.struct(children)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        vf = t.value_field
        nt = assign_nested_ids(vf.type, next_id)
        if nt is vf.type:
            return t
        return pa.list_(pa.field(vf.name, nt, vf.nullable, metadata=vf.metadata))
    if pa.types.is_map(t):
        kf, vf = t.key_field, t.item_field
        kt = assign_nested_ids(kf.type, next_id)
        vt = assign_nested_ids(vf.type, next_id)
        if kt is kf.type and vt is vf.type:
            return t
        return pa.map_(pa.field("key", kt, False), pa.field("value", vt, vf.nullable))
    return t


def max_nested_id(t: pa.DataType) -> int:
    """Highest field id found in struct children of ``t`` (-1 when none)."""
    best = -1
    if pa.types.is_struct(t):
        for i in range(t.num_fields):
            cf = t.field(i)
            fid = field_id_of(cf)
            if fid is not None:
                best = max(best, fid)
            best = max(best, max_nested_id(cf.type))
    elif pa.types.is_list(t) or pa.types.is_large_list(t):
        best = max_nested_id(t.value_type)
    elif pa.types.is_map(t):
        best = max(max_nested_id(t.key_type), max_nested_id(t.item_type))
    return best


def normalize_arrow_type(t: pa.DataType, column: str | None = None) -> pa.DataType:
    """The arrow type lake_core uses for a column declared with arrow type ``t`` (what
    ``from_paimon_type(to_paimon_type(t))`` gives, keeping struct ids)."""
    j = to_paimon_type(t, True, column)
    nt, _ = from_paimon_type(j, column)
    return nt


# ------------------------------------------------------------------------------------------------
# DataField
# ------------------------------------------------------------------------------------------------


def _types_equal(a: pa.DataType, b: pa.DataType) -> bool:
    try:
        return a.equals(b, check_metadata=True)
    except TypeError:  # pragma: no cover - very old pyarrow
        return a == b


@dataclass(frozen=True)
class DataField:
    """One column of a Paimon schema (Java ``DataField``).

    ``type`` is the arrow type lake_core uses for the column; ``nullable`` is the top-level
    nullability (``NOT NULL`` suffix). ``raw_type`` keeps the type JSON exactly as it was read
    from a schema file, so that re-serialising a Java-written schema reproduces spellings such as
    ``VARCHAR(10)`` or ``TIMESTAMP(3) WITH LOCAL TIME ZONE``; it is only used while it still
    parses to ``(type, nullable)``.
    """

    id: int
    name: str
    type: pa.DataType
    nullable: bool = True
    description: str | None = None
    default_value: str | None = None
    raw_type: Any = field(default=None, compare=False, repr=False)

    def type_json(self) -> TypeJson:
        if self.raw_type is not None:
            try:
                t, n = from_paimon_type(self.raw_type, self.name)
            except SchemaError:
                t, n = None, None
            if n == self.nullable and t is not None and _types_equal(t, self.type):
                return self.raw_type
        return to_paimon_type(self.type, self.nullable, self.name)

    def to_json(self) -> dict:
        d: dict = {"id": self.id, "name": self.name, "type": self.type_json()}
        if self.description is not None:
            d["description"] = self.description
        if self.default_value is not None:
            d["defaultValue"] = self.default_value
        return d

    @staticmethod
    def from_json(d: dict) -> DataField:
        try:
            fid = int(d["id"])
            name = d["name"]
            tj = d["type"]
        except (KeyError, TypeError, ValueError) as e:
            raise SchemaError(f"Invalid schema field {d!r}: needs 'id', 'name' and 'type'") from e
        t, nullable = from_paimon_type(tj, name)
        desc = d.get("description")
        dv = d.get("defaultValue")
        return DataField(
            id=fid,
            name=name,
            type=t,
            nullable=nullable,
            description=None if desc is None else str(desc),
            default_value=None if dv is None else str(dv),
            raw_type=tj,
        )

    def with_nullable(self, nullable: bool) -> DataField:
        return DataField(self.id, self.name, self.type, nullable, self.description, self.default_value, self.raw_type)

    def sql_type(self) -> str:
        """A readable type string (atomic: Java asSQLString; nested: JSON)."""
        j = self.type_json()
        return j if isinstance(j, str) else json.dumps(j)


def arrow_field(f: DataField) -> pa.Field:
    """The arrow field of a DataField, carrying the field id as ``PARQUET:field_id`` metadata
    (and the description, when set)."""
    md = {FIELD_ID_KEY: str(f.id).encode()}
    if f.description is not None:
        md[DESCRIPTION_KEY] = f.description.encode("utf-8")
    return pa.field(f.name, f.type, f.nullable, metadata=md)


def arrow_schema_of(fields: Iterable[DataField]) -> pa.Schema:
    """Arrow schema of a sequence of DataFields."""
    return pa.schema([arrow_field(f) for f in fields])
