"""A data file's statistics as Java's ``$files`` prints them: ``{column=value, ...}`` over the
table's current columns (Java ``SimpleStatsEvolution``: a column is matched to the file's by field
id; one the file has no statistics for is ``null``, one added after the file was written is all
nulls: ``null`` bounds, the file's row count as null count), and its key range as
``Arrays.toString`` of the key. A column whose type changed since shows the file's values uncast."""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from lake_core.format.binary_row.reader import deserialize_row
from lake_core.system.java_text import java_array_text, java_map_text

if TYPE_CHECKING:
    from lake_core.manifest.metadata import DataFileMeta
    from lake_core.schema.table_schema import TableSchema
    from lake_core.table import FileStoreTable


class FileStatsText:
    """The statistics columns of ``$files`` for the files of one table (schemas cached by id)."""

    def __init__(self, table: FileStoreTable):
        self.table = table
        self.current = table.schema
        self._schemas: dict[int, TableSchema] = {table.schema.id: table.schema}

    def _schema(self, schema_id: int) -> TableSchema:
        s = self._schemas.get(schema_id)
        if s is None:
            s = self._schemas[schema_id] = self.table.schema_manager.schema(schema_id)
        return s

    def key_text(self, f: DataFileMeta, which: str) -> str | None:
        """``min_key``/``max_key``: None for a file without a key (an append table's)."""
        data = f.min_key if which == "min" else f.max_key
        if len(data) < 4 or struct.unpack_from(">i", data)[0] <= 0:
            return None
        schema = self._schema(f.schema_id)
        names = schema.trimmed_primary_keys if schema.primary_keys else tuple(schema.field_names)
        types = [schema.field(n).type for n in names]
        return java_array_text(deserialize_row(data, types), types)

    def stats_text(self, f: DataFileMeta) -> tuple[str, str, str]:
        """``(null_value_counts, min_value_stats, max_value_stats)``."""
        schema = self._schema(f.schema_id)
        names = list(f.value_stats_cols) if f.value_stats_cols is not None else list(schema.field_names)
        file_fields = [schema.field(n) for n in names]
        types = [x.type for x in file_fields]
        stats = f.value_stats
        mins: list[Any] = deserialize_row(stats.min_values, types) if names else []
        maxs: list[Any] = deserialize_row(stats.max_values, types) if names else []
        nulls = list(stats.null_counts or ()) + [None] * len(names)
        by_id = {x.id: i for i, x in enumerate(file_fields)}
        in_file = {x.id for x in schema.fields}
        null_items, min_items, max_items = [], [], []
        for field in self.current.fields:
            i = by_id.get(field.id)
            t: pa.DataType | None = field.type
            if i is not None:
                null_count = nulls[i]
            else:  # not in the file: all its rows are null; in the file without statistics: unknown
                null_count = None if field.id in in_file else f.row_count
            null_items.append((field.name, null_count, None))
            min_items.append((field.name, None if i is None else mins[i], t))
            max_items.append((field.name, None if i is None else maxs[i], t))
        return java_map_text(null_items), java_map_text(min_items), java_map_text(max_items)
