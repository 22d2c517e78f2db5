"""ORC data files via ``pyarrow.orc``. TIME columns are stored as int32 milliseconds, as Java
Paimon's ORC writer does; reads take only the requested columns, whole or streamed a stripe at a
time."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import pyarrow as pa

from lake_core.errors import FormatError
from lake_core.format.conform import assemble_columns, columns_to_read
from lake_core.format.file_format import choose_codec
from lake_core.format.file_source import source_name
from lake_core.option_values import parse_memory_size

__all__ = ["write_orc", "read_orc", "iter_orc"]


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
    import pyarrow.orc as orc  # noqa: PLC0415 - only ORC tables pay its import (0.14 s; some pyarrow builds lack it)

    codec, _level = choose_codec("orc", compression, options)
    table = _orc_compatible(table)
    stripe = options.get("orc.stripe.size")
    # a reader decodes a stripe at a time: smaller stripes bound its memory
    kw = {"stripe_size": parse_memory_size("orc.stripe.size", stripe)} if stripe else {}
    try:
        orc.write_table(table, sink, compression=codec, **kw)
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid) as e:
        raise FormatError(f"Cannot write ORC data file: {e}") from e


def read_orc(source, columns, arrow_schema) -> pa.Table:
    import pyarrow.orc as orc  # noqa: PLC0415 - only ORC tables pay its import (0.14 s; some pyarrow builds lack it)

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


def iter_orc(source, columns: Sequence[str], arrow_schema: pa.Schema | None, batch_rows: int) -> Iterator[pa.Table]:
    """An ORC data file as tables of at most ``batch_rows`` rows, decoded a stripe at a time
    (``ORCFile.read_stripe``, only the requested columns) and cut into chunks: memory is one decoded
    stripe, whose size the writer chose (Java's ORC writer closes a stripe at ``orc.stripe.size``,
    64 MB of encoded data). ``pyarrow.dataset``'s ORC batch reader would decode a batch at a time,
    but it reads ahead as far as its consumer lets it fall behind, so its memory is not bounded."""
    import pyarrow.orc as orc  # noqa: PLC0415 - only ORC tables pay its import (0.14 s; some pyarrow builds lack it)

    try:
        of = orc.ORCFile(source)
        file_names = of.schema.names
        read_cols = columns_to_read(columns, arrow_schema, file_names)
        if not read_cols:  # none of the columns is in the file: only the footer is read
            n_rows = of.nrows
            for start in range(0, n_rows, batch_rows):
                yield assemble_columns({}, min(batch_rows, n_rows - start), columns, arrow_schema, file_names)
            return
        for i in range(of.nstripes):
            stripe = of.read_stripe(i, columns=read_cols)
            for start in range(0, stripe.num_rows, batch_rows):
                batch = stripe.slice(start, batch_rows)
                available = {n: batch.column(n) for n in batch.schema.names}
                yield assemble_columns(available, batch.num_rows, columns, arrow_schema, file_names)
            stripe = batch = None  # before the next stripe is decoded, unless a chunk still holds it
    except (pa.ArrowInvalid, OSError) as e:
        raise FormatError(f"Cannot read ORC data file {source_name(source)}: {e}") from e
