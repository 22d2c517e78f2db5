"""Reading one KV data file in chunks for compaction and lookups: every table column plus
``_SEQUENCE_NUMBER``/``_VALUE_KIND``, size and row count checked against the manifest entry, with an
optional deletion vector applied (rows whose position is marked are dropped) and an optional
``_POSITION`` column (the row's 0-based ordinal in the file, what deletion vectors address)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from lake_core.errors import CorruptFileError, StalePlanError
from lake_core.format.integrity import checked_row_group_ranges
from lake_core.kv.system_fields import KIND, SEQ
from lake_core.manifest.metadata import DataFileMeta
from lake_core.options import READ_BATCH_ROWS
from lake_core.read.evolution import iter_evolved

if TYPE_CHECKING:
    from lake_core.deletion_vectors.vector import DeletionVector
    from lake_core.store import FileStore

CHUNK_ROWS = READ_BATCH_ROWS  # rows read per input file per merge round (unless read.batch-size)
POSITION = "_POSITION"


def kv_schema(store: FileStore) -> pa.Schema:
    schema = store.schema.arrow_schema()
    return schema.append(pa.field(SEQ, pa.int64(), nullable=False)).append(pa.field(KIND, pa.int8(), nullable=False))


def _raw_chunks(
    store: FileStore,
    bucket_dir: str,
    f: DataFileMeta,
    chunk_rows: int,
    columns: Sequence[str] | None,
    row_groups: Sequence[int] | None = None,
) -> Iterator[pa.Table]:
    full = _columns_schema(store, columns)
    path = f.path_in(bucket_dir)
    # the read path's chunked file read: size and row count checked, older schemas mapped
    return iter_evolved(
        store,
        path,
        f,
        _format(f),
        full.names,
        full,
        chunk_rows,
        missing=lambda: _missing_input(store, path, f),
        row_groups=row_groups,
    )


def _columns_schema(store: FileStore, columns: Sequence[str] | None) -> pa.Schema:
    full = kv_schema(store)
    return full if columns is None else pa.schema([full.field(c) for c in columns])


def _format(f: DataFileMeta) -> str:
    return f.file_name.rsplit(".", 1)[-1]


def key_ranges(
    store: FileStore, bucket_dir: str, f: DataFileMeta, key_names: Sequence[str]
) -> list[tuple[int, tuple, tuple]] | None:
    """Per row group of the Parquet file ``f``: (rows, min, max of the key columns), the file read
    no further than its footer; None when it has none to trust (another format, an older schema,
    a key type without a usable order, missing statistics)."""
    if f.schema_id != store.schema.id:
        return None
    path = f.path_in(bucket_dir)
    return checked_row_group_ranges(
        store.fileio,
        path,
        f,
        _format(f),
        key_names,
        _columns_schema(store, key_names),
        missing=lambda: _missing_input(store, path, f),
    )


def _missing_input(store: FileStore, path: str, f: DataFileMeta) -> Exception:
    """A compaction input that is gone: still live means the table is damaged; otherwise another
    job compacted it and an expiry deleted it meanwhile, so this compaction's plan is stale."""
    latest = store.snapshot_manager.latest()
    live = latest is not None and any(
        e.file.file_name == f.file_name for e in store.manifest_store.live_entries(latest)
    )
    if live:
        return CorruptFileError(
            path,
            f"data file {path} is listed in the table's manifests but does not exist "
            "(deleted outside lake_core); compaction stopped and committed nothing",
        )
    return StalePlanError(
        f"compaction of {store.identifier}: input file {path} was compacted by another job "
        "and deleted by an expiry meanwhile; nothing was committed — re-run the compaction"
    )


def iter_kv_file(
    store: FileStore,
    bucket_dir: str,
    f: DataFileMeta,
    chunk_rows: int = CHUNK_ROWS,
    *,
    deletion: DeletionVector | None = None,
    with_position: bool = False,
    columns: Sequence[str] | None = None,
    row_groups: Sequence[int] | None = None,
) -> Iterator[pa.Table]:
    """Chunks of one data file (see the module docstring); ``columns``: only these KV columns;
    ``row_groups``: only these Parquet row groups (no positions, no deletion vector: both count rows
    from the start of the file)."""
    if row_groups is not None and (with_position or deletion is not None):
        raise ValueError("a row-group read of a data file has no file positions")
    start = 0
    for chunk in _raw_chunks(store, bucket_dir, f, chunk_rows, columns, row_groups):
        n = chunk.num_rows
        if with_position:
            chunk = chunk.append_column(POSITION, pa.array(np.arange(start, start + n, dtype=np.int64)))
        if deletion is not None:
            chunk = deletion.filter_rows(chunk, start)
        start += n
        yield chunk
