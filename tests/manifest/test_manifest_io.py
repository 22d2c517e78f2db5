"""Avro codecs of manifest lists, manifests and index manifests (lake_core.manifest.manifest_io) and the
metadata dataclasses (lake_core.manifest.metadata)."""

from __future__ import annotations

import dataclasses
import json
import pickle
from io import BytesIO
from pathlib import Path

import fastavro
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lake_core.errors import FormatError, LakeError
from lake_core.format import avro
from lake_core.manifest import manifest_io as mio
from lake_core.manifest.metadata import (
    EMPTY_ROW_BYTES,
    EMPTY_STATS,
    DataFileMeta,
    DeletionVectorMeta,
    FileIdentifier,
    FileKind,
    IndexManifestEntry,
    ManifestEntry,
    ManifestFileMeta,
    SimpleStats,
    merge_entries,
)

DATA = Path(__file__).resolve().parents[1] / "data" / "manifest_io"

# Partition row dt='2024-01-01' (a worked example of Java's bytes).
DT_2024_01_01 = bytes.fromhex("0000000100000000000000000a00000010000000323032342d30312d3031000000000000")
DT_2024_01_02 = DT_2024_01_01.replace(b"2024-01-01", b"2024-01-02")


@pytest.fixture(autouse=True, params=["records", "columnar"])
def codec_path(request, monkeypatch):
    """Every test runs through both manifest-entry codecs: record by record (fastavro) and
    column-wise (polars decoding, numpy encoding; large manifests take it), which must agree."""
    if request.param == "columnar":
        monkeypatch.setattr(mio, "COLUMNAR_MIN_ENTRIES", 0)
        monkeypatch.setattr(mio, "COLUMNAR_ENCODE_MIN_ENTRIES", 0)
    return request.param


_ONE_PATH = HealthCheck.function_scoped_fixture  # codec_path is set once per test, for every example


def _read(name: str) -> bytes:
    return (DATA / name).read_bytes()


def _header(data: bytes) -> tuple[dict, bytes]:
    """(parsed writer schema, codec) from an Avro container, via fastavro's header parser."""
    r = fastavro.reader(BytesIO(data))
    return r.writer_schema, r.metadata["avro.codec"].encode()


def _raw_schema_and_codec(data: bytes) -> tuple[dict, str]:
    meta, _, _ = avro.parse_container(data)
    return json.loads(meta["avro.schema"]), meta["avro.codec"].decode()


# --------------------------------------------------------------------------------------------
# sample objects
# --------------------------------------------------------------------------------------------


def _row(n: int) -> bytes:
    """A serialized arity-1 BinaryRow holding BIGINT n (arity prefix included)."""
    return b"\x00\x00\x00\x01" + b"\x00" * 8 + n.to_bytes(8, "little", signed=True)


def full_file(name: str = "data-1.parquet", level: int = 3) -> DataFileMeta:
    return DataFileMeta(
        file_name=name,
        file_size=123456,
        row_count=1000,
        min_key=_row(1),
        max_key=_row(999),
        key_stats=SimpleStats(_row(1), _row(999), (0,)),
        value_stats=SimpleStats(_row(-5), _row(2**40), (None, 3, 0)),
        min_sequence_number=10,
        max_sequence_number=2**40,
        schema_id=2,
        level=level,
        extra_files=("data-1.parquet.index", "x"),
        creation_time=1_795_308_974_892,
        delete_row_count=7,
        embedded_file_index=b"\x01\x02\x03",
        file_source=1,
        value_stats_cols=("a", "b", "c"),
        external_path="s3://bucket/ext/data-1.parquet",
        first_row_id=40,
        write_cols=("a", "b"),
        write_cols_sequences=(3, 9),
    )


def minimal_file(name: str = "data-2.parquet") -> DataFileMeta:
    return DataFileMeta(name, 10, 1, EMPTY_ROW_BYTES, EMPTY_ROW_BYTES, EMPTY_STATS, EMPTY_STATS, 0, 0, 0, 0)


def full_entry() -> ManifestEntry:
    return ManifestEntry(FileKind.DELETE, DT_2024_01_01, 1, 2, full_file())


def minimal_entry() -> ManifestEntry:
    return ManifestEntry(FileKind.ADD, EMPTY_ROW_BYTES, 0, -1, minimal_file())


def full_meta() -> ManifestFileMeta:
    return ManifestFileMeta(
        "manifest-abc-0",
        4321,
        5,
        2,
        SimpleStats(DT_2024_01_01, DT_2024_01_02, (0,)),
        3,
        min_bucket=0,
        max_bucket=7,
        min_level=0,
        max_level=5,
        min_row_id=0,
        max_row_id=2**40,
    )


def minimal_meta() -> ManifestFileMeta:
    return ManifestFileMeta("manifest-abc-1", 99, 1, 0, EMPTY_STATS, 0)


def full_index_entry() -> IndexManifestEntry:
    return IndexManifestEntry(
        FileKind.ADD,
        DT_2024_01_01,
        3,
        "DELETION_VECTORS",
        "index-u-0",
        77,
        2,
        dv_ranges=(
            DeletionVectorMeta("data-a.parquet", 1, 24, 2),
            DeletionVectorMeta("data-b.parquet", 25, 30, None),
        ),
        external_path="s3://b/index-u-0",
        global_index={
            "row_range_start": 10,
            "row_range_end": 20,
            "index_field_id": 3,
            "extra_field_ids": (4, 5),
            "index_meta": b"\x09",
            "source_meta": b"\x01\x02",
        },
    )


def minimal_index_entry() -> IndexManifestEntry:
    return IndexManifestEntry(FileKind.DELETE, EMPTY_ROW_BYTES, 0, "HASH", "index-v-0", 12, 3)


