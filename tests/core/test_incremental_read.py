"""Incremental reads (Paimon's ``incremental-between``), the builder stream scan and ``db.t$ro``.

Oracle: a plain dict model. The changes of snapshots (s, e], folded onto the state at s by the
merge engine's model (tests/merge/model.py), give the state at e; a stream scan's plans folded one
after the other give the latest state; ``$ro`` reads what the last full compaction wrote.
"""

from __future__ import annotations

import datetime as dt
import random
import zlib

import pyarrow as pa
import pytest
from merge.model import KIND_NAMES, Model, Spec

from lake_core import ROW_KIND, Catalog
from lake_core.errors import (
    InvalidOptionError,
    PredicateError,
    ReadOnlyTableError,
    SnapshotNotFoundError,
    TableNotFoundError,
    TagNotFoundError,
    UnsupportedOptionError,
)
from lake_core.snapshot.changelog_manager import ChangelogNotFoundError

SCHEMA = pa.schema(
    [pa.field("k", pa.int32(), nullable=False), ("a", pa.int64()), ("b", pa.string()), ("op", pa.string())]
)

# engine options, and the row kinds its input may carry
ENGINES = {
    "deduplicate": ({}, ("+I", "+U", "-U", "-D")),
    "partial-update": ({"merge-engine": "partial-update"}, ("+I",)),
    "aggregation": (
        {
            "merge-engine": "aggregation",
            "fields.a.aggregate-function": "sum",
            "fields.b.aggregate-function": "last_non_null_value",
        },
        ("+I",),
    ),
    "first-row": ({"merge-engine": "first-row"}, ("+I",)),
}


def _catalog(warehouse) -> Catalog:
    c = Catalog(warehouse)
    c.create_database("db", ignore_if_exists=True)
    return c


def _table(warehouse, name="db.t", *, schema=SCHEMA, pk=("k",), **options):
    opts = {"bucket": "2", "rowkind.field": "op", **options} if pk else {"bucket": "-1", **options}
    return _catalog(warehouse).create_table(name, schema, primary_keys=list(pk), options=opts)


def _batch(rng: random.Random, kinds, n: int) -> pa.Table:
    keys = [rng.randrange(12) for _ in range(n)]
    return pa.table(
        {
            "k": keys,
            "a": [rng.choice([None, rng.randrange(100)]) for _ in keys],
            "b": [rng.choice([None, "x", "y", "z"]) for _ in keys],
            "op": [rng.choice(kinds) for _ in keys],
        },
        schema=SCHEMA,
    )


def _rows(t: pa.Table, kind: str | None = None) -> list[dict]:
    """Model rows (dicts with _kind); ``kind`` None: from the table's ``_ROW_KIND`` column."""
    out = []
    for r in t.to_pylist():
        k = r.pop(ROW_KIND, None) if kind is None else kind
        r.pop(ROW_KIND, None)
        r["_kind"] = KIND_NAMES[k]
        out.append(r)
    return out


def _fold(model: Model, state: pa.Table, *changes: pa.Table) -> list[tuple]:
    """The merged rows of ``state`` followed by ``changes`` in order (sequence = position)."""
    rows = _rows(state, "+I") + [r for c in changes for r in _rows(c)]
    for i, r in enumerate(rows):
        r["_seq"] = i
    return _canon(model.merge(rows, drop_deletes=True))


def _canon(rows) -> list[tuple]:
    rows = rows.to_pylist() if isinstance(rows, pa.Table) else rows
    return sorted(tuple((c, r[c]) for c in ("k", "a", "b")) for r in rows)


def _history(table, seed: int, kinds, commits: int = 8) -> list[pa.Table]:
    """Commits random batches (some compactions between); returns the state at every snapshot."""
    rng = random.Random(seed)
    for i in range(commits):
        table.write_arrow(_batch(rng, kinds, rng.randrange(1, 10)))
        if i % 3 == 2:
            table.maintenance.compact(full=i % 2 == 0)
    return {s.id: table.to_arrow(snapshot_id=s.id) for s in table.snapshots()}


