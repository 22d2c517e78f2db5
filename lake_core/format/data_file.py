"""Encoding and decoding of Paimon data files (Parquet, ORC, Avro).

Writing follows Java Paimon's physical layout (``KeyValueFileWriterFactory``):

* **Parquet** (``ParquetSchemaConverter``): DECIMAL p<=9 as INT32, p<=18 as INT64, larger as
  FIXED_LEN_BYTE_ARRAY(min bytes); TINYINT/SMALLINT as INT32 Int(8/16); NOT NULL columns
  ``required``; field ids from the fields (``PARQUET:field_id``, ``_KEY_`` = 1073741823 + id,
  ``_SEQUENCE_NUMBER`` 2147483646, ``_VALUE_KIND`` 2147483645); 3-level ``list/element`` and
  ``key_value{key,value}``; TIMESTAMP(0..3) INT64 MILLIS, (4..6) INT64 MICROS, tz-aware with
  isAdjustedToUTC=true. TIMESTAMP(7..9) is written as INT64 NANOS (Java writes INT96, which
  pyarrow can only emit for every timestamp column at once; Java's reader takes INT64 NANOS).
  zstd level 1, 64 KiB data pages, dictionary encoding only for columns whose sampled distinct
  ratio is low.
* **ORC** via ``pyarrow.orc`` (TIME columns stored as int32 millis, as Java does).
* **Avro** (``AvroSchemaConverter``): record ``org.apache.paimon.avro.generated.record``, nullable
  = ``["null", T]`` with default null, TINYINT/SMALLINT/INT ``int``, DECIMAL ``bytes`` +
  ``decimal`` logical type (minimal big-endian two's complement, like ``BigInteger``),
  TIMESTAMP(p<=3/p<=6) ``timestamp-millis``/``-micros``, TIMESTAMP_LTZ ``local-timestamp-*``,
  DATE ``date``, TIME ``time-millis``, MAP with STRING key an Avro map, other keys an array of
  ``{key, value}`` records with logical type ``map``. TIMESTAMP(7..9) has no Java Avro mapping
  (Java refuses it); lake_core writes ``timestamp-nanos`` / ``local-timestamp-nanos`` so its own
  files round-trip. Codec ``zstandard``. The Avro path converts columns to Python lists
  (``to_pylist``) - Avro is row-oriented and meant for small files (postpone buckets, manifests).

Reading matches columns by **name** (pypaimon writes no field ids), reads only the requested
columns, returns missing columns as all-null, and casts to ``arrow_schema`` when given, so files
from other writers (FLBA decimals, INT96 / INT64-nanos timestamps, ``list<element>`` names, ORC
nanosecond timestamps) come back with lake_core's types.
"""
from __future__ import annotations

import contextlib
import io
import os
from typing import Any, Callable, Iterator, Mapping, Optional, Sequence, Union

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lake_core.errors import FormatError, InvalidOptionError, SchemaMismatchError
from lake_core.format.avro import CODEC_ALIASES, read_records, write_records
from lake_core.format.parquet_int96 import has_nanos, leaf_paths, to_int96_columns, write_declaring_int96
from lake_core.option_values import LONG_RANGE, parse_bool, parse_int, parse_memory_size
from lake_core.types import DataField, arrow_field, is_nested

__all__ = [
    "FORMATS",
    "file_extension",
    "write_data_file",
    "read_data_file",
    "read_file_schema",
    "parquet_write_options",
    "avro_schema_for",
]

FORMATS = ("parquet", "orc", "avro")

_DEFAULT_PAGE_SIZE = 64 * 1024
_DEFAULT_ZSTD_LEVEL = 1
_DICT_SAMPLE = 2048  # rows per sampled slice
_DICT_MAX_RATIO = 0.5  # distinct / sampled rows at or below which dictionary encoding pays
_STREAM_BUFFER = 64 * 1024  # bytes of a column chunk read at a time by the streaming reader (a page)


def _check_fmt(fmt: str) -> str:
    f = (fmt or "").strip().lower()
    if f not in FORMATS:
        raise InvalidOptionError(
            f"Unsupported value {fmt!r} for option 'file.format': expected one of {', '.join(FORMATS)}"
        )
    return f


def file_extension(fmt: str) -> str:
    """File name extension (without dot) of a data file format: parquet, orc or avro."""
    return _check_fmt(fmt)