# --------------------------------------------------------------------------------------------
# files written by pypaimon 2.1.0 (tests/data/manifest_io)
# --------------------------------------------------------------------------------------------


def test_decode_pypaimon_manifest():
    entries = mio.decode_manifest_entries(_read("pypaimon_pk_manifest"))
    assert len(entries) == 3
    assert [e.kind for e in entries] == [FileKind.ADD] * 3
    assert [(e.partition, e.bucket, e.total_buckets) for e in entries] == [
        (DT_2024_01_01, 0, 2),
        (DT_2024_01_01, 1, 2),
        (DT_2024_01_02, 0, 2),
    ]
    f = entries[0].file
    assert f.file_name.startswith("data-") and f.file_name.endswith(".parquet")
    assert (f.row_count, f.level, f.schema_id, f.file_source, f.delete_row_count) == (2, 0, 0, 0, 0)
    assert (f.min_sequence_number, f.max_sequence_number) == (0, 1)
    assert f.min_key == _row(1) and f.max_key == _row(2)
    assert f.key_stats == SimpleStats(_row(1), _row(2), (0,))
    assert f.value_stats.null_counts == (0, 0, 0)  # metadata.stats-mode=full: 3 value fields
    assert f.value_stats_cols is None
    assert f.extra_files == ()
    assert isinstance(f.creation_time, int) and f.creation_time > 1_600_000_000_000
    assert (f.embedded_file_index, f.external_path, f.first_row_id) == (None, None, None)
    assert (f.write_cols, f.write_cols_sequences) == (None, None)


def test_decode_pypaimon_manifest_list_ignores_extra_fields():
    raw_schema, codec = _raw_schema_and_codec(_read("pypaimon_pk_manifest_list"))
    assert codec == "zstandard"
    assert [f["name"] for f in raw_schema["fields"]][-2:] == ["_TOTAL_BUCKETS", "_EXTRA_FILES"]
    (meta,) = mio.decode_manifest_list(_read("pypaimon_pk_manifest_list"))
    assert meta.file_name.startswith("manifest-")
    assert (meta.num_added_files, meta.num_deleted_files, meta.schema_id) == (3, 0, 0)
    assert meta.partition_stats == SimpleStats(DT_2024_01_01, DT_2024_01_02, (0,))
    assert (meta.min_bucket, meta.max_bucket, meta.min_level, meta.max_level) == (0, 1, 0, 0)
    assert (meta.min_row_id, meta.max_row_id) == (None, None)


def test_decode_pypaimon_row_tracking_files():
    (e,) = mio.decode_manifest_entries(_read("pypaimon_rowtracking_manifest"))
    assert (e.partition, e.total_buckets) == (EMPTY_ROW_BYTES, -1)
    assert e.file.first_row_id == 0
    assert e.file.value_stats_cols == ()  # stats mode none: "no value stats"
    assert e.file.key_stats == EMPTY_STATS and e.file.value_stats == EMPTY_STATS
    (m,) = mio.decode_manifest_list(_read("pypaimon_rowtracking_manifest_list"))
    assert (m.min_row_id, m.max_row_id) == (0, 3)
    assert m.partition_stats == EMPTY_STATS


def test_decode_pypaimon_index_manifests():
    hashes = mio.decode_index_manifest(_read("pypaimon_hash_index_manifest"))
    assert [(e.kind, e.partition, e.bucket, e.index_type) for e in hashes] == [
        (FileKind.ADD, DT_2024_01_01, 0, "HASH"),
        (FileKind.ADD, DT_2024_01_02, 0, "HASH"),
    ]
    assert [e.row_count for e in hashes] == [3, 2]
    assert all(e.dv_ranges is None and e.global_index is None for e in hashes)
    (dv,) = mio.decode_index_manifest(_read("pypaimon_dv_index_manifest"))
    assert dv.index_type == "DELETION_VECTORS" and dv.row_count == 1
    assert len(dv.dv_ranges) == 1
    r = dv.dv_ranges[0]
    assert r.data_file_name.startswith("data-") and (r.offset, r.length, r.cardinality) == (1, 24, 2)


@pytest.mark.parametrize(
    "name, decode, encode",
    [
        ("pypaimon_pk_manifest", mio.decode_manifest_entries, mio.encode_manifest_entries),
        ("pypaimon_rowtracking_manifest", mio.decode_manifest_entries, mio.encode_manifest_entries),
        ("pypaimon_pk_manifest_list", mio.decode_manifest_list, mio.encode_manifest_list),
        ("pypaimon_rowtracking_manifest_list", mio.decode_manifest_list, mio.encode_manifest_list),
        ("pypaimon_hash_index_manifest", mio.decode_index_manifest, mio.encode_index_manifest),
        ("pypaimon_dv_index_manifest", mio.decode_index_manifest, mio.encode_index_manifest),
    ],
)
def test_reencode_pypaimon_files(name, decode, encode):
    objs = decode(_read(name))
    data = encode(objs)
    assert decode(data) == objs
    # Any Avro reader sees the same record values as in pypaimon's file, apart from the fields
    # only pypaimon writes (_TOTAL_BUCKETS/_EXTRA_FILES in manifest lists).
    ours = [mio._read_records(data, "x")]
    theirs = mio._read_records(_read(name), "x")
    for mine, orig in zip(ours[0], theirs):
        for k, v in mine.items():
            assert orig[k] == v, k


# --------------------------------------------------------------------------------------------
# our writer: header, schema, codecs
# --------------------------------------------------------------------------------------------

_NULL_COUNTS = {
    "name": "_NULL_COUNTS",
    "type": ["null", {"type": "array", "items": ["null", "long"]}],
    "default": None,
}


