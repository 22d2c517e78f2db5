"""ORC data files via ``pyarrow.orc``. TIME columns are stored as int32 milliseconds, as Java
Paimon's ORC writer does; reads take only the requested columns."""
from __future__ import annotations

from typing import Mapping

import pyarrow as pa

from lake_core.errors import FormatError
from lake_core.format.conform import assemble_columns, columns_to_read
from lake_core.format.file_format import choose_codec
from lake_core.format.file_source import source_name

__all__ = ["write_orc", "read_orc"]

def _orc_compatible(table: pa.Table) -> pa.Table:
    cols, fields, changed = [], [], False
    for f, col in zip(table.schema, table.columns):
        if pa.types.is_time32(f.type):
            col = col.cast(pa.time32("ms")).cast(pa.int32())
            f = pa.field(f.name, pa.int32(), f.nullable, metadata=f.metadata)
            changed = True
        cols.append(col)
        fields.append(f)
    return pa.Table.from_arrays(cols, schema=pa.schema(fields)) if changed else table


def write_orc(table: pa.Table, sink, compression: str, options: Mapping[str, str]) -> None:
    import pyarrow.orc as orc

    codec, _level = choose_codec("orc", compression, options)
    table = _orc_compatible(table)
    try:
        orc.write_table(table, sink, compression=codec)
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid) as e:
        raise FormatError(f"Cannot write ORC data file: {e}") from e


def read_orc(source, columns, arrow_schema) -> pa.Table:
    import pyarrow.orc as orc

    try:
        of = orc.ORCFile(source)
        file_names = of.schema.names
        read_cols = columns_to_read(columns, arrow_schema, file_names)
        t = of.read(columns=read_cols) if read_cols else None
        n_rows = t.num_rows if t is not None else of.nrows
    except (pa.ArrowInvalid, OSError) as e:
        raise FormatError(f"Cannot read ORC data file {source_name(source)}: {e}") from e
    available = {n: t.column(n) for n in t.column_names} if t is not None else {}
    return assemble_columns(available, n_rows, columns, arrow_schema, file_names)
