"""Catalog, upserts, deletes, time travel and predicates on real local tables."""

from __future__ import annotations

import time

import pyarrow as pa
import pytest

from lake_core import Catalog
from lake_core.errors import (
    DatabaseNotFoundError,
    InvalidDataError,
    InvalidOptionError,
    LakeError,
    SchemaMismatchError,
    SnapshotNotFoundError,
    TableAlreadyExistsError,
    TableNotFoundError,
    TagNotFoundError,
    UnsupportedOptionError,
)

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("amount", pa.float64())])


def rows(ids, names, amounts):
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "name": pa.array(names, pa.string()),
            "amount": pa.array(amounts, pa.float64()),
        }
    )


def as_dict(t: pa.Table, key="id"):
    return {r[key]: r for r in t.to_pylist()}


@pytest.fixture
def catalog(warehouse):
    c = Catalog(warehouse)
    c.create_database("db")
    return c


def test_catalog_lifecycle(catalog, warehouse):
    assert catalog.list_databases() == ["db"]
    catalog.create_database("db", ignore_if_exists=True)
    t = catalog.create_table("db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "2"})
    assert catalog.list_tables("db") == ["t"]
    with pytest.raises(TableAlreadyExistsError):
        catalog.create_table("db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "2"})
    assert catalog.get_table("db.t").schema.primary_keys == ("id",)
    assert t.latest_snapshot() is None and t.to_arrow().num_rows == 0
    catalog.drop_table("db.t")
    with pytest.raises(TableNotFoundError, match="db.t"):
        catalog.get_table("db.t")
    with pytest.raises(DatabaseNotFoundError, match="nope"):
        catalog.create_table("nope.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    with pytest.raises(DatabaseNotFoundError):
        catalog.list_tables("nope")


def test_create_if_not_exists_loses_a_race_gracefully(warehouse):
    """Two first runs creating the same table (jobs' ensure_table, the maintenance ledger): the
    one whose exclusive create of schema-0 loses gets the winner's table, not an error."""
    from lake_core.io.fileio import FileIO

    other = {"bucket": "3"}  # the winner's definition, so the test sees whose table it got

    class RacedFileIO(FileIO):
        """Another creator lands between this catalog's existence check and its create."""

        def try_create(self, path, data):
            if path.endswith("/schema/schema-0") and not self.exists(path):
                Catalog(warehouse).create_table("db.t", schema=SCHEMA, primary_keys=["id"], options=other)
            return super().try_create(path, data)

    Catalog(warehouse).create_database("db")
    raced = Catalog(warehouse, fileio=RacedFileIO(warehouse))
    t = raced.create_table("db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "2"}, ignore_if_exists=True)
    assert t.options.bucket == 3 and t.schema.id == 0
    t.write_arrow(rows([1], ["a"], [1.0]))
    assert Catalog(warehouse).get_table("db.t").to_arrow().num_rows == 1
    Catalog(warehouse).drop_table("db.t")
    with pytest.raises(TableAlreadyExistsError):  # without ignore_if_exists the lost race is an error
        raced.create_table("db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "2"})


def test_upserts_and_deletes_across_commits(catalog):
    t = catalog.create_table(
        "db.t",
        schema=pa.schema(list(SCHEMA) + [pa.field("op", pa.string())]),
        primary_keys=["id"],
        options={"bucket": "2", "rowkind.field": "op"},
    )
    s1 = t.write_arrow(
        pa.table({"id": [1, 2, 3], "name": ["a", "b", "c"], "amount": [1.0, 2.0, 3.0], "op": ["+I"] * 3})
    )
    s2 = t.write_arrow(
        pa.table({"id": [2, 3, 4], "name": ["B", None, "d"], "amount": [20.0, None, 4.0], "op": ["+U", "-D", "+I"]})
    )
    assert (s1.id, s2.id) == (1, 2)
    got = as_dict(t.to_arrow())
    assert sorted(got) == [1, 2, 4]
    assert got[2]["name"] == "B" and got[2]["amount"] == 20.0
    # time travel to the first snapshot still sees key 3
    assert sorted(as_dict(t.to_arrow(snapshot_id=1))) == [1, 2, 3]
    # record counts are file row counts (Java's totalRecordCount/deltaRecordCount)
    assert t.latest_snapshot().total_record_count == 6


def test_duplicate_keys_in_one_batch_and_several_writes_before_commit(catalog):
    t = catalog.create_table("db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "3"})
    wb = t.new_batch_write_builder()
    w = wb.new_write()
    w.write_arrow(rows([1, 1, 2], ["x", "y", "z"], [1, 2, 3]))
    w.write_arrow(rows([2, 5], ["zz", "q"], [4, 5]))
    msgs = w.prepare_commit()
    snaps = wb.new_commit().commit(msgs)
    assert len(snaps) == 1
    got = as_dict(t.to_arrow())
    assert {k: v["name"] for k, v in got.items()} == {1: "y", 2: "zz", 5: "q"}
    # every data file holds each key once, so a second commit on top still merges right
    t.write_arrow(rows([5], ["last"], [9]))
    assert as_dict(t.to_arrow())[5]["name"] == "last"


def test_sequence_field_decides_order(catalog):
    schema = pa.schema([("id", pa.int64()), ("v", pa.string()), ("ts", pa.int64()), ("ts2", pa.int32())])
    t = catalog.create_table(
        "db.t", schema=schema, primary_keys=["id"], options={"bucket": "1", "sequence.field": "ts,ts2"}
    )
    t.write_arrow(pa.table({"id": [1, 2], "v": ["new", "a"], "ts": [10, 5], "ts2": [0, 1]}, schema=schema))
    t.write_arrow(pa.table({"id": [1, 2, 2], "v": ["old", "b", "c"], "ts": [9, 5, 5], "ts2": [0, 2, 2]}, schema=schema))
    got = as_dict(t.to_arrow())
    assert got[1]["v"] == "new"  # lower sequence value loses although written later
    assert got[2]["v"] == "c"  # equal (ts, ts2): input order breaks the tie


def test_ignore_delete(catalog):
    schema = pa.schema(list(SCHEMA) + [pa.field("op", pa.string())])
    t = catalog.create_table(
        "db.t",
        schema=schema,
        primary_keys=["id"],
        options={"bucket": "1", "rowkind.field": "op", "ignore-delete": "true"},
    )
    t.write_arrow(pa.table({"id": [1], "name": ["a"], "amount": [1.0], "op": ["+I"]}))
    t.write_arrow(pa.table({"id": [1], "name": ["a"], "amount": [1.0], "op": ["-D"]}))
    assert t.to_arrow().num_rows == 1


def test_partitioned_overwrite_and_delete_where(catalog):
    schema = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.int32())])
    t = catalog.create_table(
        "db.p", schema=schema, primary_keys=["dt", "id"], partition_keys=["dt"], options={"bucket": "2"}
    )
    t.write_arrow(pa.table({"dt": ["d1", "d1", "d2", "d3"], "id": [1, 2, 1, 1], "v": [1, 2, 3, 4]}, schema=schema))
    t.write_arrow(pa.table({"dt": ["d2"], "id": [7], "v": [70]}, schema=schema), overwrite={"dt": "d2"})
    got = sorted((r["dt"], r["id"], r["v"]) for r in t.to_arrow().to_pylist())
    assert got == [("d1", 1, 1), ("d1", 2, 2), ("d2", 7, 70), ("d3", 1, 4)]
    assert t.latest_snapshot().commit_kind.value == "OVERWRITE"
    pb = t.new_read_builder().new_predicate_builder()
    t.delete_where(pb.greater_or_equal("dt", "d2"))
    assert sorted((r["dt"], r["id"]) for r in t.to_arrow().to_pylist()) == [("d1", 1), ("d1", 2)]
    t.write_arrow(pa.table({"dt": ["d9"], "id": [1], "v": [1]}, schema=schema), overwrite=True)
    assert t.to_arrow().to_pylist() == [{"dt": "d9", "id": 1, "v": 1}]


def test_filter_projection_and_pruning(catalog):
    schema = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.int64())])
    t = catalog.create_table(
        "db.p", schema=schema, primary_keys=["dt", "id"], partition_keys=["dt"], options={"bucket": "2"}
    )
    for d in ("a", "b", "c"):
        t.write_arrow(pa.table({"dt": [d] * 100, "id": list(range(100)), "v": list(range(100))}, schema=schema))
    rb = t.new_read_builder()
    pb = rb.new_predicate_builder()
    pred = pb.and_predicates([pb.equal("dt", "b"), pb.less_than("id", 10)])
    splits = rb.with_filter(pred).with_projection(["id", "v"]).new_scan().plan().splits()
    assert {s.partition_values for s in splits} == {("b",)}  # partitions a and c pruned
    out = rb.new_read().to_arrow(splits)
    assert out.column_names == ["id", "v"] and sorted(out["id"].to_pylist()) == list(range(10))
    got = t.to_arrow(filter=pb.or_predicates([pb.is_in("id", [5, 6]), pb.between("v", 98, 200)]), columns=["dt", "id"])
    assert got.num_rows == 12
    assert t.to_arrow(filter=pb.startswith("dt", "c")).num_rows == 100