def _stats(name):
    return {
        "type": "record",
        "name": name,
        "fields": [
            {"name": "_MIN_VALUES", "type": "bytes"},
            {"name": "_MAX_VALUES", "type": "bytes"},
            _NULL_COUNTS,
        ],
    }


def _o(name, t):
    return {"name": name, "type": ["null", t], "default": None}


def _java_record(fields: list) -> dict:
    """A top-level record as Java's AvroSchemaConverter names it (every Paimon metadata file)."""
    return {
        "type": "record",
        "name": "record",
        "namespace": "org.apache.paimon.avro.generated",
        "fields": fields,
    }


def _fields_of(record: dict, *names: str) -> list:
    """The fields ``names`` of ``record``, in the order asked for."""
    by_name = {f["name"]: f for f in record["fields"]}
    return [by_name[n] for n in names]


def _required_fields(record: dict) -> list:
    """The fields of ``record`` without a default: those every writer, old or new, has."""
    return [f for f in record["fields"] if "default" not in f]


# Java: AvroSchemaConverter.convertToSchema(ManifestSchemaUtils.withFormatIdentifier(
# ManifestEntry.SCHEMA)), as Schema.toString() prints it (nested records inherit the namespace).
JAVA_MANIFEST_ENTRY_SCHEMA = _java_record(
    [
        {"name": "_VERSION", "type": "int"},
        {"name": "_KIND", "type": "int"},
        {"name": "_PARTITION", "type": "bytes"},
        {"name": "_BUCKET", "type": "int"},
        {"name": "_TOTAL_BUCKETS", "type": "int"},
        {
            "name": "_FILE",
            "type": {
                "type": "record",
                "name": "record__FILE",
                "fields": [
                    {"name": "_FILE_NAME", "type": "string"},
                    {"name": "_FILE_SIZE", "type": "long"},
                    {"name": "_ROW_COUNT", "type": "long"},
                    {"name": "_MIN_KEY", "type": "bytes"},
                    {"name": "_MAX_KEY", "type": "bytes"},
                    {"name": "_KEY_STATS", "type": _stats("record__FILE__KEY_STATS")},
                    {"name": "_VALUE_STATS", "type": _stats("record__FILE__VALUE_STATS")},
                    {"name": "_MIN_SEQUENCE_NUMBER", "type": "long"},
                    {"name": "_MAX_SEQUENCE_NUMBER", "type": "long"},
                    {"name": "_SCHEMA_ID", "type": "long"},
                    {"name": "_LEVEL", "type": "int"},
                    {"name": "_EXTRA_FILES", "type": {"type": "array", "items": "string"}},
                    _o("_CREATION_TIME", {"type": "long", "logicalType": "timestamp-millis"}),
                    _o("_DELETE_ROW_COUNT", "long"),
                    _o("_EMBEDDED_FILE_INDEX", "bytes"),
                    _o("_FILE_SOURCE", "int"),
                    _o("_VALUE_STATS_COLS", {"type": "array", "items": "string"}),
                    _o("_EXTERNAL_PATH", "string"),
                    _o("_FIRST_ROW_ID", "long"),
                    _o("_WRITE_COLS", {"type": "array", "items": "string"}),
                    _o("_WRITE_COLS_SEQUENCES", {"type": "array", "items": "long"}),
                ],
            },
        },
    ]
)
JAVA_DATA_FILE_RECORD = _fields_of(JAVA_MANIFEST_ENTRY_SCHEMA, "_FILE")[0]["type"]

JAVA_MANIFEST_FILE_META_SCHEMA = _java_record(
    [
        {"name": "_VERSION", "type": "int"},
        {"name": "_FILE_NAME", "type": "string"},
        {"name": "_FILE_SIZE", "type": "long"},
        {"name": "_NUM_ADDED_FILES", "type": "long"},
        {"name": "_NUM_DELETED_FILES", "type": "long"},
        {"name": "_PARTITION_STATS", "type": _stats("record__PARTITION_STATS")},
        {"name": "_SCHEMA_ID", "type": "long"},
        _o("_MIN_BUCKET", "int"),
        _o("_MAX_BUCKET", "int"),
        _o("_MIN_LEVEL", "int"),
        _o("_MAX_LEVEL", "int"),
        _o("_MIN_ROW_ID", "long"),
        _o("_MAX_ROW_ID", "long"),
    ]
)

JAVA_INDEX_MANIFEST_ENTRY_SCHEMA = _java_record(
    [
        {"name": "_VERSION", "type": "int"},
        {"name": "_KIND", "type": "int"},
        {"name": "_PARTITION", "type": "bytes"},
        {"name": "_BUCKET", "type": "int"},
        {"name": "_INDEX_TYPE", "type": "string"},
        {"name": "_FILE_NAME", "type": "string"},
        {"name": "_FILE_SIZE", "type": "long"},
        {"name": "_ROW_COUNT", "type": "long"},
        _o(
            "_DELETIONS_VECTORS_RANGES",
            {
                "type": "array",
                "items": [
                    "null",
                    {
                        "type": "record",
                        "name": "record__DELETIONS_VECTORS_RANGES",
                        "fields": [
                            {"name": "f0", "type": "string"},
                            {"name": "f1", "type": "int"},
                            {"name": "f2", "type": "int"},
                            _o("_CARDINALITY", "long"),
                        ],
                    },
                ],
            },
        ),
        _o("_EXTERNAL_PATH", "string"),
        _o(
            "_GLOBAL_INDEX",
            {
                "type": "record",
                "name": "record__GLOBAL_INDEX",
                "fields": [
                    {"name": "_ROW_RANGE_START", "type": "long"},
                    {"name": "_ROW_RANGE_END", "type": "long"},
                    {"name": "_INDEX_FIELD_ID", "type": "int"},
                    _o("_EXTRA_FIELD_IDS", {"type": "array", "items": "int"}),
                    _o("_INDEX_META", "bytes"),
                    _o("_SOURCE_META", "bytes"),
                ],
            },
        ),
    ]
)


