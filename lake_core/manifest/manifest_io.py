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

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import fastavro

from lake_core.errors import FormatError, LakeError
from lake_core.format.avro import read_records, schema_text, write_records
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
    out: list[_T] = []
    append = out.append
    try:
        for r in _read_records(data, what):
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


def encode_manifest_entries(
    entries: Sequence[ManifestEntry],
    *,
    codec: str = DEFAULT_CODEC,
    zstd_level: int = DEFAULT_ZSTD_LEVEL,
) -> bytes:
    """Encode manifest entries as a Paimon manifest file (Avro container, Java schema)."""
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


def decode_manifest_entries(data: bytes) -> list[ManifestEntry]:
    """Decode a Paimon manifest file (any writer: Java, pypaimon, lake_core)."""
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

    return _decode(data, what, entry)


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
