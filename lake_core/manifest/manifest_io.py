"""Avro object-container codecs for Paimon's manifest list, manifest and index manifest files.

Bytes in, bytes out; file IO is the caller's business (Java ``ManifestFile``/``ManifestList``/``IndexManifestFile``).

Writing follows Java exactly: the same writer schema (field names, order and types, ``_VERSION``
first, nullable fields as ``["null", T]`` with ``"default": null``, ``_CREATION_TIME`` as
``timestamp-millis``, record names from Java's ``AvroSchemaConverter``: top record
``org.apache.paimon.avro.generated.record``, nested records ``record_<FIELD>``), the schema text
in Java's compact ``Schema.toString()`` form, codec ``zstandard`` at level 1 (Java's default
``file.compression.zstd-level``) and Java's 64000-byte sync interval.

Reading matches fields by *name* like Java's ``FieldReaderFactory``: record names, extra fields
(e.g. pypaimon's ``_TOTAL_BUCKETS``/``_EXTRA_FILES`` in manifest lists) and a top-level
``["null", record]`` union (older Java writers) are all accepted, and optional fields missing
from older writers' schemas take their defaults. Codecs ``null``, ``deflate``, ``zstandard``,
``bzip2``, ``xz`` are built in; ``snappy`` needs ``cramjam`` or ``python-snappy``.

The container framing and block codecs are :mod:`lake_core.format.avro`'s, shared with Avro data
files; record encoding and decoding are fastavro's.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Sequence
from io import BytesIO
from operator import attrgetter
from typing import Any, TypeVar

import fastavro
import numpy as np

from lake_core.errors import FormatError, LakeError
from lake_core.format import avro_columns as ac
from lake_core.format.avro import RecordReader, in_memory, read_records, schema_text, write_encoded, write_records
from lake_core.format.gc_pause import paused_gc
from lake_core.manifest.metadata import (
    EMPTY_STATS,
    DataFileMeta,
    DeletionVectorMeta,
    FileKind,
    IndexManifestEntry,
    ManifestEntry,
    ManifestFileMeta,
    SimpleStats,
)

__all__ = [
    "MANIFEST_ENTRY_VERSION",
    "MANIFEST_FILE_META_VERSION",
    "INDEX_MANIFEST_ENTRY_VERSION",
    "MANIFEST_ENTRY_SCHEMA",
    "MANIFEST_FILE_META_SCHEMA",
    "INDEX_MANIFEST_ENTRY_SCHEMA",
    "encode_manifest_entries",
    "decode_manifest_entries",
    "encode_manifest_list",
    "decode_manifest_list",
    "encode_index_manifest",
    "decode_index_manifest",
]

#: ``_VERSION`` values Java writes (ManifestEntrySerializer / ManifestFileMetaSerializer /
#: IndexManifestEntrySerializer).
MANIFEST_ENTRY_VERSION = 2
MANIFEST_FILE_META_VERSION = 2
INDEX_MANIFEST_ENTRY_VERSION = 1

DEFAULT_CODEC = "zstandard"
DEFAULT_ZSTD_LEVEL = 1  # Java CoreOptions.FILE_COMPRESSION_ZSTD_LEVEL default

_T = TypeVar("_T")

log = logging.getLogger(__name__)

# --------------------------------------------------------------------------------------------
# Writer schemas (Java AvroSchemaConverter output for the Java row types)
# --------------------------------------------------------------------------------------------

_NAMESPACE = "org.apache.paimon.avro.generated"


def _nullable(t: Any) -> list[Any]:
    return ["null", t]


def _opt(name: str, t: Any) -> dict[str, Any]:
    return {"name": name, "type": _nullable(t), "default": None}


def _req(name: str, t: Any) -> dict[str, Any]:
    return {"name": name, "type": t}


def _simple_stats_record(name: str) -> dict[str, Any]:
    # Java SimpleStats.SCHEMA: _MIN_VALUES BYTES NOT NULL, _MAX_VALUES BYTES NOT NULL,
    # _NULL_COUNTS ARRAY<BIGINT> (nullable array of nullable longs)
    return {
        "type": "record",
        "name": name,
        "fields": [
            _req("_MIN_VALUES", "bytes"),
            _req("_MAX_VALUES", "bytes"),
            _opt("_NULL_COUNTS", {"type": "array", "items": ["null", "long"]}),
        ],
    }


def _top_record(fields: list[dict[str, Any]]) -> dict[str, Any]:
    return {"type": "record", "name": "record", "namespace": _NAMESPACE, "fields": fields}


_DATA_FILE_META_RECORD: dict[str, Any] = {
    "type": "record",
    "name": "record__FILE",
    "fields": [
        _req("_FILE_NAME", "string"),
        _req("_FILE_SIZE", "long"),
        _req("_ROW_COUNT", "long"),
        _req("_MIN_KEY", "bytes"),
        _req("_MAX_KEY", "bytes"),
        _req("_KEY_STATS", _simple_stats_record("record__FILE__KEY_STATS")),
        _req("_VALUE_STATS", _simple_stats_record("record__FILE__VALUE_STATS")),
        _req("_MIN_SEQUENCE_NUMBER", "long"),
        _req("_MAX_SEQUENCE_NUMBER", "long"),
        _req("_SCHEMA_ID", "long"),
        _req("_LEVEL", "int"),
        _req("_EXTRA_FILES", {"type": "array", "items": "string"}),
        _opt("_CREATION_TIME", {"type": "long", "logicalType": "timestamp-millis"}),
        _opt("_DELETE_ROW_COUNT", "long"),
        _opt("_EMBEDDED_FILE_INDEX", "bytes"),
        _opt("_FILE_SOURCE", "int"),
        _opt("_VALUE_STATS_COLS", {"type": "array", "items": "string"}),
        _opt("_EXTERNAL_PATH", "string"),
        _opt("_FIRST_ROW_ID", "long"),
        _opt("_WRITE_COLS", {"type": "array", "items": "string"}),
        _opt("_WRITE_COLS_SEQUENCES", {"type": "array", "items": "long"}),
    ],
}

#: Writer schema of manifest files (Java ``ManifestEntry`` with ``_VERSION`` prepended).
MANIFEST_ENTRY_SCHEMA: dict[str, Any] = _top_record(
    [
        _req("_VERSION", "int"),
        _req("_KIND", "int"),
        _req("_PARTITION", "bytes"),
        _req("_BUCKET", "int"),
        _req("_TOTAL_BUCKETS", "int"),
        _req("_FILE", _DATA_FILE_META_RECORD),
    ]
)

#: Writer schema of manifest lists (Java ``ManifestFileMeta`` with ``_VERSION`` prepended).
MANIFEST_FILE_META_SCHEMA: dict[str, Any] = _top_record(
    [
        _req("_VERSION", "int"),
        _req("_FILE_NAME", "string"),
        _req("_FILE_SIZE", "long"),
        _req("_NUM_ADDED_FILES", "long"),
        _req("_NUM_DELETED_FILES", "long"),
        _req("_PARTITION_STATS", _simple_stats_record("record__PARTITION_STATS")),
        _req("_SCHEMA_ID", "long"),
        _opt("_MIN_BUCKET", "int"),
        _opt("_MAX_BUCKET", "int"),
        _opt("_MIN_LEVEL", "int"),
        _opt("_MAX_LEVEL", "int"),
        _opt("_MIN_ROW_ID", "long"),
        _opt("_MAX_ROW_ID", "long"),
    ]
)

#: Writer schema of index manifests (Java ``IndexManifestEntry`` with ``_VERSION`` prepended).
INDEX_MANIFEST_ENTRY_SCHEMA: dict[str, Any] = _top_record(
    [
        _req("_VERSION", "int"),
        _req("_KIND", "int"),
        _req("_PARTITION", "bytes"),
        _req("_BUCKET", "int"),
        _req("_INDEX_TYPE", "string"),
        _req("_FILE_NAME", "string"),
        _req("_FILE_SIZE", "long"),
        _req("_ROW_COUNT", "long"),
        _opt(
            "_DELETIONS_VECTORS_RANGES",
            {
                "type": "array",
                # DeletionVectorMeta.SCHEMA is a nullable row type -> the items are a union
                "items": _nullable(
                    {
                        "type": "record",
                        "name": "record__DELETIONS_VECTORS_RANGES",
                        "fields": [
                            _req("f0", "string"),
                            _req("f1", "int"),
                            _req("f2", "int"),
                            _opt("_CARDINALITY", "long"),
                        ],
                    }
                ),
            },
        ),
        _opt("_EXTERNAL_PATH", "string"),
        _opt(
            "_GLOBAL_INDEX",
            {
                "type": "record",
                "name": "record__GLOBAL_INDEX",
                "fields": [
                    _req("_ROW_RANGE_START", "long"),
                    _req("_ROW_RANGE_END", "long"),
                    _req("_INDEX_FIELD_ID", "int"),
                    _opt("_EXTRA_FIELD_IDS", {"type": "array", "items": "int"}),
                    _opt("_INDEX_META", "bytes"),
                    _opt("_SOURCE_META", "bytes"),
                ],
            },
        ),
    ]
)


_PARSED_MANIFEST_ENTRY = fastavro.parse_schema(MANIFEST_ENTRY_SCHEMA)
_PARSED_MANIFEST_FILE_META = fastavro.parse_schema(MANIFEST_FILE_META_SCHEMA)
_PARSED_INDEX_MANIFEST_ENTRY = fastavro.parse_schema(INDEX_MANIFEST_ENTRY_SCHEMA)
_TEXT_MANIFEST_ENTRY = schema_text(MANIFEST_ENTRY_SCHEMA)
_TEXT_MANIFEST_FILE_META = schema_text(MANIFEST_FILE_META_SCHEMA)
_TEXT_INDEX_MANIFEST_ENTRY = schema_text(INDEX_MANIFEST_ENTRY_SCHEMA)


def _read_records(data: bytes, what: str) -> list[dict[str, Any]]:
    return read_records(data, what, logical_types=False)[1]


def _write_records(
    records: list[dict[str, Any]], parsed_schema: Any, schema_json: bytes, codec: str, zstd_level: int, what: str
) -> bytes:
    return write_records(records, parsed_schema, codec=codec, zstd_level=zstd_level, what=what, schema_json=schema_json)


# ---- SimpleStats -----------------------------------------------------------------------------


def _stats_to_avro(s: SimpleStats) -> dict[str, Any]:
    nc = s.null_counts
    return {
        "_MIN_VALUES": s.min_values,
        "_MAX_VALUES": s.max_values,
        "_NULL_COUNTS": None if nc is None else list(nc),
    }


def _stats_from_avro(d: dict[str, Any] | None) -> SimpleStats:
    if d is None:
        return EMPTY_STATS
    nc = d.get("_NULL_COUNTS")
    return SimpleStats(d["_MIN_VALUES"], d["_MAX_VALUES"], None if nc is None else tuple(nc))


def _missing(what: str, e: KeyError) -> FormatError:
    return FormatError(
        f"{what}: a record lacks the required field {e.args[0]!r}; the file was not written by "
        "a Paimon-compatible writer or is corrupt"
    )


_KINDS = (FileKind.ADD, FileKind.DELETE)


def _kind(value: Any, what: str) -> FileKind:
    """The ``FileKind`` of a ``_KIND`` value (0 ADD, 1 DELETE; Java ``FileKind.fromByteValue``)."""
    try:
        return _KINDS[value]
    except (IndexError, TypeError):
        raise FormatError(f"{what}: unknown _KIND {value!r} (expected 0 ADD or 1 DELETE)") from None


def _decode(data: bytes, what: str, build: Callable[[dict[str, Any]], _T]) -> list[_T]:
    """``build`` applied to every record of the file. The three decoders share this loop so that
    a null record and a missing required field (``KeyError`` from ``build``) fail alike, naming
    the file kind ``what``."""
    return _build_all(_read_records(data, what), what, build)


def _build_all(records: list[Any], what: str, build: Callable[[dict[str, Any]], _T]) -> list[_T]:
    out: list[_T] = []
    append = out.append
    try:
        for r in records:
            if r is None:
                raise FormatError(f"{what}: contains a null record")
            append(build(r))
    except KeyError as e:
        raise _missing(what, e) from None
    return out


# --------------------------------------------------------------------------------------------
# Manifest files (ManifestEntry)
# --------------------------------------------------------------------------------------------


def _file_to_avro(f: DataFileMeta) -> dict[str, Any]:
    vsc = f.value_stats_cols
    wc = f.write_cols
    wcs = f.write_cols_sequences
    return {
        "_FILE_NAME": f.file_name,
        "_FILE_SIZE": f.file_size,
        "_ROW_COUNT": f.row_count,
        "_MIN_KEY": f.min_key,
        "_MAX_KEY": f.max_key,
        "_KEY_STATS": _stats_to_avro(f.key_stats),
        "_VALUE_STATS": _stats_to_avro(f.value_stats),
        "_MIN_SEQUENCE_NUMBER": f.min_sequence_number,
        "_MAX_SEQUENCE_NUMBER": f.max_sequence_number,
        "_SCHEMA_ID": f.schema_id,
        "_LEVEL": f.level,
        "_EXTRA_FILES": list(f.extra_files),
        "_CREATION_TIME": f.creation_time,
        "_DELETE_ROW_COUNT": f.delete_row_count,
        "_EMBEDDED_FILE_INDEX": f.embedded_file_index,
        "_FILE_SOURCE": None if f.file_source is None else int(f.file_source),
        "_VALUE_STATS_COLS": None if vsc is None else list(vsc),
        "_EXTERNAL_PATH": f.external_path,
        "_FIRST_ROW_ID": f.first_row_id,
        "_WRITE_COLS": None if wc is None else list(wc),
        "_WRITE_COLS_SEQUENCES": None if wcs is None else list(wcs),
    }


#: Manifests of at least this many entries are encoded column-wise (:mod:`lake_core.format.avro_columns`):
#: the same bytes as fastavro's, many times faster.
COLUMNAR_ENCODE_MIN_ENTRIES = 200

#: Entries encoded per gather (bounds the index arrays to a few MB).
_ENCODE_CHUNK = 8192


def encode_manifest_entries(
    entries: Sequence[ManifestEntry],
    *,
    codec: str = DEFAULT_CODEC,
    zstd_level: int = DEFAULT_ZSTD_LEVEL,
    columnar_min: int | None = None,
) -> bytes:
    """Encode manifest entries as a Paimon manifest file (Avro container, Java schema). From
    ``columnar_min`` entries on (default :data:`COLUMNAR_ENCODE_MIN_ENTRIES`) column-wise, with
    fastavro deciding any entry the column encoder cannot take (and raising its errors)."""
    with paused_gc():
        if len(entries) >= (COLUMNAR_ENCODE_MIN_ENTRIES if columnar_min is None else columnar_min):
            encoded = _encode_entries_columnar(entries)
            if encoded is not None:
                return write_encoded(
                    encoded[0],
                    encoded[1],
                    _TEXT_MANIFEST_ENTRY,
                    codec=codec,
                    zstd_level=zstd_level,
                    what="manifest entries",
                )
        return _encode_entries_records(entries, codec, zstd_level)


def _avro_bytes(b: bytes) -> bytes:
    return ac.varint(len(b)) + b


def _avro_string(s: str) -> bytes:
    return _avro_bytes(s.encode("utf-8"))


def _string_array(items: Sequence[str]) -> bytes:
    if not items:
        return b"\x00"
    return ac.varint(len(items)) + b"".join(_avro_string(i) for i in items) + b"\x00"


def _optional(encode: Callable[[Any], bytes]) -> Callable[[Any], bytes]:
    return lambda v: b"\x00" if v is None else b"\x02" + encode(v)


def _long_array(items: Sequence[int]) -> bytes:
    if not items:
        return b"\x00"
    return ac.varint(len(items)) + b"".join(ac.varint(i) for i in items) + b"\x00"


def _null_counts(items: Sequence[int | None] | None) -> bytes:
    """``_NULL_COUNTS``: ``["null", {"type": "array", "items": ["null", "long"]}]``."""
    if items is None:
        return b"\x00"
    if not items:
        return b"\x02\x00"
    body = b"".join(b"\x00" if i is None else b"\x02" + ac.varint(i) for i in items)
    return b"\x02" + ac.varint(len(items)) + body + b"\x00"


def _require_ints(values: list[Any], *, nullable: bool = False) -> list[Any]:
    """``values`` if every one is an integer (None too when ``nullable``); bool, float and the
    like are left to fastavro, which decides (and raises its error)."""
    for t in set(map(type, values)):
        if t is bool or not (issubclass(t, (int, np.integer)) or (nullable and t is type(None))):
            raise TypeError(f"not an int: {t.__name__}")
    return values


def _encode_entries_columnar(entries: Sequence[ManifestEntry]) -> tuple[bytes, Any] | None:
    """(the records' bytes, each one's length), or None when an entry holds a value the
    column encoder does not take (fastavro then encodes, or raises its error)."""
    try:
        parts, lens = [], []
        for i in range(0, len(entries), _ENCODE_CHUNK):
            data, n = ac.interleave(_entry_pieces(entries[i : i + _ENCODE_CHUNK]))
            parts.append(data)
            lens.append(n)
        return b"".join(parts), np.concatenate(lens)
    except (TypeError, ValueError, OverflowError, AttributeError, UnicodeError) as e:
        log.debug("columnar manifest encode declined: %s", e)
        return None


def _entry_pieces(entries: Sequence[ManifestEntry]) -> list[ac.Piece]:
    n = len(entries)
    files = [e.file for e in entries]

    def ints(name: str, objs: Sequence[Any]) -> list[int]:
        return _require_ints(list(map(attrgetter(name), objs)))

    def col(name: str, objs: Sequence[Any] = files) -> list[Any]:
        return list(map(attrgetter(name), objs))

    def blobs(values: list[Any]) -> list[ac.Piece]:
        if set(map(type, values)) - {bytes}:
            raise TypeError("not bytes")
        return ac.length_prefixed(values)

    def stats(name: str) -> list[ac.Piece]:
        ss = col(name)
        return [
            *blobs([s.min_values for s in ss]),
            *blobs([s.max_values for s in ss]),
            ac.encoded_once([s.null_counts for s in ss], _null_counts),
        ]

    def optional_ints(name: str) -> list[ac.Piece]:
        return ac.optional_longs(_require_ints(col(name), nullable=True))

    names = col("file_name")
    if set(map(type, names)) - {str}:
        raise TypeError("not a string")
    return [
        ac.constant(ac.varint(MANIFEST_ENTRY_VERSION), n),
        ac.varints([int(e.kind) for e in entries]),
        *blobs(col("partition", entries)),
        ac.varints(ints("bucket", entries)),
        ac.varints(ints("total_buckets", entries)),
        # _FILE
        *ac.length_prefixed([s.encode("utf-8") for s in names]),
        ac.varints(ints("file_size", files)),
        ac.varints(ints("row_count", files)),
        *blobs(col("min_key")),
        *blobs(col("max_key")),
        *stats("key_stats"),
        *stats("value_stats"),
        ac.varints(ints("min_sequence_number", files)),
        ac.varints(ints("max_sequence_number", files)),
        ac.varints(ints("schema_id", files)),
        ac.varints(ints("level", files)),
        ac.encoded_once(col("extra_files"), _string_array),
        *optional_ints("creation_time"),
        *optional_ints("delete_row_count"),
        ac.per_value(col("embedded_file_index"), _optional(_avro_bytes), none=b"\x00"),
        *ac.optional_longs([None if v is None else int(v) for v in col("file_source")]),
        ac.encoded_once(col("value_stats_cols"), _optional(_string_array)),
        ac.per_value(col("external_path"), _optional(_avro_string), none=b"\x00"),
        *optional_ints("first_row_id"),
        ac.encoded_once(col("write_cols"), _optional(_string_array)),
        ac.encoded_once(col("write_cols_sequences"), _optional(_long_array)),
    ]


def _encode_entries_records(entries: Sequence[ManifestEntry], codec: str, zstd_level: int) -> bytes:
    version = MANIFEST_ENTRY_VERSION
    records = [
        {
            "_VERSION": version,
            "_KIND": int(e.kind),
            "_PARTITION": e.partition,
            "_BUCKET": e.bucket,
            "_TOTAL_BUCKETS": e.total_buckets,
            "_FILE": _file_to_avro(e.file),
        }
        for e in entries
    ]
    return _write_records(records, _PARSED_MANIFEST_ENTRY, _TEXT_MANIFEST_ENTRY, codec, zstd_level, "manifest entries")


#: Manifests of at least this many entries are decoded column-wise (polars' Avro reader, in Rust)
#: and their entries built from the columns: about twice as fast as fastavro's records.
COLUMNAR_MIN_ENTRIES = 1_000

_FILE_REQUIRED = (
    "_FILE_NAME",
    "_FILE_SIZE",
    "_ROW_COUNT",
    "_MIN_KEY",
    "_MAX_KEY",
    "_MIN_SEQUENCE_NUMBER",
    "_MAX_SEQUENCE_NUMBER",
    "_SCHEMA_ID",
    "_LEVEL",
)


def decode_manifest_entries(
    data: bytes, *, columnar_min: int | None = None, buckets: Collection[int] | None = None
) -> list[ManifestEntry]:
    """Decode a Paimon manifest file (any writer: Java, pypaimon, lake_core). From
    ``columnar_min`` entries on (default :data:`COLUMNAR_MIN_ENTRIES`) column-wise, when the file's
    layout allows (else, and for anything unusual, record by record: the same entries).
    ``buckets``: only the entries of these buckets, the others dropped before any object is built
    for them (column-wise: a filter on the bucket column)."""
    what = "manifest file"
    try:
        fo = in_memory(data)
    except FormatError as e:
        raise FormatError(f"{what}: {e}") from None
    with paused_gc():
        reader = RecordReader(fo, what, logical_types=False)
        schema, total, plain = reader.plain_container()
        if total >= (COLUMNAR_MIN_ENTRIES if columnar_min is None else columnar_min):
            entries = _entries_from_columns(schema, plain, buckets)
            if entries is not None:
                return entries
        records = reader.decode_plain(total, plain)
        if buckets is not None:
            records = [r for r in records if _of_buckets(r, buckets)]
        return _entries_from_records(records)


def _of_buckets(record: Any, buckets: Collection[int]) -> bool:
    """Whether a decoded record is one of ``buckets``' or malformed (kept: the decoder names it)."""
    bucket = record.get("_BUCKET") if isinstance(record, dict) else None
    return not isinstance(bucket, int) or bucket in buckets


