"""The metadata system tables (``db.t$snapshots``, ...) against oracles independent of them: the
snapshot, schema, tag and consumer JSON files read directly, the manifest Avro files read with
fastavro, the data files on disk (their sizes, Parquet row counts) and the table's own reads."""

from __future__ import annotations

import datetime as dt
import io
import json
import os
import pickle
import time
from pathlib import Path

import fastavro
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
import zstandard

from lake_core import Catalog, SystemTable
from lake_core.errors import InvalidOptionError, PredicateError, ReadOnlyTableError, TableNotFoundError
from system_tables.history import IDENT, SYSTEM_TABLES, build

S, I64, I32, TS = pa.string(), pa.int64(), pa.int32(), pa.timestamp("ms")

#: Paimon 1.0's columns (org.apache.paimon.table.system.*Table.TABLE_TYPE): name, Arrow type, nullable.
EXPECTED = {
    "snapshots": [
        ("snapshot_id", I64, False),
        ("schema_id", I64, False),
        ("commit_user", S, False),
        ("commit_identifier", I64, False),
        ("commit_kind", S, False),
        ("commit_time", TS, False),
        ("base_manifest_list", S, False),
        ("delta_manifest_list", S, False),
        ("changelog_manifest_list", S, True),
        ("total_record_count", I64, True),
        ("delta_record_count", I64, True),
        ("changelog_record_count", I64, True),
        ("watermark", I64, True),
    ],
    "schemas": [
        ("schema_id", I64, False),
        ("fields", S, False),
        ("partition_keys", S, False),
        ("primary_keys", S, False),
        ("options", S, False),
        ("comment", S, True),
        ("update_time", TS, False),
    ],
    "options": [("key", S, False), ("value", S, False)],
    "files": [
        ("partition", S, True),
        ("bucket", I32, False),
        ("file_path", S, False),
        ("file_format", S, False),
        ("schema_id", I64, False),
        ("level", I32, False),
        ("record_count", I64, False),
        ("file_size_in_bytes", I64, False),
        ("min_key", S, True),
        ("max_key", S, True),
        ("null_value_counts", S, False),
        ("min_value_stats", S, False),
        ("max_value_stats", S, False),
        ("min_sequence_number", I64, True),
        ("max_sequence_number", I64, True),
        ("creation_time", TS, True),
        ("file_source", S, True),
    ],
    "manifests": [
        ("file_name", S, False),
        ("file_size", I64, False),
        ("num_added_files", I64, False),
        ("num_deleted_files", I64, False),
        ("schema_id", I64, False),
        ("min_partition_stats", S, True),
        ("max_partition_stats", S, True),
    ],
    "partitions": [
        ("partition", S, True),
        ("record_count", I64, False),
        ("file_size_in_bytes", I64, False),
        ("file_count", I64, False),
        ("last_update_time", TS, True),
    ],
    "buckets": [
        ("partition", S, True),
        ("bucket", I32, False),
        ("record_count", I64, False),
        ("file_size_in_bytes", I64, False),
        ("file_count", I64, False),
        ("last_update_time", TS, True),
    ],
    "tags": [
        ("tag_name", S, False),
        ("snapshot_id", I64, False),
        ("schema_id", I64, False),
        ("commit_time", TS, False),
        ("record_count", I64, True),
        ("create_time", TS, True),
        ("time_retained", S, True),
    ],
    "consumers": [("consumer_id", S, False), ("next_snapshot_id", I64, False)],
}


@pytest.fixture
def history(warehouse, warehouse_path):
    catalog = Catalog(warehouse)
    table = build(catalog)
    return catalog, table, warehouse_path / "db.db" / "t"


def _json(path: Path) -> dict:
    return json.loads(path.read_text())


