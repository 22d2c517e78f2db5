"""Changelog producers ``lookup`` and ``full-compaction`` against Java Paimon 1.0: the same commits
(row kinds included) applied by Java and by lake_core give the same changelog, row for row and
kind for kind, snapshot by snapshot; Java's streaming read of our changelog equals its streaming
read of its own; we read Java's changelog files the same as ours. Java's ``incremental-between``
read (changelog and auto modes) and its streaming read of our lookup / full-compaction table equal
our incremental read and our stream scan."""

from __future__ import annotations

from itertools import pairwise

import pyarrow as pa
import pytest

from fixtures.java_paimon import JavaPaimonError, canonical_rows
from lake_core import ROW_KIND

from .data import lake_open, lake_table, stream_since

SCHEMA = pa.schema([pa.field("k", pa.int32(), nullable=False), ("a", pa.int64()), ("b", pa.string())])

ENGINES = {
    "deduplicate": {},
    "partial-update": {"merge-engine": "partial-update"},
    "aggregation": {
        "merge-engine": "aggregation",
        "fields.a.aggregate-function": "sum",
        "fields.b.aggregate-function": "last_non_null_value",
    },
    "first-row": {"merge-engine": "first-row"},
}

# Commits (k, a, b, kind): inserts, updates of stored keys, deletes of stored and missing keys,
# an unchanged update (row-deduplicate), several rows of one key in one commit.
COMMITS = [
    [(1, 10, "x", "+I"), (2, 20, "y", "+I"), (3, 30, None, "+I"), (4, 40, "w", "+I")],
    [(1, 11, None, "+I"), (2, 20, "y", "+I"), (5, 50, "v", "+I"), (5, 51, None, "+I")],
    [(3, 30, None, "-D"), (6, 60, "u", "-D"), (4, None, "q", "+I"), (7, 70, None, "+I")],
    [(1, 12, "z", "+I"), (3, 33, "t", "+I"), (7, 70, None, "+I")],
]


def _commits(engine: str) -> list[list[tuple]]:
    if engine == "first-row":  # first-row refuses retractions
        return [[r for r in c if r[3] == "+I"] for c in COMMITS]
    if engine in ("partial-update", "aggregation"):
        # their -D needs *.remove-record-on-delete; keep the retraction-free history here
        return [[r for r in c if r[3] == "+I"] for c in COMMITS]
    return COMMITS


def _data(rows) -> pa.Table:
    return pa.table({"k": [r[0] for r in rows], "a": [r[1] for r in rows], "b": [r[2] for r in rows]}, schema=SCHEMA)


def _lake_write(table, rows) -> None:
    from lake_core.kv.rowkind import SHORT_STRINGS

    wb = table.new_batch_write_builder()
    w = wb.new_write()
    start = 0
    while start < len(rows):
        end = start
        while end < len(rows) and rows[end][3] == rows[start][3]:
            end += 1
        w.write_rows_with_kind(_data(rows[start:end]), SHORT_STRINGS.index(rows[start][3]))
        start = end
    wb.new_commit().commit(w.prepare_commit())


def _by_key(rows: list[tuple]) -> list[tuple]:
    """Rows ordered by key, each key's rows in their order (buckets are listed in any order)."""
    return sorted(rows, key=lambda r: r[0])  # stable


def _changelogs(table) -> list[list[tuple]]:
    """Per snapshot, its changelog rows (values and kind), each key's in file order."""
    out = []
    for s in table.snapshots():
        cl = table.to_arrow(incremental_between=(s.id - 1, s.id), scan_mode="changelog")
        out.append(_by_key([(r["k"], r["a"], r["b"], r[ROW_KIND]) for r in cl.to_pylist()]))
    return out


def _stream(java_paimon, table) -> list[tuple]:
    """Java's streaming read from the first snapshot: every key's changes in order."""
    t = java_paimon.stream_read(table, from_snapshot=1)
    return _by_key([(r["k"], r["a"], r["b"], r["_row_kind"]) for r in t.to_pylist()])


CASES = [
    (e, p, d)
    for e in ENGINES
    for p in ("lookup", "full-compaction")
    for d in (False, True)
    if not (e == "first-row" and (p != "lookup" or d))
]


