"""Conforming Arrow columns to a data file's fields: on write, the data is selected by name, cast to
the file's types and checked against NOT NULL; on read, the requested columns are matched by name,
cast to the table's types, and those absent from the file come back all-null (files from other
writers: FLBA decimals, INT96 / INT64-nanos timestamps, ``list<element>`` names, ORC nanosecond
timestamps, and files older than the schema)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from lake_core.errors import FormatError, SchemaMismatchError
from lake_core.types import DataField, arrow_field

__all__ = ["as_arrow_fields", "conform_table", "columns_to_read", "assemble_columns"]


def as_arrow_fields(fields: Sequence[Any] | pa.Schema) -> list[pa.Field]:
    out = []
    for f in fields:
        if isinstance(f, DataField):
            out.append(arrow_field(f))
        elif isinstance(f, pa.Field):
            out.append(f)
        elif isinstance(f, tuple) and len(f) >= 2:
            out.append(pa.field(f[0], f[1], *(f[2:3] or [True])))
        else:
            raise TypeError(f"Cannot use {f!r} as a data file field (DataField or pyarrow.Field expected)")
    return out


def conform_table(table: pa.Table, fields: list[pa.Field]) -> pa.Table:
    """Select ``fields`` from ``table`` by name, cast to their types, check NOT NULL columns."""
    arrays = []
    names = set(table.column_names)
    for f in fields:
        if f.name not in names:
            raise SchemaMismatchError(
                f"Column '{f.name}' is missing from the data to write; data has columns {table.column_names}"
            )
        col = table.column(f.name)
        if not col.type.equals(f.type):
            try:
                col = col.cast(f.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
                raise SchemaMismatchError(
                    f"Column '{f.name}' has type {col.type} which cannot be converted to {f.type}: {e}"
                ) from e
        if not f.nullable and col.null_count:
            raise SchemaMismatchError(f"Column '{f.name}' is NOT NULL but the data has {col.null_count} null value(s)")
        arrays.append(col)
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


def columns_to_read(columns, arrow_schema, file_names) -> list[str]:
    if columns is not None:
        want = columns
    elif arrow_schema is not None:
        want = arrow_schema.names
    else:
        want = file_names
    present = set(file_names)
    return [c for c in dict.fromkeys(want) if c in present]


def _same_type(a: pa.DataType, b: pa.DataType) -> bool:
    return a.equals(b)


def _cast(col: pa.Array | pa.ChunkedArray, target: pa.DataType, name: str):
    if _same_type(col.type, target):
        return col
    src = col.type
    try:
        if pa.types.is_timestamp(src) and pa.types.is_timestamp(target):
            if (src.tz is None) != (target.tz is None):
                # tz-aware <-> naive: keep the stored instant (Paimon / Parquet semantics)
                col = col.cast(pa.timestamp(src.unit, tz=target.tz))
            return col.cast(target)
        if pa.types.is_time32(target) and pa.types.is_integer(src):
            return col.cast(pa.int32()).cast(target)
        if pa.types.is_integer(target) and pa.types.is_time(src):
            return col.cast(pa.time32("ms")).cast(pa.int32()).cast(target)
        return col.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise FormatError(f"Column '{name}' of type {src} in the data file cannot be read as {target}: {e}") from e


def assemble_columns(
    available: dict,
    n_rows: int,
    columns: Sequence[str] | None,
    arrow_schema: pa.Schema | None,
    file_names: Sequence[str],
) -> pa.Table:
    """Build the result from ``available`` (name -> array read from the file)."""
    if columns is None:
        columns = list(arrow_schema.names) if arrow_schema is not None else list(file_names)
    target = {f.name: f for f in arrow_schema} if arrow_schema is not None else {}
    arrays, fields = [], []
    for name in columns:
        tf = target.get(name)
        if name in available:
            col = available[name]
            if tf is not None:
                col = _cast(col, tf.type, name)
                fields.append(tf)
            else:
                fields.append(pa.field(name, col.type))
        else:
            t = tf.type if tf is not None else pa.null()
            col = pa.nulls(n_rows, type=t)
            fields.append(tf if tf is not None else pa.field(name, t))
        if isinstance(col, pa.Array):
            col = pa.chunked_array([col], type=col.type)
        arrays.append(col)
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))
