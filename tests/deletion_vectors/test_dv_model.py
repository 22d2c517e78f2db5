"""Model test: a deletion-vector table equals the dict model (and the same commits on a merge-on-read
table) after any sequence of upserts, deletes, inline and dedicated compactions, for deduplicate,
partial-update and aggregation. Every step also checks the DV invariants a raw reader relies on:
each key is live once at levels >= 1, and every vector names a live file and a position inside it.
The all-levels read (level 0 merged over the masked levels above) equals the model of every commit."""

from __future__ import annotations

import pyarrow as pa
from compaction.test_compaction_model import ENGINES, _arrow, _canon, step_strategy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from merge.model import Model, Spec

from lake_core import Catalog
from lake_core.deletion_vectors.index_file import DV_INDEX
from lake_core.deletion_vectors.maintainer import load_vectors
from lake_core.read.scan import TableScan
from lake_core.read.split_read import SplitRead

DV_ENGINES = ("deduplicate", "partial-update", "aggregation")


def _check_vectors(t) -> None:
    snap = t.latest_snapshot()
    live = {e.file.file_name: e.file for e in t.manifest_store.live_entries(snap)}
    dv_entries = [e for e in t.manifest_store.index_entries(snap) if e.index_type == DV_INDEX]
    per_bucket = {}
    for e in dv_entries:
        assert (e.partition, e.bucket) not in per_bucket, "one DV index file per bucket"
        per_bucket[(e.partition, e.bucket)] = e
        for name, dv in load_vectors(t, [e]).items():
            assert name in live, f"vector of {name}, which is not live"
            assert live[name].level > 0
            assert int(dv.positions.max()) < live[name].row_count
    # each key live once at levels >= 1: the raw read holds no duplicate key
    raw = t.to_arrow()
    assert raw.group_by(["p", "k"]).aggregate([]).num_rows == raw.num_rows


def run_dv_model(tmp_path_factory, engine: str, steps, inline: bool) -> None:
    schema, opts, _ = ENGINES[engine]
    wh = tmp_path_factory.mktemp("wh")
    cat = Catalog(f"file://{wh}")
    cat.create_database("db")
    tables = {}
    for name, extra in (("dv", {"deletion-vectors.enabled": "true"}), ("mor", {})):
        options = {
            "bucket": "2",
            "rowkind.field": "op",
            "num-sorted-run.compaction-trigger": "2",
            "write-only": str(not inline).lower(),
            **opts,
            **extra,
        }
        tables[name] = cat.create_table(
            f"db.{name}",
            schema=schema.append(pa.field("op", pa.string())),
            primary_keys=["p", "k"],
            partition_keys=["p"],
            options=options,
        )
    spec = Spec(schema, ("p", "k"), opts)
    # A large base at the top level first: later small level-0 runs are then forced up to a level
    # above it (size ratio), so compactions find keys below them and mark vectors, instead of
    # merging every tiny run into one full compaction.
    base = [
        {"p": p, "k": k, "_kind": 0, **{n: k % 5 for n in schema.names if n not in ("p", "k")}}
        for p in (0, 1)
        for k in range(400)
    ]
    for t in tables.values():
        t.write_arrow(_arrow(schema, base))
        t.maintenance.compact(full=True)
    commits: list[list[dict]] = [base]
    visible = 1  # level 0 is invisible to DV reads: a write-only writer's rows show after a compaction
    for action, rows in steps:
        for t in tables.values():
            if action == "write":
                t.write_arrow(_arrow(schema, rows))
            else:
                t.maintenance.compact(full=action == "compact_full")
        if action == "write":
            commits.append(rows)
        if inline or action != "write":
            visible = len(commits)
        dv = cat.get_table("db.dv")
        want = _canon(Model(spec).run(commits[:visible]), schema.names) if visible else []
        assert _canon(dv.to_arrow().drop_columns(["op"]).to_pylist(), schema.names) == want, (action, commits)
        if visible == len(commits):
            mor = cat.get_table("db.mor").to_arrow().drop_columns(["op"]).to_pylist()
            assert _canon(mor, schema.names) == want
        _check_vectors(dv)
        # what maintenance reads (rescale, delete_where): every committed row, level 0 included
        all_levels = SplitRead(dv.store).to_arrow(TableScan(dv.store, dv.latest_snapshot(), all_levels=True).splits())
        assert _canon(all_levels.drop_columns(["op"]).to_pylist(), schema.names) == _canon(
            Model(spec).run(commits), schema.names
        ), (action, commits)


SETTINGS = dict(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)


@settings(**SETTINGS)
@given(steps=step_strategy("deduplicate"), inline=st.booleans())
def test_deduplicate_dv_model(tmp_path_factory, steps, inline):
    run_dv_model(tmp_path_factory, "deduplicate", steps, inline)


@settings(**SETTINGS)
@given(steps=step_strategy("partial-update"), inline=st.booleans())
def test_partial_update_dv_model(tmp_path_factory, steps, inline):
    run_dv_model(tmp_path_factory, "partial-update", steps, inline)


@settings(**SETTINGS)
@given(steps=step_strategy("aggregation"), inline=st.booleans())
def test_aggregation_dv_model(tmp_path_factory, steps, inline):
    run_dv_model(tmp_path_factory, "aggregation", steps, inline)