def _run(java_paimon, warehouse, engine: str, producer: str, row_dedup: bool, *, full_every: int | None):
    options = {"bucket": "1", "changelog-producer": producer, **ENGINES[engine]}
    if row_dedup:
        options["changelog-producer.row-deduplicate"] = "true"
    if producer == "full-compaction" and full_every is None:
        options["full-compaction.delta-commits"] = "1"
    java_path = java_paimon.create_table(warehouse, "db.java", SCHEMA, primary_keys=["k"], options=options)
    ours = lake_table(warehouse, "db.ours", SCHEMA, primary_keys=["k"], options=options)
    for i, rows in enumerate(_commits(engine)):
        java_paimon.write(java_path, _data(rows), kinds=[r[3] for r in rows])
        _lake_write(lake_open(warehouse, "db.ours"), rows)
        if full_every is not None and i % full_every == full_every - 1:
            java_paimon.compact(java_path, full=True)
            lake_open(warehouse, "db.ours").maintenance.compact(full=True)
    return java_path, ours


@pytest.mark.parametrize("engine,producer,row_dedup", CASES)
def test_same_changelog_as_java(java_paimon, warehouse, engine, producer, row_dedup):
    # full-compaction: a dedicated full compaction after every commit, on both sides
    java_path, ours = _run(
        java_paimon, warehouse, engine, producer, row_dedup, full_every=1 if producer == "full-compaction" else None
    )
    ours = lake_open(warehouse, "db.ours")
    theirs = lake_open(warehouse, "db.java")
    # snapshot by snapshot, row for row (our reader over both tables' changelog files)
    assert _changelogs(ours) == _changelogs(theirs)
    assert any(_changelogs(ours))
    # Java's streaming read of our changelog equals its read of its own
    assert _stream(java_paimon, ours) == _stream(java_paimon, java_path)
    assert sorted(canonical_rows(ours.to_arrow())) == sorted(canonical_rows(java_paimon.read(java_path)))


@pytest.mark.xfail(
    strict=True,
    reason="Java 1.0's batch writer ignores 'full-compaction.delta-commits' (only its "
    "Flink sink triggers those full compactions), so Java's table gets no changelog; lake_core's "
    "batch writer fully compacts (and produces the changelog) at every commit",
)
def test_delta_commits_full_compaction_in_the_batch_writer(java_paimon, warehouse):
    java_path, _ = _run(java_paimon, warehouse, "deduplicate", "full-compaction", False, full_every=None)
    ours = lake_open(warehouse, "db.ours")
    assert any(_changelogs(ours))
    assert _changelogs(ours) == _changelogs(lake_open(warehouse, "db.java"))


@pytest.mark.parametrize("engine", ["deduplicate", "aggregation"])
def test_dedicated_full_compaction_changelog_as_java(java_paimon, warehouse, engine):
    java_path, _ = _run(java_paimon, warehouse, engine, "full-compaction", False, full_every=2)
    ours = lake_open(warehouse, "db.ours")
    assert _changelogs(ours) == _changelogs(lake_open(warehouse, "db.java"))
    assert _stream(java_paimon, ours) == _stream(java_paimon, java_path)


RETRACTING = {
    "deduplicate": ({}, ["+I", "+I", "+U", "-U", "-D"]),
    "partial-update": ({}, ["+I"]),
    "aggregation": ({}, ["+I", "+I", "-U", "-D"]),  # retractions subtract from sum(a)
    "first-row": ({}, ["+I"]),
}
REMOVE_ON_DELETE = {"partial-update": {"partial-update.remove-record-on-delete": "true"}}


