"""Avro data files (schema in lake_core.format.avro_file_schema, container in lake_core.format.avro).
Values are converted to what Avro stores (decimals as minimal big-endian two's complement, like
``BigInteger``; timestamps, dates and times as their integers; maps as Avro maps or key/value
records) and back. Codec ``zstandard``. This path converts columns to Python lists
(``to_pylist``): Avro is row-oriented and meant for small files (postpone buckets, manifests).
Reads take the container a few blocks at a time, whole or streamed (:func:`iter_avro`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import fastavro
import numpy as np
import pyarrow as pa

from lake_core.errors import FormatError, InvalidOptionError
from lake_core.format.avro import RecordReader, write_records
from lake_core.format.avro_file_schema import avro_schema_for, avro_to_arrow
from lake_core.format.conform import assemble_columns, columns_to_read
from lake_core.format.file_format import DEFAULT_ZSTD_LEVEL, choose_codec
from lake_core.format.file_source import binary_file, source_name
from lake_core.format.parquet_int96 import has_nanos

__all__ = ["write_avro", "read_avro", "iter_avro", "avro_file_schema"]


def _decimal_bytes(arr: pa.Array) -> list:
    """Unscaled values of a decimal128 array as minimal big-endian two's complement (Java
    ``BigInteger.toByteArray``); nulls stay None."""
    n = len(arr)
    if n == 0:
        return []
    arr = arr.cast(pa.decimal128(arr.type.precision, arr.type.scale)) if not pa.types.is_decimal128(arr.type) else arr
    buf = arr.buffers()[1]
    raw = np.frombuffer(buf, dtype=np.uint8, count=(arr.offset + n) * 16)[arr.offset * 16 :]
    be = raw.reshape(n, 16)[:, ::-1].tobytes()
    valid = arr.is_valid().to_numpy(zero_copy_only=False) if arr.null_count else None
    out: list = [None] * n
    for i in range(n):
        if valid is not None and not valid[i]:
            continue
        v = int.from_bytes(be[i * 16 : (i + 1) * 16], "big", signed=True)
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
        return pa.StructArray.from_arrays(
            children,
            fields=[pa.field(t.field(i).name, children[i].type, t.field(i).nullable) for i in range(t.num_fields)],
            mask=arr.is_null() if arr.null_count else None,
        )
    return arr


def _nested_fixer(
    t: pa.DataType, map_fixer: Callable[[pa.DataType], Callable[[Any], Any]]
) -> Callable[[Any], Any] | None:
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
        element: Callable[[Any], Any] = ef

        def fix_list(v):
            return None if v is None else [element(x) for x in v]

        return fix_list
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


def _map_fixer(t: pa.DataType) -> Callable[[Any], Any] | None:
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


def write_avro(table: pa.Table, sink, compression: str, options: Mapping[str, str]) -> None:

    codec, level = choose_codec("avro", compression, options)
    if codec == "snappy":
        try:
            import cramjam  # noqa: F401, PLC0415 - probing that the snappy codec is installed
        except ImportError:
            raise InvalidOptionError(
                "Option 'file.compression'='snappy' with file.format=avro needs the 'cramjam' package; "
                "install it or use zstd"
            ) from None
    schema = fastavro.parse_schema(avro_schema_for(table.schema))
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
    data = write_records(
        records, schema, codec=codec, zstd_level=DEFAULT_ZSTD_LEVEL if level is None else level, what="Avro data file"
    )
    with binary_file(sink, "wb") as fo:
        fo.write(data)


def _avro_values_fixer(t: pa.DataType) -> Callable[[Any], Any] | None:
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
        return pa.map_(
            pa.field("key", _ns_as_int(t.key_type), False),
            pa.field("value", _ns_as_int(t.item_type), t.item_field.nullable),
        )
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
        raise FormatError(f"Avro data file {source_name(source)} does not hold records")
    return ws


def _open_records(fo, source) -> tuple[RecordReader, dict]:
    """The container reader of an Avro data file (its header read) and its record schema."""
    reader = RecordReader(fo, f"Avro data file {source_name(source)}")
    return reader, _avro_record_schema(reader.writer_schema, source)


@dataclass(frozen=True)
class _RecordColumns:
    """How an Avro data file's records become the requested Arrow columns: the file's columns to
    take, their Arrow types and per-value conversions, worked out once per file and applied to the
    whole file or to each chunk of it alike."""

    source: Any
    read_cols: list[str]
    types: list[pa.DataType]
    fixers: list[Callable[[Any], Any] | None]
    columns: Sequence[str] | None
    arrow_schema: pa.Schema | None
    file_names: list[str]

    @classmethod
    def of(cls, ws: dict, source, columns, arrow_schema) -> _RecordColumns:
        file_fields = {f["name"]: f["type"] for f in ws["fields"]}
        file_names = list(file_fields)
        read_cols = columns_to_read(columns, arrow_schema, file_names)
        types = [avro_to_arrow(file_fields[c])[0] for c in read_cols]
        return cls(source, read_cols, types, [_avro_values_fixer(t) for t in types], columns, arrow_schema, file_names)

    def table(self, records: list) -> pa.Table:
        values: dict[str, list] = {c: [] for c in self.read_cols}
        appenders = [(values[c].append, c) for c in self.read_cols]
        for rec in records:
            if rec is None:
                raise FormatError(f"Avro data file {source_name(self.source)} holds a NULL row")
            for app, c in appenders:
                app(rec.get(c))
        available = {}
        for c, t, fix in zip(self.read_cols, self.types, self.fixers):
            vals = values.pop(c)
            if fix is not None:
                vals = [fix(v) for v in vals]
            try:
                if has_nanos(t):
                    arr = pa.array(vals, type=_ns_as_int(t)).cast(t)
                else:
                    arr = pa.array(vals, type=t)
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError) as e:
                raise FormatError(
                    f"Cannot decode column '{c}' of Avro data file {source_name(self.source)}: {e}"
                ) from e
            available[c] = arr
        return assemble_columns(available, len(records), self.columns, self.arrow_schema, self.file_names)


# Whole-file reads decode the records in chunks too: measured on a 1M-row file, 8192-record chunks
# are ~10% faster than one pass over every record (the Python lists stay in cache). The chunks are
# then combined, so the table is laid out as a one-pass read's (one chunk per column).
_WHOLE_FILE_CHUNK = 8192


def read_avro(source, columns, arrow_schema) -> pa.Table:
    with binary_file(source, "rb") as fo:
        reader, ws = _open_records(fo, source)
        decode = _RecordColumns.of(ws, source, columns, arrow_schema)
        chunks = [decode.table(records) for records in reader.iter_chunks(_WHOLE_FILE_CHUNK)]
    return pa.concat_tables(chunks).combine_chunks() if chunks else decode.table([])


def iter_avro(source, columns, arrow_schema, batch_rows: int) -> Iterator[pa.Table]:
    """An Avro data file as tables of at most ``batch_rows`` rows, read and decoded a few blocks
    at a time (the container's blocks: ``SYNC_INTERVAL`` bytes each as Paimon writes them)."""
    with binary_file(source, "rb") as fo:
        reader, ws = _open_records(fo, source)
        decode = _RecordColumns.of(ws, source, columns, arrow_schema)
        for records in reader.iter_chunks(batch_rows):
            yield decode.table(records)


def avro_file_schema(source) -> pa.Schema:
    """The arrow schema of an Avro data file's records (names and file types; only the header is
    read)."""
    with binary_file(source, "rb") as fo:
        _, ws = _open_records(fo, source)
    return pa.schema([pa.field(f["name"], *avro_to_arrow(f["type"])) for f in ws["fields"]])