@pytest.mark.parametrize(
    "data, expected",
    [
        (lambda: mio.encode_manifest_entries([full_entry()]), JAVA_MANIFEST_ENTRY_SCHEMA),
        (lambda: mio.encode_manifest_list([full_meta()]), JAVA_MANIFEST_FILE_META_SCHEMA),
        (lambda: mio.encode_index_manifest([full_index_entry()]), JAVA_INDEX_MANIFEST_ENTRY_SCHEMA),
    ],
    ids=["manifest", "manifest_list", "index_manifest"],
)
def test_writer_schema_is_javas(data, expected):
    raw = data()
    schema, codec = _raw_schema_and_codec(raw)
    assert codec == "zstandard"
    # same names, order, types, defaults and key order as Java's Schema.toString()
    assert schema == expected
    assert json.dumps(schema) == json.dumps(expected)
    meta, _, _ = avro.parse_container(raw)
    assert meta["avro.schema"] == json.dumps(expected, separators=(",", ":")).encode()
    # and any Avro reader (fastavro here) accepts the container
    writer_schema, fa_codec = _header(raw)
    assert fa_codec == b"zstandard"
    assert avro.read_container_schema(raw) == expected


def test_version_fields():
    recs = mio._read_records(mio.encode_manifest_entries([full_entry()]), "x")
    assert recs[0]["_VERSION"] == 2 and recs[0]["_KIND"] == 1
    recs = mio._read_records(mio.encode_manifest_list([full_meta()]), "x")
    assert recs[0]["_VERSION"] == 2
    recs = mio._read_records(mio.encode_index_manifest([full_index_entry()]), "x")
    assert recs[0]["_VERSION"] == 1


def test_zstd_blocks_decompress_with_plain_zstandard():
    import zstandard

    raw = mio.encode_manifest_entries([full_entry()] * 50)
    _, _, blocks = avro.parse_container(raw)
    assert blocks
    for _count, payload in blocks:
        assert payload[:4] == b"\x28\xb5\x2f\xfd"  # zstd frame magic
        zstandard.ZstdDecompressor().decompressobj().decompress(payload)


def test_zstd_stream_frames_without_content_size():
    """zstd-jni's ZstdOutputStream (Java's Avro codec) writes frames without a content size;
    a block may also hold several frames."""
    import zstandard

    entries = [full_entry(), minimal_entry(), full_entry()]
    plain = mio.encode_manifest_entries(entries, codec="null")
    meta, sync, ((count, payload),) = avro.parse_container(plain)
    cobj = zstandard.ZstdCompressor(level=3).compressobj()
    half = len(payload) // 2
    frame1 = cobj.compress(payload[:half]) + cobj.flush()
    cobj = zstandard.ZstdCompressor(level=3).compressobj()
    frame2 = cobj.compress(payload[half:]) + cobj.flush()
    data = avro.build_container(meta["avro.schema"], b"zstandard", sync, [(count, frame1 + frame2)])
    assert mio.decode_manifest_entries(data) == entries


@pytest.mark.parametrize("codec", ["null", "deflate", "zstandard", "zstd", "bzip2", "xz"])
def test_codecs_round_trip(codec):
    entries = [full_entry(), minimal_entry()]
    data = mio.encode_manifest_entries(entries, codec=codec)
    assert mio.decode_manifest_entries(data) == entries
    expected = "zstandard" if codec == "zstd" else codec
    assert _raw_schema_and_codec(data)[1] == expected
    if codec in ("null", "deflate"):  # fastavro reads these natively: cross-check our framing
        assert len(list(fastavro.reader(BytesIO(data)))) == 2


def test_snappy_codec():
    try:
        import cramjam  # noqa: F401
    except ImportError:
        pytest.importorskip("snappy")
    entries = [full_entry()]
    data = mio.encode_manifest_entries(entries, codec="snappy")
    assert mio.decode_manifest_entries(data) == entries


def test_snappy_framing_with_stand_in_compressor(monkeypatch):
    """Avro snappy blocks = compressed bytes + big-endian CRC32 of the uncompressed bytes."""
    import zlib

    monkeypatch.setattr(avro, "_snappy_module", lambda: (zlib.compress, zlib.decompress))
    entries = [full_entry(), minimal_entry()]
    data = mio.encode_manifest_entries(entries, codec="snappy")
    _, _, blocks = avro.parse_container(data)
    ((count, payload),) = blocks
    raw = zlib.decompress(payload[:-4])
    assert payload[-4:] == zlib.crc32(raw).to_bytes(4, "big")
    assert mio.decode_manifest_entries(data) == entries
    corrupt = data.replace(payload, payload[:-1] + bytes([payload[-1] ^ 1]))
    with pytest.raises(FormatError, match="CRC32"):
        mio.decode_manifest_entries(corrupt)


