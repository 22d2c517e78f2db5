"""Parsing Paimon data types into pyarrow types.

Paimon (Java ``org.apache.paimon.types``) writes atomic types into ``schema-N`` as the string of
``DataType.asSQLString()`` (``"BIGINT NOT NULL"``, ``"DECIMAL(10, 2)"``,
``"TIMESTAMP(6) WITH LOCAL TIME ZONE"``) and nested types as JSON objects
(``{"type": "ARRAY", "element": ...}``, ``{"type": "MAP", "key": ..., "value": ...}``,
``{"type": "ROW", "fields": [...]}``), as Java ``DataTypeJsonParser`` reads them; the mapping
is the table in lake_core.types.

Reading accepts Java's other spellings: ``VARCHAR(n)``, ``CHAR(n)`` -> string,
``BINARY(n)``/``VARBINARY(n)`` -> binary, ``INTEGER``, ``NUMERIC``/``DEC``,
``DOUBLE PRECISION``, ``TIMESTAMP_LTZ(p)`` (pypaimon's spelling), ``TIMESTAMP(p) WITHOUT TIME
ZONE``, ``TIME(p)`` -> time32('ms'), ``TIMESTAMP(p)`` -> the smallest arrow unit holding p
digits, string forms ``ARRAY<T>`` / ``MAP<K, V>`` and the suffix form ``T ARRAY``.
"""

from __future__ import annotations

import json
import re

import pyarrow as pa

from lake_core.errors import SchemaError
from lake_core.field_metadata import DESCRIPTION_KEY, FIELD_ID_KEY

__all__ = ["TypeJson", "MAX_DECIMAL_PRECISION", "from_paimon_type", "in_column"]

TypeJson = str | dict

MAX_DECIMAL_PRECISION = 38


def in_column(column: str | None) -> str:
    """`` of column 'c'`` for an error message about a type of column ``c`` (empty without one)."""
    return f" of column '{column}'" if column else ""


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
    def __init__(self, text: str, column: str | None):
        self.text = text
        self.column = column
        self.toks = _tokenize(text)
        self.i = 0

    def err(self, why: str) -> SchemaError:
        return SchemaError(f"Cannot parse Paimon type {self.text!r}{in_column(self.column)}: {why}")

    def peek(self, k: int = 0) -> str | None:
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else None

    def take(self, expected: str | None = None) -> str:
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
            if not (1 <= precision <= MAX_DECIMAL_PRECISION) or not (0 <= scale <= precision):
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
        if kw in ("VARIANT", "BLOB", "VECTOR", "MULTISET", "GEOMETRY", "GEOGRAPHY", "ROW", "INTERVAL", "RAW"):
            raise self.err(f"type {kw} is not supported by lake_core")
        raise self.err(f"unknown type {kw!r}")


def from_paimon_type(j: TypeJson, column: str | None = None) -> tuple[pa.DataType, bool]:
    """Parse a Paimon type (the ``type`` value of a schema field) into ``(arrow type, nullable)``."""
    if isinstance(j, str):
        return _Parser(j, column).parse_full()
    if isinstance(j, dict):
        ts = j.get("type")
        if not isinstance(ts, str):
            raise SchemaError(f"Cannot parse Paimon type {json.dumps(j)}{in_column(column)}: no 'type'")
        head = ts.strip().upper()
        nullable = "NOT NULL" not in head
        if head.startswith("ARRAY"):
            if "element" not in j:
                raise SchemaError(f"Paimon ARRAY type{in_column(column)} has no 'element': {json.dumps(j)}")
            et, en = from_paimon_type(j["element"], column)
            return pa.list_(pa.field("item", et, en)), nullable
        if head.startswith("MAP"):
            if "key" not in j or "value" not in j:
                raise SchemaError(f"Paimon MAP type{in_column(column)} needs 'key' and 'value': {json.dumps(j)}")
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
                    md[DESCRIPTION_KEY] = str(fj["description"]).encode("utf-8")
                children.append(pa.field(name, ct, cn, metadata=md or None))
            return pa.struct(children), nullable
        if head.startswith(("MULTISET", "VECTOR")):
            raise SchemaError(f"Paimon type {head.split()[0]}{in_column(column)} is not supported by lake_core")
        # an atomic type spelled as an object
        return from_paimon_type(ts, column)
    raise SchemaError(f"Cannot parse Paimon type {j!r}{in_column(column)}")
