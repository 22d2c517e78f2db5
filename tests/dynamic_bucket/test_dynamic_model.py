"""Dynamic bucket mode against a plain dictionary model, over many random commits."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fixtures.commits import commit_batches
from lake_core import Catalog

from .helpers import assert_each_key_once, assert_hash_index_consistent

SCHEMA = pa.schema(
    [("dt", pa.string()), ("k", pa.int32()), ("name", pa.string()), ("v", pa.int64()), ("op", pa.string())]
)

row = st.tuples(
    st.sampled_from(["a", "b", "c"]),
    st.integers(0, 40),
    st.sampled_from(["x", "yy", "a long name!"]),
    st.one_of(st.none(), st.integers(-5, 5)),
    st.sampled_from(["+I", "+I", "+U", "-D"]),
)
commit = st.lists(st.lists(row, min_size=0, max_size=30), min_size=1, max_size=3)


def _table(rows):
    return pa.table(
        {
            "dt": [r[0] for r in rows],
            "k": [r[1] for r in rows],
            "name": [r[2] for r in rows],
            "v": [r[3] for r in rows],
            "op": [r[4] for r in rows],
        },
        schema=SCHEMA,
    )


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    commits=st.lists(commit, min_size=1, max_size=6),
    composite=st.booleans(),
    options=st.sampled_from(
        [
            {"dynamic-bucket.target-row-num": "3"},
            {"dynamic-bucket.target-row-num": "5", "dynamic-bucket.initial-buckets": "2"},
            {"dynamic-bucket.target-row-num": "2", "dynamic-bucket.max-buckets": "3"},
            {},
        ]
    ),
)
def test_dynamic_bucket_table_matches_dictionary_model(tmp_path_factory, commits, composite, options):
    cat = Catalog(f"file://{tmp_path_factory.mktemp('wh')}")
    cat.create_database("db")
    pk = ["dt", "k", "name"] if composite else ["dt", "k"]
    t = cat.create_table(
        "db.t", schema=SCHEMA, primary_keys=pk, partition_keys=["dt"], options={"rowkind.field": "op", **options}
    )
    assert t.bucket_mode == "dynamic"
    model: dict[tuple, dict] = {}
    for writes in commits:
        commit_batches(t, writes, _table)
        for dt, k, name, v, op in (r for batch in writes for r in batch):
            key = (dt, k, name) if composite else (dt, k)
            if op in ("-U", "-D"):
                model.pop(key, None)
            else:
                model[key] = {"dt": dt, "k": k, "name": name, "v": v, "op": op}
        got = {tuple(r[c] for c in pk): r for r in t.to_arrow().to_pylist()}
        assert got == model
        locations = assert_each_key_once(t)
        assert set(locations) == set(model)
        target = (
            int(options["dynamic-bucket.target-row-num"])
            if "dynamic-bucket.target-row-num" in options and "dynamic-bucket.max-buckets" not in options
            else None
        )
        assert_hash_index_consistent(t, target)
        if "dynamic-bucket.max-buckets" in options:
            assert all(b < 3 for _, b in locations.values())


def test_existing_keys_keep_their_bucket_and_new_keys_fill_by_target(warehouse):
    cat = Catalog(warehouse)
    cat.create_database("db")
    schema = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.int64())])
    t = cat.create_table(
        "db.t",
        schema=schema,
        primary_keys=["dt", "id"],
        partition_keys=["dt"],
        options={"dynamic-bucket.target-row-num": "4"},
    )
    t.write_arrow(pa.table({"dt": ["a"] * 10, "id": list(range(10)), "v": [0] * 10}, schema=schema))
    before = assert_each_key_once(t)
    assert sorted(b for _, b in before.values()) == [0] * 4 + [1] * 4 + [2] * 2
    # updates of every old key plus 3 new keys: old keys stay, new ones fill bucket 2 then open 3
    t.write_arrow(pa.table({"dt": ["a"] * 13, "id": list(range(13)), "v": [1] * 13}, schema=schema))
    after = assert_each_key_once(t)
    assert all(after[k] == before[k] for k in before)
    assert sorted(after[("a", i)][1] for i in (10, 11, 12)) == [2, 2, 3]
    assert_hash_index_consistent(t, 4)
    assert {r["v"] for r in t.to_arrow().to_pylist()} == {1}
    # one writer, several write_arrow calls before one commit: the second call knows the first's keys
    wb = t.new_batch_write_builder()
    w = wb.new_write()
    w.write_arrow(pa.table({"dt": ["b"] * 3, "id": [1, 2, 3], "v": [5] * 3}, schema=schema))
    w.write_arrow(pa.table({"dt": ["b"] * 3, "id": [3, 4, 5], "v": [6] * 3}, schema=schema))
    wb.new_commit().commit(w.prepare_commit())
    locs = assert_each_key_once(t)
    assert sorted(b for (p, b) in locs.values() if p == ("b",)) == [0, 0, 0, 0, 1]
    assert_hash_index_consistent(t, 4)


def test_total_buckets_is_minus_one_and_only_changed_buckets_get_new_index_files(warehouse):
    cat = Catalog(warehouse)
    cat.create_database("db")
    schema = pa.schema([("id", pa.int64()), ("v", pa.int64())])
    t = cat.create_table("db.t", schema=schema, primary_keys=["id"], options={"dynamic-bucket.target-row-num": "3"})
    t.write_arrow(pa.table({"id": list(range(8)), "v": [0] * 8}, schema=schema))
    first = {e.bucket: e.file_name for e in t.manifest_store.index_entries(t.latest_snapshot())}
    assert sorted(first) == [0, 1, 2]
    t.write_arrow(pa.table({"id": [0, 1, 8, 9], "v": [1] * 4}, schema=schema))
    second = {e.bucket: e.file_name for e in t.manifest_store.index_entries(t.latest_snapshot())}
    assert sorted(second) == [0, 1, 2, 3]
    assert second[0] == first[0] and second[1] == first[1] and second[2] != first[2]
    assert {e.total_buckets for e in t.manifest_store.live_entries(t.latest_snapshot())} == {-1}
    # a commit of updates only adds no index file and keeps the index manifest
    snap = t.latest_snapshot()
    t.write_arrow(pa.table({"id": [0, 9], "v": [2, 2]}, schema=schema))
    assert t.latest_snapshot().index_manifest == snap.index_manifest


def test_hash_collisions_share_a_bucket_as_in_java(warehouse):
    """Paimon's index stores hashes: a new key whose hash is already indexed goes to that bucket."""
    import numpy as np

    from lake_core.bucket.dynamic import DynamicBucketAssigner

    cat = Catalog(warehouse)
    cat.create_database("db")
    schema = pa.schema([("id", pa.int64()), ("v", pa.int64())])
    t = cat.create_table("db.t", schema=schema, primary_keys=["id"], options={"dynamic-bucket.target-row-num": "1"})
    a = DynamicBucketAssigner(t, None, lambda p: ())
    part = b"\x00\x00\x00\x00" + bytes(8)
    first = a.assign(part, np.array([7, 8, 9], np.int32))
    assert first.tolist() == [0, 1, 2]
    assert a.assign(part, np.array([9, 7, 10, 10], np.int32)).tolist() == [2, 0, 3, 3]


