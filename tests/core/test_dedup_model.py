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
@given(commits=st.lists(commit, min_size=1, max_size=5), buckets=st.sampled_from([1, 3]))
def test_dedup_matches_dictionary_model(tmp_path_factory, commits, buckets):
    wh = tmp_path_factory.mktemp("wh")
    cat = Catalog(f"file://{wh}")
    cat.create_database("db")
    t = cat.create_table(
        "db.t", schema=SCHEMA, primary_keys=["k"], options={"bucket": str(buckets), "rowkind.field": "op"}
    )
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
                model.pop(k, None)
            else:
                model[k] = (s, v, op)
        got = {r["k"]: (r["s"], r["v"], r["op"]) for r in t.to_arrow().to_pylist()}
        assert got == model
