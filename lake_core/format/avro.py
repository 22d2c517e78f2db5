"""The Avro object container codec shared by data files and manifests.

Java Paimon writes both through Avro's ``DataFileWriter`` (``AvroFileFormat``, ``ManifestFile``):
magic ``Obj\\x01``, a header map (``avro.schema``, ``avro.codec``), a 16-byte sync marker, then
blocks of (record count, byte size, compressed records, sync). Here, once for both:

* the framing (zig-zag varints, header, blocks), read incrementally from a file object, so a file
  can be decoded whole or a few blocks at a time (:class:`RecordReader`), and a damaged file fails
  with a :class:`FormatError` naming the file and what was being read;
* the block codecs ``null``, ``deflate``, ``zstandard``, ``snappy``, ``bzip2``, ``xz``. zstd goes
  through the ``zstandard`` package: fastavro 1.13 only supports it through ``backports.zstd``,
  and Java's zstd-jni stream writes frames without a content size, several per block;
* records are encoded and decoded by fastavro on uncompressed blocks, never through fastavro's
  own codec registry.
"""

from __future__ import annotations

import bz2
import json
import lzma
import os
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from io import BytesIO
from typing import Any

import fastavro
import zstandard

from lake_core.errors import FormatError, LakeError
from lake_core.format.avro_columns import block_bounds

__all__ = [
    "CODEC_ALIASES",
    "RecordReader",
    "SYNC_INTERVAL",
    "build_container",
    "parse_container",
    "read_container_schema",
    "read_records",
    "schema_text",
    "write_records",
    "zigzag_varint",
]

SYNC_INTERVAL = 64000  # Java DataFileConstants.DEFAULT_SYNC_INTERVAL
_MAGIC = b"Obj\x01"

#: Codec names accepted when writing, and the Avro ``avro.codec`` value each one writes.
CODEC_ALIASES = {
    "zstd": "zstandard",
    "zstandard": "zstandard",
    "null": "null",
    "none": "null",
    "deflate": "deflate",
    "snappy": "snappy",
    "bzip2": "bzip2",
    "xz": "xz",
}

# ---- framing ----------------------------------------------------------------------------------


def _write_long(out: bytearray, n: int) -> None:
    n = (n << 1) ^ (n >> 63)
    while n & ~0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def zigzag_varint(n: int) -> bytes:
    """Avro's encoding of a long: zig-zag, then a little-endian base-128 varint."""
    out = bytearray()
    _write_long(out, n)
    return bytes(out)


class _Input:
    """The framing's one reader: an Avro container read incrementally from a binary file object
    (a header, then a block at a time), whether the whole file is in memory (``BytesIO``) or is a
    local or remote file. Lengths are checked against the file's size before they are read, so a
    damaged length fails as truncation instead of allocating it."""

    __slots__ = ("_fo", "_pos", "_end")

    def __init__(self, fo) -> None:
        self._fo = fo
        try:
            self._pos = fo.tell()
            self._end = fo.seek(0, os.SEEK_END)
            fo.seek(self._pos)
        except (AttributeError, OSError, ValueError):  # not seekable: lengths are checked as read
            self._pos, self._end = 0, None

    def read_up_to(self, n: int) -> bytes:
        data = self._fo.read(n)
        while len(data) < n:  # a raw stream may return less than asked before its end
            more = self._fo.read(n - len(data))
            if not more:
                break
            data += more
        self._pos += len(data)
        return data

    def read_exact(self, n: int, what: str) -> bytes:
        if n < 0 or (self._end is not None and n > self._end - self._pos):
            raise FormatError(f"truncated Avro file: {what} runs past the end of the data")
        data = self.read_up_to(n)
        if len(data) != n:
            raise FormatError(f"truncated Avro file: {what} runs past the end of the data")
        return data

    def read_long(self, *, end_ok: bool = False) -> int | None:
        """An Avro long; with ``end_ok``, None at the end of the file (where a block would start)."""
        shift = 0
        acc = 0
        read = self._fo.read
        while True:
            b = read(1)
            if not b:
                if end_ok and not shift:
                    return None
                raise FormatError("truncated Avro file: a varint runs past the end of the data")
            self._pos += 1
            b = b[0]
            acc |= (b & 0x7F) << shift
            if not b & 0x80:
                break
            shift += 7
            if shift > 63:
                raise FormatError("corrupt Avro file: varint longer than 10 bytes")
        return (acc >> 1) ^ -(acc & 1)

    def read_count(self) -> int:
        """A long that must be there (a length or a count)."""
        n = self.read_long()
        if n is None:  # only with end_ok; kept for the type checker
            raise FormatError("truncated Avro file: a varint runs past the end of the data")
        return n

    def read_bytes(self) -> bytes:
        return self.read_exact(self.read_count(), "a byte string")