# ------------------------------------------------------------------------------------------------
# options
# ------------------------------------------------------------------------------------------------

_PARQUET_CODECS = {
    "zstd": "zstd", "zstandard": "zstd", "snappy": "snappy", "gzip": "gzip", "lz4": "lz4",
    "brotli": "brotli", "none": "none", "uncompressed": "none",
}
_ORC_CODECS = {
    "zstd": "zstd", "zstandard": "zstd", "snappy": "snappy", "gzip": "zlib", "zlib": "zlib",
    "lz4": "lz4", "none": "uncompressed", "uncompressed": "uncompressed",
}
_AVRO_CODECS = {**CODEC_ALIASES, "gzip": "deflate", "uncompressed": "null"}


def _codec(fmt: str, compression: str, options: Mapping[str, str]) -> tuple[str, Optional[int]]:
    raw = options.get("file.compression", compression) or "none"
    name = str(raw).strip().lower()
    table = {"parquet": _PARQUET_CODECS, "orc": _ORC_CODECS, "avro": _AVRO_CODECS}[fmt]
    if name not in table:
        raise InvalidOptionError(
            f"Unsupported value {raw!r} for option 'file.compression' with file.format={fmt}: "
            f"expected one of {', '.join(sorted(table))}"
        )
    codec = table[name]
    level = None
    if codec in ("zstd", "zstandard"):
        level = parse_int("file.compression.zstd-level",
                          options.get("file.compression.zstd-level", _DEFAULT_ZSTD_LEVEL))
    return codec, level


# ------------------------------------------------------------------------------------------------
# field normalisation
# ------------------------------------------------------------------------------------------------


def _as_arrow_fields(fields: Union[Sequence[Any], pa.Schema]) -> list[pa.Field]:
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