def test_snappy_without_library_is_format_error(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_snappy(name, *args, **kwargs):
        if name in ("cramjam", "snappy"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_snappy)
    with pytest.raises(FormatError, match="cramjam"):
        mio.encode_manifest_entries([full_entry()], codec="snappy")


def test_unknown_codec_rejected():
    with pytest.raises(LakeError, match="codec"):
        mio.encode_manifest_entries([full_entry()], codec="lz77")


def test_multi_block_file():
    entries = [dataclasses.replace(full_entry(), file=full_file(f"data-{i}.parquet")) for i in range(2000)]
    data = mio.encode_manifest_entries(entries)
    _, _, blocks = avro.parse_container(data)
    assert len(blocks) > 1
    assert sum(c for c, _ in blocks) == 2000
    assert mio.decode_manifest_entries(data) == entries


@pytest.mark.parametrize("buckets", [{0}, {1, 3}, {7}])
def test_decoding_for_some_buckets_is_the_whole_decode_filtered(buckets):
    entries = [
        dataclasses.replace(full_entry(), bucket=i % 4, file=full_file(f"data-{i}.parquet")) for i in range(40)
    ] + [dataclasses.replace(minimal_entry(), bucket=1)]
    data = mio.encode_manifest_entries(entries)
    assert mio.decode_manifest_entries(data, buckets=buckets) == [e for e in entries if e.bucket in buckets]


def test_empty_files():
    for enc, dec in (
        (mio.encode_manifest_entries, mio.decode_manifest_entries),
        (mio.encode_manifest_list, mio.decode_manifest_list),
        (mio.encode_index_manifest, mio.decode_index_manifest),
    ):
        data = enc([])
        assert dec(data) == []
        assert _raw_schema_and_codec(data)[1] == "zstandard"


# --------------------------------------------------------------------------------------------
# round trips
# --------------------------------------------------------------------------------------------


def test_manifest_entries_round_trip_all_and_no_optionals():
    entries = [full_entry(), minimal_entry(), dataclasses.replace(full_entry(), kind=FileKind.ADD)]
    out = mio.decode_manifest_entries(mio.encode_manifest_entries(entries))
    assert out == entries
    assert isinstance(out[0].kind, FileKind)
    assert isinstance(out[0].file.extra_files, tuple)
    m = out[1].file
    assert (m.creation_time, m.delete_row_count, m.embedded_file_index, m.file_source) == (None,) * 4
    assert (m.value_stats_cols, m.external_path, m.first_row_id) == (None,) * 3
    assert (m.write_cols, m.write_cols_sequences) == (None, None)


def test_empty_vs_null_lists_preserved():
    f = dataclasses.replace(
        minimal_file(),
        value_stats_cols=(),
        write_cols=(),
        write_cols_sequences=(),
        key_stats=SimpleStats(EMPTY_ROW_BYTES, EMPTY_ROW_BYTES, None),
    )
    e = ManifestEntry(FileKind.ADD, EMPTY_ROW_BYTES, 0, 1, f)
    (out,) = mio.decode_manifest_entries(mio.encode_manifest_entries([e]))
    assert out.file.value_stats_cols == () and out.file.write_cols == ()
    assert out.file.write_cols_sequences == ()
    assert out.file.key_stats.null_counts is None


def test_manifest_list_round_trip_all_and_no_optionals():
    metas = [full_meta(), minimal_meta()]
    assert mio.decode_manifest_list(mio.encode_manifest_list(metas)) == metas


def test_index_manifest_round_trip_all_and_no_optionals():
    entries = [full_index_entry(), minimal_index_entry()]
    out = mio.decode_index_manifest(mio.encode_index_manifest(entries))
    assert out == entries
    assert isinstance(out[0].dv_ranges, tuple)


def test_global_index_with_nulls_round_trip():
    g = {
        "row_range_start": 0,
        "row_range_end": 5,
        "index_field_id": 1,
        "extra_field_ids": None,
        "index_meta": None,
        "source_meta": None,
    }
    e = dataclasses.replace(minimal_index_entry(), index_type="BTREE", global_index=g)
    (out,) = mio.decode_index_manifest(mio.encode_index_manifest([e]))
    assert out.global_index == g


def test_global_index_missing_required_key():
    e = dataclasses.replace(minimal_index_entry(), global_index={"row_range_start": 0})
    with pytest.raises(LakeError, match="global index"):
        mio.encode_index_manifest([e])


_i64 = st.integers(-(2**63), 2**63 - 1)
_i32 = st.integers(-(2**31), 2**31 - 1)
_name = st.text(min_size=1, max_size=20)
_opt_i64 = st.none() | _i64
_stats_st = st.builds(
    SimpleStats,
    st.binary(max_size=40),
    st.binary(max_size=40),
    st.none() | st.lists(st.none() | _i64, max_size=5).map(tuple),
)
_file_st = st.builds(
    DataFileMeta,
    file_name=_name,
    file_size=_i64,
    row_count=_i64,
    min_key=st.binary(max_size=30),
    max_key=st.binary(max_size=30),
    key_stats=_stats_st,
    value_stats=_stats_st,
    min_sequence_number=_i64,
    max_sequence_number=_i64,
    schema_id=_i64,
    level=_i32,
    extra_files=st.lists(_name, max_size=3).map(tuple),
    creation_time=_opt_i64,
    delete_row_count=_opt_i64,
    embedded_file_index=st.none() | st.binary(max_size=20),
    file_source=st.none() | st.sampled_from([0, 1]),
    value_stats_cols=st.none() | st.lists(_name, max_size=4).map(tuple),
    external_path=st.none() | _name,
    first_row_id=_opt_i64,
    write_cols=st.none() | st.lists(_name, max_size=4).map(tuple),
    write_cols_sequences=st.none() | st.lists(_i64, max_size=4).map(tuple),
)
_entry_st = st.builds(ManifestEntry, st.sampled_from(list(FileKind)), st.binary(max_size=30), _i32, _i32, _file_st)
_meta_st = st.builds(
    ManifestFileMeta,
    _name,
    _i64,
    _i64,
    _i64,
    _stats_st,
    _i64,
    st.none() | _i32,
    st.none() | _i32,
    st.none() | _i32,
    st.none() | _i32,
    _opt_i64,
    _opt_i64,
)
_dv_st = st.builds(DeletionVectorMeta, _name, _i32, _i32, _opt_i64)
_gi_st = st.none() | st.fixed_dictionaries(
    {
        "row_range_start": _i64,
        "row_range_end": _i64,
        "index_field_id": _i32,
        "extra_field_ids": st.none() | st.lists(_i32, max_size=3).map(tuple),
        "index_meta": st.none() | st.binary(max_size=10),
        "source_meta": st.none() | st.binary(max_size=10),
    }
)
_index_st = st.builds(
    IndexManifestEntry,
    st.sampled_from(list(FileKind)),
    st.binary(max_size=30),
    _i32,
    _name,
    _name,
    _i64,
    _i64,
    st.none() | st.lists(_dv_st, max_size=3).map(tuple),
    st.none() | _name,
    _gi_st,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[_ONE_PATH])
@given(st.lists(_entry_st, max_size=5))
def test_manifest_entries_round_trip_property(entries):
    assert mio.decode_manifest_entries(mio.encode_manifest_entries(entries)) == entries


@settings(max_examples=60, deadline=None, suppress_health_check=[_ONE_PATH])
@given(st.lists(_entry_st, max_size=12))
def test_columnar_encoding_is_fastavros_byte_for_byte(entries):
    def payloads(data):
        meta, _sync, blocks = avro.parse_container(data)
        return meta["avro.schema"], blocks

    columnar = mio.encode_manifest_entries(entries, codec="null", columnar_min=0)
    records = mio.encode_manifest_entries(entries, codec="null", columnar_min=2**62)
    assert payloads(columnar) == payloads(records)
    assert mio.decode_manifest_entries(columnar, columnar_min=0) == entries


def test_columnar_blocks_are_fastavros():
    """Past 64,000 bytes a block ends, where fastavro's writer ends it."""
    entries = [dataclasses.replace(full_entry(), file=full_file(f"data-{i}.parquet")) for i in range(3_000)]
    columnar = avro.parse_container(mio.encode_manifest_entries(entries, codec="null", columnar_min=0))[2]
    records = avro.parse_container(mio.encode_manifest_entries(entries, codec="null", columnar_min=2**62))[2]
    assert len(columnar) > 2 and columnar == records


def test_columnar_encoder_leaves_odd_values_to_fastavro():
    odd = dataclasses.replace(full_entry(), bucket=True)  # a bool: fastavro decides
    assert mio._encode_entries_columnar([odd]) is None
    bad = dataclasses.replace(full_entry(), bucket=None)
    with pytest.raises(FormatError, match="cannot encode"):
        mio.encode_manifest_entries([bad], columnar_min=0)


@settings(max_examples=60, deadline=None, suppress_health_check=[_ONE_PATH])
@given(st.lists(_meta_st, max_size=5))
def test_manifest_list_round_trip_property(metas):
    assert mio.decode_manifest_list(mio.encode_manifest_list(metas)) == metas


@settings(max_examples=60, deadline=None, suppress_health_check=[_ONE_PATH])
@given(st.lists(_index_st, max_size=5))
def test_index_manifest_round_trip_property(entries):
    assert mio.decode_index_manifest(mio.encode_index_manifest(entries)) == entries


# --------------------------------------------------------------------------------------------
# reading files from other writers: extra fields, missing optional fields, other record names
# --------------------------------------------------------------------------------------------


def _write_foreign(schema: dict | list, records: list, codec: str = "deflate") -> bytes:
    buf = BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(schema), records, codec=codec)
    return buf.getvalue()


