"""Changelog producers ``lookup`` and ``full-compaction``: the changelog of random commits and
compactions, folded row by row, reproduces the table (and a plain dict model of it), for every
merge engine; ``changelog-producer.row-deduplicate`` drops unchanged -U/+U pairs; first-row emits
only +I. The changelog is read as users read it: the incremental read in ``changelog`` and ``auto``
modes between any two snapshots where the changelog is complete, and the stream scan."""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lake_core import ROW_KIND, Catalog
from lake_core.kv import rowkind
from lake_core.snapshot.snapshot import CommitKind

SCHEMA = pa.schema([pa.field("k", pa.int32(), nullable=False), ("a", pa.int64()), ("b", pa.string())])
VALUES = ("a", "b")

ENGINES = {
    "deduplicate": {},
    "partial-update": {"partial-update.remove-record-on-delete": "true"},
    "aggregation": {
        "fields.a.aggregate-function": "sum",
        "fields.b.aggregate-function": "last_non_null_value",
        "aggregation.remove-record-on-delete": "true",
    },
    "first-row": {},
}
CASES = [(e, p) for e in ENGINES for p in ("lookup", "full-compaction") if not (e == "first-row" and p != "lookup")]


# -- the dict model ---------------------------------------------------------------------------------
def _fold_values(engine: str, old: tuple, a, b) -> tuple:
    if engine == "partial-update":
        return (a if a is not None else old[0], b if b is not None else old[1])
    s = old[0] if a is None else (a if old[0] is None else old[0] + a)  # sum(a), last_non_null_value(b)
    return (s, b if b is not None else old[1])


def apply_model(engine: str, state: dict, rows: list[tuple]) -> None:
    """Fold one commit's rows (k, a, b, kind) into ``state``. A writer first merges a commit's
    rows per key into one level-0 row (Java's write buffer does the same), so for partial-update
    and aggregation a delete followed by rows of the same key in one commit only resets what that
    commit adds; the stored value stays and the rest is merged onto it."""
    by_key: dict = {}
    for k, a, b, kind in rows:
        by_key.setdefault(k, []).append((a, b, kind))
    for k, group in by_key.items():
        if engine == "first-row":
            state.setdefault(k, group[0][:2])
        elif engine == "deduplicate":
            a, b, kind = group[-1]
            if kind in (rowkind.UPDATE_BEFORE, rowkind.DELETE):
                state.pop(k, None)
            else:
                state[k] = (a, b)
        elif group[-1][2] == rowkind.DELETE:  # remove-record-on-delete
            state.pop(k, None)
        else:
            last_delete = max((i for i, r in enumerate(group) if r[2] == rowkind.DELETE), default=-1)
            folded = (None, None)
            for a, b, _kind in group[last_delete + 1 :]:
                folded = _fold_values(engine, folded, a, b)
            state[k] = _fold_values(engine, state[k], *folded) if k in state else folded


def fold(changelog: pa.Table, state: dict, *, row_deduplicate: bool, engine: str) -> None:
    """Apply changelog rows to ``state``, checking every retraction names the current value."""
    rows = changelog.to_pylist()
    for i, r in enumerate(rows):
        k, value, kind = r["k"], (r["a"], r["b"]), r[ROW_KIND]
        if engine == "first-row":
            assert kind == "+I", f"first-row emitted {kind} for key {k}"
        if kind == "+I":
            assert k not in state, f"+I of key {k} already present as {state[k]}"
            state[k] = value
        elif kind in ("-U", "-D"):
            assert state.get(k) == value, f"{kind} {value} of key {k}, but its value was {state.get(k)}"
            del state[k]
            if kind == "-U":
                nxt = rows[i + 1]
                assert nxt["k"] == k and nxt[ROW_KIND] == "+U", f"-U of key {k} not followed by its +U"
                if row_deduplicate:
                    assert (nxt["a"], nxt["b"]) != value, f"row-deduplicate: unchanged -U/+U of key {k}"
        else:
            assert kind == "+U" and k not in state
            state[k] = value