def _shared(values: list[Any]) -> list[Any]:
    """``values`` with one object per distinct value (a manifest's partitions repeat)."""
    seen: dict[Any, Any] = {}
    return [seen.setdefault(v, v) for v in values]


def _entries_from_columns(schema: Any, plain: bytes, buckets: Collection[int] | None) -> list[ManifestEntry] | None:
    """The entries of an uncompressed manifest container, decoded column-wise; None when the file
    is anything but plain (a top-level union, a missing required field, a null where none may
    be, an unknown kind): the record-by-record decoder then decides, with its errors."""
    if not isinstance(schema, dict) or schema.get("type") != "record":
        return None
    top = {f.get("name"): f.get("type") for f in schema.get("fields", ()) if isinstance(f, dict)}
    file_type = top.get("_FILE")
    if not isinstance(file_type, dict) or file_type.get("type") != "record":
        return None
    if any(n not in top for n in ("_KIND", "_PARTITION", "_BUCKET")):
        return None
    try:
        import polars as pl  # noqa: PLC0415 - heavy import, needed only for large manifests

        frame = pl.read_avro(BytesIO(plain))
        if buckets is not None:  # before any column is turned into Python objects
            frame = frame.filter(pl.col("_BUCKET").is_in(list(buckets)) | pl.col("_BUCKET").is_null())
        files = frame.get_column("_FILE")
        if files.null_count():
            return None
        f = files.struct.unnest()
        if any(n not in f.columns or f.get_column(n).null_count() for n in _FILE_REQUIRED):
            return None
        kinds = frame.get_column("_KIND")
        if kinds.null_count() or not kinds.is_in([0, 1]).all():
            return None
        n = frame.height

        def col(frame_: Any, name: str, default: Any = None) -> list[Any]:
            return frame_.get_column(name).to_list() if name in frame_.columns else [default] * n

        def tuples(name: str, values: list[Any] | None = None) -> list[Any]:
            # one object per distinct value (column lists, null counts repeat from file to file)
            shared: dict[tuple, tuple] = {}
            return [
                None if v is None else shared.setdefault(t := tuple(v), t)
                for v in (col(f, name) if values is None else values)
            ]

        def stats(name: str) -> list[SimpleStats] | None:
            if name not in f.columns:
                return [EMPTY_STATS] * n
            s = f.get_column(name)
            if s.null_count():
                return None
            parts = s.struct.unnest()
            if "_MIN_VALUES" not in parts.columns or "_MAX_VALUES" not in parts.columns:
                return None
            mins, maxs = parts.get_column("_MIN_VALUES"), parts.get_column("_MAX_VALUES")
            if mins.null_count() or maxs.null_count():
                return None
            nulls = tuples("", col(parts, "_NULL_COUNTS"))
            return list(map(SimpleStats, mins.to_list(), maxs.to_list(), nulls))

        key_stats, value_stats = stats("_KEY_STATS"), stats("_VALUE_STATS")
        partitions, buckets = frame.get_column("_PARTITION"), frame.get_column("_BUCKET")
        if key_stats is None or value_stats is None or partitions.null_count() or buckets.null_count():
            return None
        metas = map(
            DataFileMeta,
            col(f, "_FILE_NAME"),
            col(f, "_FILE_SIZE"),
            col(f, "_ROW_COUNT"),
            col(f, "_MIN_KEY"),
            col(f, "_MAX_KEY"),
            key_stats,
            value_stats,
            col(f, "_MIN_SEQUENCE_NUMBER"),
            col(f, "_MAX_SEQUENCE_NUMBER"),
            col(f, "_SCHEMA_ID"),
            col(f, "_LEVEL"),
            [() if not v else v for v in tuples("_EXTRA_FILES")],
            col(f, "_CREATION_TIME"),
            col(f, "_DELETE_ROW_COUNT"),
            col(f, "_EMBEDDED_FILE_INDEX"),
            col(f, "_FILE_SOURCE"),
            tuples("_VALUE_STATS_COLS"),
            col(f, "_EXTERNAL_PATH"),
            col(f, "_FIRST_ROW_ID"),
            tuples("_WRITE_COLS"),
            tuples("_WRITE_COLS_SEQUENCES"),
        )
        total_buckets = frame.get_column("_TOTAL_BUCKETS") if "_TOTAL_BUCKETS" in frame.columns else None
        return list(
            map(
                ManifestEntry,
                [_KINDS[k] for k in kinds.to_list()],
                _shared(partitions.to_list()),
                buckets.to_list(),
                [-1] * n if total_buckets is None else total_buckets.fill_null(-1).to_list(),
                metas,
            )
        )
    except Exception:  # an Avro feature polars reads otherwise: the record decoder decides
        log.debug("columnar manifest decode declined", exc_info=True)
        return None