def test_overwrite_of_a_partition_rebuilds_its_index(warehouse):
    cat = Catalog(warehouse)
    cat.create_database("db")
    schema = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.int64())])
    t = cat.create_table(
        "db.t",
        schema=schema,
        primary_keys=["dt", "id"],
        partition_keys=["dt"],
        options={"dynamic-bucket.target-row-num": "2"},
    )
    t.write_arrow(
        pa.table({"dt": ["a"] * 5 + ["b"] * 3, "id": list(range(5)) + [0, 1, 2], "v": [0] * 8}, schema=schema)
    )
    t.write_arrow(pa.table({"dt": ["a"] * 2, "id": [7, 8], "v": [9, 9]}, schema=schema), overwrite={"dt": "a"})
    got = sorted((r["dt"], r["id"], r["v"]) for r in t.to_arrow().to_pylist())
    assert got == [("a", 7, 9), ("a", 8, 9), ("b", 0, 0), ("b", 1, 0), ("b", 2, 0)]
    entries = t.manifest_store.index_entries(t.latest_snapshot())
    parts = sorted((t.manifest_store.partition_values(e.partition)[0], e.bucket, e.row_count) for e in entries)
    assert parts == [("a", 0, 2), ("b", 0, 2), ("b", 1, 1)]
    assert_hash_index_consistent(t, 2)
    t.write_arrow(pa.table({"dt": ["a"] * 3, "id": [7, 9, 10], "v": [1] * 3}, schema=schema))
    assert_each_key_once(t)
    assert_hash_index_consistent(t, 2)
    # a whole-table overwrite with no rows leaves no index at all
    t.write_arrow(pa.table({"dt": [], "id": [], "v": []}, schema=schema), overwrite=True)
    assert t.to_arrow().num_rows == 0
    assert t.manifest_store.index_entries(t.latest_snapshot()) == []