# first-row takes changelog-producer none or lookup only (as Java)
@pytest.mark.parametrize(
    "engine, producer", [(e, p) for e in sorted(ENGINES) for p in ("none", "input") if (e, p) != ("first-row", "input")]
)
def test_changes_folded_onto_the_start_give_the_end(warehouse, engine, producer):
    options, kinds = ENGINES[engine]
    t = _table(warehouse, **options, **{"changelog-producer": producer})
    states = _history(t, seed=zlib.crc32(f"{engine}/{producer}".encode()), kinds=kinds)
    model = Model(Spec(SCHEMA, ("k",), dict(t.schema.options)))
    kinds_of = {s.id: s.commit_kind.value for s in t.snapshots()}
    assert "COMPACT" in kinds_of.values()  # the delta skips them, the changelog has none here
    # first-row hides level 0: an APPEND snapshot's own rows show only after its COMPACT snapshot
    ids = sorted(i for i in states if not t.level0_hidden or kinds_of[i] == "COMPACT")
    states[0] = t.to_arrow().slice(0, 0)
    for s in [0] + ids:
        for e in ids:
            if e < s:
                continue
            changes = t.to_arrow(incremental_between=(s, e))
            assert changes.column_names == SCHEMA.names + [ROW_KIND]
            assert _fold(model, states[s], changes) == _canon(states[e]), (s, e)
            # the Paimon option keys say the same
            same = t.to_arrow(options={"incremental-between": f"{s},{e}", "incremental-between-scan-mode": "auto"})
            assert same.equals(changes)


def test_delta_and_changelog_modes_read_what_each_snapshot_added(warehouse):
    t = _table(warehouse, **{"changelog-producer": "input", "bucket": "1"})
    t.write_arrow(pa.table({"k": [1, 2], "a": [1, 2], "b": ["a", "x"], "op": ["+I", "+I"]}, schema=SCHEMA))
    t.write_arrow(
        pa.table({"k": [1, 1, 2], "a": [1, 3, 2], "b": ["a", "b", "x"], "op": ["-U", "+U", "-D"]}, schema=SCHEMA)
    )
    t.maintenance.compact(full=True)  # snapshot 3: COMPACT, no changes of its own
    t.write_arrow(pa.table({"k": [1, 2], "a": [3, 4], "b": ["b", "y"], "op": ["-D", "+I"]}, schema=SCHEMA))

    def kinds(mode, s=1, e=4):
        r = t.to_arrow(incremental_between=(s, e), scan_mode=mode)
        return list(zip(r["k"].to_pylist(), r["b"].to_pylist(), r[ROW_KIND].to_pylist()))

    # every change in commit order: a key changed in several snapshots keeps each step
    assert kinds("changelog") == [(1, "a", "-U"), (1, "b", "+U"), (2, "x", "-D"), (1, "b", "-D"), (2, "y", "+I")]
    assert kinds("auto") == kinds("changelog")  # the table has a changelog producer
    # the delta: each APPEND snapshot's data files (merged per key within a commit), COMPACT skipped
    assert kinds("delta") == [(1, "b", "+U"), (2, "x", "-D"), (1, "b", "-D"), (2, "y", "+I")]
    assert kinds("delta", 2, 3) == [] and kinds("changelog", 2, 3) == []
    assert kinds("changelog", 4, 4) == []  # start == end: nothing


def test_tags_resolve_to_their_snapshots(warehouse):
    t = _table(warehouse, **{"changelog-producer": "input"})
    rng = random.Random(3)
    for _ in range(5):
        t.write_arrow(_batch(rng, ("+I", "-D"), 6))
    t.create_tag("mon", 2)
    t.create_tag("fri", 4)
    by_tag = t.to_arrow(incremental_between=("mon", "fri"))
    assert by_tag.num_rows and by_tag.equals(t.to_arrow(incremental_between=(2, 4)))
    assert t.to_arrow(options={"incremental-between": "mon,fri"}).equals(by_tag)
    with pytest.raises(TagNotFoundError, match="nope"):
        t.to_arrow(incremental_between=("mon", "nope"))


