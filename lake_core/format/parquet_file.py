"""Parquet data files, laid out as Java Paimon writes them (``ParquetSchemaConverter``,
``ParquetWriterFactory``): DECIMAL p<=9 as INT32, p<=18 as INT64, larger as
FIXED_LEN_BYTE_ARRAY(min bytes); TINYINT/SMALLINT as INT32 Int(8/16); NOT NULL columns
``required``; field ids from the fields (``PARQUET:field_id``, ``_KEY_`` = 1073741823 + id,
``_SEQUENCE_NUMBER`` 2147483646, ``_VALUE_KIND`` 2147483645); 3-level ``list/element`` and
``key_value{key,value}``; TIMESTAMP(0..3) INT64 MILLIS, (4..6) INT64 MICROS, tz-aware with
isAdjustedToUTC=true; TIMESTAMP(7..9) INT96 as Java writes it (see lake_core.format.parquet_int96).
zstd level 1 (fixed-width columns it barely shrinks are stored uncompressed), 64 KiB data pages,
dictionary encoding only for columns whose sampled distinct ratio is low, named in the footer.
Reads take only the requested columns, whole or streamed a batch at a time."""

from __future__ import annotations

import io
import json
import os
from collections.abc import Collection, Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from lake_core.decode_threads import arrow_decode_threads
from lake_core.errors import FormatError
from lake_core.format.conform import assemble_columns, columns_to_read
from lake_core.format.file_format import choose_codec
from lake_core.format.file_source import source_name
from lake_core.format.parquet_int96 import leaf_paths, to_int96_columns, write_declaring_int96
from lake_core.format.stats import RawExtremes
from lake_core.kv.system_fields import KEY_FIELD_PREFIX, SEQUENCE_NUMBER
from lake_core.option_values import LONG_RANGE, parse_bool, parse_int, parse_memory_size
from lake_core.types import is_nested

__all__ = [
    "DictionaryChoice",
    "parquet_write_options",
    "parquet_writer_schema",
    "declare_int96_options",
    "parquet_row_group_rows",
    "write_parquet",
    "read_parquet",
    "iter_parquet",
    "decode_dictionaries",
    "parquet_row_group_ranges",
    "parquet_footer_extremes",
]

#: the data page size when ``parquet.page.size`` is not set (Paimon's ``page-size`` is its write
#: buffer's memory page, not a Parquet setting). Java's Parquet writer defaults to 1 MiB: a lone
#: 50k-row file then writes ~5% and decodes ~4% faster, but the cold merged read of the benchmark
#: table measured 0.98x to 1.09x the wall of 64 KiB pages over three sets of 30 pairs (its
#: batches decompress whole pages), so the default stays
_DEFAULT_PAGE_SIZE = 64 * 1024
_DICT_SAMPLE = 2048  # rows per sampled slice
_DICT_MAX_RATIO = 0.5  # distinct / sampled rows at or below which dictionary encoding pays
#: the same for strings and binaries: a dictionary saves the compression of every repeat, so it
#: pays up to a higher ratio (measured at 50k and 250k rows: 0.75 writes in 79% and 61% of the
#: plain time and reads faster; 0.87 already costs more at 50k rows)
_DICT_MAX_RATIO_BINARY = 0.8
#: footer key listing the columns lake_core wrote with dictionary pages throughout (a JSON list)
DICTIONARY_COLUMNS_KEY = b"lake_core.dictionary-columns"
#: the dictionary page limit of those columns: past it a writer falls back to plain pages (pyarrow's
#: default is 1 MiB; a column chosen by its sample rarely comes near this)
_DICTIONARY_PAGE_LIMIT = 16 << 20
#: a fixed-width column zstd shrinks by less than this on a sample is stored uncompressed
_MIN_ZSTD_SAVING = 0.1
_ZSTD_SAMPLE = 2048  # rows of a file sampled for that (three slices; 0.07 ms a column)
_ZSTD_MIN_ROWS = 6144  # a file of fewer rows keeps zstd throughout (too small to matter)
_STREAM_BUFFER = 64 * 1024  # bytes of a column chunk read at a time by the streaming reader (a page)