def _random_commits(seed: int, kinds: list[str], n: int = 9) -> list[list[tuple]]:
    import random

    rnd = random.Random(seed)
    out = []
    for _ in range(n):
        rows = []
        for _ in range(rnd.randint(1, 12)):
            rows.append(
                (
                    rnd.randint(0, 14),
                    rnd.choice([None, rnd.randint(-5, 50)]),
                    rnd.choice([None, "x", "y"]),
                    rnd.choice(kinds),
                )
            )
        out.append(rows)
    return out


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize(
    "engine,producer,extra",
    [
        ("deduplicate", "lookup", {}),
        ("deduplicate", "lookup", {"deletion-vectors.enabled": "true"}),
        ("partial-update", "lookup", {}),
        ("aggregation", "lookup", {}),
        ("first-row", "lookup", {}),
        ("deduplicate", "lookup", {"bucket": "2", "changelog-producer.row-deduplicate": "true"}),
        ("deduplicate", "full-compaction", {}),
        ("partial-update", "full-compaction", {}),
        ("aggregation", "full-compaction", {"changelog-producer.row-deduplicate": "true"}),
    ],
    ids=lambda v: "-".join(f"{k}={x}" for k, x in v.items()) if isinstance(v, dict) else str(v),
)
def test_random_histories_as_java(java_paimon, warehouse, engine, producer, extra, seed):
    """Random commits with retractions, deletes of missing keys and several rows per key; the
    full-compaction producer gets a dedicated full compaction every third commit."""
    engine_options, kinds = RETRACTING[engine]
    _random_history(java_paimon, warehouse, engine, producer, extra, seed, engine_options, kinds)


@pytest.mark.xfail(
    strict=True,
    raises=JavaPaimonError,
    reason="Java 1.0 throws NullPointerException for a key removed by "
    "'partial-update.remove-record-on-delete' in its lookup and full-compaction changelog "
    "rewriters (LookupChangelogMergeFunctionWrapper.setChangelog gets a null result; "
    "PartialUpdateMergeFunction's row is null)",
)
@pytest.mark.parametrize("engine,producer", [("partial-update", "lookup"), ("partial-update", "full-compaction")])
def test_remove_record_on_delete_as_java(java_paimon, warehouse, engine, producer):
    _random_history(java_paimon, warehouse, engine, producer, {}, 1, REMOVE_ON_DELETE[engine], ["+I", "+I", "+I", "-D"])


def _random_history(java_paimon, warehouse, engine, producer, extra, seed, engine_options, kinds):
    options = {"bucket": "1", "changelog-producer": producer, **ENGINES[engine], **engine_options, **extra}
    java_path = java_paimon.create_table(warehouse, "db.java", SCHEMA, primary_keys=["k"], options=options)
    lake_table(warehouse, "db.ours", SCHEMA, primary_keys=["k"], options=options)
    for i, rows in enumerate(_random_commits(seed, kinds)):
        java_paimon.write(java_path, _data(rows), kinds=[r[3] for r in rows])
        _lake_write(lake_open(warehouse, "db.ours"), rows)
        if producer == "full-compaction" and i % 3 == 2:
            java_paimon.compact(java_path, full=True)
            lake_open(warehouse, "db.ours").maintenance.compact(full=True)
    ours, theirs = lake_open(warehouse, "db.ours"), lake_open(warehouse, "db.java")
    assert _changelogs(ours) == _changelogs(theirs)
    assert _stream(java_paimon, ours) == _stream(java_paimon, java_path)
    assert sorted(canonical_rows(ours.to_arrow())) == sorted(canonical_rows(java_paimon.read(java_path)))


@pytest.mark.parametrize("engine", ["deduplicate", "partial-update", "aggregation", "first-row"])
def test_dedicated_lookup_compaction_as_java(java_paimon, warehouse, engine, tmp_path):
    """Level-0 files left by write-only commits: our dedicated compaction and Java's compaction of
    a copy of the same table produce the same changelog."""
    import shutil

    from lake_core import Catalog
    from lake_core.schema.change import SchemaChange

    options = {"bucket": "1", "changelog-producer": "lookup", "write-only": "true", **ENGINES[engine]}
    t = lake_table(warehouse, "db.t", SCHEMA, primary_keys=["k"], options=options)
    kinds = RETRACTING[engine][1]
    commits = _random_commits(5, kinds, n=6)
    _lake_write(t, commits[0])
    lake_open(warehouse, "db.t").maintenance.compact()  # a first level-0 compaction: keys above level 0
    for rows in commits[1:]:
        _lake_write(lake_open(warehouse, "db.t"), rows)
    # Java's user-triggered compaction refuses write-only tables
    Catalog(warehouse).alter_table("db.t", SchemaChange.set_option("write-only", "false"))
    ours_dir = lake_open(warehouse, "db.t").paths.root.replace("file://", "")
    java_dir = str(tmp_path / "java-copy")
    shutil.copytree(ours_dir, java_dir)
    java_paimon.compact(java_dir, full=False)
    lake_open(warehouse, "db.t").maintenance.compact()
    ours = lake_open(warehouse, "db.t")
    latest = ours.latest_snapshot().id
    java_changelog = java_paimon.stream_read(java_dir, from_snapshot=latest)
    assert (
        _by_key([(r["k"], r["a"], r["b"], r["_row_kind"]) for r in java_changelog.to_pylist()]) == _changelogs(ours)[-1]
    )
    assert _changelogs(ours)[-1]


