"""Deduplicate tables against a plain dictionary model, over random commits (hypothesis)."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fixtures.commits import commit_batches
from lake_core import Catalog

SCHEMA = pa.schema([("k", pa.int32()), ("s", pa.string()), ("v", pa.int64()), ("op", pa.string())])

row = st.tuples(
    st.integers(0, 30),
    st.one_of(st.none(), st.text(max_size=12)),
    st.one_of(st.none(), st.integers(-5, 5)),
    st.sampled_from(["+I", "+U", "-U", "-D"]),
)
commit = st.lists(st.lists(row, min_size=0, max_size=25), min_size=1, max_size=3)  # several writes per commit


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(commits=st.lists(commit, min_size=1, max_size=5), buckets=st.sampled_from([1, 3]), ignore=st.booleans())
def test_dedup_matches_dictionary_model(tmp_path_factory, commits, buckets, ignore):
    """With ``ignore-delete`` the write drops -U/-D rows before its merge picks each key's row (the
    picked positions then point into what it kept)."""
    wh = tmp_path_factory.mktemp("wh")
    cat = Catalog(f"file://{wh}")
    cat.create_database("db")
    options = {"bucket": str(buckets), "rowkind.field": "op", **({"ignore-delete": "true"} if ignore else {})}
    t = cat.create_table("db.t", schema=SCHEMA, primary_keys=["k"], options=options)
    model: dict[int, tuple] = {}
    for writes in commits:
        commit_batches(
            t,
            writes,
            lambda b: pa.table(
                {"k": [r[0] for r in b], "s": [r[1] for r in b], "v": [r[2] for r in b], "op": [r[3] for r in b]},
                schema=SCHEMA,
            ),
        )
        for k, s, v, op in (r for batch in writes for r in batch):
            if op in ("-U", "-D"):
                if not ignore:
                    model.pop(k, None)
            else:
                model[k] = (s, v, op)
        got = {r["k"]: (r["s"], r["v"], r["op"]) for r in t.to_arrow().to_pylist()}
        assert got == model


upsert = st.tuples(st.integers(-40, 40), st.one_of(st.none(), st.text(max_size=6)), st.integers(0, 9))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    commits=st.lists(st.lists(st.lists(upsert, max_size=30), min_size=1, max_size=3), min_size=2, max_size=6),
    key_type=st.sampled_from([pa.int64(), pa.float64(), pa.date32()]),
    batch=st.sampled_from([3, 64]),
)
def test_upserts_read_as_the_newest_row_of_each_key(tmp_path_factory, commits, key_type, batch):
    """Commits without retractions: a read of overlapping files (the newest row of each key taken by
    run order, without the system columns) returns what the dictionary model holds, whole and in
    batches of a few rows."""
    import datetime

    def key(k):
        return datetime.date(2024, 1, 1) + datetime.timedelta(days=k) if key_type == pa.date32() else k

    schema = pa.schema([pa.field("k", key_type, nullable=False), ("s", pa.string()), ("v", pa.int64())])
    cat = Catalog(f"file://{tmp_path_factory.mktemp('wh')}")
    cat.create_database("db")
    t = cat.create_table(
        "db.t",
        schema=schema,
        primary_keys=["k"],
        options={"bucket": "2", "num-sorted-run.compaction-trigger": "20", "read.batch-size": str(batch)},
    )
    model: dict = {}
    for writes in commits:
        commit_batches(
            t,
            writes,
            lambda b: pa.table(
                {"k": [key(r[0]) for r in b], "s": [r[1] for r in b], "v": [r[2] for r in b]}, schema=schema
            ),
        )
        model.update({key(k): (s, v) for batch_ in writes for k, s, v in batch_})
        whole = t.to_arrow()
        assert {r["k"]: (r["s"], r["v"]) for r in whole.to_pylist()} == model
        assert whole.num_rows == len(model)
        batches = t.to_arrow_batch_reader().read_all()
        assert batches.sort_by("k").equals(whole.sort_by("k"))