def _low_cardinality(col: pa.ChunkedArray) -> bool:
    t = col.type
    max_ratio = _DICT_MAX_RATIO_BINARY if _is_stringish(t) else _DICT_MAX_RATIO
    n = len(col)
    if n == 0:
        return False
    if n <= 3 * _DICT_SAMPLE:
        sample = col
    else:
        mid = n // 2 - _DICT_SAMPLE // 2
        sample = pa.chunked_array(
            [
                c
                for s in (
                    col.slice(0, _DICT_SAMPLE),
                    col.slice(mid, _DICT_SAMPLE),
                    col.slice(n - _DICT_SAMPLE, _DICT_SAMPLE),
                )
                for c in s.chunks
            ],
            type=col.type,
        )
    valid = len(sample) - sample.null_count
    if valid == 0:
        return True
    distinct = pc.count_distinct(sample).as_py()
    return distinct <= max_ratio * valid


def _dictionary_columns(table: pa.Table) -> list[str]:
    """Columns worth dictionary encoding: strings / binaries / ints / floats / decimals whose
    sampled distinct ratio is low (measured: dictionary on unique int64 costs ~2x write time and
    +25% size; on 4-value strings it is 4x smaller)."""
    names = set(table.schema.names)
    chosen = set()
    for f in table.schema:
        t = f.type
        if is_nested(t) or pa.types.is_boolean(t) or f.name == SEQUENCE_NUMBER:
            continue  # a file's sequence numbers are distinct
        if _stored_key_of(f.name, names) is None and _low_cardinality(table.column(f.name)):
            chosen.add(f.name)
    # a key is stored twice (as _KEY_<name> and as its value): decided once, by the value column
    return [n for n in table.schema.names if n in chosen or _stored_key_of(n, names) in chosen]


def _stored_key_of(name: str, names: set[str]) -> str | None:
    """The value column ``name`` repeats when it is a key column's ``_KEY_`` copy."""
    value = name[len(KEY_FIELD_PREFIX) :] if name.startswith(KEY_FIELD_PREFIX) else None
    return value if value in names else None


class DictionaryChoice:
    """Which columns get dictionary pages, decided once from a sample of a write's rows (its input
    batch) and kept for every file of that write: the buckets of a write share their data's shape,
    and sampling each small file's columns again measured about 6 ms of a 200k-row, 4-bucket
    write's 50 ms (the sampling holds the interpreter while the other bucket encodes). Decided
    before any file is written, so the same rows always give the same files. The write samples in
    its first flush worker while the other picks its bucket's rows (0.86x the update's wall over
    20 pairs, faster in all); sampled in a thread of its own while the write assigned buckets, it
    measured no faster (the two threads took turns with the interpreter)."""

    def __init__(self, sample: pa.Table) -> None:
        self._chosen = frozenset(_dictionary_columns(sample))

    def columns(self, table: pa.Table) -> list[str]:
        """The columns of ``table`` (a file's, with a key's ``_KEY_`` copies) that get a dictionary."""
        names = set(table.schema.names)
        return [n for n in table.schema.names if n in self._chosen or _stored_key_of(n, names) in self._chosen]


def parquet_write_options(
    table: pa.Table,
    compression: str = "zstd",
    options: Mapping[str, str] = {},
    dictionary: DictionaryChoice | None = None,
) -> dict:
    """The keyword arguments lake_core passes to ``pyarrow.parquet.ParquetWriter``; ``dictionary``:
    the choice of dictionary columns shared by the files of one write (default: sampled from
    ``table``)."""
    options = options or {}
    codec, level = choose_codec("parquet", compression, options)
    page = options.get("parquet.page.size")
    page_size = parse_memory_size("parquet.page.size", page) if page is not None else _DEFAULT_PAGE_SIZE
    use_dict: list[str] = []
    dict_opt = options.get("parquet.enable.dictionary")
    if dict_opt is None or parse_bool("parquet.enable.dictionary", dict_opt):
        use_dict = dictionary.columns(table) if dictionary is not None else _dictionary_columns(table)
    kw: dict[str, Any] = dict(
        compression=codec,
        use_dictionary=use_dict or False,
        data_page_size=page_size,
        version="2.6",
        store_decimal_as_integer=True,
        use_compliant_nested_type=True,
        write_statistics=True,
    )
    if use_dict:
        kw["dictionary_pagesize_limit"] = _DICTIONARY_PAGE_LIMIT
    if level is not None and codec == "zstd":
        kw["compression_level"] = level
        plain = _incompressible_columns(table, use_dict, level)
        if plain:  # per leaf: a column missing from the dict would be written uncompressed
            leaves = [(p, f.name in plain) for f in table.schema for p in leaf_paths(f.name, f.type)]
            kw["compression"] = {p: "none" if raw else codec for p, raw in leaves}
            kw["compression_level"] = {p: level for p, raw in leaves if not raw}
    return kw