def test_projection_and_filter(warehouse):
    t = _table(warehouse, **{"changelog-producer": "input"})
    rng = random.Random(11)
    for _ in range(4):
        t.write_arrow(_batch(rng, ("+I", "+U", "-D"), 12))
    pb = t.predicate_builder()
    pred = pb.and_predicates([pb.greater_or_equal("k", 4), pb.is_not_null("a")])
    full = t.to_arrow(incremental_between=(1, 4))
    got = t.to_arrow(incremental_between=(1, 4), columns=["b", "k"], filter=pred)
    assert got.column_names == ["b", "k", ROW_KIND]
    expected = [(r["b"], r["k"], r[ROW_KIND]) for r in full.to_pylist() if r["k"] >= 4 and r["a"] is not None]
    assert [(r["b"], r["k"], r[ROW_KIND]) for r in got.to_pylist()] == expected and expected
    with pytest.raises(PredicateError, match="nope"):
        t.to_arrow(incremental_between=(1, 4), columns=["nope"])


def test_append_table_changes_are_inserts(warehouse):
    schema = pa.schema([("id", pa.int64()), ("v", pa.string())])
    t = _table(warehouse, schema=schema, pk=())
    for i in range(3):
        t.write_arrow(pa.table({"id": [i, i + 10], "v": ["a", "b"]}, schema=schema))
    got = t.to_arrow(incremental_between=(1, 3))
    assert sorted(got["id"].to_pylist()) == [1, 2, 11, 12]
    assert set(got[ROW_KIND].to_pylist()) == {"+I"}


def test_bad_ranges_are_refused(warehouse):
    t = _table(warehouse)
    assert t.to_arrow(incremental_between=(0, 0)).column_names == SCHEMA.names + [ROW_KIND]  # no snapshot yet
    rng = random.Random(1)
    for _ in range(4):
        t.write_arrow(_batch(rng, ("+I",), 4))
    for bad in ["3", "1,2,3", "a,", (1,), object()]:
        with pytest.raises(InvalidOptionError, match="incremental-between"):
            t.to_arrow(incremental_between=bad)
    with pytest.raises(InvalidOptionError, match="start snapshot 3 is after the end snapshot 2"):
        t.to_arrow(incremental_between=(3, 2))
    with pytest.raises(InvalidOptionError, match="'incremental-between-scan-mode' = 'full'"):
        t.to_arrow(incremental_between=(1, 2), scan_mode="full")
    with pytest.raises(InvalidOptionError, match="needs 'incremental-between'"):
        t.to_arrow(options={"incremental-between-scan-mode": "delta"})
    with pytest.raises(InvalidOptionError, match="not both"):
        t.to_arrow(snapshot_id=2, incremental_between=(1, 2))
    for key in ("incremental-between-timestamp", "scan.snapshot-id"):  # refused, never ignored
        with pytest.raises(UnsupportedOptionError, match=key):
            t.to_arrow(options={key: "1"})
    with pytest.raises(SnapshotNotFoundError, match="at most 4"):
        t.to_arrow(incremental_between=(1, 5))


@pytest.mark.parametrize("producer", ["none", "input"])
def test_expired_changes_are_refused_and_long_lived_changelogs_read(warehouse, producer):
    t = _table(warehouse, **{"changelog-producer": producer, "changelog.num-retained.min": "6"})
    rng = random.Random(7)
    for _ in range(8):
        t.write_arrow(_batch(rng, ("+I", "-D"), 5))
    latest = t.latest_snapshot().id
    before = {(s, e): t.to_arrow(incremental_between=(s, e)) for s in range(0, latest) for e in range(s, latest + 1)}
    t.maintenance.expire_snapshots(retain_min=2, older_than=dt.timedelta(0), max_deletes=1000)
    t.maintenance.expire_changelogs(retain_min=6, older_than=dt.timedelta(0), max_deletes=1000)
    first_snapshot = t.snapshot_manager.earliest_id()
    assert first_snapshot == latest - 1
    earliest = t.changelog_manager.earliest_id()
    assert 1 < earliest < first_snapshot  # some changelogs outlive their snapshots, older ones are gone
    for (s, e), rows in before.items():
        if s >= earliest - 1:
            assert t.to_arrow(incremental_between=(s, e)).equals(rows), (s, e)
        else:
            with pytest.raises(ChangelogNotFoundError, match=f"at least {earliest - 1}"):
                t.to_arrow(incremental_between=(s, e))
    if producer == "input":  # the delta of an expired snapshot is gone with it: only snapshots count
        with pytest.raises(SnapshotNotFoundError, match=f"at least {first_snapshot - 1}"):
            t.to_arrow(incremental_between=(earliest, latest), scan_mode="delta")
        assert t.to_arrow(incremental_between=(first_snapshot - 1, latest), scan_mode="delta").num_rows


