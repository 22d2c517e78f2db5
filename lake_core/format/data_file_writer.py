"""One data file encoded chunk by chunk (Java ``FormatWriter``: ``addElement`` ... ``close``), so a
writer never holds a whole file in memory.

Parquet streams through ``pyarrow.parquet.ParquetWriter``: every :meth:`DataFileStreamWriter.write`
becomes one or more row groups on the sink, and :attr:`~DataFileStreamWriter.bytes_written` is the
encoded size so far (what ``RollingFileWriter`` compares with ``target-file-size``). The layout is
exactly :func:`lake_core.format.data_file.write_data_file`'s (same schema, field ids, codecs and
options); the dictionary columns are chosen on the first chunk. Two cases keep the encoded file in
memory (still bounded by the file size, not by the data): TIMESTAMP(7..9) columns, whose INT96
declaration rewrites the footer at close, and ORC/Avro, which are encoded at close.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from lake_core.format.avro_file import write_avro
from lake_core.format.conform import as_arrow_fields, conform_table
from lake_core.format.file_format import check_format
from lake_core.format.orc_file import write_orc
from lake_core.format.parquet_file import (
    DictionaryChoice,
    declare_int96_options,
    parquet_footer_extremes,
    parquet_row_group_rows,
    parquet_write_options,
    parquet_writer_schema,
)
from lake_core.format.parquet_int96 import to_int96_columns, write_declaring_int96
from lake_core.format.stats import RawExtremes

#: Arrow bytes per encoded-byte guess for formats encoded at close (zstd on typical tables).
_ARROW_PER_ENCODED_BYTE = 3

if TYPE_CHECKING:
    import pyarrow.parquet as pq


class DataFileStreamWriter:
    """Encodes one data file of format ``fmt`` onto ``sink`` (a writable binary stream that the
    caller owns and closes after :meth:`close`). Chunks are selected by name and cast to
    ``fields`` as :func:`~lake_core.format.data_file.write_data_file` does."""

    def __init__(
        self,
        fields: Sequence[Any] | pa.Schema,
        fmt: str,
        sink,
        *,
        compression: str = "zstd",
        options: Mapping[str, str] = {},
        dictionary: DictionaryChoice | None = None,
    ):
        self.fmt = check_format(fmt)
        self._fields = as_arrow_fields(fields)
        self._sink = sink
        self._compression = compression
        self._options = dict(options or {})
        self._dictionary = dictionary  # Parquet: dictionary columns shared with the write's other files
        self._row_group_rows = parquet_row_group_rows(self._options) if self.fmt == "parquet" else None
        self._pq: pq.ParquetWriter | None = None  # opened on the first chunk
        self._footer: list[pq.FileMetaData] = []  # the Parquet footer, once closed
        self._int96_paths: set[str] = set()
        self._int96_buf: pa.BufferOutputStream | None = None
        self._held: list[pa.Table] = []  # ORC / Avro: conformed chunks, encoded at close
        self._held_bytes = 0
        self.rows = 0

    @property
    def bytes_written(self) -> int:
        """Encoded bytes so far (for ORC/Avro an estimate from the held Arrow bytes)."""
        if self.fmt != "parquet":
            return self._held_bytes // _ARROW_PER_ENCODED_BYTE
        if self._int96_buf is not None:
            return self._int96_buf.tell()
        return self._sink.tell() if self._pq is not None else 0

    def write(self, rows: pa.Table) -> None:
        data = conform_table(rows, self._fields)
        self.rows += data.num_rows
        if self.fmt != "parquet":
            self._held.append(data)
            self._held_bytes += data.nbytes
            return
        data, int96_paths = to_int96_columns(data)
        self._parquet_writer(data, int96_paths).write_table(data, row_group_size=self._row_group_rows)

    def _parquet_writer(self, first: pa.Table, int96_paths: set[str]) -> pq.ParquetWriter:
        """The ParquetWriter, opened with ``first``'s schema on first use."""
        if self._pq is None:
            self._open_parquet(first, int96_paths)
        assert self._pq is not None
        return self._pq

    def _open_parquet(self, first: pa.Table, int96_paths: set[str]) -> None:
        kw = parquet_write_options(first, self._compression, self._options, self._dictionary)
        sink = self._sink
        if int96_paths:
            # TIMESTAMP(7..9): the footer is rewritten at close, so the file is encoded into memory
            kw = declare_int96_options(kw, first.schema, int96_paths)
            self._int96_paths = int96_paths
            self._int96_buf = sink = pa.BufferOutputStream()
        self._pq = pq.ParquetWriter(
            sink, parquet_writer_schema(first.schema, kw), metadata_collector=self._footer, **kw
        )

    def footer_extremes(self, columns: Sequence[str]) -> dict[str, RawExtremes | None]:
        """After :meth:`close` of a Parquet file: :func:`parquet_footer_extremes` of its footer;
        empty for other formats."""
        return parquet_footer_extremes(self._footer[0], columns) if self._footer else {}

    def close(self) -> int:
        """Finish the file (footer); returns its size in bytes. The sink stays open."""
        if self.fmt != "parquet":
            data = pa.concat_tables(self._held) if self._held else pa.schema(self._fields).empty_table()
            self._held = []
            (write_orc if self.fmt == "orc" else write_avro)(data, self._sink, self._compression, self._options)
        else:
            # no rows: still a valid, empty file
            self._parquet_writer(*to_int96_columns(pa.schema(self._fields).empty_table())).close()
            if self._int96_buf is not None:
                write_declaring_int96(self._int96_buf.getvalue(), self._int96_paths, self._sink)
                self._int96_buf = None
        return self._sink.tell()