def _local(ms: int) -> dt.datetime:
    """Java's LocalDateTime.ofInstant(ms, systemDefault()) as a naive datetime."""
    return dt.datetime.fromtimestamp(ms / 1000).replace(microsecond=(ms % 1000) * 1000)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_columns_and_types_are_paimon_10s(history, name):
    catalog, _, _ = history
    st = catalog.get_table(f"{IDENT}${name}")
    assert isinstance(st, SystemTable) and st.identifier == f"{IDENT}${name}"
    expected = pa.schema([pa.field(n, t, nullable) for n, t, nullable in EXPECTED[name]])
    assert st.arrow_schema() == expected
    assert st.to_arrow().schema == expected


def test_audit_log_columns_are_rowkind_then_the_tables(history):
    catalog, table, _ = history
    st = catalog.get_table(f"{IDENT}$audit_log")
    schema = st.to_arrow().schema
    assert schema.names == ["rowkind", *table.arrow_schema().names]
    assert schema.field("rowkind").type == pa.string() and schema.field("rowkind").nullable
    assert [f.type for f in schema][1:] == [f.type for f in table.arrow_schema()]


def test_snapshots_are_the_snapshot_files(history):
    catalog, _, root = history
    rows = catalog.get_table(f"{IDENT}$snapshots").to_arrow().to_pylist()
    files = sorted((root / "snapshot").glob("snapshot-*"), key=lambda p: int(p.name.split("-")[1]))
    assert len(rows) == len(files) == 6
    for row, path in zip(rows, files):
        j = _json(path)
        assert row == {
            "snapshot_id": j["id"],
            "schema_id": j["schemaId"],
            "commit_user": j["commitUser"],
            "commit_identifier": j["commitIdentifier"],
            "commit_kind": j["commitKind"],
            "commit_time": _local(j["timeMillis"]),
            "base_manifest_list": j["baseManifestList"],
            "delta_manifest_list": j["deltaManifestList"],
            "changelog_manifest_list": j.get("changelogManifestList"),
            "total_record_count": j.get("totalRecordCount"),
            "delta_record_count": j.get("deltaRecordCount"),
            "changelog_record_count": j.get("changelogRecordCount"),
            "watermark": j.get("watermark"),
        }
    assert [r["commit_kind"] for r in rows] == ["APPEND", "APPEND", "APPEND", "COMPACT", "APPEND", "APPEND"]
    assert [r["schema_id"] for r in rows] == [0, 0, 0, 0, 1, 1]


def test_schemas_and_options_are_the_schema_files(history):
    catalog, _, root = history
    rows = catalog.get_table(f"{IDENT}$schemas").to_arrow().to_pylist()
    assert [r["schema_id"] for r in rows] == [0, 1]
    for row in rows:
        j = _json(root / "schema" / f"schema-{row['schema_id']}")
        assert json.loads(row["fields"]) == j["fields"]
        assert json.loads(row["partition_keys"]) == j["partitionKeys"] == ["dt"]
        assert json.loads(row["primary_keys"]) == j["primaryKeys"] == ["dt", "k"]
        assert json.loads(row["options"]) == j["options"]
        assert row["comment"] == j.get("comment")
        assert row["update_time"] == _local(j["timeMillis"])
        # Jackson's flat JSON: no blanks
        assert ": " not in row["fields"] and ", " not in row["fields"]
    assert [f["name"] for f in json.loads(rows[1]["fields"])] == ["dt", "k", "v", "f", "w"]
    options = catalog.get_table(f"{IDENT}$options").to_arrow().to_pylist()
    assert {r["key"]: r["value"] for r in options} == _json(root / "schema" / "schema-1")["options"]
    # the options in the order Java's HashMap iterates them, as the schema file lists them
    assert [r["key"] for r in options] == list(_json(root / "schema" / "schema-1")["options"])


