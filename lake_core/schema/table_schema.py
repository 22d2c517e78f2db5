"""Paimon table schema (Java ``org.apache.paimon.schema.TableSchema``, JSON version 3).

``schema/schema-<id>`` files are written by Java with Jackson's default pretty printer;
:meth:`TableSchema.to_json` reproduces that layout byte for byte (``"key" : value``, arrays on
one line, ``[ {`` for arrays of objects, 2-space indentation).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from lake_core.errors import SchemaError
from lake_core.kv.system_fields import (  # Java SpecialFields
    KEY_FIELD_ID_START,
    KEY_FIELD_PREFIX,
    SEQUENCE_NUMBER,
    SEQUENCE_NUMBER_ID,
    VALUE_KIND,
    VALUE_KIND_ID,
)
from lake_core.kv.system_fields import (
    RESERVED_NAMES as _RESERVED_NAMES,
)
from lake_core.options.table_options import BUCKET_KEY
from lake_core.type_parser import from_paimon_type
from lake_core.types import DataField, arrow_field, assign_nested_ids, is_nested, to_paimon_type

__all__ = [
    "TableSchema",
    "jackson_pretty",
    "KEY_FIELD_PREFIX",
    "KEY_FIELD_ID_START",
    "SEQUENCE_NUMBER",
    "SEQUENCE_NUMBER_ID",
    "VALUE_KIND",
    "VALUE_KIND_ID",
    "CURRENT_VERSION",
    "java_hashmap_order",
]

CURRENT_VERSION = 3
PAIMON_07_VERSION = 1
PAIMON_08_VERSION = 2


# ------------------------------------------------------------------------------------------------
# Jackson DefaultPrettyPrinter emulation
# ------------------------------------------------------------------------------------------------


def _json_str(s: str) -> str:
    # Jackson: no escaping of non-ASCII, short escapes for \b \t \n \f \r, \u00XX (upper-case
    # hex) for the other control characters.
    out = json.dumps(s, ensure_ascii=False)
    if "\\u" in out:
        out = re.sub(r"\\u([0-9a-f]{4})", lambda m: "\\u" + m.group(1).upper(), out)
    return out


def _json_scalar(v: Any) -> str:
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return json.dumps(v)
    if isinstance(v, str):
        return _json_str(v)
    raise TypeError(f"cannot serialise {type(v).__name__} to JSON")


def jackson_pretty(value: Any) -> str:
    """Serialise like Jackson's ``writerWithDefaultPrettyPrinter()`` (what Paimon uses for
    schema, snapshot and tag files)."""
    out: list[str] = []

    def emit(v: Any, level: int) -> None:
        if isinstance(v, Mapping):
            if not v:
                out.append("{ }")
                return
            out.append("{")
            first = True
            for k, item in v.items():
                if not first:
                    out.append(",")
                first = False
                out.append("\n" + "  " * (level + 1) + _json_str(str(k)) + " : ")
                emit(item, level + 1)
            out.append("\n" + "  " * level + "}")
        elif isinstance(v, (list, tuple)):
            if not v:
                out.append("[ ]")
                return
            out.append("[ ")
            first = True
            for item in v:
                if not first:
                    out.append(", ")
                first = False
                emit(item, level)  # arrays do not indent (FixedSpaceIndenter)
            out.append(" ]")
        else:
            out.append(_json_scalar(v))

    emit(value, 0)
    return "".join(out)


def _java_string_hash(s: str) -> int:
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h


def java_hashmap_order(keys: Iterable[str]) -> list[str]:
    """The iteration order of a ``java.util.HashMap<String, ?>`` filled by ``put`` in the given
    order (what Java's SchemaSerializer writes ``options`` in: it deserialises into a HashMap).
    Buckets are ``(h ^ h >>> 16) & (capacity - 1)``; the capacity starts at 16 and doubles
    whenever the size exceeds 3/4 of it; entries of one bucket keep insertion order."""
    keys = list(dict.fromkeys(keys))
    cap = 16
    while len(keys) > cap * 3 // 4:
        cap *= 2

    def bucket(k: str) -> int:
        h = _java_string_hash(k)
        return (h ^ (h >> 16)) & (cap - 1)

    return [k for _, _, k in sorted((bucket(k), i, k) for i, k in enumerate(keys))]


# ------------------------------------------------------------------------------------------------
# TableSchema
# ------------------------------------------------------------------------------------------------


def _option_text(v: Any) -> str:
    # Jackson asText(): booleans/numbers become their JSON text
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _fmt_list(names: Iterable[str]) -> str:
    return "[" + ", ".join(names) + "]"


@dataclass(frozen=True)
class TableSchema:
    id: int
    fields: tuple[DataField, ...]
    highest_field_id: int
    partition_keys: tuple[str, ...]
    primary_keys: tuple[str, ...]
    options: dict[str, str]
    comment: str | None
    time_millis: int
    version: int = CURRENT_VERSION

    # -- serialisation -------------------------------------------------------------------------

    def to_dict(self) -> dict:
        d: dict = {
            "version": self.version,
            "id": self.id,
            "fields": [f.to_json() for f in self.fields],
            "highestFieldId": self.highest_field_id,
            "partitionKeys": list(self.partition_keys),
            "primaryKeys": list(self.primary_keys),
            # Java keeps options in a HashMap: reproduce its iteration order
            "options": {k: self.options[k] for k in java_hashmap_order(self.options)},
        }
        if self.comment is not None:
            d["comment"] = self.comment
        d["timeMillis"] = self.time_millis
        return d

    def to_json(self) -> str:
        """The ``schema-<id>`` file content, laid out like Java's Jackson pretty printer."""
        return jackson_pretty(self.to_dict())

    @staticmethod
    def from_json(text: str | bytes) -> TableSchema:
        try:
            d = json.loads(text)
        except (ValueError, TypeError) as e:
            raise SchemaError(f"Schema file is not valid JSON: {e}") from e
        if not isinstance(d, dict):
            raise SchemaError("Schema file must hold a JSON object")
        return TableSchema.from_dict(d)

    @staticmethod
    def from_dict(d: Mapping[str, Any]) -> TableSchema:
        try:
            fields = tuple(DataField.from_json(f) for f in d["fields"])
            version = int(d.get("version", PAIMON_07_VERSION))
            highest = d.get("highestFieldId")
            if highest is None:
                highest = max([f.id for f in fields] + [-1])
            options = {str(k): _option_text(v) for k, v in (d.get("options") or {}).items()}
            # Java SchemaSerializer: defaults of old versions
            if version <= PAIMON_07_VERSION and "bucket" not in options:
                options["bucket"] = "1"
            if version <= PAIMON_08_VERSION and "file.format" not in options:
                options["file.format"] = "orc"
            return TableSchema(
                id=int(d["id"]),
                fields=fields,
                highest_field_id=int(highest),
                partition_keys=tuple(d.get("partitionKeys") or ()),
                primary_keys=tuple(d.get("primaryKeys") or ()),
                options=options,
                comment=d.get("comment"),
                time_millis=int(d.get("timeMillis", 0) or 0),
                version=version,
            )
        except KeyError as e:
            raise SchemaError(f"Schema JSON misses required key {e.args[0]!r}") from e

    # -- creation ------------------------------------------------------------------------------

    @staticmethod
    def create(
        arrow_schema: pa.Schema,
        partition_keys: Sequence[str] = (),
        primary_keys: Sequence[str] = (),
        options: Mapping[str, str] | None = None,
        comment: str | None = None,
        schema_id: int = 0,
    ) -> TableSchema:
        """A new table schema from an arrow schema, as Java ``SchemaManager.createTable`` does:
        field ids 0..n-1 (struct children take the ids following their parent), primary-key
        columns made NOT NULL, keys validated."""
        if isinstance(partition_keys, str):
            partition_keys = [partition_keys]
        if isinstance(primary_keys, str):
            primary_keys = [primary_keys]
        partition_keys = tuple(partition_keys or ())
        primary_keys = tuple(primary_keys or ())
        options = {str(k): _option_text(v) for k, v in (options or {}).items()}
        names = list(arrow_schema.names)

        seen: set[str] = set()
        dups = sorted({n for n in names if n in seen or seen.add(n)})  # type: ignore[func-returns-value]
        if dups:
            raise SchemaError(
                f"Table columns must be unique; duplicated: {_fmt_list(dups)} (columns: {_fmt_list(names)})"
            )
        for n in names:
            if not n:
                raise SchemaError("Column names must not be empty")
            ctrl = sorted({f"U+{ord(c):04X}" for c in n if ord(c) < 0x20 or ord(c) == 0x7F})
            if ctrl:  # NUL ends a C string in Parquet/ORC writers and in file names built from partition columns
                raise SchemaError(
                    f"Column name {n!r} contains control character(s) {', '.join(ctrl)}; rename the column"
                )
            if n in _RESERVED_NAMES or n.startswith(KEY_FIELD_PREFIX):
                raise SchemaError(
                    f"Column name '{n}' is reserved by Paimon (system fields {SEQUENCE_NUMBER}, "
                    f"{VALUE_KIND}, {KEY_FIELD_PREFIX}*); rename the column"
                )

        def check_keys(kind: str, keys: tuple[str, ...]) -> None:
            kd = sorted({k for k in keys if keys.count(k) > 1})
            if kd:
                raise SchemaError(f"{kind} {_fmt_list(keys)} contain duplicated columns {_fmt_list(kd)}")
            for k in keys:
                if k not in names:
                    raise SchemaError(
                        f"{kind} column '{k}' is not a column of the table; table columns: {_fmt_list(names)}"
                    )

        check_keys("Partition keys", partition_keys)
        check_keys("Primary keys", primary_keys)
        if primary_keys and not [k for k in primary_keys if k not in partition_keys]:
            raise SchemaError(
                f"Primary key constraint {_fmt_list(primary_keys)} should not be same with "
                f"partition fields {_fmt_list(partition_keys)}, this will result in only one "
                f"record in a partition"
            )

        counter = [-1]

        def next_id() -> int:
            counter[0] += 1
            return counter[0]

        fields = []
        for af in arrow_schema:
            fid = next_id()
            t = assign_nested_ids(af.type, next_id)
            nullable = af.nullable and af.name not in primary_keys
            desc = None
            if af.metadata and b"description" in af.metadata:
                desc = af.metadata[b"description"].decode("utf-8")
            # validate + normalise (e.g. large_string -> string, dictionary -> values)
            tj = to_paimon_type(t, nullable, af.name)
            nt, _ = from_paimon_type(tj, af.name)
            fields.append(DataField(fid, af.name, nt, nullable, desc))

        by_name = {f.name: f for f in fields}
        for k in partition_keys:
            if is_nested(by_name[k].type):
                raise SchemaError(
                    f"Partition column '{k}' has type {by_name[k].sql_type()}; partition columns "
                    f"must be atomic (not ARRAY, MAP or ROW)"
                )
        for k in primary_keys:
            if is_nested(by_name[k].type):
                raise SchemaError(
                    f"Primary key column '{k}' has type {by_name[k].sql_type()}; primary key "
                    f"columns must be atomic (not ARRAY, MAP or ROW)"
                )

        schema = TableSchema(
            id=schema_id,
            fields=tuple(fields),
            highest_field_id=counter[0],
            partition_keys=partition_keys,
            primary_keys=primary_keys,
            options=options,
            comment=comment,
            time_millis=int(time.time() * 1000),
        )
        schema.bucket_keys()  # validate the 'bucket-key' option
        return schema

    # -- accessors -----------------------------------------------------------------------------

    @property
    def field_names(self) -> list[str]:
        return [f.name for f in self.fields]

    def field(self, name: str) -> DataField:
        for f in self.fields:
            if f.name == name:
                return f
        raise SchemaError(f"Column '{name}' does not exist in schema {self.id}; columns: {_fmt_list(self.field_names)}")

    def field_by_id(self, field_id: int) -> DataField | None:
        for f in self.fields:
            if f.id == field_id:
                return f
        return None

    @property
    def trimmed_primary_keys(self) -> tuple[str, ...]:
        """Primary key minus partition keys (Java ``trimmedPrimaryKeys``). Java refuses a PK made
        only of partition columns, and so does this."""
        if not self.primary_keys:
            return ()
        adjusted = tuple(k for k in self.primary_keys if k not in self.partition_keys)
        if not adjusted:
            raise SchemaError(
                f"Primary key constraint {_fmt_list(self.primary_keys)} should not be same with "
                f"partition fields {_fmt_list(self.partition_keys)}, this will result in only one "
                f"record in a partition"
            )
        return adjusted

    def original_bucket_keys(self) -> tuple[str, ...]:
        """The ``bucket-key`` option, validated as Java does (may be empty)."""
        raw = BUCKET_KEY.text(self.options)
        if raw is None or not raw.strip():
            return ()
        keys = tuple(raw.split(","))
        names = self.field_names
        missing = [k for k in keys if k not in names]
        if missing:
            raise SchemaError(
                f"Option 'bucket-key'={raw!r} names columns {_fmt_list(missing)} that are not in "
                f"the table; columns: {_fmt_list(names)}"
            )
        in_part = [k for k in keys if k in self.partition_keys]
        if in_part:
            raise SchemaError(
                f"Option 'bucket-key'={raw!r}: bucket keys {_fmt_list(in_part)} must not be "
                f"partition keys {_fmt_list(self.partition_keys)}"
            )
        if self.primary_keys:
            not_pk = [k for k in keys if k not in self.primary_keys]
            if not_pk:
                raise SchemaError(
                    f"Option 'bucket-key'={raw!r}: bucket keys {_fmt_list(not_pk)} are not part "
                    f"of the primary key {_fmt_list(self.primary_keys)}"
                )
        return keys

    def bucket_keys(self) -> tuple[str, ...]:
        """Java ``bucketKeys()``: option ``bucket-key``, else the trimmed primary key, else (append
        tables) all columns."""
        keys = self.original_bucket_keys()
        if not keys:
            keys = self.trimmed_primary_keys
        if not keys:
            keys = tuple(self.field_names)
        return keys

    # -- arrow views ---------------------------------------------------------------------------

    def arrow_schema(self) -> pa.Schema:
        """Table columns as an arrow schema (field ids in ``PARQUET:field_id`` metadata)."""
        return pa.schema([arrow_field(f) for f in self.fields])

    def key_fields(self) -> list[DataField]:
        """The ``_KEY_<k>`` fields of KV data files (trimmed PK, NOT NULL, id offset by
        Integer.MAX_VALUE/2), Java ``KeyValue.createKeyValueFields``."""
        out = []
        for k in self.trimmed_primary_keys:
            f = self.field(k)
            out.append(DataField(KEY_FIELD_ID_START + f.id, KEY_FIELD_PREFIX + k, f.type, False))
        return out

    def kv_fields(self) -> list[DataField]:
        """All columns of a KV data file: _KEY_*, _SEQUENCE_NUMBER, _VALUE_KIND, table columns."""
        return (
            self.key_fields()
            + [
                DataField(SEQUENCE_NUMBER_ID, SEQUENCE_NUMBER, pa.int64(), False),
                DataField(VALUE_KIND_ID, VALUE_KIND, pa.int8(), False),
            ]
            + list(self.fields)
        )

    def kv_arrow_schema(self) -> pa.Schema:
        """Arrow schema of a KV data file (Java ``KeyValue`` layout), with Java's field ids."""
        return pa.schema([arrow_field(f) for f in self.kv_fields()])

    def with_options(self, options: Mapping[str, str]) -> TableSchema:
        return TableSchema(
            self.id,
            self.fields,
            self.highest_field_id,
            self.partition_keys,
            self.primary_keys,
            dict(options),
            self.comment,
            self.time_millis,
            self.version,
        )