def as_state(t: pa.Table) -> dict:
    return {r["k"]: (r["a"], r["b"]) for r in t.to_pylist()}


# -- driving a table -----------------------------------------------------------------------------------
def write(table, rows: list[tuple]) -> None:
    wb = table.new_batch_write_builder()
    w = wb.new_write()
    start = 0
    while start < len(rows):  # runs of one kind, in order (sequence numbers follow the calls)
        end = start
        while end < len(rows) and rows[end][3] == rows[start][3]:
            end += 1
        chunk = rows[start:end]
        w.write_rows_with_kind(
            pa.table(
                {"k": [r[0] for r in chunk], "a": [r[1] for r in chunk], "b": [r[2] for r in chunk]}, schema=SCHEMA
            ),
            chunk[0][3],
        )
        start = end
    wb.new_commit().commit(w.prepare_commit())


def make_table(warehouse, name: str, engine: str, producer: str, **extra) -> object:
    cat = Catalog(warehouse)
    cat.create_database("db", ignore_if_exists=True)
    options = {
        "bucket": extra.pop("bucket", "2"),
        "merge-engine": engine,
        "changelog-producer": producer,
        **ENGINES[engine],
        **extra,
    }
    return cat.create_table(f"db.{name}", schema=SCHEMA, primary_keys=["k"], options=options)


def snapshot_changelog(table, snapshot_id: int) -> pa.Table:
    """The changelog rows of one snapshot (the incremental read of it alone)."""
    return table.to_arrow(incremental_between=(snapshot_id - 1, snapshot_id), scan_mode="changelog")


def changelog_since(table, after_id: int) -> tuple[pa.Table, int]:
    latest = table.latest_snapshot().id if table.latest_snapshot() is not None else 0
    return table.to_arrow(incremental_between=(after_id, latest), scan_mode="changelog"), latest


def row_strategy(engine: str):
    value = st.one_of(st.none(), st.integers(-3, 9))
    text = st.one_of(st.none(), st.sampled_from(["x", "y", "z"]))
    kinds = [rowkind.INSERT] if engine == "first-row" else [rowkind.INSERT, rowkind.INSERT, rowkind.DELETE]
    if engine == "deduplicate":
        kinds += [rowkind.UPDATE_AFTER, rowkind.UPDATE_BEFORE]
    return st.tuples(st.integers(0, 9), value, text, st.sampled_from(kinds))


def ops_strategy(engine: str):
    commit = st.lists(row_strategy(engine), min_size=1, max_size=8).map(lambda rows: ("write", rows))
    compact = st.booleans().map(lambda full: ("compact", full))
    return st.lists(st.one_of(commit, commit, compact), min_size=1, max_size=7)


_counter = iter(range(10**9))


