"""TIMESTAMP(7..9) columns in Parquet as INT96, as Java Paimon writes them.

Java Paimon's ``ParquetSchemaConverter`` writes a timestamp of precision 7 to 9 as the physical
type INT96 (8 bytes of nanoseconds of the day, then 4 bytes of Julian day, little-endian) and
its reader expects exactly that: Java releases before the change "Support reading Parquet
TIMESTAMP(NANOS) as timestamp(9)" (apache/paimon#7845, May 2026, after 1.4) fail on INT64
nanoseconds ("Unexpected type: INT64"). Precisions up to 6 must stay INT64 millis/micros: those
readers cannot read INT96 there.

pyarrow can write INT96 only for every timestamp column of a file at once
(``use_deprecated_int96_timestamps``), so the nanosecond columns are handed to pyarrow as
FIXED_LEN_BYTE_ARRAY(12) holding the INT96 bytes (no statistics, whose byte order would be
meaningless), and the file footer is rewritten to declare those leaves INT96: the page bytes of a
PLAIN or dictionary-encoded FIXED_LEN_BYTE_ARRAY(12) column and of an INT96 column are the same.
The footer is Thrift compact protocol, decoded and re-encoded generically below.
"""

from __future__ import annotations

import io
import struct
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

INT96_WIDTH = 12
_JULIAN_EPOCH_DAY = 2_440_588  # Julian day number of 1970-01-01
_NANOS_PER_DAY = 86_400 * 1_000_000_000

# Parquet Thrift: Type enum values, and the field ids used here.
_TYPE_INT96, _TYPE_FIXED_LEN_BYTE_ARRAY = 3, 7
_FMD_SCHEMA, _FMD_ROW_GROUPS = 2, 4
_SE_TYPE, _SE_TYPE_LENGTH, _SE_NAME, _SE_NUM_CHILDREN = 1, 2, 4, 5
_RG_COLUMNS, _CC_META, _CMD_TYPE, _CMD_PATH = 1, 3, 1, 3


def is_nanos(t: pa.DataType) -> bool:
    return pa.types.is_timestamp(t) and t.unit == "ns"


def has_nanos(t: pa.DataType) -> bool:
    if is_nanos(t):
        return True
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return has_nanos(t.value_type)
    if pa.types.is_map(t):
        return has_nanos(t.key_type) or has_nanos(t.item_type)
    if pa.types.is_struct(t):
        return any(has_nanos(t.field(i).type) for i in range(t.num_fields))
    return False


# -- values -----------------------------------------------------------------------------------------


def _int96_array(arr: pa.Array) -> pa.Array:
    """Nanosecond timestamps -> FIXED_LEN_BYTE_ARRAY(12) of their INT96 bytes (vectorized)."""
    nanos = arr.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
    days, nanos_of_day = np.divmod(nanos, _NANOS_PER_DAY)
    words = np.empty((len(nanos), 3), dtype="<i4")  # 8 bytes nanos of day, 4 bytes Julian day
    words[:, :2] = nanos_of_day.astype("<i8").view("<i4").reshape(-1, 2)
    words[:, 2] = days + _JULIAN_EPOCH_DAY
    validity = None
    if arr.null_count:
        validity = pa.array(arr.is_valid()).buffers()[1]  # a bitmap starting at offset 0
    return pa.Array.from_buffers(
        pa.binary(INT96_WIDTH), len(arr), [validity, pa.py_buffer(words)], null_count=arr.null_count
    )


def _convert(arr: pa.Array, t: pa.DataType) -> pa.Array:
    """``arr`` with its nanosecond leaves as INT96 bytes. ``t`` is the schema's type: field
    metadata (Paimon field ids of nested fields) comes from it, not from the chunk's type."""
    if not has_nanos(t):
        return arr
    if is_nanos(t):
        return _int96_array(arr)
    mask = arr.is_null() if arr.null_count else None
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        cls = pa.ListArray if pa.types.is_list(t) else pa.LargeListArray
        offsets = arr.offsets
        start, stop = offsets[0].as_py(), offsets[-1].as_py()
        values = _convert(arr.values.slice(start, stop - start), t.value_type)
        vf = t.value_field
        return cls.from_arrays(
            pc.subtract(offsets, offsets[0]),
            values,
            mask=mask,
            type=(pa.list_ if cls is pa.ListArray else pa.large_list)(
                pa.field(vf.name, values.type, vf.nullable, vf.metadata)
            ),
        )
    if pa.types.is_map(t):
        offsets = arr.offsets
        start, stop = offsets[0].as_py(), offsets[-1].as_py()
        return pa.MapArray.from_arrays(
            pc.subtract(offsets, offsets[0]),
            _convert(arr.keys.slice(start, stop - start), t.key_type),
            _convert(arr.items.slice(start, stop - start), t.item_type),
            mask=mask,
        )
    children = [_convert(arr.field(i), t.field(i).type) for i in range(t.num_fields)]  # struct
    return pa.StructArray.from_arrays(
        children,
        fields=[
            pa.field(t.field(i).name, c.type, t.field(i).nullable, t.field(i).metadata) for i, c in enumerate(children)
        ],
        mask=mask,
    )