@pytest.mark.parametrize("engine", ["deduplicate", "partial-update", "aggregation"])
def test_diff_mode_folded_onto_the_start_gives_the_end_even_after_expiry(warehouse, engine):
    """``diff`` compares the merged states of the two snapshots (Java's DIFF mode, and what Java 1.0
    reads between two tags): -D for a removed key, the new row for an added or changed one, nothing
    for an unchanged one. Tags keep working after the snapshots between them expired."""
    options, kinds = ENGINES[engine]
    t = _table(warehouse, **options)
    states = _history(t, seed=zlib.crc32(engine.encode()), kinds=kinds)
    states[0] = t.to_arrow().slice(0, 0)
    ids = sorted(states)
    for s in [0] + ids:
        for e in ids:
            if e < s:
                continue
            diff = t.to_arrow(incremental_between=(s, e), scan_mode="diff")
            # a diff row is the key's whole new row (or -D): folding replaces, whatever the engine
            state = {r[0][1]: r for r in _canon(states[s])}
            for r in diff.to_pylist():
                if r[ROW_KIND] == "-D":
                    del state[r["k"]]
                else:
                    state[r["k"]] = tuple((c, r[c]) for c in ("k", "a", "b"))
            assert sorted(state.values()) == _canon(states[e]), (s, e)
            # and minimal: exactly the keys whose whole row (op too) differs, once each
            before = {r["k"]: r for r in states[s].to_pylist()}
            after = {r["k"]: r for r in states[e].to_pylist()}
            assert sorted(diff["k"].to_pylist()) == sorted(
                k for k in before.keys() | after.keys() if before.get(k) != after.get(k)
            )
    t.create_tag("first", ids[1])
    t.create_tag("last", ids[-1])
    expected = t.to_arrow(incremental_between=(ids[1], ids[-1]), scan_mode="diff")
    t.maintenance.expire_snapshots(retain_min=1, older_than=dt.timedelta(0), max_deletes=1000)
    assert t.snapshot_manager.earliest_id() == ids[-1]
    assert t.to_arrow(incremental_between=("first", "last"), scan_mode="diff").equals(expected)
    with pytest.raises(SnapshotNotFoundError):
        t.to_arrow(incremental_between=("first", "last"), scan_mode="delta")


def test_diff_mode_projection_filter_and_append_tables(warehouse):
    t = _table(warehouse)
    t.write_arrow(pa.table({"k": [1, 2, 3], "a": [1, 2, 3], "b": ["x", "y", "z"], "op": ["+I"] * 3}, schema=SCHEMA))
    t.write_arrow(
        pa.table({"k": [1, 2, 4], "a": [1, 5, 4], "b": ["x", "y", "w"], "op": ["+I", "+I", "+I"]}, schema=SCHEMA)
    )
    t.write_arrow(pa.table({"k": [3], "a": [3], "b": ["z"], "op": ["-D"]}, schema=SCHEMA))
    got = t.to_arrow(incremental_between=(1, 3), scan_mode="diff", columns=["k", "b"])
    assert sorted(got.to_pylist(), key=lambda r: r["k"]) == [
        {"k": 2, "b": "y", ROW_KIND: "+I"},
        {"k": 3, "b": "z", ROW_KIND: "-D"},
        {"k": 4, "b": "w", ROW_KIND: "+I"},
    ]
    pb = t.predicate_builder()
    assert t.to_arrow(incremental_between=(1, 3), scan_mode="diff", filter=pb.greater_than("a", 3))[
        "k"
    ].to_pylist() in ([2, 4], [4, 2])
    schema = pa.schema([("id", pa.int64())])
    logs = _table(warehouse, "db.logs", schema=schema, pk=())
    logs.write_arrow(pa.table({"id": [1]}, schema=schema))
    with pytest.raises(UnsupportedOptionError, match="'diff' needs a primary-key table"):
        logs.to_arrow(incremental_between=(0, 1), scan_mode="diff")