def run_history(warehouse, engine: str, producer: str, ops, *, row_deduplicate: bool = False, **options) -> None:
    """Applies ``ops`` to a new table and to the dict model. At every point where the changelog
    is complete (lookup: after each commit and compaction, which compacts level 0 up at once;
    full-compaction: right after a full compaction), the table equals the model, the stream scan's
    plans so far folded equal it, and for every two such points s < e the incremental read of
    (s, e] in ``changelog`` mode (``auto`` the same), folded onto the state at s, is the state at e."""
    extra = {"changelog-producer.row-deduplicate": "true"} if row_deduplicate else {}
    extra.update(options)
    table = make_table(warehouse, f"t{next(_counter)}", engine, producer, **extra)
    stream = table.new_read_builder().new_stream_scan()
    model: dict = {}
    folded: dict = {}
    streamed: dict = {}
    points: dict[int, dict] = {0: {}}  # snapshot id -> the model's state there
    seen = 0

    def at_point() -> None:
        latest = table.latest_snapshot().id
        assert as_state(table.to_arrow()) == model
        read = table.new_read_builder().new_read()
        while stream.checkpoint() is None or stream.checkpoint() <= latest:
            fold(
                read.to_arrow(stream.plan().splits(), row_kind=True),
                streamed,
                row_deduplicate=row_deduplicate,
                engine=engine,
            )
        assert streamed == model
        points[latest] = dict(model)

    for op, arg in ops:
        if op == "write":
            write(table, arg)
            apply_model(engine, model, arg)
        else:
            table.maintenance.compact(full=arg)
        if table.latest_snapshot() is None:
            continue
        changes, seen = changelog_since(table, seen)
        fold(changes, folded, row_deduplicate=row_deduplicate, engine=engine)
        if producer == "lookup":
            # every commit compacts its level-0 files: the changelog is always up to date
            assert folded == model
            at_point()
        elif op == "compact" and arg:
            at_point()
    table.maintenance.compact(full=True)  # full-compaction: the changelog catches up here
    changes, seen = changelog_since(table, seen)
    fold(changes, folded, row_deduplicate=row_deduplicate, engine=engine)
    assert folded == model
    if table.latest_snapshot() is None:
        return
    at_point()
    ids = sorted(points)
    for i, s in enumerate(ids):
        for e in ids[i + 1 :]:
            changes = table.to_arrow(incremental_between=(s, e), scan_mode="changelog")
            assert table.to_arrow(incremental_between=(s, e), scan_mode="auto").equals(changes)
            state = dict(points[s])
            fold(changes, state, row_deduplicate=row_deduplicate, engine=engine)
            assert state == points[e], (s, e)


@pytest.mark.parametrize("engine,producer", CASES)
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_folded_changelog_is_the_table(tmp_path, engine, producer, data):
    ops = data.draw(ops_strategy(engine))
    run_history(str(tmp_path), engine, producer, ops)


@pytest.mark.parametrize(
    "engine,producer",
    [
        ("deduplicate", "lookup"),
        ("partial-update", "lookup"),
        ("deduplicate", "full-compaction"),
        ("aggregation", "full-compaction"),
    ],
)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_row_deduplicate(tmp_path, engine, producer, data):
    run_history(str(tmp_path), engine, producer, data.draw(ops_strategy(engine)), row_deduplicate=True)


@pytest.mark.parametrize("engine", ["deduplicate", "partial-update", "aggregation"])
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_lookup_with_deletion_vectors(tmp_path, engine, data):
    run_history(
        str(tmp_path), engine, "lookup", data.draw(ops_strategy(engine)), **{"deletion-vectors.enabled": "true"}
    )


# -- examples ---------------------------------------------------------------------------------------------
def _kinds(t: pa.Table) -> list[tuple]:
    return list(zip(t["k"].to_pylist(), t["a"].to_pylist(), t[ROW_KIND].to_pylist()))


def test_lookup_changelog_lands_on_the_compact_snapshot(warehouse):
    t = make_table(warehouse, "t", "deduplicate", "lookup")
    write(t, [(1, 10, "x", 0), (2, 20, "x", 0)])
    write(t, [(1, 11, "x", 0), (2, 20, "x", 3), (3, 30, "x", 0), (9, 0, None, 3)])
    snaps = t.snapshots()
    assert [s.commit_kind for s in snaps] == [CommitKind.APPEND, CommitKind.COMPACT] * 2
    assert snaps[2].changelog_manifest_list is None  # the APPEND snapshot carries no changelog
    assert sorted(_kinds(snapshot_changelog(t, 4))) == sorted(
        [(1, 10, "-U"), (1, 11, "+U"), (2, 20, "-D"), (3, 30, "+I")]
    )  # nothing for the missing key 9
    cl = snapshot_changelog(t, 4)
    ones = [r[2] for r in _kinds(cl) if r[0] == 1]
    assert ones == ["-U", "+U"]


