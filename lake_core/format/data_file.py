"""Encoding and decoding of Paimon data files: the entry points that pick the format's module
(lake_core.format.parquet_file, orc_file, avro_file), as Java ``FileFormat`` hands out a format's
writer and reader factories.

Writing follows Java Paimon's physical layout (``KeyValueFileWriterFactory``): the data is
selected by name and cast to the file's fields (lake_core.format.conform). Reading matches columns
by **name** (pypaimon writes no field ids), reads only the requested columns, returns missing
columns as all-null, and casts to ``arrow_schema`` when given, so files from other writers come
back with lake_core's types.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from lake_core.format.avro_file import avro_file_schema, iter_avro, read_avro, write_avro
from lake_core.format.conform import as_arrow_fields, conform_table
from lake_core.format.file_format import check_format
from lake_core.format.orc_file import iter_orc, read_orc, write_orc
from lake_core.format.parquet_file import iter_parquet, read_parquet, write_parquet

__all__ = ["write_data_file", "read_data_file", "iter_data_file", "read_file_schema"]


def write_data_file(
    table: pa.Table,
    fields: Sequence[Any] | pa.Schema,
    fmt: str,
    sink,
    compression: str = "zstd",
    options: Mapping[str, str] = {},
) -> None:
    """Encode ``table`` as one data file of format ``fmt`` into ``sink`` (a path or a writable
    binary file-like). ``fields`` gives the file's columns in order (DataFields or pyarrow fields
    with ``PARQUET:field_id`` metadata), e.g. ``TableSchema.kv_fields()``; the table's columns are
    selected by name and cast to the field types.

    Options honoured: ``file.compression`` (overrides ``compression``),
    ``file.compression.zstd-level``, ``parquet.enable.dictionary``, ``parquet.page.size``,
    ``parquet.row-group.rows``."""
    fmt = check_format(fmt)
    options = options or {}
    afields = as_arrow_fields(fields)
    data = conform_table(table, afields)
    if fmt == "parquet":
        write_parquet(data, sink, compression, options)
    elif fmt == "orc":
        write_orc(data, sink, compression, options)
    else:
        write_avro(data, sink, compression, options)


def read_data_file(
    source,
    fmt: str,
    columns: Sequence[str] | None = None,
    arrow_schema: pa.Schema | None = None,
    *,
    keep_dictionaries: Collection[str] = (),
) -> pa.Table:
    """Decode a data file. ``source``: a local path or a readable, seekable binary file-like.

    Only ``columns`` are read (default: ``arrow_schema``'s names, or every column of the file);
    columns are matched by name; requested columns absent from the file come back all-null (with
    ``arrow_schema``'s type, else type null). With ``arrow_schema``, each column is cast to its
    type there and gets that field (nullability, metadata). ``keep_dictionaries``: those of these
    columns a Parquet file of lake_core's stores as dictionaries stay dictionaries (see
    :func:`iter_parquet`)."""
    fmt = check_format(fmt)
    if columns is not None:
        columns = list(columns)
    if fmt == "parquet":
        return read_parquet(source, columns, arrow_schema, keep_dictionaries=keep_dictionaries)
    if fmt == "orc":
        return read_orc(source, columns, arrow_schema)
    return read_avro(source, columns, arrow_schema)


def iter_data_file(
    source,
    fmt: str,
    columns: Sequence[str],
    arrow_schema: pa.Schema,
    batch_rows: int,
    row_groups: Sequence[int] | None = None,
    *,
    keep_dictionaries: Collection[str] = (),
) -> Iterator[pa.Table]:
    """Decode a data file in chunks of at most ``batch_rows`` rows, none empty, each with the schema
    :func:`read_data_file` gives (same column rules), a chunk decoded only when it is asked for:
    Parquet a record batch at a time (of ``row_groups`` only, if given), ORC a stripe at a time
    (then cut), Avro a few container blocks at a time."""
    fmt = check_format(fmt)
    columns = list(columns)
    if row_groups is not None and fmt != "parquet":
        raise ValueError(f"row groups are a Parquet notion, not {fmt}'s")
    if fmt == "parquet":
        yield from iter_parquet(
            source, columns, arrow_schema, batch_rows, row_groups, keep_dictionaries=keep_dictionaries
        )
    elif fmt == "orc":
        yield from iter_orc(source, columns, arrow_schema, batch_rows)
    else:
        yield from iter_avro(source, columns, arrow_schema, batch_rows)


def read_file_schema(source, fmt: str) -> pa.Schema:
    """The arrow schema stored in a data file (names and file types, no data read)."""
    fmt = check_format(fmt)
    if fmt == "parquet":
        return pq.ParquetFile(source).schema_arrow
    if fmt == "orc":
        import pyarrow.orc as orc  # noqa: PLC0415 - only ORC tables pay its import (0.14 s; some pyarrow builds lack it)

        return orc.ORCFile(source).schema
    return avro_file_schema(source)
