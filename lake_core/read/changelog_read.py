"""Reading the changelog of one snapshot: the rows of the changelog files its changelog manifest
list names (written by ``changelog-producer`` = ``input``, ``lookup`` or ``full-compaction``), with
their row kinds as ``_ROW_KIND`` (``+I``, ``-U``, ``+U``, ``-D``), in file order, as Java's stream
read of that snapshot returns them. A snapshot without produced changelog has none (empty)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from lake_core.kv import rowkind
from lake_core.kv.system_fields import KIND, SEQ
from lake_core.paths import data_file_in

if TYPE_CHECKING:
    from lake_core.table import FileStoreTable

ROW_KIND = "_ROW_KIND"


def snapshot_changelog(table: "FileStoreTable", snapshot_id: int) -> pa.Table:
    """Changelog rows of snapshot ``snapshot_id`` (table columns + ``_ROW_KIND``)."""
    from lake_core.schema.evolution import read_evolved
    from lake_core.paths import partition_dir

    snapshot = table.changelog_manager.changelog(snapshot_id)
    schema = table.schema.arrow_schema()
    full = schema.append(pa.field(SEQ, pa.int64(), nullable=False)).append(pa.field(KIND, pa.int8(), nullable=False))
    out_schema = schema.append(pa.field(ROW_KIND, pa.string(), nullable=False))
    if not snapshot.changelog_manifest_list:
        return out_schema.empty_table()
    parts = []
    store = table.manifest_store
    for e in store.changelog_entries(snapshot):
        values = list(store.partition_values(e.partition))
        ppath = partition_dir(list(table.schema.partition_keys), values, table.options.partition_default_name)
        path = e.file.external_path or data_file_in(table.paths.bucket_dir(ppath, e.bucket), e.file.file_name)
        rows = read_evolved(table, path, e.file, e.file.file_name.rsplit(".", 1)[-1], full.names, full)
        kinds = pa.array(rowkind.SHORT_STRINGS, pa.string()).take(rows[KIND].combine_chunks().cast(pa.int32()))
        parts.append(rows.drop_columns([SEQ, KIND]).append_column(out_schema.field(ROW_KIND), kinds))
    return pa.concat_tables(parts).cast(out_schema) if parts else out_schema.empty_table()


__all__ = ["snapshot_changelog", "ROW_KIND"]