def test_time_travel_by_timestamp_and_tag(catalog):
    t = catalog.create_table("db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    s1 = t.write_arrow(rows([1], ["a"], [1]))
    t.create_tag("v1")
    time.sleep(0.01)
    t.write_arrow(rows([1], ["b"], [2]))
    assert t.to_arrow(tag="v1")["name"].to_pylist() == ["a"]
    assert t.to_arrow(timestamp_millis=s1.time_millis)["name"].to_pylist() == ["a"]
    assert t.to_arrow()["name"].to_pylist() == ["b"]
    with pytest.raises(TagNotFoundError, match="nope"):
        t.to_arrow(tag="nope")
    with pytest.raises(SnapshotNotFoundError, match="99"):
        t.to_arrow(snapshot_id=99)
    with pytest.raises(SnapshotNotFoundError):
        t.to_arrow(timestamp_millis=1)


def test_append_tables(catalog):
    t = catalog.create_table("db.a", schema=SCHEMA, options={"bucket": "-1"})
    t.write_arrow(rows([1, 1], ["a", "b"], [1, 2]))
    t.write_arrow(rows([1], ["c"], [3]))
    assert sorted(t.to_arrow()["name"].to_pylist()) == ["a", "b", "c"]
    tb = catalog.create_table("db.b", schema=SCHEMA, options={"bucket": "3", "bucket-key": "id"})
    tb.write_arrow(rows(list(range(30)), ["x"] * 30, [0.0] * 30))
    splits = tb.new_read_builder().new_scan().plan().splits()
    assert len({s.bucket for s in splits}) == 3 and sum(s.row_count for s in splits) == 30
    with pytest.raises(InvalidOptionError, match="bucket-key"):
        catalog.create_table("db.c", schema=SCHEMA, options={"bucket": "3"})


@pytest.mark.parametrize(
    "data, error, match",
    [
        (pa.table({"id": [1], "name": ["a"]}), SchemaMismatchError, "missing column.*amount"),
        (pa.table({"id": [1], "name": ["a"], "amount": [1.0], "x": [1]}), SchemaMismatchError, "unknown column.*'x'"),
        (pa.table({"id": ["1"], "name": ["a"], "amount": [1.0]}), SchemaMismatchError, "'id'"),
        (
            pa.table({"id": pa.array([None], pa.int64()), "name": ["a"], "amount": [1.0]}),
            InvalidDataError,
            "primary-key column 'id'",
        ),
    ],
)
def test_bad_writes_leave_table_unchanged(catalog, data, error, match):
    t = catalog.create_table("db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    t.write_arrow(rows([1], ["a"], [1]))
    before = (t.latest_snapshot().id, t.to_arrow())
    with pytest.raises(error, match=match):
        t.write_arrow(data)
    assert t.latest_snapshot().id == before[0] and t.to_arrow().equals(before[1])


def test_invalid_row_kind(catalog):
    schema = pa.schema(list(SCHEMA) + [pa.field("op", pa.string())])
    t = catalog.create_table("db.t", schema=schema, primary_keys=["id"], options={"bucket": "1", "rowkind.field": "op"})
    with pytest.raises(InvalidDataError, match=r"'op'.*\+X"):
        t.write_arrow(pa.table({"id": [1], "name": ["a"], "amount": [1.0], "op": ["+X"]}))
    assert t.latest_snapshot() is None


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(primary_keys=["nope"], options={"bucket": "1"}), LakeError, "nope"),
        (dict(primary_keys=["id"], partition_keys=["zz"], options={"bucket": "1"}), LakeError, "zz"),
        (dict(primary_keys=["id"], options={"bucket": "0"}), InvalidOptionError, "'bucket'"),
        (dict(primary_keys=["id"], options={"bucket": "x"}), InvalidOptionError, "'bucket'"),
        (dict(primary_keys=["id"], options={"bucket": "1", "buckett": "2"}), UnsupportedOptionError, "buckett"),
        (
            dict(
                primary_keys=["id"],
                options={"bucket": "1", "deletion-vectors.enabled": "true", "merge-engine": "first-row"},
            ),
            UnsupportedOptionError,
            "deletion-vectors",
        ),
        (
            dict(primary_keys=["id"], options={"bucket": "1", "merge-engine": "nope"}),
            InvalidOptionError,
            "merge-engine",
        ),
        (dict(primary_keys=["id"], options={"bucket": "1", "sequence.field": "zz"}), InvalidOptionError, "zz"),
        (dict(primary_keys=["id"], options={"bucket": "1", "rowkind.field": "amount"}), InvalidOptionError, "amount"),
    ],
)
def test_bad_table_definitions(catalog, kwargs, error, match):
    with pytest.raises(error, match=match):
        catalog.create_table("db.t", schema=SCHEMA, **kwargs)
    assert catalog.list_tables("db") == []