# -- Java's incremental and streaming reads of our compaction changelogs ----------------------------
def _keyed(t: pa.Table, kind_column: str) -> list[tuple]:
    return _by_key([(r["k"], r["a"], r["b"], r[kind_column]) for r in t.to_pylist()])


def _our_history(warehouse, engine: str, producer: str, seed: int) -> tuple[object, list[int]]:
    """Our table after random commits (two buckets); full-compaction: a full compaction every
    third commit and at the end. Returns it and the snapshots where its changelog is complete
    (lookup: every one; full-compaction: right after a full compaction)."""
    engine_options, kinds = RETRACTING[engine]
    options = {"bucket": "2", "changelog-producer": producer, **ENGINES[engine], **engine_options}
    lake_table(warehouse, "db.ours", SCHEMA, primary_keys=["k"], options=options)
    points = [0]
    commits = _random_commits(seed, kinds)
    for i, rows in enumerate(commits):
        _lake_write(lake_open(warehouse, "db.ours"), rows)
        if producer == "full-compaction" and (i % 3 == 2 or i == len(commits) - 1):
            lake_open(warehouse, "db.ours").maintenance.compact(full=True)
            points.append(lake_open(warehouse, "db.ours").latest_snapshot().id)
    ours = lake_open(warehouse, "db.ours")
    return ours, (list(range(ours.latest_snapshot().id + 1)) if producer == "lookup" else points)


JAVA_READ_CASES = [
    ("deduplicate", "lookup"),
    ("partial-update", "lookup"),
    ("aggregation", "lookup"),
    ("first-row", "lookup"),
    ("deduplicate", "full-compaction"),
    ("aggregation", "full-compaction"),
]


@pytest.mark.parametrize("engine,producer", JAVA_READ_CASES)
def test_java_incremental_read_of_our_changelog_equals_ours(java_paimon, warehouse, engine, producer):
    """Java's ``incremental-between`` read of (s, e] in changelog and auto modes equals ours, row
    for row and kind for kind (each key's rows in order), for every snapshot alone and for every
    range between two complete points that holds one changelog snapshot."""
    ours, points = _our_history(warehouse, engine, producer, seed=4)
    kinds_of = {s.id: s.commit_kind.value for s in ours.snapshots()}
    compared = 0
    for s in range(ours.latest_snapshot().id):
        for mode in ("changelog", "auto"):
            mine = _keyed(ours.to_arrow(incremental_between=(s, s + 1), scan_mode=mode), ROW_KIND)
            assert _keyed(java_paimon.changes_between(ours, s, s + 1, mode=mode), "_row_kind") == mine, (s, mode)
            compared += bool(mine)
            if kinds_of[s + 1] == "APPEND":
                assert mine == []  # the changelog lands on the COMPACT snapshot
    assert compared
    for s, e in pairwise(points):
        mine = _keyed(ours.to_arrow(incremental_between=(s, e), scan_mode="changelog"), ROW_KIND)
        assert _keyed(java_paimon.changes_between(ours, s, e, mode="changelog"), "_row_kind") == mine, (s, e)