# -- the stream scan ------------------------------------------------------------------------------
@pytest.mark.parametrize("engine", ["deduplicate", "partial-update", "aggregation"])
@pytest.mark.parametrize("producer", ["none", "input"])
def test_stream_scan_folds_to_the_latest_state(warehouse, engine, producer):
    options, kinds = ENGINES[engine]
    t = _table(warehouse, **options, **{"changelog-producer": producer})
    model = Model(Spec(SCHEMA, ("k",), dict(t.schema.options)))
    rng = random.Random(5)
    rb = t.new_read_builder()
    scan = rb.new_stream_scan()
    assert scan.plan().splits() == [] and scan.checkpoint() is None  # no snapshot yet
    t.write_arrow(_batch(rng, kinds, 6))
    t.write_arrow(_batch(rng, kinds, 6))
    first = rb.new_read().to_arrow(scan.plan().splits())
    assert set(first[ROW_KIND].to_pylist()) == {"+I"} and _canon(first) == _canon(t.to_arrow())
    assert scan.checkpoint() == 3
    seen = [first]
    for i in range(10):
        for _ in range(rng.randrange(0, 3)):
            t.write_arrow(_batch(rng, kinds, rng.randrange(1, 8)))
        if i % 4 == 3:
            t.maintenance.compact(full=True)
        if i == 5:  # a consumer restarting from its checkpoint carries on where it stopped
            position = scan.checkpoint()
            scan = t.new_read_builder().new_stream_scan()
            scan.restore(position)
        latest = t.latest_snapshot().id
        while scan.checkpoint() <= latest:
            seen.append(rb.new_read().to_arrow(scan.plan().splits()))
        assert scan.plan().splits() == [] and scan.checkpoint() == latest + 1  # nothing new
        empty = first.slice(0, 0)
        assert _fold(model, empty, *seen) == _canon(t.to_arrow()), i


def test_stream_scan_refuses_an_expired_position_and_records_its_consumer(warehouse):
    t = _table(warehouse)
    rng = random.Random(9)
    for _ in range(3):
        t.write_arrow(_batch(rng, ("+I",), 4))
    scan = t.new_read_builder().new_stream_scan(consumer_id="job-a")
    scan.plan()
    assert scan.checkpoint() == 4
    scan.notify_checkpoint_complete(scan.checkpoint())
    t.write_arrow(_batch(rng, ("+I",), 4))
    resumed = t.new_read_builder().new_stream_scan(consumer_id="job-a")
    assert resumed.checkpoint() == 4
    rows = t.new_read_builder().new_read().to_arrow(resumed.plan().splits())
    assert rows.equals(t.to_arrow(incremental_between=(3, 4), scan_mode="delta"))
    stale = t.new_read_builder().new_stream_scan()
    stale.restore(1)
    t.maintenance.expire_snapshots(retain_min=1, older_than=dt.timedelta(0), max_deletes=1000)
    # the consumer kept snapshot 4 (its next) from expiry; snapshot 1 is gone
    assert t.snapshot_manager.earliest_id() == 4
    with pytest.raises(ChangelogNotFoundError, match="snapshot 1 .* has expired"):
        stale.plan()


# -- db.t$ro ----------------------------------------------------------------------------------------
def test_read_optimized_reads_what_full_compaction_wrote(warehouse):
    t = _table(warehouse, **{"changelog-producer": "none"})
    rng = random.Random(4)
    for _ in range(3):
        t.write_arrow(_batch(rng, ("+I", "-D"), 8))
    ro = _catalog(warehouse).get_table("db.t$ro")
    assert ro.identifier == "db.t$ro"
    assert ro.to_arrow().num_rows == 0  # nothing at the top level yet
    t.maintenance.compact(full=True)
    compacted = t.latest_snapshot().id
    assert _canon(ro.to_arrow()) == _canon(t.to_arrow())
    for _ in range(2):
        t.write_arrow(_batch(rng, ("+I", "-D"), 8))
    assert _canon(t.to_arrow()) != _canon(t.to_arrow(snapshot_id=compacted))
    # new writes stay below the top level until the next full compaction
    assert _canon(ro.to_arrow()) == _canon(t.to_arrow(snapshot_id=compacted))
    splits = ro.new_read_builder().new_scan().plan().splits()
    top = t.options.num_levels - 1
    assert splits and all(f.level == top for s in splits for f in s.files)
    pb = ro.predicate_builder()
    assert _canon(ro.to_arrow(filter=pb.less_than("k", 6))) == [
        r for r in _canon(t.to_arrow(snapshot_id=compacted)) if r[0][1] < 6
    ]