def leaf_paths(name: str, t: pa.DataType, nanos_only: bool = False) -> list[str]:
    """Dotted Parquet paths of a column's leaves (pyarrow's compliant nested names), or only of
    its nanosecond-timestamp leaves."""
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return leaf_paths(f"{name}.list.element", t.value_type, nanos_only)
    if pa.types.is_map(t):
        return leaf_paths(f"{name}.key_value.key", t.key_type, nanos_only) + leaf_paths(
            f"{name}.key_value.value", t.item_type, nanos_only
        )
    if pa.types.is_struct(t):
        return [
            p for i in range(t.num_fields) for p in leaf_paths(f"{name}.{t.field(i).name}", t.field(i).type, nanos_only)
        ]
    return [name] if is_nanos(t) or not nanos_only else []


def to_int96_columns(table: pa.Table) -> tuple[pa.Table, set[str]]:
    """``table`` with nanosecond timestamps (also nested) as FIXED_LEN_BYTE_ARRAY(12), and the
    dotted leaf paths to declare INT96 in the footer (empty: nothing to do)."""
    paths: set[str] = set()
    cols, fields = [], []
    for f, col in zip(table.schema, table.columns):
        if has_nanos(f.type):
            paths.update(leaf_paths(f.name, f.type, nanos_only=True))
            col = pa.chunked_array(
                [_convert(c, f.type) for c in col.chunks] or [_convert(pa.array([], f.type), f.type)]
            )
            f = pa.field(f.name, col.type, f.nullable, metadata=f.metadata)
        cols.append(col)
        fields.append(f)
    if not paths:
        return table, paths
    return pa.Table.from_arrays(cols, schema=pa.schema(fields, metadata=table.schema.metadata)), paths


# -- Thrift compact protocol (just enough for a Parquet footer) ------------------------------------------

_STOP, _TRUE, _FALSE, _BYTE, _I16, _I32, _I64, _DOUBLE, _BINARY, _LIST, _SET, _MAP, _STRUCT = range(13)


class _Reader:
    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def byte(self) -> int:
        b = self.data[self.pos]
        self.pos += 1
        return b

    def varint(self) -> int:
        shift = out = 0
        while True:
            b = self.byte()
            out |= (b & 0x7F) << shift
            if not b & 0x80:
                return out
            shift += 7

    def zigzag(self) -> int:
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def value(self, ttype: int) -> Any:
        if ttype in (_TRUE, _FALSE):
            return ttype == _TRUE
        if ttype == _BYTE:
            return self.byte()
        if ttype in (_I16, _I32, _I64):
            return self.zigzag()
        if ttype == _DOUBLE:
            self.pos += 8
            return self.data[self.pos - 8 : self.pos]
        if ttype == _BINARY:
            n = self.varint()
            self.pos += n
            return self.data[self.pos - n : self.pos]
        if ttype in (_LIST, _SET):
            head = self.byte()
            size, etype = head >> 4, head & 0x0F
            if size == 15:
                size = self.varint()
            if etype in (_TRUE, _FALSE):
                return etype, [self.byte() == 1 for _ in range(size)]
            return etype, [self.value(etype) for _ in range(size)]
        if ttype == _MAP:
            size = self.varint()
            kv = self.byte() if size else 0
            return kv, [(self.value(kv >> 4), self.value(kv & 0x0F)) for _ in range(size)]
        if ttype == _STRUCT:
            fields: list = []
            last = 0
            while True:
                head = self.byte()
                if head == _STOP:
                    return fields
                delta, ftype = head >> 4, head & 0x0F
                fid = last + delta if delta else self.zigzag()
                fields.append([fid, ftype, self.value(ftype)])
                last = fid
        raise ValueError(f"unknown Thrift compact type {ttype}")


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        if n < 0x80:
            out.append(n)
            return bytes(out)
        out.append((n & 0x7F) | 0x80)
        n >>= 7