def parquet_writer_schema(schema: pa.Schema, kw: Mapping[str, Any]) -> pa.Schema:
    """The schema a ParquetWriter with options ``kw`` is opened with: with the footer key naming
    the columns written with dictionary pages (:data:`DICTIONARY_COLUMNS_KEY`; readers other than
    lake_core ignore it)."""
    use_dict = kw.get("use_dictionary")
    if not isinstance(use_dict, list) or not use_dict:
        return schema
    return schema.with_metadata({**(schema.metadata or {}), DICTIONARY_COLUMNS_KEY: json.dumps(use_dict).encode()})


def _dictionary_reads(pf: pq.ParquetFile, read_cols: Sequence[str]) -> list[str]:
    """The string and binary columns of ``read_cols`` that lake_core wrote with dictionary pages
    throughout (its footer key says so): read as dictionaries and then decoded, they cost half of
    Arrow's direct decode of dictionary pages to strings. Other files' dictionary columns may fall
    back to plain pages part-way, which read as a dictionary cost four times as much: they are
    decoded directly."""
    marked = (pf.metadata.metadata or {}).get(DICTIONARY_COLUMNS_KEY)
    if marked is None:
        return []
    try:
        names = json.loads(marked)
    except ValueError:
        names = None
    if not isinstance(names, list):
        return []  # not ours after all: read as any file
    schema = pf.schema_arrow
    return [n for n in read_cols if n in names and _is_stringish(schema.field(n).type)]


def _is_stringish(t: pa.DataType) -> bool:
    """Strings and binaries of Arrow's offset layouts (what Parquet stores as BYTE_ARRAY)."""
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t)


def _decoded(col):
    """A column read as a dictionary, as its plain type."""
    return col.cast(col.type.value_type) if pa.types.is_dictionary(col.type) else col