@pytest.mark.parametrize("engine,producer", JAVA_READ_CASES)
def test_java_streaming_read_of_our_changelog_equals_our_stream_scan(java_paimon, warehouse, engine, producer):
    ours, points = _our_history(warehouse, engine, producer, seed=6)
    for start in (1, points[len(points) // 2] + 1):
        mine = _keyed(stream_since(ours, start), ROW_KIND)
        assert mine and _keyed(java_paimon.stream_read(ours, from_snapshot=start), "_row_kind") == mine, start


@pytest.mark.xfail(
    strict=True,
    reason="Java 1.0 IncrementalStartingScanner plans batch splits: the changelog "
    "files of several COMPACT snapshots are merged per key, so a key changed by two compactions "
    "of the range loses changes; lake_core reads them unmerged, as Java 1.1",
)
@pytest.mark.parametrize("producer", ["lookup", "full-compaction"])
def test_java_changelog_of_a_range_of_several_compactions(java_paimon, warehouse, producer):
    ours = lake_table(
        warehouse, "db.ours", SCHEMA, primary_keys=["k"], options={"bucket": "1", "changelog-producer": producer}
    )
    for rows in ([(1, 10, "x", "+I"), (2, 20, "y", "+I")], [(1, 11, "x", "+I")], [(1, 12, "x", "+I")]):
        _lake_write(lake_open(warehouse, "db.ours"), rows)
        lake_open(warehouse, "db.ours").maintenance.compact(full=True)
    ours = lake_open(warehouse, "db.ours")
    latest = ours.latest_snapshot().id
    mine = _keyed(ours.to_arrow(incremental_between=(0, latest), scan_mode="changelog"), ROW_KIND)
    assert mine == [
        (1, 10, "x", "+I"),
        (1, 10, "x", "-U"),
        (1, 11, "x", "+U"),
        (1, 11, "x", "-U"),
        (1, 12, "x", "+U"),
        (2, 20, "y", "+I"),
    ]
    assert _keyed(java_paimon.changes_between(ours, 0, latest, mode="changelog"), "_row_kind") == mine


def _in_order(t: pa.Table, kind_column: str) -> list[tuple]:
    return [(r["k"], r["a"], r["b"], r[kind_column]) for r in t.to_pylist()]


def _rolled_changelog(warehouse, producer: str) -> tuple[object, list[tuple]]:
    """One bucket; the last compaction's changelog rolled into several files, a key's -U and +U in
    two of them. Returns the table and that snapshot's changelog as we read it."""
    lake_table(
        warehouse,
        "db.ours",
        SCHEMA,
        primary_keys=["k"],
        options={"bucket": "1", "changelog-producer": producer, "target-file-size": "1 b"},
    )
    keys = list(range(6))[::-1]  # sequence numbers fall as keys rise
    _lake_write(lake_open(warehouse, "db.ours"), [(k, k, "x", "+I") for k in keys])
    lake_open(warehouse, "db.ours").maintenance.compact(full=True)
    _lake_write(lake_open(warehouse, "db.ours"), [(k, k + 100, "y", "+I") for k in keys])
    lake_open(warehouse, "db.ours").maintenance.compact(full=True)
    ours = lake_open(warehouse, "db.ours")
    latest = ours.latest_snapshot().id
    assert len(ours.manifest_store.changelog_entries(ours.changelog_manager.changelog(latest))) > 1
    mine = _in_order(ours.to_arrow(incremental_between=(latest - 1, latest), scan_mode="changelog"), ROW_KIND)
    assert mine == [(k, a, b, kind) for k in range(6) for a, b, kind in ((k, "x", "-U"), (k + 100, "y", "+U"))]
    return ours, mine


@pytest.mark.parametrize("producer", ["lookup", "full-compaction"])
def test_java_streams_our_rolled_changelog_files_in_the_same_order(java_paimon, warehouse, producer):
    """Java's streaming read of rolled changelog files and our stream scan return the same rows in
    the same order (the files' manifest order, not their sequence numbers)."""
    ours, mine = _rolled_changelog(warehouse, producer)
    streamed = _in_order(stream_since(ours, 1), ROW_KIND)
    assert streamed == _in_order(java_paimon.stream_read(ours, from_snapshot=1), "_row_kind")
    assert streamed[-len(mine) :] == mine


@pytest.mark.xfail(
    strict=True,
    reason="Java 1.0 IncrementalStartingScanner plans batch splits, so even one "
    "snapshot's changelog files are merged per key: a -U and its +U in two rolled files come back "
    "as the +U alone; its streaming read (and Java 1.1) keep both, as lake_core",
)
@pytest.mark.parametrize("producer", ["lookup", "full-compaction"])
def test_java_incremental_read_of_rolled_changelog_files(java_paimon, warehouse, producer):
    ours, mine = _rolled_changelog(warehouse, producer)
    latest = ours.latest_snapshot().id
    assert _in_order(java_paimon.changes_between(ours, latest - 1, latest, mode="changelog"), "_row_kind") == mine