def _entries_from_records(records: list[dict[str, Any]]) -> list[ManifestEntry]:
    what = "manifest file"
    stats = _stats_from_avro

    def entry(r: dict[str, Any]) -> ManifestEntry:
        f = r["_FILE"]
        get = f.get
        vsc = get("_VALUE_STATS_COLS")
        wc = get("_WRITE_COLS")
        wcs = get("_WRITE_COLS_SEQUENCES")
        extra = get("_EXTRA_FILES")
        file = DataFileMeta(
            f["_FILE_NAME"],
            f["_FILE_SIZE"],
            f["_ROW_COUNT"],
            f["_MIN_KEY"],
            f["_MAX_KEY"],
            stats(get("_KEY_STATS")),
            stats(get("_VALUE_STATS")),
            f["_MIN_SEQUENCE_NUMBER"],
            f["_MAX_SEQUENCE_NUMBER"],
            f["_SCHEMA_ID"],
            f["_LEVEL"],
            () if not extra else tuple(extra),
            get("_CREATION_TIME"),
            get("_DELETE_ROW_COUNT"),
            get("_EMBEDDED_FILE_INDEX"),
            get("_FILE_SOURCE"),
            None if vsc is None else tuple(vsc),
            get("_EXTERNAL_PATH"),
            get("_FIRST_ROW_ID"),
            None if wc is None else tuple(wc),
            None if wcs is None else tuple(wcs),
        )
        return ManifestEntry(
            _kind(r["_KIND"], what),
            r["_PARTITION"],
            r["_BUCKET"],
            r.get("_TOTAL_BUCKETS", -1),  # absent in very old manifests: unknown
            file,
        )

    return _build_all(records, what, entry)