def test_tags_are_the_tag_files(history):
    catalog, _, root = history
    rows = catalog.get_table(f"{IDENT}$tags").to_arrow().to_pylist()
    assert [r["tag_name"] for r in rows] == ["t0", "t1"]
    for row in rows:
        j = _json(root / "tag" / f"tag-{row['tag_name']}")
        assert row["snapshot_id"] == j["id"] and row["schema_id"] == j["schemaId"]
        assert row["commit_time"] == _local(j["timeMillis"])
        assert row["record_count"] == j["totalRecordCount"]
    assert rows[0]["snapshot_id"] == 1 and rows[0]["create_time"] is None and rows[0]["time_retained"] is None
    t1 = _json(root / "tag" / "tag-t1")
    created = dt.datetime(
        *t1["tagCreateTime"][:6], t1["tagCreateTime"][6] // 1000 if len(t1["tagCreateTime"]) > 6 else 0
    )
    assert rows[1]["snapshot_id"] == 6 and rows[1]["time_retained"] == "PT1H"
    assert rows[1]["create_time"] == created.replace(microsecond=created.microsecond // 1000 * 1000)


def test_consumers_are_the_consumer_files(history):
    catalog, table, root = history
    table.maintenance.consumers.reset("b-reader", 5)
    rows = catalog.get_table(f"{IDENT}$consumers").to_arrow().to_pylist()
    on_disk = {
        p.name.removeprefix("consumer-"): _json(p)["nextSnapshot"] for p in (root / "consumer").glob("consumer-*")
    }
    assert {r["consumer_id"]: r["next_snapshot_id"] for r in rows} == on_disk == {"c1": 2, "b-reader": 5}
    assert [r["consumer_id"] for r in rows] == ["b-reader", "c1"]


def _zstd_block(fo) -> io.BytesIO:
    """fastavro's block reader for zstd: the block's length (a zig-zag varint), then its frames."""
    shift = raw = 0
    while True:
        b = fo.read(1)[0]
        raw |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            break
    data = fo.read((raw >> 1) ^ -(raw & 1))
    return io.BytesIO(zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data), read_across_frames=True).read())


def _avro(path: Path) -> list[dict]:
    """An Avro container read by fastavro (zstd blocks decompressed by zstandard)."""
    fastavro.read.BLOCK_READERS["zstandard"] = _zstd_block
    with open(path, "rb") as f:
        return list(fastavro.reader(f))


def test_manifests_are_the_latest_snapshots_manifest_lists(history):
    catalog, _, root = history
    rows = catalog.get_table(f"{IDENT}$manifests").to_arrow().to_pylist()
    snap = _json(root / "snapshot" / "snapshot-6")
    metas = [m for key in ("baseManifestList", "deltaManifestList") for m in _avro(root / "manifest" / snap[key])]
    assert [r["file_name"] for r in rows] == [m["_FILE_NAME"] for m in metas]
    for row, meta in zip(rows, metas):
        assert row["file_size"] == meta["_FILE_SIZE"] == os.path.getsize(root / "manifest" / row["file_name"])
        entries = _avro(root / "manifest" / row["file_name"])
        assert row["num_added_files"] == meta["_NUM_ADDED_FILES"] == sum(e["_KIND"] == 0 for e in entries)
        assert row["num_deleted_files"] == meta["_NUM_DELETED_FILES"] == sum(e["_KIND"] == 1 for e in entries)
        assert row["schema_id"] == meta["_SCHEMA_ID"]
        assert row["min_partition_stats"] <= row["max_partition_stats"]
        assert {row["min_partition_stats"], row["max_partition_stats"]} <= {"[a]", "[b]", "[c]"}


def _files_on_disk(root: Path, paths: list[str]) -> list[dict]:
    out = []
    for p in paths:
        local = Path(p.removeprefix("file://"))
        assert local.is_relative_to(root), p
        rel = local.relative_to(root)
        out.append(
            {
                "partition": "[" + rel.parts[0].split("=", 1)[1] + "]",
                "bucket": int(rel.parts[1].removeprefix("bucket-")),
                "record_count": pq.ParquetFile(local).metadata.num_rows,
                "file_size_in_bytes": local.stat().st_size,
            }
        )
    return out