_OLD_STATS = {
    "type": "record",
    "name": "SomeStats",
    "namespace": "elsewhere",
    "fields": [
        {"name": "_MIN_VALUES", "type": "bytes"},
        {"name": "_MAX_VALUES", "type": "bytes"},
        {"name": "_NULL_COUNTS", "type": {"type": "array", "items": "long"}},  # non-null (0.4 era)
    ],
}


def test_decode_manifest_from_old_foreign_writer():
    """Other record names, fields in another order, extra fields, optional fields missing,
    _CREATION_TIME without a logical type, a top-level ["null", record] union (old Java)."""
    file_rec = {
        "type": "record",
        "name": "OldDataFile",
        "fields": [
            {"name": "_SOMETHING_NEW", "type": "string"},
            *_fields_of(JAVA_DATA_FILE_RECORD, "_FILE_SIZE", "_FILE_NAME", "_ROW_COUNT", "_MIN_KEY", "_MAX_KEY"),
            {"name": "_KEY_STATS", "type": _OLD_STATS},
            {"name": "_VALUE_STATS", "type": "elsewhere.SomeStats"},
            *_fields_of(
                JAVA_DATA_FILE_RECORD,
                "_MIN_SEQUENCE_NUMBER",
                "_MAX_SEQUENCE_NUMBER",
                "_SCHEMA_ID",
                "_LEVEL",
                "_EXTRA_FILES",
            ),
            {"name": "_CREATION_TIME", "type": ["null", "long"], "default": None},
        ],
    }
    schema = [
        "null",
        {
            "type": "record",
            "name": "Whatever",
            "namespace": "x.y",
            "fields": [
                *_fields_of(JAVA_MANIFEST_ENTRY_SCHEMA, "_VERSION", "_KIND", "_PARTITION", "_BUCKET", "_TOTAL_BUCKETS"),
                {"name": "_FILE", "type": file_rec},
                {"name": "_EXTRA_TOP", "type": ["null", "long"], "default": None},
            ],
        },
    ]
    stats = {"_MIN_VALUES": _row(1), "_MAX_VALUES": _row(9), "_NULL_COUNTS": [0]}
    rec = {
        "_VERSION": 2,
        "_KIND": 1,
        "_PARTITION": DT_2024_01_01,
        "_BUCKET": 4,
        "_TOTAL_BUCKETS": 8,
        "_EXTRA_TOP": 5,
        "_FILE": {
            "_SOMETHING_NEW": "zzz",
            "_FILE_SIZE": 55,
            "_FILE_NAME": "data-old.orc",
            "_ROW_COUNT": 9,
            "_MIN_KEY": _row(1),
            "_MAX_KEY": _row(9),
            "_KEY_STATS": stats,
            "_VALUE_STATS": stats,
            "_MIN_SEQUENCE_NUMBER": 3,
            "_MAX_SEQUENCE_NUMBER": 11,
            "_SCHEMA_ID": 1,
            "_LEVEL": 2,
            "_EXTRA_FILES": ["idx"],
            "_CREATION_TIME": 1_700_000_000_123,
        },
    }
    (e,) = mio.decode_manifest_entries(_write_foreign(schema, [rec]))
    assert e == ManifestEntry(
        FileKind.DELETE,
        DT_2024_01_01,
        4,
        8,
        DataFileMeta(
            "data-old.orc",
            55,
            9,
            _row(1),
            _row(9),
            SimpleStats(_row(1), _row(9), (0,)),
            SimpleStats(_row(1), _row(9), (0,)),
            3,
            11,
            1,
            2,
            ("idx",),
            1_700_000_000_123,
        ),
    )


