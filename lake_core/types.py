"""Paimon data types <-> pyarrow types.

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

Reading accepts Java's other spellings: ``VARCHAR(n)``, ``CHAR(n)`` -> string,
``BINARY(n)``/``VARBINARY(n)`` -> binary, ``INTEGER``, ``NUMERIC``/``DEC``,
``DOUBLE PRECISION``, ``TIMESTAMP_LTZ(p)`` (pypaimon's spelling), ``TIMESTAMP(p) WITHOUT TIME
ZONE``, ``TIME(p)`` -> time32('ms'), ``TIMESTAMP(p)`` -> the smallest arrow unit holding p
digits, string forms ``ARRAY<T>`` / ``MAP<K, V>`` and the suffix form ``T ARRAY``.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Union

import pyarrow as pa

from lake_core.errors import SchemaError

__all__ = [
    "DataField",
    "FIELD_ID_KEY",
    "to_paimon_type",
    "from_paimon_type",
    "arrow_field",
    "arrow_schema_of",
    "assign_nested_ids",
    "field_id_of",
    "is_nested",
    "normalize_arrow_type",
]

#: Arrow field-metadata key holding a Paimon field id (pyarrow also writes it as the Parquet
#: field id).
FIELD_ID_KEY = b"PARQUET:field_id"
_DESCRIPTION_KEY = b"description"

TypeJson = Union[str, dict]

_MAX_DECIMAL_PRECISION = 38
_STRING_MAX = 2147483647


def _col(column: Optional[str]) -> str:
    return f" of column '{column}'" if column else ""


def field_id_of(f: pa.Field) -> Optional[int]:
    """The Paimon/Parquet field id stored in an arrow field's metadata, or None."""
    md = f.metadata
    if md and FIELD_ID_KEY in md:
        try:
            return int(md[FIELD_ID_KEY])
        except ValueError:
            return None
    return None


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