def test_row_deduplicate_drops_unchanged_update(warehouse):
    t = make_table(warehouse, "t", "deduplicate", "lookup", **{"changelog-producer.row-deduplicate": "true"})
    write(t, [(1, 10, "x", 0), (2, 20, "x", 0)])
    write(t, [(1, 10, "x", 0), (2, 21, "x", 0)])
    assert _kinds(snapshot_changelog(t, 4)) == [(2, 20, "-U"), (2, 21, "+U")]


def test_full_compaction_changelog_only_on_full_compaction(warehouse):
    t = make_table(warehouse, "t", "deduplicate", "full-compaction", bucket="1")
    write(t, [(1, 10, "x", 0)])
    write(t, [(1, 11, "x", 0), (2, 20, "x", 0)])
    write(t, [(3, 30, "x", 0)])
    # fewer sorted runs than num-sorted-run.compaction-trigger: no compaction, no changelog
    assert all(s.changelog_manifest_list is None for s in t.snapshots())
    t.maintenance.compact(full=True)
    assert sorted(_kinds(snapshot_changelog(t, t.latest_snapshot().id))) == [
        (1, 11, "+I"),
        (2, 20, "+I"),
        (3, 30, "+I"),
    ]
    write(t, [(1, 12, "x", 0), (2, 20, "x", 3)])
    t.maintenance.compact(full=True)
    assert _kinds(snapshot_changelog(t, t.latest_snapshot().id)) == [(1, 11, "-U"), (1, 12, "+U"), (2, 20, "-D")]


def test_full_compaction_delta_commits_compacts_inline(warehouse):
    t = make_table(warehouse, "t", "aggregation", "full-compaction", **{"full-compaction.delta-commits": "1"})
    write(t, [(1, 1, "x", 0)])
    write(t, [(1, 2, None, 0), (2, 5, "y", 0)])
    assert _kinds(snapshot_changelog(t, t.latest_snapshot().id)) == [(1, 1, "-U"), (1, 3, "+U"), (2, 5, "+I")]


def test_first_row_lookup_emits_inserts_of_new_keys_only(warehouse):
    t = make_table(warehouse, "t", "first-row", "lookup")
    write(t, [(1, 10, "x", 0), (2, 20, "x", 0)])
    write(t, [(1, 99, "x", 0), (3, 30, "x", 0)])
    assert _kinds(snapshot_changelog(t, 2)) == [(1, 10, "+I"), (2, 20, "+I")] or sorted(
        _kinds(snapshot_changelog(t, 2))
    ) == [(1, 10, "+I"), (2, 20, "+I")]
    assert _kinds(snapshot_changelog(t, 4)) == [(3, 30, "+I")]


def test_dedicated_compaction_of_lookup_table_produces_changelog(warehouse):
    t = make_table(warehouse, "t", "partial-update", "lookup", **{"write-only": "true"})
    write(t, [(1, 10, None, 0)])
    write(t, [(1, None, "y", 0), (2, 1, None, 0)])
    assert all(s.changelog_manifest_list is None for s in t.snapshots())
    t.maintenance.compact()  # level 0 is forced up, as Java's ForceUpLevel0Compaction
    assert sorted(_kinds(snapshot_changelog(t, t.latest_snapshot().id))) == [(1, 10, "+I"), (2, 1, "+I")]
    write(t, [(1, 11, None, 0)])
    t.maintenance.compact()
    cl = snapshot_changelog(t, t.latest_snapshot().id)
    assert cl.to_pylist() == [{"k": 1, "a": 10, "b": "y", ROW_KIND: "-U"}, {"k": 1, "a": 11, "b": "y", ROW_KIND: "+U"}]