def test_files_are_the_data_files_a_read_plans(history):
    catalog, table, root = history
    files = catalog.get_table(f"{IDENT}$files").to_arrow()
    rows = files.to_pylist()
    # the files the table's own scan plans, one row each
    planned = {
        s.file_path(f): (s.bucket, f) for s in table.new_read_builder().new_scan().plan().splits() for f in s.files
    }
    assert sorted(r["file_path"] for r in rows) == sorted(planned)
    disk = _files_on_disk(root, [r["file_path"] for r in rows])
    for row, on_disk in zip(rows, disk):
        assert {k: row[k] for k in on_disk} == on_disk
        bucket, meta = planned[row["file_path"]]
        assert (row["level"], row["schema_id"], row["file_format"]) == (meta.level, meta.schema_id, "parquet")
        assert (row["min_sequence_number"], row["max_sequence_number"]) == (
            meta.min_sequence_number,
            meta.max_sequence_number,
        )
        assert row["file_source"] in ("APPEND", "COMPACT")
        # the key and value statistics match the file's own rows
        data = pq.read_table(row["file_path"].removeprefix("file://"))
        assert row["min_key"] == f"[{pc.min(data['k']).as_py()}]" and row["max_key"] == f"[{pc.max(data['k']).as_py()}]"
        assert f"k={pc.min(data['k']).as_py()}" in row["min_value_stats"]
        assert f"k={data['k'].null_count}" in row["null_value_counts"]
    # what the history wrote: the compacted files of schema 0 at the top level (rewritten, or a
    # single level-0 file moved up as it was), the later ones at level 0
    by_schema = {(r["schema_id"], r["level"]) for r in rows}
    assert by_schema == {(0, 5), (1, 0)}
    assert {r["file_source"] for r in rows if r["level"] == 0} == {"APPEND"}
    assert "COMPACT" in {r["file_source"] for r in rows if r["level"] == 5}
    # the added column is null in the statistics of the files written before it: every row of them
    old = next(r for r in rows if r["schema_id"] == 0)
    assert old["min_value_stats"].endswith(", w=null}")
    assert old["null_value_counts"].endswith(f", w={old['record_count']}}}")
    assert old["min_value_stats"].startswith("{dt=") and "f=" in old["min_value_stats"]


def test_partitions_and_buckets_total_the_live_files(history):
    catalog, _, root = history
    files = catalog.get_table(f"{IDENT}$files").to_arrow()
    disk = pa.Table.from_pylist(_files_on_disk(root, files["file_path"].to_pylist()))
    disk = disk.append_column("creation_time", files["creation_time"])
    for name, keys in (("partitions", ["partition"]), ("buckets", ["partition", "bucket"])):
        got = catalog.get_table(f"{IDENT}${name}").to_arrow()
        want = (
            disk.group_by(keys)
            .aggregate(
                [
                    ("record_count", "sum"),
                    ("file_size_in_bytes", "sum"),
                    ("record_count", "count"),
                    ("creation_time", "max"),
                ]
            )
            .sort_by([(k, "ascending") for k in keys])
        )
        assert got.column("partition").to_pylist() == want.column("partition").to_pylist()
        assert got["record_count"].to_pylist() == want["record_count_sum"].to_pylist()
        assert got["file_size_in_bytes"].to_pylist() == want["file_size_in_bytes_sum"].to_pylist()
        assert got["file_count"].to_pylist() == want["record_count_count"].to_pylist()
        if name == "buckets":
            assert got["bucket"].to_pylist() == want["bucket"].to_pylist()
    assert catalog.get_table(f"{IDENT}$partitions").to_arrow()["partition"].to_pylist() == ["[a]", "[b]", "[c]"]