def test_decode_manifest_with_logical_timestamp_from_fastavro_datetime():
    """A writer handing fastavro a datetime for _CREATION_TIME: we read back epoch millis."""
    import datetime as dt

    e = full_entry()
    rec = mio._read_records(mio.encode_manifest_entries([e]), "x")[0]
    rec["_FILE"]["_CREATION_TIME"] = dt.datetime(2026, 11, 22, 2, 6, 33, 801000, tzinfo=dt.UTC)
    data = _write_foreign(JAVA_MANIFEST_ENTRY_SCHEMA, [rec], codec="null")
    (out,) = mio.decode_manifest_entries(data)
    assert out.file.creation_time == int(dt.datetime(2026, 11, 22, 2, 6, 33, 801000, tzinfo=dt.UTC).timestamp() * 1000)


def test_decode_manifest_list_missing_optional_fields():
    """A pre-1.1 Java manifest list: no bucket/level/row-id range fields."""
    schema = _java_record(_required_fields(JAVA_MANIFEST_FILE_META_SCHEMA))
    rec = {
        "_VERSION": 2,
        "_FILE_NAME": "manifest-x-0",
        "_FILE_SIZE": 10,
        "_NUM_ADDED_FILES": 2,
        "_NUM_DELETED_FILES": 1,
        "_SCHEMA_ID": 4,
        "_PARTITION_STATS": {"_MIN_VALUES": EMPTY_ROW_BYTES, "_MAX_VALUES": EMPTY_ROW_BYTES, "_NULL_COUNTS": None},
    }
    (m,) = mio.decode_manifest_list(_write_foreign(schema, [rec]))
    assert m == ManifestFileMeta("manifest-x-0", 10, 2, 1, SimpleStats(EMPTY_ROW_BYTES, EMPTY_ROW_BYTES, None), 4)


def test_decode_index_manifest_older_and_newer_writers():
    """pypaimon's record names and non-union DV items; a newer global-index field kept."""
    schema = {
        "type": "record",
        "name": "IndexManifestEntry",
        "fields": [
            *_required_fields(JAVA_INDEX_MANIFEST_ENTRY_SCHEMA),  # _VERSION .. _ROW_COUNT
            {
                "name": "_DELETIONS_VECTORS_RANGES",
                "type": [
                    "null",
                    {
                        "type": "array",
                        "items": {
                            "type": "record",
                            "name": "DeletionVectorMeta",
                            "fields": [
                                {"name": "f0", "type": "string"},
                                {"name": "f1", "type": "int"},
                                {"name": "f2", "type": "int"},
                            ],  # no _CARDINALITY (Paimon 0.9)
                        },
                    },
                ],
                "default": None,
            },
            {
                "name": "_GLOBAL_INDEX",
                "type": [
                    "null",
                    {
                        "type": "record",
                        "name": "G",
                        "fields": [
                            {"name": "_ROW_RANGE_START", "type": "long"},
                            {"name": "_ROW_RANGE_END", "type": "long"},
                            {"name": "_INDEX_FIELD_ID", "type": "int"},
                            {"name": "_BUILD_SCHEMA_ID", "type": ["null", "long"], "default": None},
                        ],
                    },
                ],
                "default": None,
            },
        ],
    }
    rec = {
        "_VERSION": 1,
        "_KIND": 0,
        "_PARTITION": EMPTY_ROW_BYTES,
        "_BUCKET": 2,
        "_INDEX_TYPE": "DELETION_VECTORS",
        "_FILE_NAME": "index-1",
        "_FILE_SIZE": 9,
        "_ROW_COUNT": 1,
        "_DELETIONS_VECTORS_RANGES": [{"f0": "data-1.parquet", "f1": 1, "f2": 8}],
        "_GLOBAL_INDEX": {"_ROW_RANGE_START": 1, "_ROW_RANGE_END": 2, "_INDEX_FIELD_ID": 3, "_BUILD_SCHEMA_ID": 7},
    }
    (e,) = mio.decode_index_manifest(_write_foreign(schema, [rec]))
    assert e.dv_ranges == (DeletionVectorMeta("data-1.parquet", 1, 8, None),)
    assert e.external_path is None
    assert e.global_index == {
        "row_range_start": 1,
        "row_range_end": 2,
        "index_field_id": 3,
        "extra_field_ids": None,
        "index_meta": None,
        "source_meta": None,
        "build_schema_id": 7,
    }