def _conform(table: pa.Table, fields: list[pa.Field]) -> pa.Table:
    """Select ``fields`` from ``table`` by name, cast to their types, check NOT NULL columns."""
    arrays = []
    names = set(table.column_names)
    for f in fields:
        if f.name not in names:
            raise SchemaMismatchError(
                f"Column '{f.name}' is missing from the data to write; data has columns "
                f"{table.column_names}"
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
            raise SchemaMismatchError(
                f"Column '{f.name}' is NOT NULL but the data has {col.null_count} null value(s)"
            )
        arrays.append(col)
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


# ------------------------------------------------------------------------------------------------
# write
# ------------------------------------------------------------------------------------------------


def write_data_file(
    table: pa.Table,
    fields: Union[Sequence[Any], pa.Schema],
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
    ``file.compression.zstd-level``, ``parquet.enable.dictionary``, ``parquet.page.size``
    (alias ``page-size``), ``parquet.row-group.rows``."""
    fmt = _check_fmt(fmt)
    options = options or {}
    afields = _as_arrow_fields(fields)
    data = _conform(table, afields)
    if fmt == "parquet":
        _write_parquet(data, sink, compression, options)
    elif fmt == "orc":
        _write_orc(data, sink, compression, options)
    else:
        _write_avro(data, sink, compression, options)


def _low_cardinality(col: pa.ChunkedArray) -> bool:
    n = len(col)
    if n == 0:
        return False
    if n <= 3 * _DICT_SAMPLE:
        sample = col
    else:
        mid = n // 2 - _DICT_SAMPLE // 2
        sample = pa.chunked_array(
            [c for s in (col.slice(0, _DICT_SAMPLE), col.slice(mid, _DICT_SAMPLE),
                         col.slice(n - _DICT_SAMPLE, _DICT_SAMPLE)) for c in s.chunks],
            type=col.type,
        )
    valid = len(sample) - sample.null_count
    if valid == 0:
        return True
    distinct = pc.count_distinct(sample).as_py()
    return distinct <= _DICT_MAX_RATIO * valid


def _dictionary_columns(table: pa.Table) -> list[str]:
    """Columns worth dictionary encoding: strings / binaries / ints / floats / decimals whose
    sampled distinct ratio is low (measured: dictionary on unique int64 costs ~2x write time and
    +25% size; on 4-value strings it is 4x smaller)."""
    out = []
    for f in table.schema:
        t = f.type
        if is_nested(t) or pa.types.is_boolean(t):
            continue
        if _low_cardinality(table.column(f.name)):
            out.append(f.name)
    return out


def parquet_write_options(table: pa.Table, compression: str = "zstd",
                          options: Mapping[str, str] = {}) -> dict:
    """The keyword arguments lake_core passes to ``pyarrow.parquet.ParquetWriter``."""
    options = options or {}
    codec, level = _codec("parquet", compression, options)
    page_key = "parquet.page.size" if "parquet.page.size" in options else "page-size"
    page = options.get(page_key)
    page_size = parse_memory_size(page_key, page) if page is not None else _DEFAULT_PAGE_SIZE
    use_dict: Union[bool, list[str]]
    dict_opt = options.get("parquet.enable.dictionary")
    if dict_opt is not None and not parse_bool("parquet.enable.dictionary", dict_opt):
        use_dict = False
    else:
        use_dict = _dictionary_columns(table)
        if not use_dict:
            use_dict = False
    kw = dict(
        compression=codec,
        use_dictionary=use_dict,
        data_page_size=page_size,
        version="2.6",
        store_decimal_as_integer=True,
        use_compliant_nested_type=True,
        write_statistics=True,
    )
    if level is not None and codec == "zstd":
        kw["compression_level"] = level
    return kw


def declare_int96_options(kw: dict, schema: pa.Schema, int96_paths: set[str]) -> dict:
    """ParquetWriter options for a file whose ``int96_paths`` leaves are declared INT96 at close
    (TIMESTAMP(7..9) as Java writes them, see lake_core.format.parquet_int96): no statistics for
    those leaves, and no stored Arrow schema (it would name them fixed_size_binary; readers take
    the types from the table schema)."""
    return {**kw, "write_statistics": [p for f in schema for p in leaf_paths(f.name, f.type) if p not in int96_paths],
            "store_schema": False}


def parquet_row_group_rows(options: Mapping[str, str]) -> Optional[int]:
    """``parquet.row-group.rows``: rows per row group of one write (None: pyarrow's default)."""
    rg = options.get("parquet.row-group.rows")
    return None if rg is None else parse_int("parquet.row-group.rows", rg, LONG_RANGE)


def _write_parquet(table: pa.Table, sink, compression: str, options: Mapping[str, str]) -> None:
    import pyarrow.parquet as pq

    kw = parquet_write_options(table, compression, options)
    row_group_size = parquet_row_group_rows(options)
    table, int96_paths = to_int96_columns(table)
    if not int96_paths:
        with pq.ParquetWriter(sink, table.schema, **kw) as w:
            w.write_table(table, row_group_size=row_group_size)
        return
    kw = declare_int96_options(kw, table.schema, int96_paths)
    buf = io.BytesIO()
    with pq.ParquetWriter(buf, table.schema, **kw) as w:
        w.write_table(table, row_group_size=row_group_size)
    if isinstance(sink, (str, os.PathLike)):
        with open(sink, "wb") as f:
            write_declaring_int96(buf.getbuffer(), int96_paths, f)
    else:
        write_declaring_int96(buf.getbuffer(), int96_paths, sink)


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


def _write_orc(table: pa.Table, sink, compression: str, options: Mapping[str, str]) -> None:
    import pyarrow.orc as orc

    codec, _level = _codec("orc", compression, options)
    table = _orc_compatible(table)
    try:
        orc.write_table(table, sink, compression=codec)
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid) as e:
        raise FormatError(f"Cannot write ORC data file: {e}") from e


# -- avro ---------------------------------------------------------------------------------------

_AVRO_ROOT = "org.apache.paimon.avro.generated.record"


def _avro_type(t: pa.DataType, nullable: bool, row_name: str, column: str) -> Any:
    s: Any
    if pa.types.is_boolean(t):
        s = "boolean"
    elif pa.types.is_int8(t) or pa.types.is_int16(t) or pa.types.is_int32(t):
        s = "int"
    elif pa.types.is_int64(t):
        s = "long"
    elif pa.types.is_float32(t):
        s = "float"
    elif pa.types.is_float64(t):
        s = "double"
    elif pa.types.is_string(t) or pa.types.is_large_string(t):
        s = "string"
    elif pa.types.is_decimal(t):
        s = {"type": "bytes", "logicalType": "decimal", "precision": t.precision, "scale": t.scale}
    elif pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        s = "bytes"
    elif pa.types.is_timestamp(t):
        suffix = {"s": "millis", "ms": "millis", "us": "micros", "ns": "nanos"}[t.unit]
        prefix = "local-timestamp-" if t.tz is not None else "timestamp-"
        s = {"type": "long", "logicalType": prefix + suffix}
    elif pa.types.is_date(t):
        s = {"type": "int", "logicalType": "date"}
    elif pa.types.is_time32(t):
        s = {"type": "int", "logicalType": "time-millis"}
    elif pa.types.is_list(t) or pa.types.is_large_list(t):
        vf = t.value_field
        s = {"type": "array", "items": _avro_type(vf.type, vf.nullable, row_name, column)}
    elif pa.types.is_map(t):
        kf, vf = t.key_field, t.item_field
        if pa.types.is_string(kf.type) or pa.types.is_large_string(kf.type):
            s = {"type": "map", "values": _avro_type(vf.type, vf.nullable, row_name, column)}
        else:
            value_schema: dict = {
                "name": "value",
                "type": _avro_type(vf.type, vf.nullable, row_name + "_value", column),
            }
            if vf.nullable:
                value_schema["default"] = None
            s = {
                "type": "array",
                "logicalType": "map",
                "items": {
                    "type": "record",
                    "name": row_name,
                    "fields": [
                        {"name": "key", "type": _avro_type(kf.type, False, row_name + "_key", column)},
                        value_schema,
                    ],
                },
            }
    elif pa.types.is_struct(t):
        s = _avro_record(list(t), row_name, column)
    else:
        raise FormatError(f"Column '{column}' of type {t} cannot be written to Avro")
    return ["null", s] if nullable else s


def _avro_record(fields: Sequence[pa.Field], row_name: str, column: Optional[str] = None) -> dict:
    out = []
    for f in fields:
        fs: dict = {"name": f.name,
                    "type": _avro_type(f.type, f.nullable, row_name + "_" + f.name, column or f.name)}
        if f.nullable:
            fs["default"] = None
        out.append(fs)
    return {"type": "record", "name": row_name, "fields": out}


def avro_schema_for(fields: Union[Sequence[Any], pa.Schema]) -> dict:
    """The Avro schema (as Java ``AvroSchemaConverter`` builds it) of a data file's columns."""
    return _avro_record(_as_arrow_fields(fields), _AVRO_ROOT)


def _decimal_bytes(arr: pa.Array) -> list:
    """Unscaled values of a decimal128 array as minimal big-endian two's complement (Java
    ``BigInteger.toByteArray``); nulls stay None."""
    n = len(arr)
    if n == 0:
        return []
    arr = arr.cast(pa.decimal128(arr.type.precision, arr.type.scale)) if not pa.types.is_decimal128(arr.type) else arr
    buf = arr.buffers()[1]
    raw = np.frombuffer(buf, dtype=np.uint8, count=(arr.offset + n) * 16)[arr.offset * 16:]
    be = raw.reshape(n, 16)[:, ::-1].tobytes()
    valid = arr.is_valid().to_numpy(zero_copy_only=False) if arr.null_count else None
    out: list = [None] * n
    for i in range(n):
        if valid is not None and not valid[i]:
            continue
        v = int.from_bytes(be[i * 16:(i + 1) * 16], "big", signed=True)
        ln = (v if v >= 0 else ~v).bit_length() // 8 + 1
        out[i] = v.to_bytes(ln, "big", signed=True)
    return out


def _prepare_avro_array(arr: pa.Array) -> pa.Array:
    """Turn logical arrow types into the physical values Avro stores (vectorized where possible)."""
    t = arr.type
    if pa.types.is_timestamp(t):
        if t.unit == "s":
            arr = arr.cast(pa.timestamp("ms", tz=t.tz))
        return arr.cast(pa.int64())
    if pa.types.is_date64(t):
        return arr.cast(pa.date32()).cast(pa.int32())
    if pa.types.is_date32(t):
        return arr.cast(pa.int32())
    if pa.types.is_time32(t):
        return arr.cast(pa.time32("ms")).cast(pa.int32())
    if pa.types.is_decimal(t):
        return pa.array(_decimal_bytes(arr), type=pa.binary())
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        if isinstance(arr, pa.ChunkedArray):  # pragma: no cover
            arr = arr.combine_chunks()
        vals = _prepare_avro_array(arr.values)
        if vals is arr.values:
            return arr
        cls = pa.LargeListArray if pa.types.is_large_list(t) else pa.ListArray
        return cls.from_arrays(arr.offsets, vals, mask=arr.is_null() if arr.null_count else None)
    if pa.types.is_map(t):
        keys = _prepare_avro_array(arr.keys)
        items = _prepare_avro_array(arr.items)
        if keys is arr.keys and items is arr.items:
            return arr
        # rebuild as list<struct<key, value>> (to_pylist of it gives dicts)
        entries = pa.StructArray.from_arrays([keys, items], names=["key", "value"])
        return pa.ListArray.from_arrays(arr.offsets, entries, mask=arr.is_null() if arr.null_count else None)
    if pa.types.is_struct(t):
        children = [_prepare_avro_array(arr.field(i)) for i in range(t.num_fields)]
        if all(c is arr.field(i) for i, c in enumerate(children)):
            return arr
        return pa.StructArray.from_arrays(children, fields=[pa.field(t.field(i).name, children[i].type, t.field(i).nullable) for i in range(t.num_fields)],
                                          mask=arr.is_null() if arr.null_count else None)
    return arr


def _nested_fixer(t: pa.DataType, map_fixer: Callable[[pa.DataType], Callable[[Any], Any]]
                  ) -> Optional[Callable[[Any], Any]]:
    """A function converting one Python value of type ``t`` between Arrow's and fastavro's forms,
    or None when no value of ``t`` needs it (the column then skips the per-value pass). Only maps
    differ (``map_fixer(t)`` converts one, recursing for its key and value types); lists and
    structs just carry their children's conversions. Shared by the Avro writer and reader."""
    if pa.types.is_map(t):
        return map_fixer(t)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        ef = _nested_fixer(t.value_type, map_fixer)
        if ef is None:
            return None
        return lambda v, ef=ef: None if v is None else [ef(x) for x in v]
    if pa.types.is_struct(t):
        fixers = [(t.field(i).name, _nested_fixer(t.field(i).type, map_fixer)) for i in range(t.num_fields)]
        fixers = [(n, f) for n, f in fixers if f is not None]
        if not fixers:
            return None

        def fix_struct(v, fixers=fixers):
            if v is None:
                return None
            v = dict(v)
            for n, f in fixers:
                v[n] = f(v.get(n))  # a record lacking the field reads as NULL
            return v
        return fix_struct
    return None


def _map_fixer(t: pa.DataType) -> Optional[Callable[[Any], Any]]:
    """Python post-processing of ``to_pylist`` values needed by fastavro (maps), or None."""
    return _nested_fixer(t, _map_to_avro)


def _map_to_avro(t: pa.DataType) -> Callable[[Any], Any]:
    """A map value for fastavro: an Avro map (dict) for string keys, else the array of
    key/value records Paimon writes."""
    kf, vf = t.key_field, t.item_field
    vfix = _map_fixer(vf.type)
    kfix = _map_fixer(kf.type)
    if pa.types.is_string(kf.type) or pa.types.is_large_string(kf.type):
        def fix_map(v, vfix=vfix):
            if v is None:
                return None
            if vfix is None:
                return {k: x for k, x in _pairs(v)}
            return {k: vfix(x) for k, x in _pairs(v)}
        return fix_map

    def fix_kv(v, vfix=vfix, kfix=kfix):
        if v is None:
            return None
        return [{"key": kfix(k) if kfix else k, "value": vfix(x) if vfix else x} for k, x in _pairs(v)]
    return fix_kv


def _pairs(v):
    # to_pylist of map: list of (k, v) tuples; of a rebuilt list<struct>: list of dicts
    for e in v:
        if isinstance(e, dict):
            yield e["key"], e["value"]
        else:
            yield e[0], e[1]


def _write_avro(table: pa.Table, sink, compression: str, options: Mapping[str, str]) -> None:
    import fastavro

    codec, level = _codec("avro", compression, options)
    if codec == "snappy":
        try:
            import cramjam  # noqa: F401
        except ImportError:
            raise InvalidOptionError(
                "Option 'file.compression'='snappy' with file.format=avro needs the 'cramjam' package; "
                "install it or use zstd"
            ) from None
    schema = fastavro.parse_schema(_avro_record(list(table.schema), _AVRO_ROOT))
    names = table.column_names
    columns = []
    for f, col in zip(table.schema, table.columns):
        arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
        if isinstance(arr, pa.ChunkedArray):  # pragma: no cover - empty chunked
            arr = pa.array([], type=f.type)
        orig_type = arr.type
        arr = _prepare_avro_array(arr)
        values = arr.to_pylist()
        fix = _map_fixer(orig_type)
        if fix is not None:
            values = [fix(v) for v in values]
        columns.append(values)
    records = [dict(zip(names, row)) for row in zip(*columns)] if columns else [{}] * table.num_rows
    data = write_records(records, schema, codec=codec, zstd_level=_DEFAULT_ZSTD_LEVEL if level is None else level,
                         what="Avro data file")
    with _binary_file(sink, "wb") as fo:
        fo.write(data)


@contextlib.contextmanager
def _binary_file(target, mode: str):
    """``target`` as a binary file object: a path is opened in ``mode`` and closed on exit; a
    file-like belongs to the caller and stays open."""
    if isinstance(target, str):
        with open(target, mode) as fo:
            yield fo
    else:
        yield target


# ------------------------------------------------------------------------------------------------
# read
# ------------------------------------------------------------------------------------------------


def _same_type(a: pa.DataType, b: pa.DataType) -> bool:
    return a.equals(b)


def _cast(col: Union[pa.Array, pa.ChunkedArray], target: pa.DataType, name: str):
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


def _assemble(available: dict, n_rows: int, columns: Optional[Sequence[str]],
              arrow_schema: Optional[pa.Schema], file_names: Sequence[str]) -> pa.Table:
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


def read_data_file(
    source,
    fmt: str,
    columns: Optional[Sequence[str]] = None,
    arrow_schema: Optional[pa.Schema] = None,
) -> pa.Table:
    """Decode a data file. ``source``: a local path or a readable, seekable binary file-like.

    Only ``columns`` are read (default: ``arrow_schema``'s names, or every column of the file);
    columns are matched by name; requested columns absent from the file come back all-null (with
    ``arrow_schema``'s type, else type null). With ``arrow_schema``, each column is cast to its
    type there and gets that field (nullability, metadata)."""
    fmt = _check_fmt(fmt)
    if columns is not None:
        columns = list(columns)
    if fmt == "parquet":
        return _read_parquet(source, columns, arrow_schema)
    if fmt == "orc":
        return _read_orc(source, columns, arrow_schema)
    return _read_avro(source, columns, arrow_schema)


def iter_data_file(source, fmt: str, columns: Sequence[str], arrow_schema: pa.Schema,
                   batch_rows: int) -> Iterator[pa.Table]:
    """Decode a data file in chunks of about ``batch_rows`` rows (same column rules as
    :func:`read_data_file`). Parquet streams record batches; ORC and Avro files are decoded whole
    and then sliced."""
    fmt = _check_fmt(fmt)
    columns = list(columns)
    if fmt != "parquet":
        t = read_data_file(source, fmt, columns, arrow_schema)
        for start in range(0, t.num_rows, batch_rows):
            yield t.slice(start, batch_rows)
        return
    try:
        pf = _streaming_parquet_file(source)
        file_names = pf.schema_arrow.names
        read_cols = _wanted(columns, arrow_schema, file_names)
        for batch in pf.iter_batches(batch_size=batch_rows, columns=read_cols, use_threads=True):
            available = {n: batch.column(n) for n in batch.schema.names}
            yield _assemble(available, batch.num_rows, columns, arrow_schema, file_names)
    except (pa.ArrowInvalid, OSError) as e:
        raise FormatError(f"Cannot read Parquet data file {_src_name(source)}: {e}") from e


def _streaming_parquet_file(source):
    """A ParquetFile that reads a column chunk a buffer at a time as batches are decoded. By default
    a row group's column chunks are read whole first (``pre_buffer``): memory would grow with the
    row group, i.e. with the file, instead of with the batch."""
    import pyarrow.parquet as pq

    return pq.ParquetFile(source, buffer_size=_STREAM_BUFFER, pre_buffer=False)


def _wanted(columns, arrow_schema, file_names) -> list[str]:
    if columns is not None:
        want = columns
    elif arrow_schema is not None:
        want = arrow_schema.names
    else:
        want = file_names
    present = set(file_names)
    return [c for c in dict.fromkeys(want) if c in present]


def _read_parquet(source, columns, arrow_schema) -> pa.Table:
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(source)
        file_names = pf.schema_arrow.names
        read_cols = _wanted(columns, arrow_schema, file_names)
        t = pf.read(columns=read_cols, use_threads=True)
    except (pa.ArrowInvalid, OSError) as e:
        raise FormatError(f"Cannot read Parquet data file {_src_name(source)}: {e}") from e
    available = {n: t.column(n) for n in t.column_names}
    return _assemble(available, t.num_rows if read_cols else pf.metadata.num_rows, columns,
                     arrow_schema, file_names)


def _read_orc(source, columns, arrow_schema) -> pa.Table:
    import pyarrow.orc as orc

    try:
        of = orc.ORCFile(source)
        file_names = of.schema.names
        read_cols = _wanted(columns, arrow_schema, file_names)
        t = of.read(columns=read_cols) if read_cols else None
        n_rows = t.num_rows if t is not None else of.nrows
    except (pa.ArrowInvalid, OSError) as e:
        raise FormatError(f"Cannot read ORC data file {_src_name(source)}: {e}") from e
    available = {n: t.column(n) for n in t.column_names} if t is not None else {}
    return _assemble(available, n_rows, columns, arrow_schema, file_names)


def _src_name(source) -> str:
    if isinstance(source, str):
        return f"'{source}'"
    return repr(getattr(source, "name", source))


# -- avro read ---------------------------------------------------------------------------------


def _avro_to_arrow(s: Any) -> tuple[pa.DataType, bool]:
    """Arrow type (and nullability) of an Avro (sub)schema as fastavro returns it."""
    if isinstance(s, list):
        non_null = [x for x in s if x != "null"]
        if len(non_null) != 1:
            raise FormatError(f"Unsupported Avro union {s}")
        t, _ = _avro_to_arrow(non_null[0])
        return t, True
    if isinstance(s, str):
        prim = {"boolean": pa.bool_(), "int": pa.int32(), "long": pa.int64(), "float": pa.float32(),
                "double": pa.float64(), "string": pa.string(), "bytes": pa.binary(), "null": pa.null()}
        if s not in prim:
            raise FormatError(f"Unsupported Avro type {s!r}")
        return prim[s], s == "null"
    if isinstance(s, dict):
        typ = s.get("type")
        lt = s.get("logicalType")
        if typ == "long" and lt:
            unit = {"millis": "ms", "micros": "us", "nanos": "ns"}
            for prefix, tz in (("timestamp-", None), ("local-timestamp-", "UTC")):
                if lt.startswith(prefix) and lt[len(prefix):] in unit:
                    return pa.timestamp(unit[lt[len(prefix):]], tz=tz), False
            if lt == "time-micros":
                return pa.time64("us"), False
        if typ == "int" and lt == "date":
            return pa.date32(), False
        if typ == "int" and lt == "time-millis":
            return pa.time32("ms"), False
        if typ in ("bytes", "fixed") and lt == "decimal":
            return pa.decimal128(int(s["precision"]), int(s.get("scale", 0))), False
        if typ == "fixed":
            return pa.binary(), False
        if typ == "enum":
            return pa.string(), False
        if typ == "array":
            items = s["items"]
            if lt == "map" and isinstance(items, dict) and items.get("type") == "record":
                fs = {f["name"]: f["type"] for f in items["fields"]}
                kt, _ = _avro_to_arrow(fs["key"])
                vt, vn = _avro_to_arrow(fs["value"])
                return pa.map_(pa.field("key", kt, False), pa.field("value", vt, vn)), False
            et, en = _avro_to_arrow(items)
            return pa.list_(pa.field("item", et, en)), False
        if typ == "map":
            vt, vn = _avro_to_arrow(s["values"])
            return pa.map_(pa.field("key", pa.string(), False), pa.field("value", vt, vn)), False
        if typ == "record":
            children = []
            for f in s["fields"]:
                ct, cn = _avro_to_arrow(f["type"])
                children.append(pa.field(f["name"], ct, cn))
            return pa.struct(children), False
        if isinstance(typ, (str, list, dict)):
            return _avro_to_arrow(typ)
    raise FormatError(f"Unsupported Avro schema {s!r}")


def _avro_values_fixer(t: pa.DataType) -> Optional[Callable[[Any], Any]]:
    """Python conversion of fastavro values to what ``pa.array`` accepts for type ``t``
    (nanosecond timestamps stay raw ints, fastavro having no nanos logical type: a cast fixes
    them)."""
    return _nested_fixer(t, _map_from_avro)


def _map_from_avro(t: pa.DataType) -> Callable[[Any], Any]:
    """A map value from fastavro (an Avro map or an array of key/value records) as the list of
    (key, value) pairs ``pa.array`` takes."""
    kfix = _avro_values_fixer(t.key_type)
    vfix = _avro_values_fixer(t.item_type)

    def fix(v, kfix=kfix, vfix=vfix):
        if v is None:
            return None
        items = v.items() if isinstance(v, dict) else ((e["key"], e["value"]) for e in v)
        return [(kfix(k) if kfix else k, vfix(x) if vfix else x) for k, x in items]
    return fix


def _ns_as_int(t: pa.DataType) -> pa.DataType:
    """``t`` with nanosecond timestamps replaced by int64 (how fastavro hands them over)."""
    if pa.types.is_timestamp(t):
        return pa.int64() if t.unit == "ns" else t
    if pa.types.is_list(t):
        vf = t.value_field
        return pa.list_(pa.field(vf.name, _ns_as_int(vf.type), vf.nullable))
    if pa.types.is_map(t):
        return pa.map_(pa.field("key", _ns_as_int(t.key_type), False),
                       pa.field("value", _ns_as_int(t.item_type), t.item_field.nullable))
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, _ns_as_int(f.type), f.nullable) for f in t])
    return t