def test_last_update_time_counts_every_entry_as_java(history):
    """Java merges the raw manifest entries, a DELETE's creation time included: the compaction of
    partition [a] deleted files older than the one it wrote, so the newest is the compacted file's."""
    catalog, _, _ = history
    files = catalog.get_table(f"{IDENT}$files").to_arrow().to_pylist()
    parts = {r["partition"]: r for r in catalog.get_table(f"{IDENT}$partitions").to_arrow().to_pylist()}
    newest_a = max(r["creation_time"] for r in files if r["partition"] == "[a]")
    assert parts["[a]"]["last_update_time"] == newest_a


def test_audit_log_is_the_merged_rows_with_their_kinds(history):
    catalog, table, _ = history
    audit = catalog.get_table(f"{IDENT}$audit_log").to_arrow()
    live = table.to_arrow()
    inserted = audit.filter(pc.equal(audit["rowkind"], "+I")).drop_columns(["rowkind"])
    assert inserted.sort_by("k").to_pylist() == live.sort_by("k").to_pylist()
    # the delete of k=3 came after the full compaction: its merged row is a -D; k=2's delete was
    # compacted away before
    deleted = audit.filter(pc.equal(audit["rowkind"], "-D")).to_pylist()
    assert [(r["dt"], r["k"]) for r in deleted] == [("b", 3)]
    assert set(audit["rowkind"].to_pylist()) == {"+I", "-D"}
    # projection, rowkind anywhere
    rb = catalog.get_table(f"{IDENT}$audit_log").new_read_builder().with_projection(["k", "rowkind"])
    got = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    assert got.column_names == ["k", "rowkind"] and got.num_rows == audit.num_rows


def test_audit_log_of_an_append_table_is_all_inserts(warehouse):
    catalog = Catalog(warehouse)
    catalog.create_database("db")
    t = catalog.create_table("db.a", pa.schema([("x", pa.int64())]))
    t.write_arrow(pa.table({"x": [1, 2]}))
    audit = catalog.get_table("db.a$audit_log").to_arrow()
    assert audit.to_pylist() == [{"rowkind": "+I", "x": 1}, {"rowkind": "+I", "x": 2}]
    files = catalog.get_table("db.a$files").to_arrow().to_pylist()
    assert [(r["partition"], r["min_key"], r["max_key"]) for r in files] == [("[]", None, None)]
    assert catalog.get_table("db.a$partitions").to_arrow()["partition"].to_pylist() == ["[]"]


def test_an_empty_table_has_empty_system_tables(warehouse):
    catalog = Catalog(warehouse)
    catalog.create_database("db")
    catalog.create_table("db.e", pa.schema([("k", pa.int64())]), primary_keys=["k"], options={"bucket": "1"})
    for name in SYSTEM_TABLES:
        st = catalog.get_table(f"db.e${name}")
        rows = st.to_arrow()
        assert rows.schema == st.arrow_schema()
        assert rows.num_rows == (1 if name in ("schemas", "options") else 0), name


@pytest.mark.parametrize("name", SYSTEM_TABLES)
def test_system_tables_are_read_only(history, name):
    catalog, _, _ = history
    st = catalog.get_table(f"{IDENT}${name}")
    for attempt in (
        lambda: st.write_arrow(pa.table({"x": [1]})),
        lambda: st.delete_where(None),
        st.new_batch_write_builder,
        lambda: st.create_tag("x"),
        lambda: st.delete_tag("t0"),
        lambda: st.lease(holder="h"),
        lambda: st.maintenance,
        lambda: catalog.alter_table(f"{IDENT}${name}", []),
        lambda: catalog.drop_table(f"{IDENT}${name}"),
    ):
        with pytest.raises(ReadOnlyTableError, match=rf"\$\b{name}\b.* read-only system table"):
            attempt()
    assert catalog.table_exists(IDENT) and catalog.get_table(f"{IDENT}$tags").to_arrow().num_rows == 2


def test_an_unknown_suffix_names_the_supported_ones(history):
    catalog, _, _ = history
    with pytest.raises(TableNotFoundError) as e:
        catalog.get_table(f"{IDENT}$statistics")
    message = str(e.value)
    assert "'statistics'" in message
    for name in ("ro", *SYSTEM_TABLES):
        assert f"${name}" in message
    with pytest.raises(TableNotFoundError):
        catalog.get_table("db.nope$snapshots")