def test_read_optimized_append_table_and_refusals(warehouse):
    schema = pa.schema([("id", pa.int64())])
    t = _table(warehouse, "db.logs", schema=schema, pk=())
    t.write_arrow(pa.table({"id": [1, 2]}, schema=schema))
    cat = _catalog(warehouse)
    ro = cat.get_table("db.logs$ro")
    assert sorted(ro.to_arrow()["id"].to_pylist()) == [1, 2]  # an append table has no levels to skip
    for attempt in (
        lambda: ro.write_arrow(pa.table({"id": [3]}, schema=schema)),
        lambda: ro.new_batch_write_builder(),
        lambda: ro.maintenance.compact(full=True),
        lambda: ro.delete_where(ro.predicate_builder().equal("id", 1)),
        lambda: ro.create_tag("x"),
        lambda: ro.new_read_builder().new_stream_scan(),
        lambda: ro.to_arrow(incremental_between=(0, 1)),
    ):
        with pytest.raises(ReadOnlyTableError, match=r"db\.logs\$ro"):
            attempt()
    assert [s.id for s in t.snapshots()] == [1] and t.list_tags() == []
    with pytest.raises(TableNotFoundError, match="system table 'binlog'"):
        cat.get_table("db.logs$binlog")
    with pytest.raises(TableNotFoundError):
        cat.get_table("db.nope$ro")


def test_read_optimized_of_a_deletion_vector_table_is_the_usual_read(warehouse):
    """Deletion-vector (and first-row) reads need no merge already: Java's batch scan reads every
    level above 0 there, for ``$ro`` too."""
    t = _table(warehouse, **{"deletion-vectors.enabled": "true"})
    rng = random.Random(6)
    for _ in range(4):
        t.write_arrow(_batch(rng, ("+I",), 8))
    levels = {f.level for s in t.new_read_builder().new_scan().plan().splits() for f in s.files}
    assert levels - {t.options.num_levels - 1}  # not all at the top level
    assert _canon(_catalog(warehouse).get_table("db.t$ro").to_arrow()) == _canon(t.to_arrow())


def test_partitions_and_schema_evolution(warehouse):
    """Changes of a partitioned table, pruned by a partition filter, across a schema change (files
    of the old schema are read in the new one: renamed column, added column NULL)."""
    from lake_core import SchemaChange

    schema = pa.schema(
        [pa.field("p", pa.string(), nullable=False), pa.field("k", pa.int32(), nullable=False), ("v", pa.string())]
    )
    cat = _catalog(warehouse)
    t = cat.create_table(
        "db.p",
        schema,
        primary_keys=["p", "k"],
        partition_keys=["p"],
        options={"bucket": "1", "changelog-producer": "input"},
    )
    t.write_arrow(pa.table({"p": ["x", "y"], "k": [1, 1], "v": ["a", "b"]}, schema=schema))
    t = cat.alter_table("db.p", [SchemaChange.rename_column("v", "v2"), SchemaChange.add_column("w", pa.int64())])
    t.write_arrow(pa.table({"p": ["x", "y"], "k": [1, 2], "v2": ["a2", "c"], "w": [5, 6]}, schema=t.arrow_schema()))
    pb = t.predicate_builder()
    got = t.to_arrow(incremental_between=(0, 2), filter=pb.equal("p", "x"))
    assert got.to_pylist() == [
        {"p": "x", "k": 1, "v2": "a", "w": None, ROW_KIND: "+I"},
        {"p": "x", "k": 1, "v2": "a2", "w": 5, ROW_KIND: "+I"},
    ]
    splits = (
        t.new_read_builder().with_filter(pb.equal("p", "x")).with_incremental_between((0, 2)).new_scan().plan().splits()
    )
    assert [(s.snapshot_id, s.partition_values) for s in splits] == [(1, ("x",)), (2, ("x",))]
