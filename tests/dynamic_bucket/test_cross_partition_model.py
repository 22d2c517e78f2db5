"""Cross-partition upsert against a plain dictionary model, keys moving partitions over many
commits, for each merge engine (Java ExistingProcessor semantics)."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fixtures.commits import commit_batches
from lake_core import Catalog
from lake_core.write.key_index import CrossPartitionIndex

from .helpers import assert_each_key_once

SCHEMA = pa.schema(
    [
        ("dt", pa.string()),
        ("k", pa.int64()),
        ("name", pa.string()),
        ("a", pa.int64()),
        ("b", pa.string()),
        ("op", pa.string()),
    ]
)

ENGINE_OPTIONS = {
    "deduplicate": {"rowkind.field": "op"},
    "partial-update": {"merge-engine": "partial-update"},
    "aggregation": {"merge-engine": "aggregation", "fields.a.aggregate-function": "sum"},
    "first-row": {"merge-engine": "first-row"},
}


def make_table(tmp, engine, composite, extra=None):
    cat = Catalog(f"file://{tmp}")
    cat.create_database("db")
    pk = ["k", "name"] if composite else ["k"]
    t = cat.create_table(
        "db.t",
        schema=SCHEMA,
        primary_keys=pk,
        partition_keys=["dt"],
        options={**ENGINE_OPTIONS[engine], **(extra or {})},
    )
    assert t.bucket_mode == "cross-partition"
    return t, pk


class Model:
    """The merged table after each row, applied one row at a time (Paimon's sequential rules)."""

    def __init__(self, engine):
        self.engine = engine
        self.rows: dict[tuple, dict] = {}

    def apply(self, r: dict, key: tuple) -> None:
        old = self.rows.get(key)
        e = self.engine
        if e == "deduplicate":
            if r["op"] in ("-D", "-U"):
                self.rows.pop(key, None)
            else:
                self.rows[key] = dict(r)
        elif e == "first-row":
            if old is None:
                self.rows[key] = dict(r)
        elif old is None:
            self.rows[key] = dict(r)
        else:  # partial-update / aggregation: merged in the key's old partition
            new = dict(old)
            for f in ("name", "b", "op"):  # last non-null (name is a value column unless in the key)
                if r[f] is not None:
                    new[f] = r[f]
            if e == "partial-update":
                if r["a"] is not None:
                    new["a"] = r["a"]
            elif r["a"] is not None:
                new["a"] = r["a"] if old["a"] is None else old["a"] + r["a"]
            self.rows[key] = new


def row_strategy(engine):
    ops = st.sampled_from(["+I", "+U", "+I", "-D"]) if engine == "deduplicate" else st.just("+I")
    return st.fixed_dictionaries(
        {
            "dt": st.sampled_from(["p1", "p2", "p3", "p4"]),
            "k": st.integers(0, 25),
            "name": st.sampled_from(["n", "a long name"]),
            "a": st.one_of(st.none(), st.integers(-3, 9)),
            "b": st.one_of(st.none(), st.sampled_from(["x", "y", "zzzzzzzzz"])),
            "op": ops,
        }
    )


def run_model(tmp, engine, commits, composite, spill, options=None):
    t, pk = make_table(tmp, engine, composite, options)
    model = Model(engine)
    old_spill, old_shard = CrossPartitionIndex.spill_rows, CrossPartitionIndex.shard_rows
    if spill:  # bootstrap through on-disk, memory-mapped shards
        CrossPartitionIndex.spill_rows, CrossPartitionIndex.shard_rows = 3, 4
    try:
        for writes in commits:
            commit_batches(t, writes, lambda b: pa.Table.from_pylist(b, schema=SCHEMA))
            for r in (r for batch in writes for r in batch):
                model.apply(r, tuple(r[c] for c in pk))
            got = {tuple(r[c] for c in pk): r for r in t.to_arrow().to_pylist()}
            assert got == model.rows
            where = assert_each_key_once(t)
            assert {k: p[0][0] for k, p in where.items()} == {k: r["dt"] for k, r in model.rows.items()}
    finally:
        CrossPartitionIndex.spill_rows, CrossPartitionIndex.shard_rows = old_spill, old_shard
    return t


def commits_for(engine):
    return st.lists(
        st.lists(st.lists(row_strategy(engine), min_size=0, max_size=20), min_size=1, max_size=3),
        min_size=1,
        max_size=5,
    )


SETTINGS = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@SETTINGS
@given(
    commits=commits_for("deduplicate"),
    composite=st.booleans(),
    spill=st.booleans(),
    target=st.sampled_from(["2", "5", "2000000"]),
)
def test_cross_partition_deduplicate_moves_keys(tmp_path_factory, commits, composite, spill, target):
    run_model(
        tmp_path_factory.mktemp("wh"),
        "deduplicate",
        commits,
        composite,
        spill,
        {"dynamic-bucket.target-row-num": target},
    )


@SETTINGS
@given(commits=commits_for("partial-update"), composite=st.booleans(), spill=st.booleans())
def test_cross_partition_partial_update_stays_in_old_partition(tmp_path_factory, commits, composite, spill):
    run_model(
        tmp_path_factory.mktemp("wh"),
        "partial-update",
        commits,
        composite,
        spill,
        {"dynamic-bucket.target-row-num": "3"},
    )


@SETTINGS
@given(commits=commits_for("aggregation"), composite=st.booleans(), spill=st.booleans())
def test_cross_partition_aggregation_stays_in_old_partition(tmp_path_factory, commits, composite, spill):
    run_model(
        tmp_path_factory.mktemp("wh"), "aggregation", commits, composite, spill, {"dynamic-bucket.target-row-num": "3"}
    )


@SETTINGS
@given(commits=commits_for("first-row"), composite=st.booleans(), spill=st.booleans())
def test_cross_partition_first_row_keeps_the_old_row(tmp_path_factory, commits, composite, spill):
    run_model(
        tmp_path_factory.mktemp("wh"), "first-row", commits, composite, spill, {"dynamic-bucket.target-row-num": "3"}
    )


def test_move_writes_a_retraction_into_the_old_bucket(tmp_path):
    t, _ = make_table(tmp_path, "deduplicate", False, {"dynamic-bucket.target-row-num": "2"})
    t.write_arrow(
        pa.Table.from_pylist(
            [{"dt": "p1", "k": i, "name": "n", "a": i, "b": None, "op": "+I"} for i in range(5)], schema=SCHEMA
        )
    )
    before = assert_each_key_once(t)
    assert sorted(before.values()) == [(("p1",), 0)] * 2 + [(("p1",), 1)] * 2 + [(("p1",), 2)]
    snap = t.write_arrow(
        pa.Table.from_pylist([{"dt": "p2", "k": 1, "name": "n", "a": 10, "b": None, "op": "+I"}], schema=SCHEMA)
    )
    delta = t.manifest_store.delta_entries(snap)
    where = sorted(
        (t.manifest_store.partition_values(e.partition), e.bucket, e.file.row_count, e.file.delete_row_count)
        for e in delta
    )
    assert where == [(("p1",), 0, 1, 1), (("p2",), 0, 1, 0)]
    assert assert_each_key_once(t)[(1,)] == (("p2",), 0)
    # in one batch: p2 -> p3 -> p2 again, then an update in place
    t.write_arrow(
        pa.Table.from_pylist(
            [
                {"dt": d, "k": 1, "name": "n", "a": a, "b": None, "op": "+I"}
                for d, a in (("p3", 1), ("p2", 2), ("p2", 3))
            ],
            schema=SCHEMA,
        )
    )
    assert t.to_arrow().filter(pa.compute.equal(t.to_arrow()["k"], 1)).to_pylist()[0]["a"] == 3
    assert assert_each_key_once(t)[(1,)][0] == ("p2",)


def test_index_ttl_skips_old_buckets_like_java(tmp_path):
    """Keys whose bucket files are all older than the TTL are not indexed: writing such a key
    into another partition duplicates it (Paimon's documented trade-off)."""
    import time

    t, _ = make_table(tmp_path, "deduplicate", False, {"cross-partition-upsert.index-ttl": "50 ms"})
    t.write_arrow(
        pa.Table.from_pylist([{"dt": "p1", "k": 1, "name": "n", "a": 1, "b": None, "op": "+I"}], schema=SCHEMA)
    )
    time.sleep(0.2)
    t.write_arrow(
        pa.Table.from_pylist([{"dt": "p2", "k": 1, "name": "n", "a": 2, "b": None, "op": "+I"}], schema=SCHEMA)
    )
    assert sorted(r["dt"] for r in t.to_arrow().to_pylist()) == ["p1", "p2"]


def test_writer_reused_for_several_commits(tmp_path):
    t, _ = make_table(tmp_path, "deduplicate", False)
    wb = t.new_batch_write_builder()
    w = wb.new_write()
    for i, dt in enumerate(["p1", "p2", "p3"]):
        w.write_arrow(
            pa.Table.from_pylist([{"dt": dt, "k": 7, "name": "n", "a": i, "b": None, "op": "+I"}], schema=SCHEMA)
        )
        wb.new_commit().commit(w.prepare_commit())
    assert [(r["dt"], r["a"]) for r in t.to_arrow().to_pylist()] == [("p3", 2)]
    assert_each_key_once(t)


@pytest.mark.parametrize("composite", [False, True])
def test_large_index_lives_in_memory_mapped_files_on_local_disk(tmp_path, monkeypatch, composite):
    import os

    monkeypatch.setattr(CrossPartitionIndex, "spill_rows", 100)
    monkeypatch.setattr(CrossPartitionIndex, "shard_rows", 64)
    t, pk = make_table(tmp_path / "wh", "deduplicate", composite)
    n = 1000
    t.write_arrow(
        pa.Table.from_pylist(
            [{"dt": f"p{i % 3}", "k": i, "name": "n", "a": i, "b": None, "op": "+I"} for i in range(n)], schema=SCHEMA
        )
    )
    wb = t.new_batch_write_builder()
    w = wb.new_write()
    # move every 10th key to p9, update the rest in place
    w.write_arrow(
        pa.Table.from_pylist(
            [
                {"dt": "p9" if i % 10 == 0 else f"p{i % 3}", "k": i, "name": "n", "a": -i, "b": None, "op": "+I"}
                for i in range(0, n, 2)
            ],
            schema=SCHEMA,
        )
    )
    index = w._cross.index
    assert len(index.shards) >= 8 and all(isinstance(s, str) and os.path.exists(s) for s in index.shards)
    tmpdir = index.tmpdir
    wb.new_commit().commit(w.prepare_commit())
    w.close()
    assert not os.path.exists(tmpdir)
    where = assert_each_key_once(t)
    assert len(where) == n
    assert sum(1 for p, _ in where.values() if p == ("p9",)) == n // 10
    got = {r["k"]: r["a"] for r in t.to_arrow().to_pylist()}
    assert got == {i: (-i if i % 2 == 0 else i) for i in range(n)}