def test_suffixes_are_case_insensitive_and_the_tables_pickle(history):
    catalog, _, _ = history
    st = catalog.get_table(f"{IDENT}$SNAPSHOTS")
    assert isinstance(st, SystemTable) and st.name == "snapshots"
    again = pickle.loads(pickle.dumps(st))
    splits = pickle.loads(pickle.dumps(again.new_read_builder().new_scan().plan().splits()))
    assert again.new_read_builder().new_read().to_arrow(splits) == st.to_arrow()


def test_no_time_travel_or_filter_on_a_system_table(history):
    catalog, _, _ = history
    rb = catalog.get_table(f"{IDENT}$files").new_read_builder()
    with pytest.raises(InvalidOptionError, match="latest metadata"):
        rb.new_scan(snapshot_id=1)
    with pytest.raises(InvalidOptionError, match="scan.snapshot-id"):
        rb.with_options({"scan.snapshot-id": "1"})
    assert rb.with_options({"warehouse": "x", "table": IDENT}) is rb
    with pytest.raises(PredicateError, match="no filter"):
        rb.with_filter(object())


def test_the_metadata_tables_read_no_data_file(history, monkeypatch):
    """Only metadata is read: opening a data file would fail here."""
    catalog, _, _ = history
    real = pq.ParquetFile

    def refuse(*a, **k):
        raise AssertionError("a data file was opened")

    monkeypatch.setattr(pq, "ParquetFile", refuse)
    monkeypatch.setattr(pq, "read_table", refuse)
    started = time.perf_counter()
    for name in SYSTEM_TABLES:
        if name != "audit_log":
            catalog.get_table(f"{IDENT}${name}").to_arrow()
    assert time.perf_counter() - started < 30
    monkeypatch.setattr(pq, "ParquetFile", real)


def test_batch_reader_and_projection(history):
    catalog, _, _ = history
    st = catalog.get_table(f"{IDENT}$audit_log")
    whole = st.to_arrow()
    reader = st.to_arrow_batch_reader()
    assert reader.schema == st.arrow_schema()
    assert reader.read_all().to_pylist() == whole.to_pylist()
    files = catalog.get_table(f"{IDENT}$files").to_arrow(columns=["level", "file_path"])
    assert files.column_names == ["level", "file_path"]
    with pytest.raises(PredicateError, match="no column"):
        catalog.get_table(f"{IDENT}$files").to_arrow(columns=["nope"])


def test_audit_log_keeps_the_retractions_of_a_large_run(warehouse):
    """A large level-0 run holding -D rows and a small newer one: the merge of the keys only the
    small run touches must keep the large run's other rows as they are, -D included (the read
    that drops retractions skips them)."""
    catalog = Catalog(warehouse)
    catalog.create_database("db")
    schema = pa.schema([("k", pa.int64()), ("v", pa.int64()), ("op", pa.string())])
    t = catalog.create_table("db.r", schema, primary_keys=["k"], options={"bucket": "1", "rowkind.field": "op"})
    kinds = ["+I"] * 90 + ["-D"] * 10
    t.write_arrow(pa.table({"k": list(range(100)), "v": list(range(100)), "op": kinds}, schema=schema))
    t.write_arrow(pa.table({"k": [5], "v": [55], "op": ["+U"]}, schema=schema))
    audit = catalog.get_table("db.r$audit_log").to_arrow().sort_by("k")
    expected = [("+U" if k == 5 else kinds[k], k) for k in range(100)]
    assert list(zip(audit["rowkind"].to_pylist(), audit["k"].to_pylist())) == expected
    assert audit["op"].to_pylist() == [kinds[k] if k != 5 else "+U" for k in range(100)]
    assert t.to_arrow().num_rows == 90
