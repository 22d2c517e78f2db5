"""compaction.lookup: batched point lookups in a bucket's files, against a dict model of the newest
stored occurrence of each key (file, position in the file, level, row)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lake_core import Catalog
from lake_core.compaction.lookup import LOOKUP_FILE, LOOKUP_LEVEL, LOOKUP_POSITION, lookup_latest
from lake_core.deletion_vectors import DeletionVector


def _table(tmp_path, **opts):
    cat = Catalog(f"file://{tmp_path}")
    cat.create_database("db")
    return cat.create_table(
        "db.t",
        schema=pa.schema([("k", pa.int64()), ("v", pa.string()), ("tags", pa.list_(pa.string()))]),
        primary_keys=["k"],
        options={"bucket": "1", "write-only": "true", **opts},
    )


def _files(t):
    return [e.file for e in t.manifest_store.live_entries(t.latest_snapshot())]


def test_latest_occurrence_file_position_and_row(tmp_path):
    t = _table(tmp_path)
    t.write_arrow(
        pa.table(
            {"k": [1, 2, 3, 4], "v": ["a1", "b1", "c1", "d1"], "tags": [["x"], [], None, ["y"]]},
            schema=t.schema.arrow_schema(),
        )
    )
    t.maintenance.compact(full=True)  # keys 1-4 at the top level
    t.write_arrow(pa.table({"k": [3, 2], "v": ["c2", "b2"], "tags": [["z"], None]}, schema=t.schema.arrow_schema()))
    files = _files(t)
    from lake_core.read.scan import TableScan

    bucket_dir = TableScan(t.store, t.latest_snapshot()).splits()[0].bucket_path
    got = lookup_latest(t.store, bucket_dir=bucket_dir, files=files, keys=pa.table({"k": [2, 3, 4, 9, 2]}))
    by_key = {r["k"]: r for r in got.to_pylist()}
    assert sorted(by_key) == [2, 3, 4]  # 9 is stored nowhere, the duplicate 2 is answered once
    # model: what each file holds, by reading it directly
    for k, want_v in {2: "b2", 3: "c2", 4: "d1"}.items():
        r = by_key[k]
        assert r["v"] == want_v
        f = next(f for f in files if f.file_name == r[LOOKUP_FILE])
        assert r[LOOKUP_LEVEL] == f.level
        stored = pq.read_table(f"{bucket_dir.removeprefix('file://')}/{f.file_name}").to_pylist()
        assert stored[r[LOOKUP_POSITION]]["k"] == k and stored[r[LOOKUP_POSITION]]["v"] == want_v
        assert stored[r[LOOKUP_POSITION]]["_SEQUENCE_NUMBER"] == r["_SEQUENCE_NUMBER"]
    assert by_key[4]["tags"] == ["y"] and by_key[3]["tags"] == ["z"]


def test_deleted_positions_are_invisible_and_the_next_file_answers(tmp_path):
    t = _table(tmp_path)
    t.write_arrow(pa.table({"k": [1, 2], "v": ["old1", "old2"], "tags": [None, None]}, schema=t.schema.arrow_schema()))
    t.write_arrow(pa.table({"k": [1, 2], "v": ["new1", "new2"], "tags": [None, None]}, schema=t.schema.arrow_schema()))
    files = _files(t)
    from lake_core.read.scan import TableScan

    bucket_dir = TableScan(t.store, t.latest_snapshot()).splits()[0].bucket_path
    newest = max(files, key=lambda f: f.max_sequence_number)
    got = lookup_latest(t.store, bucket_dir=bucket_dir, files=files, keys=pa.table({"k": [1, 2]}))
    assert {r["k"]: r["v"] for r in got.to_pylist()} == {1: "new1", 2: "new2"}
    # position 0 (key 1) of the newest file deleted: key 1 falls back to the older file
    got = lookup_latest(
        t.store,
        bucket_dir=bucket_dir,
        files=files,
        keys=pa.table({"k": [1, 2]}),
        deletion_vectors={newest.file_name: DeletionVector.of([0])},
        chunk_rows=1,
    )
    assert {r["k"]: r["v"] for r in got.to_pylist()} == {1: "old1", 2: "new2"}


def test_no_keys_and_no_files(tmp_path):
    t = _table(tmp_path)
    got = lookup_latest(t.store, bucket_dir="x", files=[], keys=pa.table({"k": pa.array([], pa.int64())}))
    assert got.num_rows == 0 and LOOKUP_POSITION in got.column_names


def test_keys_only_lookup_reads_no_value_columns(tmp_path):
    t = _table(tmp_path)
    t.write_arrow(pa.table({"k": [1, 2], "v": ["a", "b"], "tags": [None, ["t"]]}, schema=t.schema.arrow_schema()))
    from lake_core.read.scan import TableScan

    bucket_dir = TableScan(t.store, t.latest_snapshot()).splits()[0].bucket_path
    full = lookup_latest(t.store, bucket_dir=bucket_dir, files=_files(t), keys=pa.table({"k": [2]}))
    thin = lookup_latest(t.store, bucket_dir=bucket_dir, files=_files(t), keys=pa.table({"k": [2]}), with_rows=False)
    assert "v" not in thin.column_names and "tags" not in thin.column_names
    cols = ["k", "_SEQUENCE_NUMBER", LOOKUP_FILE, LOOKUP_POSITION]
    assert thin.select(cols).to_pylist() == full.select(cols).to_pylist()


@pytest.mark.parametrize("with_rows", [True, False])
@pytest.mark.parametrize(
    "keys",
    [[1, 1, 2, 3, 3, 3, 9], [3, 1, 3, 2, 9, 1, 2], [2, 2], [9, 9, 9]],
    ids=["ascending-repeats", "unordered-repeats", "one-key-twice", "only-missing"],
)
def test_each_key_is_answered_once_whatever_the_order_of_its_repeats(tmp_path, keys, with_rows):
    """A compaction looks up the keys of its unmerged rows (a key's rows are neighbours there);
    ascending keys are made distinct by comparing neighbours, other orders by a NumPy sort (one
    integer key, as here; strings take a group-by): each answers every stored key once, with its
    newest row (dict model)."""
    t = _table(tmp_path)
    schema = t.schema.arrow_schema()
    t.write_arrow(pa.table({"k": [1, 2, 3], "v": ["a", "b", "c"], "tags": [None, None, None]}, schema=schema))
    t.write_arrow(pa.table({"k": [2], "v": ["b2"], "tags": [None]}, schema=schema))
    model = {1: "a", 2: "b2", 3: "c"}
    sequences = {1: 0, 2: 1, 3: 0}  # each commit numbers its rows with the bucket's next number: 0, then 1
    files = _files(t)
    from lake_core.read.scan import TableScan

    bucket_dir = TableScan(t.store, t.latest_snapshot()).splits()[0].bucket_path
    got = lookup_latest(t.store, bucket_dir=bucket_dir, files=files, keys=pa.table({"k": keys}), with_rows=with_rows)
    found = got.column("k").to_pylist()
    assert sorted(found) == sorted({k for k in keys if k in model})  # once each, missing keys absent
    if with_rows:
        assert {r["k"]: r["v"] for r in got.to_pylist()} == {k: model[k] for k in found}
    assert {r["k"]: r["_SEQUENCE_NUMBER"] for r in got.to_pylist()} == {k: sequences[k] for k in found}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    writes=st.lists(st.lists(st.integers(-30, 30), min_size=1, max_size=40), min_size=2, max_size=4),
    probe=st.lists(st.integers(-35, 35), max_size=20),
    deleted=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 45)), min_size=1, max_size=20),
    key_type=st.sampled_from([pa.int64(), pa.float64(), pa.string()]),
)
def test_keys_only_lookup_answers_as_the_row_lookup(tmp_path_factory, writes, probe, deleted, key_type):
    """A keys-only lookup probes each file's cached keys (a binary search for one numeric key, a
    join otherwise); it answers every key from the same file and position as the full-row lookup,
    which streams the files and joins, deletion vectors included (a key deleted in a newer file is
    answered by an older one)."""
    cat = Catalog(f"file://{tmp_path_factory.mktemp('wh')}")
    cat.create_database("db")
    schema = pa.schema([pa.field("k", key_type, nullable=False), ("v", pa.int64())])
    t = cat.create_table("db.t", schema=schema, primary_keys=["k"], options={"bucket": "1", "write-only": "true"})

    def keys(values):
        return pa.array([str(v) if key_type == pa.string() else v for v in values]).cast(key_type)

    for i, ks in enumerate(writes):
        t.write_arrow(pa.table({"k": keys(ks), "v": pa.array([i] * len(ks), pa.int64())}, schema=schema))
    files = _files(t)
    from lake_core.read.scan import TableScan

    bucket_dir = TableScan(t.store, t.latest_snapshot()).splits()[0].bucket_path
    vectors = {}
    for i, position in deleted:
        f = files[i % len(files)]
        if position < f.row_count:
            vectors[f.file_name] = DeletionVector.of(
                [*vectors.get(f.file_name, DeletionVector.of([])).positions, position]
            )
    wanted = pa.table({"k": keys([*range(-35, 36), *probe])})  # every key, some twice
    answers = []
    for with_rows in (False, True):
        got = lookup_latest(
            t.store, bucket_dir=bucket_dir, files=files, keys=wanted, deletion_vectors=vectors, with_rows=with_rows
        )
        cols = ["k", "_SEQUENCE_NUMBER", LOOKUP_FILE, LOOKUP_POSITION, LOOKUP_LEVEL]
        answers.append(sorted(tuple(r.values()) for r in got.select(cols).to_pylist()))
    assert answers[0] == answers[1]