def to_paimon_type(t: pa.DataType, nullable: bool, column: Optional[str] = None) -> TypeJson:
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
            f"Unsupported arrow type {t}{_col(column)}: Paimon stores TIME as int32 milliseconds; "
            f"cast the column to time32('ms')"
        )
    if pa.types.is_timestamp(t):
        p = _TS_PRECISION[t.unit]
        if t.tz is not None:
            return _nn(f"TIMESTAMP({p}) WITH LOCAL TIME ZONE", nullable)
        return _nn(f"TIMESTAMP({p})", nullable)
    if pa.types.is_decimal(t):
        if t.precision > _MAX_DECIMAL_PRECISION:
            raise SchemaError(
                f"Unsupported arrow type {t}{_col(column)}: Paimon DECIMAL precision is at most 38"
            )
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
                    f"Struct field '{cf.name}'{_col(column)} has no field id; "
                    f"call lake_core.types.assign_nested_ids first"
                )
            fj: dict = {
                "id": fid,
                "name": cf.name,
                "type": to_paimon_type(cf.type, cf.nullable, f"{column}.{cf.name}" if column else cf.name),
            }
            if cf.metadata and _DESCRIPTION_KEY in cf.metadata:
                fj["description"] = cf.metadata[_DESCRIPTION_KEY].decode("utf-8")
            fields.append(fj)
        return {"type": _nn("ROW", nullable), "fields": fields}
    raise SchemaError(
        f"Unsupported arrow type {t}{_col(column)}: Paimon has no equivalent "
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


def normalize_arrow_type(t: pa.DataType, column: Optional[str] = None) -> pa.DataType:
    """The arrow type lake_core uses for a column declared with arrow type ``t`` (what
    ``from_paimon_type(to_paimon_type(t))`` gives, keeping struct ids)."""
    j = to_paimon_type(t, True, column)
    nt, _ = from_paimon_type(j, column)
    return nt


# ------------------------------------------------------------------------------------------------
# Paimon -> arrow
# ------------------------------------------------------------------------------------------------

_TOKEN_RE = re.compile(r"\s*(?:(\d+)|([A-Za-z_][A-Za-z0-9_]*)|(`(?:[^`]|``)*`)|('(?:[^']|'')*')|(.))")


def _tokenize(s: str) -> list[str]:
    toks: list[str] = []
    pos = 0
    s = s.rstrip()
    while pos < len(s):
        m = _TOKEN_RE.match(s, pos)
        if m is None or m.end() == pos:
            break
        pos = m.end()
        num, ident, quoted, lit, other = m.groups()
        if num is not None:
            toks.append(num)
        elif ident is not None:
            toks.append(ident.upper())
        elif quoted is not None:
            toks.append(quoted)
        elif lit is not None:
            toks.append(lit)
        elif other is not None and not other.isspace():
            toks.append(other)
    return toks


# Paimon type keywords that take no parameters (DOUBLE is parsed apart: DOUBLE PRECISION).
_PLAIN_TYPES = {
    "STRING": pa.string(),
    "BOOLEAN": pa.bool_(),
    "BYTES": pa.binary(),
    "TINYINT": pa.int8(),
    "SMALLINT": pa.int16(),
    "INT": pa.int32(),
    "INTEGER": pa.int32(),
    "BIGINT": pa.int64(),
    "FLOAT": pa.float32(),
    "DATE": pa.date32(),
}


def _ts_unit(p: int) -> str:
    if p == 0:
        return "s"
    if p <= 3:
        return "ms"
    if p <= 6:
        return "us"
    return "ns"


class _Parser:
    def __init__(self, text: str, column: Optional[str]):
        self.text = text
        self.column = column
        self.toks = _tokenize(text)
        self.i = 0

    def err(self, why: str) -> SchemaError:
        return SchemaError(f"Cannot parse Paimon type {self.text!r}{_col(self.column)}: {why}")

    def peek(self, k: int = 0) -> Optional[str]:
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else None

    def take(self, expected: Optional[str] = None) -> str:
        t = self.peek()
        if t is None:
            raise self.err("unexpected end")
        if expected is not None and t != expected:
            raise self.err(f"expected {expected!r} but found {t!r}")
        self.i += 1
        return t

    def take_int(self) -> int:
        t = self.take()
        if not t.isdigit():
            raise self.err(f"expected a number but found {t!r}")
        return int(t)

    def opt_params(self) -> list[int]:
        if self.peek() != "(":
            return []
        self.take("(")
        vals = [self.take_int()]
        while self.peek() == ",":
            self.take(",")
            vals.append(self.take_int())
        self.take(")")
        return vals

    def nullability(self) -> bool:
        if self.peek() == "NOT" and self.peek(1) == "NULL":
            self.i += 2
            return False
        if self.peek() == "NULL":
            self.i += 1
            return True
        return True

    def parse_full(self) -> tuple[pa.DataType, bool]:
        t, nullable = self.parse_with_nullability()
        if self.peek() is not None:
            raise self.err(f"unexpected token {self.peek()!r}")
        return t, nullable

    def parse_with_nullability(self) -> tuple[pa.DataType, bool]:
        t = self.parse_type()
        nullable = self.nullability()
        while self.peek() == "ARRAY":  # suffix notation: INT ARRAY
            self.take()
            t = pa.list_(pa.field("item", t, nullable))
            nullable = self.nullability()
        return t, nullable

    def parse_type(self) -> pa.DataType:
        kw = self.take()
        plain = _PLAIN_TYPES.get(kw)
        if plain is not None:
            return plain
        if kw in ("CHAR", "VARCHAR", "BINARY", "VARBINARY"):
            # lake_core keeps no length: every CHAR/VARCHAR is a string, every BINARY/VARBINARY bytes
            if len(self.opt_params()) > 1:
                raise self.err(f"{kw} takes one length")
            return pa.string() if kw.endswith("CHAR") else pa.binary()
        if kw in ("DECIMAL", "NUMERIC", "DEC"):
            p = self.opt_params()
            precision = p[0] if p else 10
            scale = p[1] if len(p) > 1 else 0
            if len(p) > 2:
                raise self.err("DECIMAL takes (precision, scale)")
            if not (1 <= precision <= _MAX_DECIMAL_PRECISION) or not (0 <= scale <= precision):
                raise self.err(f"invalid DECIMAL({precision}, {scale})")
            return pa.decimal128(precision, scale)
        if kw == "DOUBLE":
            if self.peek() == "PRECISION":
                self.take()
            return pa.float64()
        if kw == "TIME":
            p = self.opt_params()
            if p and not (0 <= p[0] <= 9):
                raise self.err(f"invalid TIME precision {p[0]}")
            if self.peek() == "WITHOUT":
                self.take(), self.take("TIME"), self.take("ZONE")
            return pa.time32("ms")
        if kw in ("TIMESTAMP", "TIMESTAMP_LTZ"):
            p = self.opt_params()
            precision = p[0] if p else 6
            if not (0 <= precision <= 9):
                raise self.err(f"invalid TIMESTAMP precision {precision}")
            ltz = kw == "TIMESTAMP_LTZ"
            if not ltz and self.peek() == "WITHOUT":
                self.take(), self.take("TIME"), self.take("ZONE")
            elif not ltz and self.peek() == "WITH":
                self.take()
                self.take("LOCAL")
                self.take("TIME")
                self.take("ZONE")
                ltz = True
            return pa.timestamp(_ts_unit(precision), tz="UTC" if ltz else None)
        if kw == "ARRAY":
            self.take("<")
            et, en = self.parse_with_nullability()
            self.take(">")
            return pa.list_(pa.field("item", et, en))
        if kw == "MAP":
            self.take("<")
            kt, _kn = self.parse_with_nullability()
            self.take(",")
            vt, vn = self.parse_with_nullability()
            self.take(">")
            return pa.map_(pa.field("key", kt, False), pa.field("value", vt, vn))
        if kw in ("VARIANT", "BLOB", "VECTOR", "MULTISET", "GEOMETRY", "GEOGRAPHY", "ROW",
                  "INTERVAL", "RAW"):
            raise self.err(f"type {kw} is not supported by lake_core")
        raise self.err(f"unknown type {kw!r}")


def from_paimon_type(j: TypeJson, column: Optional[str] = None) -> tuple[pa.DataType, bool]:
    """Parse a Paimon type (the ``type`` value of a schema field) into ``(arrow type, nullable)``."""
    if isinstance(j, str):
        return _Parser(j, column).parse_full()
    if isinstance(j, dict):
        ts = j.get("type")
        if not isinstance(ts, str):
            raise SchemaError(f"Cannot parse Paimon type {json.dumps(j)}{_col(column)}: no 'type'")
        head = ts.strip().upper()
        nullable = "NOT NULL" not in head
        if head.startswith("ARRAY"):
            if "element" not in j:
                raise SchemaError(f"Paimon ARRAY type{_col(column)} has no 'element': {json.dumps(j)}")
            et, en = from_paimon_type(j["element"], column)
            return pa.list_(pa.field("item", et, en)), nullable
        if head.startswith("MAP"):
            if "key" not in j or "value" not in j:
                raise SchemaError(f"Paimon MAP type{_col(column)} needs 'key' and 'value': {json.dumps(j)}")
            kt, _ = from_paimon_type(j["key"], column)
            vt, vn = from_paimon_type(j["value"], column)
            # arrow map keys are never null (Parquet has the same restriction; Java writes
            # them as required too)
            return pa.map_(pa.field("key", kt, False), pa.field("value", vt, vn)), nullable
        if head.startswith("ROW"):
            children = []
            for fj in j.get("fields", []):
                name = fj.get("name")
                ct, cn = from_paimon_type(fj.get("type"), f"{column}.{name}" if column else name)
                md = {}
                if fj.get("id") is not None:
                    md[FIELD_ID_KEY] = str(int(fj["id"])).encode()
                if fj.get("description") is not None:
                    md[_DESCRIPTION_KEY] = str(fj["description"]).encode("utf-8")
                children.append(pa.field(name, ct, cn, metadata=md or None))
            return pa.struct(children), nullable
        if head.startswith(("MULTISET", "VECTOR")):
            raise SchemaError(f"Paimon type {head.split()[0]}{_col(column)} is not supported by lake_core")
        # an atomic type spelled as an object
        return from_paimon_type(ts, column)
    raise SchemaError(f"Cannot parse Paimon type {j!r}{_col(column)}")


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
    description: Optional[str] = None
    default_value: Optional[str] = None
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
    def from_json(d: dict) -> "DataField":
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

    def with_nullable(self, nullable: bool) -> "DataField":
        return DataField(self.id, self.name, self.type, nullable, self.description,
                         self.default_value, self.raw_type)

    def sql_type(self) -> str:
        """A readable type string (atomic: Java asSQLString; nested: JSON)."""
        j = self.type_json()
        return j if isinstance(j, str) else json.dumps(j)


def arrow_field(f: DataField) -> pa.Field:
    """The arrow field of a DataField, carrying the field id as ``PARQUET:field_id`` metadata
    (and the description, when set)."""
    md = {FIELD_ID_KEY: str(f.id).encode()}
    if f.description is not None:
        md[_DESCRIPTION_KEY] = f.description.encode("utf-8")
    return pa.field(f.name, f.type, f.nullable, metadata=md)


def arrow_schema_of(fields) -> pa.Schema:
    """Arrow schema of a sequence of DataFields."""
    return pa.schema([arrow_field(f) for f in fields])