def _zigzag(n: int) -> bytes:
    return _varint((n << 1) ^ (n >> 63))


def _encode(ttype: int, v: Any, out: bytearray) -> None:
    if ttype == _BYTE:
        out.append(v)
    elif ttype in (_I16, _I32, _I64):
        out += _zigzag(v)
    elif ttype == _DOUBLE:
        out += v
    elif ttype == _BINARY:
        out += _varint(len(v)) + v
    elif ttype in (_LIST, _SET):
        etype, items = v
        out.append((len(items) << 4 | etype) if len(items) < 15 else (0xF0 | etype))
        if len(items) >= 15:
            out += _varint(len(items))
        for item in items:
            if etype in (_TRUE, _FALSE):
                out.append(1 if item else 2)
            else:
                _encode(etype, item, out)
    elif ttype == _MAP:
        kv, items = v
        out += _varint(len(items))
        if items:
            out.append(kv)
        for k, x in items:
            _encode(kv >> 4, k, out)
            _encode(kv & 0x0F, x, out)
    elif ttype == _STRUCT:
        last = 0
        for fid, ftype, value in v:
            if ftype in (_TRUE, _FALSE):
                ftype = _TRUE if value else _FALSE
            if 0 < fid - last <= 15:
                out.append((fid - last) << 4 | ftype)
            else:
                out.append(ftype)
                out += _zigzag(fid)
            if ftype not in (_TRUE, _FALSE):
                _encode(ftype, value, out)
            last = fid
        out.append(_STOP)
    elif ttype not in (_TRUE, _FALSE):
        raise ValueError(f"unknown Thrift compact type {ttype}")


def _field(struct_: list, fid: int):
    return next((f for f in struct_ if f[0] == fid), None)


def _declare_int96(footer: bytes, paths: set[str]) -> bytes:
    fmd = _Reader(footer).value(_STRUCT)
    # Schema elements are a depth-first list; num_children gives each leaf's path.
    elements = _field(fmd, _FMD_SCHEMA)[2][1]

    def walk(i: int, prefix: tuple) -> int:
        el = elements[i]
        path = prefix + (_field(el, _SE_NAME)[2].decode(),)
        children = _field(el, _SE_NUM_CHILDREN)
        if children is not None and children[2] > 0:
            i += 1
            for _ in range(children[2]):
                i = walk(i, path)
            return i
        if ".".join(path[1:]) in paths:  # path[0] is the root
            type_field = _field(el, _SE_TYPE)
            if type_field is None or type_field[2] != _TYPE_FIXED_LEN_BYTE_ARRAY:
                raise ValueError(f"Parquet leaf {'.'.join(path[1:])} is not FIXED_LEN_BYTE_ARRAY(12)")
            type_field[2] = _TYPE_INT96
            el[:] = [f for f in el if f[0] != _SE_TYPE_LENGTH]
        return i + 1

    walk(0, ())
    for rg in _field(fmd, _FMD_ROW_GROUPS)[2][1]:
        for chunk in _field(rg, _RG_COLUMNS)[2][1]:
            meta = _field(chunk, _CC_META)[2]
            if ".".join(p.decode() for p in _field(meta, _CMD_PATH)[2][1]) in paths:
                _field(meta, _CMD_TYPE)[2] = _TYPE_INT96
    out = bytearray()
    _encode(_STRUCT, fmd, out)
    return bytes(out)


def write_declaring_int96(parquet: memoryview | bytes, paths: set[str], sink) -> None:
    """Write the Parquet file ``parquet`` to ``sink`` (a binary file-like) with the
    FIXED_LEN_BYTE_ARRAY(12) leaves at ``paths`` declared INT96: the pages are copied as they
    are, only the footer changes."""
    parquet = memoryview(parquet)
    if bytes(parquet[-4:]) != b"PAR1":
        raise ValueError("not a Parquet file")
    footer_len = struct.unpack("<i", parquet[-8:-4])[0]
    start = len(parquet) - 8 - footer_len
    footer = _declare_int96(bytes(parquet[start:-8]), paths)
    sink.write(parquet[:start])
    sink.write(footer)
    sink.write(struct.pack("<i", len(footer)))
    sink.write(b"PAR1")


def declare_int96(parquet: memoryview | bytes, paths: set[str]) -> bytes:
    """:func:`write_declaring_int96` into a new ``bytes``."""
    out = io.BytesIO()
    write_declaring_int96(parquet, paths, out)
    return out.getvalue()