def test_primary_key_table_without_bucket_uses_dynamic_bucket_mode(catalog):
    # Paimon's default for primary-key tables (issue 4; tests/dynamic_bucket/ covers the mode).
    t = catalog.create_table("db.t", schema=SCHEMA, primary_keys=["id"])
    assert t.bucket_mode == "dynamic"
    t.write_arrow(rows([1, 2], ["a", "b"], [1.0, 2.0]))
    assert sorted(t.to_arrow()["id"].to_pylist()) == [1, 2]


def test_commit_messages_and_splits_pickle(catalog):
    import pickle

    t = catalog.create_table("db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "2"})
    wb = t.new_batch_write_builder()
    w = wb.new_write()
    w.write_arrow(rows([1, 2, 3], ["a", "b", "c"], [1, 2, 3]))
    msgs = pickle.loads(pickle.dumps(w.prepare_commit()))
    wb.new_commit().commit(msgs)
    rb = t.new_read_builder()
    splits = pickle.loads(pickle.dumps(rb.new_scan().plan().splits()))
    table2 = pickle.loads(pickle.dumps(t))
    assert table2.new_read_builder().new_read().to_arrow(splits).num_rows == 3


def test_retried_commit_with_same_identity_lands_once(catalog):
    t = catalog.create_table("db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    wb = t.new_batch_write_builder().with_commit_user("job-42")
    w = wb.new_write()
    w.write_arrow(rows([1], ["a"], [1]))
    msgs = w.prepare_commit()
    first = wb.new_commit().commit(msgs)
    again = t.new_batch_write_builder().with_commit_user("job-42").new_commit().commit(msgs)
    assert [s.id for s in first] == [s.id for s in again] == [1]
    assert len(t.snapshots()) == 1


def test_snapshot_properties_are_stored(catalog):
    t = catalog.create_table("db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "1"})
    wb = t.new_batch_write_builder()
    w = wb.new_write()
    w.write_arrow(rows([1], ["a"], [1]))
    snap = wb.new_commit().commit(w.prepare_commit(), properties={"source.offset": "42"})[0]
    assert catalog.get_table("db.t").snapshot(snap.id).properties == {"source.offset": "42"}


def test_the_same_rows_give_the_same_files(tmp_path):
    """A write's files do not depend on which of its threads encodes first: the same commit into
    two tables gives files of the same sizes, bucket by bucket (the picker compares sizes)."""
    import numpy as np

    from lake_core.bucket.assign import assign_buckets

    n = 20_000
    ids = pa.array(np.random.default_rng(5).permutation(n), pa.int64())
    bucket = assign_buckets([ids], [pa.int64()], 4)
    # one bucket's strings repeat, the others' do not: sampled file by file, the files would differ
    # in encoding with the order their threads reach them
    s = [("same" if b == 0 else f"v{i}") for i, b in enumerate(bucket.tolist())]
    rows = pa.table({"id": ids, "s": pa.array(s), "x": pa.array(np.arange(n) % 3, pa.int64())})
    sizes = []
    for name in ("a", "b"):
        cat = Catalog(f"file://{tmp_path}/{name}")
        cat.create_database("db")
        t = cat.create_table("db.t", schema=rows.schema, primary_keys=["id"], options={"bucket": "4"})
        t.write_arrow(rows)
        sizes.append(sorted((e.bucket, e.file.file_size) for e in t.manifest_store.live_entries(t.latest_snapshot())))
    assert sizes[0] == sizes[1]