def _read_header(inp: _Input) -> tuple[dict[str, bytes], bytes]:
    """(metadata, sync marker) of the container ``inp`` starts with."""
    magic = inp.read_up_to(4)
    if magic != _MAGIC:
        raise FormatError(f"not an Avro object container file (bad magic bytes {magic!r})")
    meta: dict[str, bytes] = {}
    while True:
        count = inp.read_count()
        if count == 0:
            break
        if count < 0:
            count = -count
            inp.read_long()  # byte size of the map block
        for _ in range(count):
            key = inp.read_bytes()
            meta[key.decode("utf-8", "replace")] = inp.read_bytes()
    sync = inp.read_up_to(16)
    if len(sync) != 16:
        raise FormatError("truncated Avro file: header ends before its sync marker")
    return meta, sync


def _read_blocks(inp: _Input, sync: bytes) -> Iterator[tuple[int, bytes]]:
    """The data blocks after the header, one (record count, payload) at a time."""
    while True:
        count = inp.read_long(end_ok=True)
        if count is None:
            return
        if count < 0:
            raise FormatError(f"corrupt Avro file: a data block claims {count} records")
        payload = inp.read_bytes()
        if inp.read_up_to(16) != sync:
            raise FormatError("corrupt Avro file: a data block is not followed by the sync marker")
        yield count, payload


def in_memory(data: Any) -> BytesIO:
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise FormatError(f"expected the bytes of an Avro file, got {type(data).__name__}")
    return BytesIO(data)


def parse_container(data: bytes) -> tuple[dict[str, bytes], bytes, list[tuple[int, bytes]]]:
    """Split an Avro object container into (metadata, sync marker, [(record count, payload)])."""
    inp = _Input(in_memory(data))
    meta, sync = _read_header(inp)
    return meta, sync, list(_read_blocks(inp, sync))


def build_container(schema_json: bytes, codec: bytes, sync: bytes, blocks: list[tuple[int, bytes]]) -> bytes:
    """An Avro object container from its schema text, codec name, sync marker and blocks."""
    out = bytearray(_MAGIC)
    _write_long(out, 2)
    for key, value in ((b"avro.schema", schema_json), (b"avro.codec", codec)):
        _write_long(out, len(key))
        out += key
        _write_long(out, len(value))
        out += value
    _write_long(out, 0)
    out += sync
    for count, payload in blocks:
        _write_long(out, count)
        _write_long(out, len(payload))
        out += payload
        out += sync
    return bytes(out)


def schema_text(schema: Any) -> bytes:
    """Java ``Schema.toString()``: compact JSON, keys in the order given."""
    return json.dumps(schema, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


# ---- codecs -------------------------------------------------------------------------------------


def _snappy_module() -> tuple[Callable[[bytes], bytes], Callable[[bytes], bytes]]:
    try:
        import cramjam  # noqa: PLC0415 - probing which snappy codec is installed

        return (
            lambda b: bytes(cramjam.snappy.compress_raw(b)),
            lambda b: bytes(cramjam.snappy.decompress_raw(b)),
        )
    except ImportError:
        pass
    try:
        import snappy  # noqa: PLC0415 - the fallback codec, optional

        return snappy.compress, snappy.decompress
    except ImportError:
        raise FormatError(
            "this Avro file uses the snappy codec; install 'cramjam' or 'python-snappy' to read "
            "or write it (Paimon's default codec is zstd)"
        ) from None


def _zstd_decompress(payload: bytes) -> bytes:
    # Java's zstd-jni stream writes frames without a content size, so ZstdDecompressor.decompress
    # cannot be used; read every frame of the block.
    dctx = zstandard.ZstdDecompressor()
    try:
        return dctx.decompressobj(read_across_frames=True).decompress(payload)
    except TypeError:  # zstandard < 0.23: no read_across_frames on decompressobj
        return dctx.stream_reader(BytesIO(payload), read_across_frames=True).read()


def _decompress(codec: str, payload: bytes) -> bytes:
    if codec == "null":
        return payload
    try:
        if codec == "zstandard":
            return _zstd_decompress(payload)
        if codec == "deflate":
            return zlib.decompress(payload, -15)
        if codec == "snappy":
            _, decompress = _snappy_module()
            raw = decompress(payload[:-4])
            if zlib.crc32(raw) != int.from_bytes(payload[-4:], "big"):
                raise FormatError("corrupt Avro snappy block: CRC32 mismatch")
            return raw
        if codec == "bzip2":
            return bz2.decompress(payload)
        if codec == "xz":
            return lzma.decompress(payload)
    except FormatError:
        raise
    except Exception as e:  # zstd/zlib/bz2/lzma errors
        raise FormatError(f"corrupt Avro {codec} block: {e}") from e
    raise FormatError(
        f"unsupported Avro codec {codec!r}; lake_core reads null, deflate, zstandard, snappy, bzip2 and xz"
    )


def _compressor(codec: str, zstd_level: int) -> Callable[[bytes], bytes]:
    if codec == "null":
        return lambda b: b
    if codec == "zstandard":
        return zstandard.ZstdCompressor(level=zstd_level).compress
    if codec == "deflate":

        def deflate(b: bytes) -> bytes:
            c = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, -15)
            return c.compress(b) + c.flush()

        return deflate
    if codec == "snappy":
        compress, _ = _snappy_module()
        return lambda b: compress(b) + zlib.crc32(b).to_bytes(4, "big")
    if codec == "bzip2":
        return bz2.compress
    if codec == "xz":
        return lzma.compress
    raise AssertionError(codec)  # pragma: no cover