# --------------------------------------------------------------------------------------------
# Manifest lists (ManifestFileMeta)
# --------------------------------------------------------------------------------------------


def encode_manifest_list(
    metas: Sequence[ManifestFileMeta],
    *,
    codec: str = DEFAULT_CODEC,
    zstd_level: int = DEFAULT_ZSTD_LEVEL,
) -> bytes:
    """Encode manifest file metas as a Paimon manifest list (Avro container, Java schema)."""
    version = MANIFEST_FILE_META_VERSION
    records = [
        {
            "_VERSION": version,
            "_FILE_NAME": m.file_name,
            "_FILE_SIZE": m.file_size,
            "_NUM_ADDED_FILES": m.num_added_files,
            "_NUM_DELETED_FILES": m.num_deleted_files,
            "_PARTITION_STATS": _stats_to_avro(m.partition_stats),
            "_SCHEMA_ID": m.schema_id,
            "_MIN_BUCKET": m.min_bucket,
            "_MAX_BUCKET": m.max_bucket,
            "_MIN_LEVEL": m.min_level,
            "_MAX_LEVEL": m.max_level,
            "_MIN_ROW_ID": m.min_row_id,
            "_MAX_ROW_ID": m.max_row_id,
        }
        for m in metas
    ]
    return _write_records(
        records,
        _PARSED_MANIFEST_FILE_META,
        _TEXT_MANIFEST_FILE_META,
        codec,
        zstd_level,
        "manifest list",
    )