def _avro_record_schema(ws, source) -> dict:
    """The record schema of an Avro data file. Java Paimon writes the top level as the union
    ``["null", record]`` (its row type is nullable); fastavro reads the rows as plain records."""
    if isinstance(ws, list):
        records = [b for b in ws if isinstance(b, dict) and b.get("type") == "record"]
        if len(records) == 1 and all(b == "null" or b is records[0] for b in ws):
            ws = records[0]
    if not isinstance(ws, dict) or ws.get("type") != "record":
        raise FormatError(f"Avro data file {_src_name(source)} does not hold records")
    return ws


def _avro_records(source) -> tuple[dict, list]:
    """(record schema, records) of an Avro data file, decoded by the shared container codec."""
    with _binary_file(source, "rb") as fo:
        try:
            data = fo.read()
        except OSError as e:
            raise FormatError(f"Cannot read Avro data file {_src_name(source)}: {e}") from e
    ws, records = read_records(data, f"Avro data file {_src_name(source)}")
    return _avro_record_schema(ws, source), records


def _read_avro(source, columns, arrow_schema) -> pa.Table:
    ws, records = _avro_records(source)
    file_fields = {f["name"]: f["type"] for f in ws["fields"]}
    file_names = list(file_fields)
    read_cols = _wanted(columns, arrow_schema, file_names)
    values: dict[str, list] = {c: [] for c in read_cols}
    n_rows = len(records)
    appenders = [(values[c].append, c) for c in read_cols]
    for rec in records:
        if rec is None:
            raise FormatError(f"Avro data file {_src_name(source)} holds a NULL row")
        for app, c in appenders:
            app(rec.get(c))
    available = {}
    for c in read_cols:
        t, _ = _avro_to_arrow(file_fields[c])
        vals = values[c]
        fix = _avro_values_fixer(t)
        if fix is not None:
            vals = [fix(v) for v in vals]
        try:
            if has_nanos(t):
                arr = pa.array(vals, type=_ns_as_int(t)).cast(t)
            else:
                arr = pa.array(vals, type=t)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError) as e:
            raise FormatError(f"Cannot decode column '{c}' of Avro data file {_src_name(source)}: {e}") from e
        available[c] = arr
    return _assemble(available, n_rows, columns, arrow_schema, file_names)


def read_file_schema(source, fmt: str) -> pa.Schema:
    """The arrow schema stored in a data file (names and file types, no data read)."""
    fmt = _check_fmt(fmt)
    if fmt == "parquet":
        import pyarrow.parquet as pq

        return pq.ParquetFile(source).schema_arrow
    if fmt == "orc":
        import pyarrow.orc as orc

        return orc.ORCFile(source).schema
    ws, _ = _avro_records(source)
    return pa.schema([pa.field(f["name"], *_avro_to_arrow(f["type"])) for f in ws["fields"]])