def test_every_merge_engine_works_in_dynamic_bucket_mode(tmp_path):
    schema = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("a", pa.int64()), ("b", pa.string())])
    engines = {
        "deduplicate": ({}, {1: (5, None), 2: (2, "y"), 3: (3, "z")}),
        "partial-update": ({"merge-engine": "partial-update"}, {1: (5, "x"), 2: (2, "y"), 3: (3, "z")}),
        "aggregation": (
            {"merge-engine": "aggregation", "fields.a.aggregate-function": "sum"},
            {1: (6, "x"), 2: (2, "y"), 3: (3, "z")},
        ),
        "first-row": ({"merge-engine": "first-row"}, {1: (1, "x"), 2: (2, "y"), 3: (3, "z")}),
    }
    for engine, (options, want) in engines.items():
        cat = Catalog(f"file://{tmp_path}/{engine}")
        cat.create_database("db")
        t = cat.create_table(
            "db.t",
            schema=schema,
            primary_keys=["dt", "id"],
            partition_keys=["dt"],
            options={"dynamic-bucket.target-row-num": "1", **options},
        )
        t.write_arrow(pa.table({"dt": ["d"] * 2, "id": [1, 2], "a": [1, 2], "b": ["x", "y"]}, schema=schema))
        t.write_arrow(pa.table({"dt": ["d"] * 2, "id": [1, 3], "a": [5, 3], "b": [None, "z"]}, schema=schema))
        got = {r["id"]: (r["a"], r["b"]) for r in t.to_arrow().to_pylist()}
        assert got == want, engine
        locs = assert_each_key_once(t)
        assert sorted(b for _, b in locs.values()) == [0, 1, 2]
        assert_hash_index_consistent(t, 1)


def test_writer_reused_for_several_commits(warehouse):
    cat = Catalog(warehouse)
    cat.create_database("db")
    schema = pa.schema([("id", pa.int64()), ("v", pa.int64())])
    t = cat.create_table("db.t", schema=schema, primary_keys=["id"], options={"dynamic-bucket.target-row-num": "2"})
    wb = t.new_batch_write_builder()
    w = wb.new_write()
    for i in range(4):
        w.write_arrow(pa.table({"id": [i, i + 10, 0], "v": [i] * 3}, schema=schema))
        wb.new_commit().commit(w.prepare_commit())
    assert len(t.to_arrow()) == 8
    assert_each_key_once(t)
    assert_hash_index_consistent(t, 2)