def decode_manifest_list(data: bytes) -> list[ManifestFileMeta]:
    """Decode a Paimon manifest list (extra writer fields such as pypaimon's are ignored)."""

    def meta(r: dict[str, Any]) -> ManifestFileMeta:
        get = r.get
        return ManifestFileMeta(
            r["_FILE_NAME"],
            r["_FILE_SIZE"],
            r["_NUM_ADDED_FILES"],
            r["_NUM_DELETED_FILES"],
            _stats_from_avro(get("_PARTITION_STATS")),
            r["_SCHEMA_ID"],
            get("_MIN_BUCKET"),
            get("_MAX_BUCKET"),
            get("_MIN_LEVEL"),
            get("_MAX_LEVEL"),
            get("_MIN_ROW_ID"),
            get("_MAX_ROW_ID"),
        )

    return _decode(data, "manifest list", meta)


# --------------------------------------------------------------------------------------------
# Index manifests (IndexManifestEntry)
# --------------------------------------------------------------------------------------------

_GLOBAL_INDEX_FIELDS = (
    ("_ROW_RANGE_START", "row_range_start"),
    ("_ROW_RANGE_END", "row_range_end"),
    ("_INDEX_FIELD_ID", "index_field_id"),
    ("_EXTRA_FIELD_IDS", "extra_field_ids"),
    ("_INDEX_META", "index_meta"),
    ("_SOURCE_META", "source_meta"),
)
_GLOBAL_INDEX_REQUIRED = ("row_range_start", "row_range_end", "index_field_id")