def test_missing_required_field_is_format_error():
    schema = {
        "type": "record",
        "name": "r",
        "fields": [{"name": "_VERSION", "type": "int"}, {"name": "_FILE_NAME", "type": "string"}],
    }
    data = _write_foreign(schema, [{"_VERSION": 2, "_FILE_NAME": "m"}])
    with pytest.raises(FormatError, match="_FILE_SIZE"):
        mio.decode_manifest_list(data)


def test_garbage_is_format_error():
    with pytest.raises(FormatError, match="not an Avro"):
        mio.decode_manifest_entries(b"PAR1 this is not avro")
    good = mio.encode_manifest_entries([full_entry()])
    with pytest.raises(FormatError):
        mio.decode_manifest_entries(good[:-20])
    with pytest.raises(FormatError):
        mio.decode_manifest_entries(good[:40])
    bad_kind = _write_foreign(
        JAVA_MANIFEST_ENTRY_SCHEMA,
        [dict(mio._read_records(good, "x")[0], _KIND=5)],
    )
    with pytest.raises(FormatError, match="_KIND"):
        mio.decode_manifest_entries(bad_kind)


def test_encode_bad_value_is_format_error():
    e = dataclasses.replace(full_entry(), bucket="zero")
    with pytest.raises(FormatError, match="manifest entries"):
        mio.encode_manifest_entries([e])


# --------------------------------------------------------------------------------------------
# dataclass helpers
# --------------------------------------------------------------------------------------------


def test_dataclasses_pickle_and_are_frozen():
    objs = [full_entry(), minimal_entry(), full_meta(), full_index_entry(), EMPTY_STATS]
    for o in objs:
        assert pickle.loads(pickle.dumps(o)) == o
    with pytest.raises(dataclasses.FrozenInstanceError):
        full_file().level = 4  # type: ignore[misc]
    hash(full_entry())
    hash(full_index_entry())  # global_index dict is excluded from the hash


def test_empty_stats():
    assert EMPTY_ROW_BYTES == bytes(12)
    assert EMPTY_STATS == SimpleStats(bytes(12), bytes(12), ())


def test_upgrade_and_identifier():
    f = full_file(level=2)
    g = f.upgrade(5)
    assert g.level == 5 and dataclasses.replace(g, level=2) == f
    with pytest.raises(LakeError, match="higher level"):
        f.upgrade(2)
    assert f.identifier() == (2, f.file_name, f.extra_files, f.embedded_file_index, f.external_path)
    e = ManifestEntry(FileKind.ADD, DT_2024_01_01, 3, 4, f)
    ident = e.identifier()
    assert ident == FileIdentifier(
        DT_2024_01_01, 3, 2, f.file_name, f.extra_files, f.embedded_file_index, f.external_path
    )
    # kind, total_buckets and stats do not matter; level, extra files and external path do
    assert dataclasses.replace(e, kind=FileKind.DELETE, total_buckets=9).identifier() == ident
    assert ManifestEntry(FileKind.ADD, DT_2024_01_01, 3, 4, g).identifier() != ident
    assert (
        ManifestEntry(FileKind.ADD, DT_2024_01_01, 3, 4, dataclasses.replace(f, extra_files=())).identifier() != ident
    )
    assert (
        ManifestEntry(FileKind.ADD, DT_2024_01_01, 3, 4, dataclasses.replace(f, external_path=None)).identifier()
        != ident
    )
    assert full_file().add_row_count() == 993 and minimal_file().add_row_count() is None


def _add(name, bucket=0, level=0, partition=EMPTY_ROW_BYTES):
    f = dataclasses.replace(minimal_file(name), level=level)
    return ManifestEntry(FileKind.ADD, partition, bucket, 2, f)


def _delete(name, bucket=0, level=0, partition=EMPTY_ROW_BYTES):
    return dataclasses.replace(_add(name, bucket, level, partition), kind=FileKind.DELETE)


def test_merge_add_then_delete_cancel():
    assert merge_entries([_add("a"), _add("b"), _delete("a")]) == [_add("b")]


def test_merge_unmatched_delete_kept_in_order():
    out = merge_entries([_delete("old"), _add("a"), _delete("old2"), _add("b")])
    assert out == [_delete("old"), _add("a"), _delete("old2"), _add("b")]


def test_merge_distinguishes_bucket_level_partition():
    entries = [
        _add("a", bucket=0),
        _delete("a", bucket=1),
        _delete("a", level=1),
        _delete("a", partition=DT_2024_01_01),
    ]
    assert merge_entries(entries) == entries


def test_merge_compaction_upgrade():
    """A compaction that upgrades a file: DELETE at level 0 + ADD at level 5 of the same name."""
    base = [_add("a"), _add("b")]
    delta = [_delete("a"), _add("a", level=5)]
    assert merge_entries(base + delta) == [_add("b"), _add("a", level=5)]


def test_merge_double_add_is_error():
    with pytest.raises(FormatError, match="'a'"):
        merge_entries([_add("a"), _add("a")])
    with pytest.raises(FormatError):  # Java: an ADD while a DELETE of it is pending also fails
        merge_entries([_delete("a"), _add("a")])


def test_merge_accepts_iterables():
    assert merge_entries(iter([_add("a")])) == [_add("a")]
    assert merge_entries([]) == []


def test_decode_10k_entries_round_trips():
    # Decode speed is measured by benchmarks, never asserted here (a shared CI machine is noisy).
    entries = [dataclasses.replace(full_entry(), file=full_file(f"data-{i}.parquet")) for i in range(10_000)]
    assert mio.decode_manifest_entries(mio.encode_manifest_entries(entries)) == entries
