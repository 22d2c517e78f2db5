"""Reading data files written under older schemas through the table's current schema.

Every data file records the id of the schema it was written with (``DataFileMeta.schema_id``).
Columns are matched by **field id**, never by name (Java ``SchemaEvolutionUtil``): a renamed
column keeps its data, a dropped column disappears, a column added later reads as NULL, a widened
column is cast to its new type, and a column dropped and re-added under the same name (a new id)
never picks up the old values. The same mapping turns an old file's value statistics into
statistics of the current columns (Java ``SimpleStatsEvolution``), so filter pruning keeps working
across schema versions: a column the file predates is all NULL in that file.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from lake_core.format.binary_row.reader import deserialize_row
from lake_core.format.integrity import iter_checked_data_file, read_checked_data_file
from lake_core.kv.system_fields import KIND, SEQ
from lake_core.manifest.metadata import DataFileMeta

if TYPE_CHECKING:
    from lake_core.schema.table_schema import TableSchema
    from lake_core.store import FileStore

_SYSTEM = (SEQ, KIND)


def _file_fields(store: FileStore, schema_id: int) -> dict[int, Any]:
    """Field id -> DataField of the schema a file was written with."""
    return {f.id: f for f in store.schema_manager.schema(schema_id).fields}


def read_evolved(
    store: FileStore, path: str, meta: DataFileMeta, fmt: str, columns: Sequence[str], arrow_schema: pa.Schema
) -> pa.Table:
    """Read ``columns`` (current names, plus ``_SEQUENCE_NUMBER``/``_VALUE_KIND``) of the data file
    ``meta`` at ``path``, typed as ``arrow_schema`` (current types); the file is checked against
    its manifest entry (size, row count) first."""
    mapping = None if meta.schema_id == store.schema.id else _Mapping.of(store, meta, columns, arrow_schema)
    if mapping is None or mapping.identity:
        return read_checked_data_file(store.fileio, path, meta, fmt, columns, arrow_schema)
    return mapping.apply(read_checked_data_file(store.fileio, path, meta, fmt, mapping.file_cols, mapping.file_schema))


def iter_evolved(
    store: FileStore,
    path: str,
    meta: DataFileMeta,
    fmt: str,
    columns: Sequence[str],
    arrow_schema: pa.Schema,
    batch_rows: int,
    *,
    missing: Callable[[], Exception] | None = None,
    row_groups: Sequence[int] | None = None,
    keep_dictionaries: Collection[str] = (),
) -> Iterator[pa.Table]:
    """:func:`read_evolved` in chunks of about ``batch_rows`` rows, read as they are consumed
    (``missing``, ``row_groups``, ``keep_dictionaries``: see :func:`iter_checked_data_file`; a file
    whose columns an older schema named, typed or lacked differently is decoded, as they are cast)."""
    mapping = None if meta.schema_id == store.schema.id else _Mapping.of(store, meta, columns, arrow_schema)
    if mapping is None or mapping.identity:
        yield from iter_checked_data_file(
            store.fileio,
            path,
            meta,
            fmt,
            columns,
            arrow_schema,
            batch_rows,
            missing=missing,
            row_groups=row_groups,
            keep_dictionaries=keep_dictionaries,
        )
        return
    for chunk in iter_checked_data_file(
        store.fileio,
        path,
        meta,
        fmt,
        mapping.file_cols,
        mapping.file_schema,
        batch_rows,
        missing=missing,
        row_groups=row_groups,
    ):
        yield mapping.apply(chunk)


@dataclass(frozen=True)
class _Mapping:
    """Which column of an older file feeds each requested current column (None: added later)."""

    file_cols: tuple[str, ...]
    file_schema: pa.Schema
    source_of: dict[str, str | None]
    columns: tuple[str, ...]
    arrow_schema: pa.Schema

    @staticmethod
    def of(store: FileStore, meta: DataFileMeta, columns: Sequence[str], arrow_schema: pa.Schema) -> _Mapping:
        current = store.schema
        old = _file_fields(store, meta.schema_id)
        file_cols: list[str] = []
        file_fields: list[pa.Field] = []
        source_of: dict[str, str | None] = {}
        for name in columns:
            if name in _SYSTEM:
                file_cols.append(name)
                file_fields.append(arrow_schema.field(name))
                source_of[name] = name
                continue
            of = old.get(current.field(name).id)
            if of is None:  # added after this file was written
                source_of[name] = None
                continue
            file_cols.append(of.name)
            file_fields.append(pa.field(of.name, of.type, True))
            source_of[name] = of.name
        if not file_cols:  # only columns the file predates: read one column for the row count
            first = next(iter(old.values()))
            file_cols.append(first.name)
            file_fields.append(pa.field(first.name, first.type, True))
        return _Mapping(tuple(file_cols), pa.schema(file_fields), source_of, tuple(columns), arrow_schema)

    @property
    def identity(self) -> bool:
        """Whether the file stores every requested column under its current name and type (an
        older schema that differs in options or in other columns only): read as a current file."""
        return all(self.source_of.get(n) == n for n in self.columns) and all(
            self.file_schema.field(n).type.equals(self.arrow_schema.field(n).type) for n in self.columns
        )

    def apply(self, raw: pa.Table) -> pa.Table:
        arrays = []
        for name in self.columns:
            target = self.arrow_schema.field(name)
            src = self.source_of[name]
            if src is None:
                arrays.append(pa.nulls(raw.num_rows, type=target.type))
            else:
                col = raw[src]
                arrays.append(col if col.type.equals(target.type) else col.cast(target.type))
        return pa.Table.from_arrays(arrays, schema=pa.schema([self.arrow_schema.field(n) for n in self.columns]))


def evolved_value_stats(store: FileStore, f: DataFileMeta) -> dict[str, tuple]:
    """``{current column: (min, max, null_count)}`` from the value stats of a file written under
    an older schema. Columns the file predates are all NULL there; columns without stats are
    left out (unknown)."""
    old_schema: TableSchema = store.schema_manager.schema(f.schema_id)
    names = [fl.name for fl in old_schema.fields] if f.value_stats_cols is None else list(f.value_stats_cols)
    stats: dict[int, tuple] = {}
    if names:
        by_name = {fl.name: fl for fl in old_schema.fields}
        if all(n in by_name for n in names):
            st = f.value_stats
            bounds: tuple[list[Any], list[Any]] | None
            try:
                bounds = (
                    deserialize_row(st.min_values, [by_name[n].type for n in names]),
                    deserialize_row(st.max_values, [by_name[n].type for n in names]),
                )
            except Exception:
                bounds = None
            if bounds is not None:
                lo, hi = bounds
                nulls = st.null_counts or ()
                for i, n in enumerate(names):
                    stats[by_name[n].id] = (lo[i], hi[i], nulls[i] if i < len(nulls) else None)
    old_ids = {fl.id for fl in old_schema.fields}
    out: dict[str, tuple] = {}
    for fl in store.schema.fields:
        if fl.id in stats:
            out[fl.name] = stats[fl.id]
        elif fl.id not in old_ids:
            out[fl.name] = (None, None, f.row_count)
    return out