def _incompressible_columns(table: pa.Table, dictionary: Sequence[str], level: int) -> set[str]:
    """Fixed-width columns (not dictionary-encoded) that zstd shrinks by less than
    ``_MIN_ZSTD_SAVING`` on a sample of the file's rows (random floats, hashes): stored
    uncompressed, they decode about 3.5x faster (zstd's entropy stage is most of their read) for
    a few percent more bytes. Sampled per file, from its own key-ordered rows, so a column that
    compresses only in key order keeps zstd; the codec is per column chunk in Parquet, as every
    reader (Java Paimon's included) expects."""
    n = table.num_rows
    if n < _ZSTD_MIN_ROWS:
        return set()
    dict_columns = set(dictionary)
    names = set(table.schema.names)
    zstd = pa.Codec("zstd", compression_level=level)
    plain = set()
    for f in table.schema:
        t = f.type
        fixed = pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_temporal(t)
        if not fixed or f.name in dict_columns or t.bit_width < 32 or _stored_key_of(f.name, names):
            continue  # a key's _KEY_ copy holds the same values: it follows its value column (below)
        if f.name == SEQUENCE_NUMBER:
            continue  # small non-negative numbers (their high bytes zero): zstd always saves more
        col = table.column(f.name)
        mid = n // 2 - _ZSTD_SAMPLE // 6
        parts = [col.slice(0, _ZSTD_SAMPLE // 3), col.slice(mid, _ZSTD_SAMPLE // 3), col.slice(n - _ZSTD_SAMPLE // 3)]
        sample = pa.concat_arrays([c for p in parts for c in p.chunks])
        values = sample.buffers()[1]
        assert values is not None  # a fixed-width array has a values buffer
        if zstd.compress(values).size > (1 - _MIN_ZSTD_SAVING) * values.size:
            plain.add(f.name)
    return plain | {n for n in names if _stored_key_of(n, names) in plain}


def declare_int96_options(kw: dict, schema: pa.Schema, int96_paths: set[str]) -> dict:
    """ParquetWriter options for a file whose ``int96_paths`` leaves are declared INT96 at close
    (TIMESTAMP(7..9) as Java writes them, see lake_core.format.parquet_int96): no statistics for
    those leaves, and no stored Arrow schema (it would name them fixed_size_binary; readers take
    the types from the table schema)."""
    return {
        **kw,
        "write_statistics": [p for f in schema for p in leaf_paths(f.name, f.type) if p not in int96_paths],
        "store_schema": False,
    }


def parquet_row_group_rows(options: Mapping[str, str]) -> int | None:
    """``parquet.row-group.rows``: rows per row group of one write (None: pyarrow's default)."""
    rg = options.get("parquet.row-group.rows")
    return None if rg is None else parse_int("parquet.row-group.rows", rg, LONG_RANGE)


def write_parquet(table: pa.Table, sink, compression: str, options: Mapping[str, str]) -> None:

    kw = parquet_write_options(table, compression, options)
    row_group_size = parquet_row_group_rows(options)
    table, int96_paths = to_int96_columns(table)
    if not int96_paths:
        with pq.ParquetWriter(sink, parquet_writer_schema(table.schema, kw), **kw) as w:
            w.write_table(table, row_group_size=row_group_size)
        return
    kw = declare_int96_options(kw, table.schema, int96_paths)
    buf = io.BytesIO()
    with pq.ParquetWriter(buf, parquet_writer_schema(table.schema, kw), **kw) as w:
        w.write_table(table, row_group_size=row_group_size)
    if isinstance(sink, (str, os.PathLike)):
        with open(sink, "wb") as f:
            write_declaring_int96(buf.getbuffer(), int96_paths, f)
    else:
        write_declaring_int96(buf.getbuffer(), int96_paths, sink)


def read_parquet(source, columns, arrow_schema, *, keep_dictionaries: Collection[str] = ()) -> pa.Table:
    """``keep_dictionaries``: see :func:`iter_parquet`."""
    try:
        mm = _mappable(source)
        pf = pq.ParquetFile(source, memory_map=mm)
        file_names = pf.schema_arrow.names
        read_cols = columns_to_read(columns, arrow_schema, file_names)
        dictionaries = _dictionary_reads(pf, read_cols)
        if dictionaries:
            pf = pq.ParquetFile(source, metadata=pf.metadata, read_dictionary=dictionaries, memory_map=mm)
        t = pf.read(columns=read_cols, use_threads=arrow_decode_threads())
    except (pa.ArrowInvalid, OSError) as e:
        raise FormatError(f"Cannot read Parquet data file {source_name(source)}: {e}") from e
    kept = _kept_dictionaries(pf, dictionaries, arrow_schema, keep_dictionaries)
    available = {n: t.column(n) if n in kept else _decoded(t.column(n)) for n in t.column_names}
    return assemble_columns(
        available,
        t.num_rows if read_cols else pf.metadata.num_rows,
        columns,
        _as_dictionaries(arrow_schema, kept),
        file_names,
    )


def iter_parquet(
    source,
    columns: Sequence[str],
    arrow_schema: pa.Schema | None,
    batch_rows: int,
    row_groups: Sequence[int] | None = None,
    *,
    keep_dictionaries: Collection[str] = (),
) -> Iterator[pa.Table]:
    """A Parquet data file (only ``row_groups``, if given) as tables of about ``batch_rows`` rows,
    decoded a batch at a time. ``keep_dictionaries``: those of these columns that lake_core wrote as
    dictionaries (strings and binaries stored as ``arrow_schema`` types them) come back as
    dictionary arrays of that type, for a merge that gathers the indices and decodes only the rows
    it keeps. A batch's columns are decoded in Arrow's threads, unless this thread is one of several
    workers (:func:`~lake_core.decode_threads.one_of_several_workers`)."""
    try:
        pf = _streaming_parquet_file(source)
        file_names = pf.schema_arrow.names
        read_cols = columns_to_read(columns, arrow_schema, file_names)
        dictionaries = _dictionary_reads(pf, read_cols)
        if dictionaries:
            pf = _streaming_parquet_file(source, pf.metadata, dictionaries)
        kept = _kept_dictionaries(pf, dictionaries, arrow_schema, keep_dictionaries)
        schema = _as_dictionaries(arrow_schema, kept)
        batches = pf.iter_batches(
            batch_size=batch_rows, columns=read_cols, use_threads=arrow_decode_threads(), row_groups=row_groups
        )
        for batch in batches:
            available = {n: batch.column(n) if n in kept else _decoded(batch.column(n)) for n in batch.schema.names}
            yield assemble_columns(available, batch.num_rows, columns, schema, file_names)
    except (pa.ArrowInvalid, OSError) as e:
        raise FormatError(f"Cannot read Parquet data file {source_name(source)}: {e}") from e


def _kept_dictionaries(
    pf: pq.ParquetFile, dictionaries: Sequence[str], arrow_schema: pa.Schema | None, wanted: Collection[str]
) -> set[str]:
    """The ``wanted`` columns read as dictionaries whose stored type is the one asked for (others
    are decoded and cast as usual)."""
    if arrow_schema is None or not wanted:
        return set()
    stored = pf.schema_arrow  # opened with ``read_dictionary``: those columns typed as dictionaries
    kept = set()
    for n in dictionaries:
        if n not in wanted:
            continue
        t = stored.field(n).type
        t = t.value_type if pa.types.is_dictionary(t) else t
        if arrow_schema.get_field_index(n) >= 0 and t.equals(arrow_schema.field(n).type):
            kept.add(n)
    return kept


def _as_dictionaries(schema: pa.Schema | None, names: set[str]) -> pa.Schema | None:
    """``schema`` with the ``names`` fields typed as the dictionaries Arrow reads them as."""
    if schema is None or not names:
        return schema
    for n in names:
        i = schema.get_field_index(n)
        f = schema.field(i)
        schema = schema.set(i, f.with_type(pa.dictionary(pa.int32(), f.type)))
    return schema


def decode_dictionaries(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` (read with ``keep_dictionaries``) with its dictionary columns decoded to
    ``schema``'s types, where ``schema`` has plain ones."""
    for i, f in enumerate(table.schema):
        if pa.types.is_dictionary(f.type) and not pa.types.is_dictionary(schema.field(f.name).type):
            table = table.set_column(i, schema.field(f.name), _decoded(table.column(i)))
    return table


def _ranged(t: pa.DataType) -> bool:
    # types whose Parquet min/max order is Paimon's key order (floats are not: -0.0, NaN)
    return pa.types.is_integer(t) or pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_date32(t)


def parquet_row_group_ranges(
    source, columns: Sequence[str], arrow_schema: pa.Schema
) -> list[tuple[int, tuple, tuple]] | None:
    """Per row group: (rows, min of each of ``columns``, max of each), from the footer's statistics;
    None when a column's type has no usable order or a row group lacks its statistics."""

    if not all(_ranged(arrow_schema.field(c).type) for c in columns):
        return None
    try:
        md = pq.ParquetFile(source).metadata
    except (pa.ArrowInvalid, OSError) as e:
        raise FormatError(f"Cannot read Parquet data file {source_name(source)}: {e}") from e
    groups = _row_group_statistics(md, columns)
    if groups is None:
        return None
    out = []
    for rows, stats in groups:
        if any(s is None or not s.has_min_max for s in stats):
            return None
        out.append((rows, tuple(s.min for s in stats), tuple(s.max for s in stats)))
    return out


def parquet_footer_extremes(md: pq.FileMetaData, columns: Sequence[str]) -> dict[str, RawExtremes | None]:
    """The raw min / max of each top-level column of ``columns`` over all row groups of a file
    whose footer is ``md`` (row groups of nulls only count for nothing); None for a column that
    has values in a row group without them (Arrow leaves out values over its statistics limit)."""
    out: dict[str, RawExtremes | None] = {}
    for name in columns:
        groups = _row_group_statistics(md, [name])
        lo = hi = None
        for rows, (st,) in groups or ():
            if st is not None and st.has_min_max:
                lo = st.min_raw if lo is None or st.min_raw < lo else lo
                hi = st.max_raw if hi is None or st.max_raw > hi else hi
            elif st is None or st.null_count != rows:
                groups = None
                break
        out[name] = (lo, hi) if groups is not None and lo is not None and hi is not None else None
    return out


def _row_group_statistics(md: pq.FileMetaData, columns: Sequence[str]) -> list[tuple[int, list]] | None:
    """Per row group of the footer ``md``: (rows, the statistics of each top-level column of
    ``columns``, None where it has none); None when a column is not in the file."""
    index = {md.schema.column(i).path: i for i in range(md.num_columns)}
    if not all(c in index for c in columns):
        return None
    groups = []
    for g in range(md.num_row_groups):
        rg = md.row_group(g)
        groups.append((rg.num_rows, [rg.column(index[c]).statistics for c in columns]))
    return groups


def _mappable(source) -> bool:
    """Whether ``source`` is a local file to read whole memory-mapped: its bytes are then the page
    cache's pages, not a copy into fresh memory (whose first touch, zeroed by the kernel, costs a
    sixth of a cold merged read on the machine measured). Data files are immutable once committed,
    and their size is checked before they are read. A streamed file is read a buffer at a time as
    before: its mapped pages would count in the process's resident memory up to the file's size."""
    return isinstance(source, (str, os.PathLike))


def _streaming_parquet_file(source, metadata=None, read_dictionary=None):
    """A ParquetFile that reads a column chunk a buffer at a time as batches are decoded. By default
    a row group's column chunks are read whole first (``pre_buffer``): memory would grow with the
    row group, i.e. with the file, instead of with the batch."""

    return pq.ParquetFile(
        source,
        metadata=metadata,
        read_dictionary=read_dictionary,
        buffer_size=_STREAM_BUFFER,
        pre_buffer=False,
    )