# ---- records ------------------------------------------------------------------------------------


def _strip_logical_types(schema: Any) -> Any:
    """Drop ``logicalType`` annotations so fastavro hands back raw ints/bytes (fast, lossless)."""
    if isinstance(schema, dict):
        out = {}
        for k, v in schema.items():
            if k == "logicalType":
                continue
            if k in ("type", "items", "values"):
                out[k] = _strip_logical_types(v)
            elif k == "fields":
                out[k] = [{**f, "type": _strip_logical_types(f.get("type"))} if isinstance(f, dict) else f for f in v]
            else:
                out[k] = v
        return out
    if isinstance(schema, list):
        return [_strip_logical_types(s) for s in schema]
    return schema


def _schema_json(meta: dict[str, bytes]) -> Any:
    try:
        return json.loads(meta["avro.schema"])
    except KeyError:
        raise FormatError("Avro file header has no 'avro.schema' entry") from None
    except ValueError as e:
        raise FormatError(f"Avro header schema is not valid JSON: {e}") from e


def read_container_schema(data: bytes) -> Any:
    """The writer schema stored in an Avro file's header, parsed from JSON (for inspection)."""
    meta, _, _ = parse_container(data)
    return _schema_json(meta)


class RecordReader:
    """The records of an Avro container, read from a binary file object (a local file, a remote
    stream, or ``BytesIO`` of the whole file) a block at a time: the header on construction, then
    :meth:`read_all` or :meth:`iter_chunks`. ``what`` names the file in every error (a
    :class:`FormatError`). Without ``logical_types`` dates, timestamps and decimals come back as the
    raw ints and bytes they are stored as.

    The decompressed blocks of a chunk (of the whole file for :meth:`read_all`) are re-framed as
    one uncompressed block and decoded by fastavro's compiled reader in one pass (what fastavro
    decodes never goes through its own codec registry)."""

    def __init__(self, fo, what: str, *, logical_types: bool = True) -> None:
        self._what = what
        with self._naming_file():
            self._inp = _Input(fo)
            meta, self._sync = _read_header(self._inp)
            schema_json = _schema_json(meta)
        self._codec = meta.get("avro.codec", b"null").decode("utf-8", "replace") or "null"
        if not logical_types:
            schema_json = _strip_logical_types(schema_json)
        self._schema_text = schema_text(schema_json)
        self._writer_schema: Any = None

    @property
    def writer_schema(self) -> Any:
        """fastavro's parsed writer schema (the header's, through fastavro's own parser)."""
        if self._writer_schema is None:
            self._decode(0, [])
        return self._writer_schema

    @contextmanager
    def _naming_file(self) -> Iterator[None]:
        try:
            yield
        except FormatError as e:
            raise FormatError(f"{self._what}: {e}") from e
        except OSError as e:
            raise FormatError(f"{self._what}: cannot read it: {e}") from e

    def _blocks(self) -> Iterator[tuple[int, bytes]]:
        """(record count, decompressed payload) of each non-empty block, in order."""
        blocks = _read_blocks(self._inp, self._sync)
        while True:
            with self._naming_file():
                block = next(blocks, None)
                if block is None:
                    return
                count, payload = block
                if count:
                    payload = _decompress(self._codec, payload)
            if count:
                yield count, payload

    def _plain(self, total: int, parts: list[bytes]) -> bytes:
        return build_container(self._schema_text, b"null", self._sync, [(total, b"".join(parts))] if total else [])

    def plain_container(self) -> tuple[Any, int, bytes]:
        """(the writer schema as JSON, logical types stripped as configured; the record count;
        every record re-framed as one uncompressed container), for a columnar decoder."""
        counts, parts = [], []
        for count, payload in self._blocks():
            counts.append(count)
            parts.append(payload)
        total = sum(counts)
        return json.loads(self._schema_text), total, self._plain(total, parts)

    def _decode(self, total: int, parts: list[bytes]) -> list[Any]:
        return self.decode_plain(total, self._plain(total, parts))

    def decode_plain(self, total: int, plain: bytes) -> list[Any]:
        """The records of :meth:`plain_container`'s container (fastavro's compiled reader)."""
        try:
            reader = fastavro.reader(BytesIO(plain))
            records = list(reader)
        except Exception as e:
            raise FormatError(f"{self._what}: cannot decode Avro records: {e}") from e
        if len(records) != total:  # pragma: no cover - fastavro reads exactly `total`
            raise FormatError(f"{self._what}: expected {total} records, decoded {len(records)}")
        self._writer_schema = reader.writer_schema
        return records

    def read_all(self) -> list[Any]:
        """Every record (one fastavro pass over all blocks)."""
        counts, parts = [], []
        for count, payload in self._blocks():
            counts.append(count)
            parts.append(payload)
        return self._decode(sum(counts), parts)

    def iter_chunks(self, size: int) -> Iterator[list[Any]]:
        """The records in lists of ``size`` (the last may hold fewer; none is empty), decoding
        blocks only as the records at hand run short: memory is about ``size`` records plus a
        block."""
        if size < 1:
            raise ValueError(f"chunk size must be positive, got {size}")
        pending: list[Any] = []
        total, parts = 0, []
        for count, payload in self._blocks():
            total += count
            parts.append(payload)
            if len(pending) + total >= size:
                pending += self._decode(total, parts)
                total, parts = 0, []
                while len(pending) >= size:
                    yield pending[:size]
                    del pending[:size]
        if parts:
            pending += self._decode(total, parts)
        while pending:
            yield pending[:size]
            del pending[:size]