def _global_index_to_avro(g: dict[str, Any] | None) -> dict[str, Any] | None:
    if g is None:
        return None
    missing = [k for k in _GLOBAL_INDEX_REQUIRED if g.get(k) is None]
    if missing:
        raise LakeError(f"global index metadata lacks {missing}; got keys {sorted(g)}")
    efi = g.get("extra_field_ids")
    return {
        "_ROW_RANGE_START": g["row_range_start"],
        "_ROW_RANGE_END": g["row_range_end"],
        "_INDEX_FIELD_ID": g["index_field_id"],
        "_EXTRA_FIELD_IDS": None if efi is None else list(efi),
        "_INDEX_META": g.get("index_meta"),
        "_SOURCE_META": g.get("source_meta"),
    }


def _global_index_from_avro(d: dict[str, Any] | None) -> dict[str, Any] | None:
    if d is None:
        return None
    out: dict[str, Any] = {}
    for avro_name, key in _GLOBAL_INDEX_FIELDS:
        out[key] = d.get(avro_name)
    if out["extra_field_ids"] is not None:
        out["extra_field_ids"] = tuple(out["extra_field_ids"])
    for avro_name, value in d.items():  # keep fields newer writers add
        key = avro_name.lstrip("_").lower()
        if key not in out:
            out[key] = value
    return out


