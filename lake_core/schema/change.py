"""Schema changes (Paimon's ``SchemaChange``) and how they turn one ``TableSchema`` into the next.

``Catalog.alter_table`` applies a list of changes to the latest ``schema-N`` and creates
``schema-(N+1)`` exclusively, as Java ``SchemaManager.commitChanges`` does. The rules follow Java
``SchemaManager.generateTableSchema``:

* field ids are stable: a rename keeps the id, a new column takes ``highestFieldId + 1`` (and its
  nested fields the ids after it), a dropped id is never reused;
* partition columns cannot be renamed, dropped or retyped; primary-key columns cannot be dropped,
  retyped or made nullable. lake_core also refuses renaming a primary-key column (Java allows it);
* a new column is always nullable; a nullable column cannot become NOT NULL
  (``alter-column-null-to-not-null.disabled`` defaults to true in Paimon);
* a type change must be a lossless widening: one of Java ``DataTypeCasts``' implicit casts that
  keeps every value exactly (INT -> BIGINT, FLOAT -> DOUBLE, DECIMAL(10, 2) -> DECIMAL(12, 2),
  TIMESTAMP(3) -> TIMESTAMP(6), ...). Old files are cast on read;
* once the table has a snapshot, Paimon's immutable options (``merge-engine``, ``bucket-key``,
  ``rowkind.field``, ...) and ``sequence.field`` cannot change, ``bucket`` cannot move to or from
  -1, ``ignore-delete`` cannot go back to false (Java ``checkAlterTableOption``);
* options naming a column follow its rename (``bucket-key``, ``sequence.field``,
  ``fields.<name>.*``, sequence groups), as Java ``applyRenameColumnsToOptions``.

Only top-level columns can be changed; nested (ROW field) changes are refused.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

import pyarrow as pa

from lake_core.errors import InvalidOptionError, SchemaError, UnsupportedOptionError
from lake_core.options.table_options import BY_KEY, OPTIONS
from lake_core.schema.table_schema import _RESERVED_NAMES, KEY_FIELD_PREFIX, TableSchema
from lake_core.type_parser import from_paimon_type
from lake_core.types import DataField, assign_nested_ids, is_nested, max_nested_id, to_paimon_type

__all__ = [
    "SchemaChange",
    "Move",
    "SetOption",
    "RemoveOption",
    "UpdateComment",
    "AddColumn",
    "RenameColumn",
    "DropColumn",
    "UpdateColumnType",
    "UpdateColumnNullability",
    "UpdateColumnComment",
    "apply_schema_changes",
    "is_lossless_widening",
]

# Java CoreOptions fields annotated @Immutable (plus sequence.field, whose change would reorder
# already-merged history): they cannot change once the table has a snapshot. lake_core's own are
# declared so; Paimon's others are refused anyway, and listed so that alter_table names the reason.
IMMUTABLE_OPTIONS = tuple(o.key for o in OPTIONS if o.immutable) + (
    "sequence.snapshot-ordering",
    "force-lookup",
    "row-tracking.enabled",
    "data-evolution.enabled",
    "index-file-in-data-file-dir",
    "data-file.path-directory",
    "type",
)
# Options whose value lists columns: renamed with them; a column they name cannot be dropped.
_COLUMN_OPTIONS = tuple(o.key for o in OPTIONS if o.names_columns)
# Options that define the table's keys: changed only by re-creating the table.
_KEY_OPTIONS = ("primary-key", "partition", "path")


# ------------------------------------------------------------------------------------------------
# The change values
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Move:
    """Where ``add_column`` puts the new column (Java ``SchemaChange.Move``)."""

    kind: str  # FIRST | AFTER | BEFORE | LAST
    reference: str | None = None

    @staticmethod
    def first() -> Move:
        return Move("FIRST")

    @staticmethod
    def last() -> Move:
        return Move("LAST")

    @staticmethod
    def after(column: str) -> Move:
        return Move("AFTER", column)

    @staticmethod
    def before(column: str) -> Move:
        return Move("BEFORE", column)


class SchemaChange:
    """Base of every schema change; build them with the static factories (Paimon's names)."""

    @staticmethod
    def set_option(key: str, value: object) -> SetOption:
        return SetOption(key=str(key), value=str(value).lower() if isinstance(value, bool) else str(value))

    @staticmethod
    def remove_option(key: str) -> RemoveOption:
        return RemoveOption(key=str(key))

    @staticmethod
    def update_comment(comment: str | None) -> UpdateComment:
        return UpdateComment(comment=comment)

    @staticmethod
    def add_column(
        field_name: str, data_type: pa.DataType | pa.Field, comment: str | None = None, move: Move | None = None
    ) -> AddColumn:
        return AddColumn(field_name=field_name, data_type=data_type, comment=comment, move=move)

    @staticmethod
    def rename_column(field_name: str, new_name: str) -> RenameColumn:
        return RenameColumn(field_name=field_name, new_name=new_name)

    @staticmethod
    def drop_column(field_name: str) -> DropColumn:
        return DropColumn(field_name=field_name)

    @staticmethod
    def update_column_type(field_name: str, new_data_type: pa.DataType) -> UpdateColumnType:
        return UpdateColumnType(field_name=field_name, new_data_type=new_data_type)

    @staticmethod
    def update_column_nullability(field_name: str, new_nullability: bool) -> UpdateColumnNullability:
        return UpdateColumnNullability(field_name=field_name, new_nullability=bool(new_nullability))

    @staticmethod
    def update_column_comment(field_name: str, comment: str | None) -> UpdateColumnComment:
        return UpdateColumnComment(field_name=field_name, comment=comment)


@dataclass(frozen=True)
class SetOption(SchemaChange):
    key: str
    value: str


@dataclass(frozen=True)
class RemoveOption(SchemaChange):
    key: str


@dataclass(frozen=True)
class UpdateComment(SchemaChange):
    comment: str | None


@dataclass(frozen=True)
class AddColumn(SchemaChange):
    field_name: str
    data_type: pa.DataType | pa.Field
    comment: str | None = None
    move: Move | None = None


@dataclass(frozen=True)
class RenameColumn(SchemaChange):
    field_name: str
    new_name: str


@dataclass(frozen=True)
class DropColumn(SchemaChange):
    field_name: str


@dataclass(frozen=True)
class UpdateColumnType(SchemaChange):
    """The column keeps its nullability (pyarrow types carry none)."""

    field_name: str
    new_data_type: pa.DataType


@dataclass(frozen=True)
class UpdateColumnNullability(SchemaChange):
    field_name: str
    new_nullability: bool


@dataclass(frozen=True)
class UpdateColumnComment(SchemaChange):
    field_name: str
    comment: str | None


# ------------------------------------------------------------------------------------------------
# Type widening
# ------------------------------------------------------------------------------------------------

_INT_DIGITS = {8: 3, 16: 5, 32: 10, 64: 19}  # decimal digits needed to hold any value
_TS_ORDER = {"s": 0, "ms": 1, "us": 2, "ns": 3}


def is_lossless_widening(src: pa.DataType, dst: pa.DataType) -> bool:
    """True if every value of ``src`` converts exactly to ``dst``: the subset of Java
    ``DataTypeCasts`` implicit casts that lose nothing (Java also lets INT -> FLOAT or
    DECIMAL(10, 2) -> DECIMAL(5, 2) through, which can change stored values)."""
    if src.equals(dst):
        return True
    t = pa.types
    if t.is_integer(src) and t.is_signed_integer(src):
        bits = src.bit_width
        if t.is_signed_integer(dst):
            return dst.bit_width > bits
        if t.is_float32(dst):
            return bits <= 16  # 24-bit mantissa
        if t.is_float64(dst):
            return bits <= 32  # 53-bit mantissa
        if t.is_decimal(dst):
            return dst.precision - dst.scale >= _INT_DIGITS[bits]
        return False
    if t.is_float32(src):
        return t.is_float64(dst)
    if t.is_decimal(src) and t.is_decimal(dst):
        return dst.scale >= src.scale and dst.precision - dst.scale >= src.precision - src.scale
    if t.is_fixed_size_binary(src):
        return t.is_binary(dst) or t.is_large_binary(dst)
    if t.is_timestamp(src) and t.is_timestamp(dst):
        return (src.tz is None) == (dst.tz is None) and _TS_ORDER[dst.unit] >= _TS_ORDER[src.unit]
    return False


# ------------------------------------------------------------------------------------------------
# Applying changes
# ------------------------------------------------------------------------------------------------


def _fmt(names: Sequence[str]) -> str:
    return "[" + ", ".join(names) + "]"


class _Builder:
    """The schema under construction while the changes of one ``alter_table`` are applied."""

    def __init__(self, old: TableSchema, identifier: str, has_snapshots: bool):
        self.old = old
        self.identifier = identifier
        self.has_snapshots = has_snapshots
        self.fields: list[DataField] = list(old.fields)
        self.options = dict(old.options)
        self.comment = old.comment
        self.highest = old.highest_field_id
        self.renames: dict[str, str] = {}  # original name -> new name

    # -- helpers --------------------------------------------------------------------------------
    def err(self, column: str, why: str) -> SchemaError:
        return SchemaError(f"cannot alter table {self.identifier}: column '{column}' {why}")

    def index(self, name: str) -> int:
        if not isinstance(name, str):
            raise SchemaError(
                f"cannot alter table {self.identifier}: only top-level columns can be changed, got field name {name!r}"
            )
        for i, f in enumerate(self.fields):
            if f.name == name:
                return i
        raise SchemaError(
            f"cannot alter table {self.identifier}: column '{name}' does not exist; "
            f"columns: {_fmt([f.name for f in self.fields])}"
        )

    def original_name(self, name: str) -> str:
        for old, new in self.renames.items():
            if new == name:
                return old
        return name

    def guard(self, name: str, action: str, *, partition: bool = True, primary: bool = True) -> None:
        orig = self.original_name(name)
        if partition and orig in self.old.partition_keys:
            raise self.err(
                name,
                f"is a partition column; Paimon cannot {action} partition columns "
                f"(partition keys {_fmt(self.old.partition_keys)})",
            )
        if primary and orig in self.old.primary_keys:
            raise self.err(
                name,
                f"is a primary-key column; lake_core cannot {action} primary-key columns "
                f"(primary key {_fmt(self.old.primary_keys)})",
            )

    def check_new_name(self, name: str) -> None:
        if not isinstance(name, str) or not name:
            raise SchemaError(
                f"cannot alter table {self.identifier}: column names must be non-empty strings, got {name!r}"
            )
        if any(f.name == name for f in self.fields):
            raise self.err(name, "already exists")
        if name in _RESERVED_NAMES or name.startswith(KEY_FIELD_PREFIX):
            raise self.err(name, "is a name reserved by Paimon's system fields")

    # -- options ----------------------------------------------------------------------------------
    def set_option(self, key: str, value: str) -> None:
        if key in _KEY_OPTIONS:
            raise UnsupportedOptionError(
                f"cannot alter table {self.identifier}: option '{key}' cannot be changed by alter_table "
                "(Paimon refuses it too); create a new table and copy the data"
            )
        if self.has_snapshots:
            old = self.old.options.get(key, BY_KEY[key].default if key in BY_KEY else None)
            if key in IMMUTABLE_OPTIONS and old != value:
                raise UnsupportedOptionError(
                    f"cannot alter table {self.identifier}: option '{key}' cannot change once the table has "
                    f"snapshots (from {old!r} to {value!r}); existing files were written and merged under it. "
                    "Create a new table and copy the data"
                )
            if key == "bucket":
                self._check_bucket_change(old, value)
            if key in ("ignore-delete", "ignore-update-before"):
                if (old or "false").strip().lower() == "true" and value.strip().lower() != "true":
                    raise UnsupportedOptionError(
                        f"cannot alter table {self.identifier}: option '{key}' cannot change from true to false "
                        "(Paimon refuses it: deletes already dropped cannot come back)"
                    )
        self.options[key] = value

    def _check_bucket_change(self, old: str | None, new: str) -> None:
        try:
            old_b, new_b = int(old if old is not None else "-1"), int(new)
        except ValueError:
            raise InvalidOptionError(f"option 'bucket' of {self.identifier} must be an integer, got {new!r}") from None
        if old_b != new_b and (old_b == -1 or new_b == -1):
            raise UnsupportedOptionError(
                f"cannot alter table {self.identifier}: option 'bucket' cannot change from {old_b} to {new_b}; "
                "Paimon cannot move a table between dynamic (-1) and fixed bucket mode. Create a new table"
            )

    def remove_option(self, key: str) -> None:
        if key in _KEY_OPTIONS or (self.has_snapshots and (key in IMMUTABLE_OPTIONS or key == "bucket")):
            if key in self.options:
                raise UnsupportedOptionError(
                    f"cannot alter table {self.identifier}: option '{key}' cannot be removed "
                    f"{'once the table has snapshots' if key not in _KEY_OPTIONS else ''}".rstrip()
                    + " (Paimon refuses it too)"
                )
        self.options.pop(key, None)

    # -- columns ----------------------------------------------------------------------------------
    def add_column(self, c: AddColumn) -> None:
        self.check_new_name(c.field_name)
        t = c.data_type
        comment = c.comment
        if isinstance(t, pa.Field):
            if not t.nullable:
                raise self.err(
                    c.field_name,
                    f"cannot be added as NOT NULL to table {self.identifier}; "
                    "a new column must be nullable (old rows read NULL), as in Paimon",
                )
            if comment is None and t.metadata and b"description" in t.metadata:
                comment = t.metadata[b"description"].decode("utf-8")
            t = t.type
        if not isinstance(t, pa.DataType):
            raise SchemaError(
                f"cannot alter table {self.identifier}: add_column('{c.field_name}') needs a "
                f"pyarrow type, got {type(t).__name__}"
            )
        self.highest += 1
        fid = self.highest
        counter = [self.highest]

        def next_id() -> int:
            counter[0] += 1
            return counter[0]

        t = assign_nested_ids(t, next_id)
        self.highest = max(counter[0], max_nested_id(t))
        nt, _ = from_paimon_type(to_paimon_type(t, True, c.field_name), c.field_name)  # validate + normalise
        field = DataField(fid, c.field_name, nt, True, comment)
        move = c.move
        if move is None or move.kind == "LAST":
            self.fields.append(field)
        elif move.kind == "FIRST":
            self.fields.insert(0, field)
        elif move.kind in ("AFTER", "BEFORE") and move.reference is not None:
            i = self.index(move.reference)
            self.fields.insert(i + 1 if move.kind == "AFTER" else i, field)
        else:
            raise SchemaError(f"cannot alter table {self.identifier}: unknown column position {move!r}")

    def rename_column(self, c: RenameColumn) -> None:
        i = self.index(c.field_name)
        self.guard(c.field_name, "rename")
        if c.new_name == c.field_name:
            return
        self.check_new_name(c.new_name)
        self.fields[i] = replace(self.fields[i], name=c.new_name)
        orig = self.original_name(c.field_name)
        self.renames[orig] = c.new_name
        self._rename_in_options(c.field_name, c.new_name)

    def _rename_in_options(self, old: str, new: str) -> None:
        def rename_list(v: str) -> str:
            return ",".join(new if p.strip() == old else p for p in v.split(","))

        out = {}
        for k, v in self.options.items():
            if k in _COLUMN_OPTIONS:
                v = rename_list(v)
            elif k.startswith("fields."):
                body = k[len("fields.") :]
                head, dot, suffix = body.rpartition(".")
                if dot:
                    k = "fields." + rename_list(head) + "." + suffix
                if suffix == "sequence-group":
                    v = rename_list(v)
            out[k] = v
        self.options = out

    def drop_column(self, c: DropColumn) -> None:
        i = self.index(c.field_name)
        self.guard(c.field_name, "drop")
        name = c.field_name
        for key in _COLUMN_OPTIONS:
            v = self.options.get(key)
            if v and name in [p.strip() for p in v.split(",")]:
                raise self.err(name, f"is used by option '{key}' = '{v}'; change the option before dropping it")
        for k, v in self.options.items():
            if k.endswith(".sequence-group") and name in [p.strip() for p in v.split(",")]:
                raise self.err(name, f"is used by option '{k}' = '{v}'; change the option before dropping it")
        if len(self.fields) == 1:
            raise self.err(name, "is the table's last column; a table needs at least one column")
        del self.fields[i]
        prefix = f"fields.{name}."
        self.options = {k: v for k, v in self.options.items() if not k.startswith(prefix)}

    def update_column_type(self, c: UpdateColumnType) -> None:
        i = self.index(c.field_name)
        self.guard(c.field_name, "change the type of")
        f = self.fields[i]
        if isinstance(c.new_data_type, pa.Field):
            raise SchemaError(
                f"cannot alter table {self.identifier}: update_column_type('{c.field_name}') takes "
                "a pyarrow type (nullability is kept; use update_column_nullability)"
            )
        tj = to_paimon_type(c.new_data_type, f.nullable, c.field_name)
        nt, _ = from_paimon_type(tj, c.field_name)
        if is_nested(f.type) or is_nested(nt):
            if not nt.equals(f.type):
                raise self.err(
                    c.field_name, f"has nested type {f.sql_type()}; lake_core changes only atomic column types"
                )
            return
        if not is_lossless_widening(f.type, nt):
            new_sql = tj if isinstance(tj, str) else str(tj)
            raise self.err(
                c.field_name,
                f"of type {f.sql_type()} cannot be converted to {new_sql} without "
                "losing information; only widening changes are allowed (e.g. INT -> "
                "BIGINT, FLOAT -> DOUBLE, DECIMAL(p, s) -> DECIMAL(p+k, s), TIMESTAMP(3) "
                "-> TIMESTAMP(6))",
            )
        self.fields[i] = DataField(f.id, f.name, nt, f.nullable, f.description, f.default_value)

    def update_column_nullability(self, c: UpdateColumnNullability) -> None:
        i = self.index(c.field_name)
        f = self.fields[i]
        if c.new_nullability == f.nullable:
            return
        if c.new_nullability:
            self.guard(c.field_name, "make nullable", partition=False)
        else:
            raise self.err(
                c.field_name,
                "cannot change from nullable to NOT NULL: rows already written may hold "
                "NULL (Paimon refuses it while 'alter-column-null-to-not-null.disabled' "
                "is true, its default)",
            )
        self.fields[i] = f.with_nullable(True)

    def update_column_comment(self, c: UpdateColumnComment) -> None:
        i = self.index(c.field_name)
        self.fields[i] = replace(self.fields[i], description=c.comment)

    # -- result ---------------------------------------------------------------------------------
    def build(self) -> TableSchema:
        primary = tuple(self.renames.get(k, k) for k in self.old.primary_keys)
        partition = tuple(self.renames.get(k, k) for k in self.old.partition_keys)
        return TableSchema(
            id=self.old.id + 1,
            fields=tuple(self.fields),
            highest_field_id=self.highest,
            partition_keys=partition,
            primary_keys=primary,
            options=self.options,
            comment=self.comment,
            time_millis=int(time.time() * 1000),
            version=self.old.version,
        )


def apply_schema_changes(
    old: TableSchema, changes: Sequence[SchemaChange], *, identifier: str, has_snapshots: bool
) -> TableSchema:
    """The schema after ``changes`` (id ``old.id + 1``). Raises a ``LakeError`` naming the column or
    option for any refused change; ``old`` is never modified. Options are validated by the caller
    exactly as at table creation."""
    if isinstance(changes, SchemaChange):
        changes = [changes]
    b = _Builder(old, identifier, has_snapshots)
    for c in changes:
        if isinstance(c, SetOption):
            b.set_option(c.key, c.value)
        elif isinstance(c, RemoveOption):
            b.remove_option(c.key)
        elif isinstance(c, UpdateComment):
            b.comment = c.comment
        elif isinstance(c, AddColumn):
            b.add_column(c)
        elif isinstance(c, RenameColumn):
            b.rename_column(c)
        elif isinstance(c, DropColumn):
            b.drop_column(c)
        elif isinstance(c, UpdateColumnType):
            b.update_column_type(c)
        elif isinstance(c, UpdateColumnNullability):
            b.update_column_nullability(c)
        elif isinstance(c, UpdateColumnComment):
            b.update_column_comment(c)
        else:
            raise SchemaError(
                f"cannot alter table {identifier}: {c!r} is not a SchemaChange; build changes with "
                "SchemaChange.add_column(...), SchemaChange.set_option(...), ..."
            )
    return b.build()


# ------------------------------------------------------------------------------------------------
# Committing: schema-(N+1), created exclusively
# ------------------------------------------------------------------------------------------------