def test_lookup_aggregation_reads_each_key_once(warehouse):
    """A key's merged copy at a lower level and its older copy above are never summed twice."""
    t = make_table(warehouse, "t", "aggregation", "lookup")
    for i in range(4):
        write(t, [(1, 1, None, 0), (i + 2, 1, None, 0)])
    assert as_state(t.to_arrow())[1] == (4, None)
    assert len({f.level for s in t.new_read_builder().new_scan().plan().splits() for f in s.files}) >= 1


def test_full_compaction_producer_ignores_compactions_below_the_top(warehouse):
    t = make_table(warehouse, "t", "deduplicate", "full-compaction", bucket="1")
    write(t, [(k, k, "x" * 50, 0) for k in range(20000)])
    t.maintenance.compact(full=True)
    top = t.latest_snapshot().id
    for k in range(4):  # four small level-0 runs: the writer's universal pick moves them below the top
        write(t, [(30000 + k, k, "y", 0)])
    compacts = [s for s in t.snapshots() if s.id > top and s.commit_kind == CommitKind.COMPACT]
    levels = {f.level for s in t.new_read_builder().new_scan().plan().splits() for f in s.files}
    assert compacts and levels == {4, 5}
    assert all(s.changelog_manifest_list is None for s in compacts)
    t.maintenance.compact(full=True)
    assert sorted(_kinds(snapshot_changelog(t, t.latest_snapshot().id))) == [(30000 + k, k, "+I") for k in range(4)]


def test_partitioned_lookup_changelog(warehouse):
    schema = pa.schema(
        [pa.field("p", pa.string(), nullable=False), pa.field("k", pa.int32(), nullable=False), ("a", pa.int64())]
    )
    cat = Catalog(warehouse)
    cat.create_database("db", ignore_if_exists=True)
    t = cat.create_table(
        "db.parts",
        schema=schema,
        primary_keys=["p", "k"],
        partition_keys=["p"],
        options={"bucket": "2", "changelog-producer": "lookup"},
    )
    t.write_arrow(pa.table({"p": ["x", "y", "x"], "k": [1, 1, 2], "a": [1, 2, 3]}, schema=schema))
    t.write_arrow(pa.table({"p": ["y", "x"], "k": [1, 3], "a": [20, 4]}, schema=schema))
    cl = snapshot_changelog(t, t.latest_snapshot().id)
    assert sorted(zip(cl["p"].to_pylist(), cl["k"].to_pylist(), cl["a"].to_pylist(), cl[ROW_KIND].to_pylist())) == [
        ("x", 3, 4, "+I"),
        ("y", 1, 2, "-U"),
        ("y", 1, 20, "+U"),
    ]


@pytest.mark.parametrize("producer", ["lookup", "full-compaction"])
def test_rolled_changelog_files_read_in_written_order(warehouse, producer):
    """A compaction's changelog rolls into several files in key order, a key's -U in one file and
    its +U in the next; the incremental read and the stream scan keep the written order (keys were
    first written in descending order, so ordering the files by sequence number would not)."""
    t = make_table(warehouse, "t", "deduplicate", producer, bucket="1", **{"target-file-size": "1 b"})
    keys = list(range(8))[::-1]
    write(t, [(k, k, "x", 0) for k in keys])
    t.maintenance.compact(full=True)
    stream = t.new_read_builder().new_stream_scan()
    stream.plan()
    start = t.latest_snapshot().id
    write(t, [(k, k + 100, "y", 0) for k in keys])
    t.maintenance.compact(full=True)
    latest = t.latest_snapshot().id
    files = t.manifest_store.changelog_entries(t.changelog_manager.changelog(latest))
    assert len(files) > 1  # rolled
    expected = [(k, a, kind) for k in range(8) for a, kind in ((k, "-U"), (k + 100, "+U"))]
    assert _kinds(t.to_arrow(incremental_between=(start, latest), scan_mode="changelog")) == expected
    read = t.new_read_builder().new_read()
    streamed = []
    while stream.checkpoint() <= latest:
        streamed += _kinds(read.to_arrow(stream.plan().splits(), row_kind=True))
    assert streamed == expected