def encode_index_manifest(
    entries: Sequence[IndexManifestEntry],
    *,
    codec: str = DEFAULT_CODEC,
    zstd_level: int = DEFAULT_ZSTD_LEVEL,
) -> bytes:
    """Encode index manifest entries (Avro container, Java schema)."""
    version = INDEX_MANIFEST_ENTRY_VERSION
    records = []
    for e in entries:
        dv = e.dv_ranges
        records.append(
            {
                "_VERSION": version,
                "_KIND": int(e.kind),
                "_PARTITION": e.partition,
                "_BUCKET": e.bucket,
                "_INDEX_TYPE": e.index_type,
                "_FILE_NAME": e.file_name,
                "_FILE_SIZE": e.file_size,
                "_ROW_COUNT": e.row_count,
                "_DELETIONS_VECTORS_RANGES": None
                if dv is None
                else [
                    {"f0": m.data_file_name, "f1": m.offset, "f2": m.length, "_CARDINALITY": m.cardinality} for m in dv
                ],
                "_EXTERNAL_PATH": e.external_path,
                "_GLOBAL_INDEX": _global_index_to_avro(e.global_index),
            }
        )
    return _write_records(
        records,
        _PARSED_INDEX_MANIFEST_ENTRY,
        _TEXT_INDEX_MANIFEST_ENTRY,
        codec,
        zstd_level,
        "index manifest",
    )


def decode_index_manifest(data: bytes) -> list[IndexManifestEntry]:
    """Decode a Paimon index manifest."""
    what = "index manifest"

    def entry(r: dict[str, Any]) -> IndexManifestEntry:
        get = r.get
        ranges = get("_DELETIONS_VECTORS_RANGES")
        dv = None
        if ranges is not None:
            dv = tuple(
                DeletionVectorMeta(m["f0"], m["f1"], m["f2"], m.get("_CARDINALITY")) for m in ranges if m is not None
            )
        return IndexManifestEntry(
            _kind(r["_KIND"], what),
            r["_PARTITION"],
            r["_BUCKET"],
            r["_INDEX_TYPE"],
            r["_FILE_NAME"],
            r["_FILE_SIZE"],
            r["_ROW_COUNT"],
            dv,
            get("_EXTERNAL_PATH"),
            _global_index_from_avro(get("_GLOBAL_INDEX")),
        )

    return _decode(data, what, entry)