def read_records(data: bytes, what: str, *, logical_types: bool = True) -> tuple[Any, list[Any]]:
    """(fastavro's parsed writer schema, every record) of an Avro container held in memory. ``what``
    names the file in errors. Without ``logical_types`` dates, timestamps and decimals come back as
    the raw ints and bytes they are stored as."""
    try:
        fo = in_memory(data)
    except FormatError as e:
        raise FormatError(f"{what}: {e}") from None
    reader = RecordReader(fo, what, logical_types=logical_types)
    records = reader.read_all()
    return reader.writer_schema, records


def write_records(
    records: list[Any], parsed_schema: Any, *, codec: str, zstd_level: int, what: str, schema_json: bytes | None = None
) -> bytes:
    """An Avro container of ``records`` (blocks of :data:`SYNC_INTERVAL` bytes, as Java), codec
    ``codec`` (a :data:`CODEC_ALIASES` name). ``schema_json`` is the header's schema text; by
    default fastavro's rendering of ``parsed_schema``."""
    canonical = CODEC_ALIASES.get(str(codec).lower())
    if canonical is None:
        raise LakeError(f"unsupported Avro codec {codec!r} for {what}; use one of {sorted(set(CODEC_ALIASES))}")
    compress = _compressor(canonical, zstd_level)
    buf = BytesIO()
    try:
        fastavro.writer(buf, parsed_schema, records, codec="null", sync_interval=SYNC_INTERVAL)
    except (ValueError, TypeError, OverflowError, AttributeError, KeyError) as e:
        raise FormatError(f"cannot encode {what}: {e}") from e
    meta, _, blocks = parse_container(buf.getvalue())
    return build_container(
        meta["avro.schema"] if schema_json is None else schema_json,
        canonical.encode("ascii"),
        os.urandom(16),
        [(count, compress(payload)) for count, payload in blocks],
    )


def write_encoded(
    encoded: bytes, record_lens: Any, schema_json: bytes, *, codec: str, zstd_level: int, what: str
) -> bytes:
    """An Avro container of records already encoded (``encoded``: their bytes one after the
    other, ``record_lens`` each one's length), in the blocks fastavro's writer would cut."""
    canonical = CODEC_ALIASES.get(str(codec).lower())
    if canonical is None:
        raise LakeError(f"unsupported Avro codec {codec!r} for {what}; use one of {sorted(set(CODEC_ALIASES))}")
    compress = _compressor(canonical, zstd_level)
    offsets = [0]
    for n in record_lens.tolist():
        offsets.append(offsets[-1] + n)
    view = memoryview(encoded)
    blocks = [
        (end - start, compress(bytes(view[offsets[start] : offsets[end]])))
        for start, end in block_bounds(record_lens, SYNC_INTERVAL)
    ]
    return build_container(schema_json, canonical.encode("ascii"), os.urandom(16), blocks)
