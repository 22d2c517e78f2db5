"""The metadata system tables against Java Paimon 1.0, the referee: Java's ``Catalog.getTable
("db.t$snapshots")`` (and the other nine) on the same warehouse must give the columns, types and
rows we give, on a table we wrote (appends, deletes, a full compaction, a column added, tags with
and without a time retained, a consumer) and on one Java wrote.

The jar is Java Paimon 1.0-SNAPSHOT (September 2024); we follow the 1.0 releases where they differ
from it (strict xfails below): release 1.0.0 added ``$files.file_source`` and made
``$files.file_path`` the file's full path (the snapshot printed the file name only), release 1.0.1
added ``$manifests.min_partition_stats``/``max_partition_stats``.
"""

from __future__ import annotations

import datetime as dt
import os
import time

import pyarrow as pa
import pytest
from system_tables.history import IDENT, build

from fixtures.java_paimon import JavaPaimonError, assert_same_rows
from lake_core import Catalog
from lake_core.errors import TableNotFoundError

from .data import lake_open

#: Same columns, same rows, in the same order (Java's order is defined: ascending snapshot ids,
#: sorted tag names, HashMap order of the options).
ORDERED = ("snapshots", "options", "tags")
#: Same columns, same rows, any order (Java lists schema and consumer files in the order the
#: directory listing gives, and plans splits in its own order; we sort by id; the jar lists
#: partitions and buckets in hash order, release 1.0.0 sorts them as we do: xfail below).
UNORDERED = ("schemas", "consumers", "audit_log", "partitions", "buckets")

_FILES_SNAPSHOT_LACKS = "file_source"
_MANIFESTS_SNAPSHOT_LACKS = ("min_partition_stats", "max_partition_stats")


@pytest.fixture(autouse=True)
def _utc():
    """Java's TIMESTAMP columns are its JVM's wall clock (the driver runs in UTC): so is ours."""
    before = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    time.tzset()
    yield
    if before is None:
        del os.environ["TZ"]
    else:
        os.environ["TZ"] = before
    time.tzset()


def _ours(catalog: Catalog, name: str, ident: str = IDENT) -> pa.Table:
    return catalog.get_table(f"{ident}${name}").to_arrow()


def _java(java_paimon, warehouse, name: str, ident: str = IDENT) -> pa.Table:
    return java_paimon.system_table(warehouse, f"{ident}${name}")


def _same(java: pa.Table, ours: pa.Table, *, ordered: bool) -> None:
    assert java.schema.remove_metadata() == ours.schema
    if ordered:
        assert java.to_pylist() == ours.to_pylist()
    else:
        assert_same_rows(java, ours)


def _java_history(java_paimon, warehouse) -> None:
    """What Java writes: three commits, a full compaction, an added column, a tag, a consumer."""
    schema = pa.schema(
        [pa.field("p", pa.int32(), nullable=False), pa.field("k", pa.int64(), nullable=False), ("v", pa.float64())]
    )
    table = java_paimon.create_table(
        warehouse, "db.j", schema, primary_keys=["p", "k"], partition_keys=["p"], options={"bucket": "2"}
    )
    java_paimon.write(table, pa.table({"p": [1, 1, 2], "k": [1, 2, 3], "v": [0.5, None, 1e10]}, schema=schema))
    java_paimon.write(table, pa.table({"p": [1], "k": [2], "v": [2.25]}, schema=schema), kinds=["-D"])
    java_paimon.compact(table)
    java_paimon.alter_table(warehouse, "db.j", [{"op": "add_column", "name": "w", "type": pa.string()}])
    java_paimon.write(
        table,
        pa.table(
            {"p": [2, 3], "k": [3, 4], "v": [-1.0, 7.0], "w": ["x", None]},
            schema=schema.append(pa.field("w", pa.string())),
        ),
    )
    java_paimon.write(
        table,
        pa.table({"p": [2], "k": [3], "v": [-1.0], "w": ["x"]}, schema=schema.append(pa.field("w", pa.string()))),
        kinds=["-D"],
    )
    java_paimon.create_tag(table, "first", 1)
    java_paimon.create_tag(table, "kept", 3, time_retained_ms=90_000)
    java_paimon.consumer(table, "reader", 2)


@pytest.mark.parametrize("name", ORDERED + UNORDERED)
def test_our_table_through_javas_system_tables(java_paimon, warehouse, name):
    catalog = Catalog(warehouse)
    build(catalog)
    _same(_java(java_paimon, warehouse, name), _ours(catalog, name), ordered=name in ORDERED)


@pytest.mark.parametrize("name", ORDERED + UNORDERED)
def test_javas_table_through_our_system_tables(java_paimon, warehouse, name):
    _java_history(java_paimon, warehouse)
    catalog = Catalog(warehouse)
    ours = _ours(catalog, name, "db.j")
    assert ours.num_rows > 0
    _same(_java(java_paimon, warehouse, name, "db.j"), ours, ordered=name in ORDERED)


def _files_as_the_snapshot_prints_them(ours: pa.Table) -> pa.Table:
    """Our ``$files`` with ``file_path`` cut to the file name and without ``file_source``."""
    names = pa.array([p.rsplit("/", 1)[-1] for p in ours["file_path"].to_pylist()], pa.string())
    ours = ours.set_column(ours.schema.get_field_index("file_path"), ours.schema.field("file_path"), names)
    return ours.drop_columns([_FILES_SNAPSHOT_LACKS])


def _history(catalog: Catalog, java_paimon, warehouse: str, who: str) -> str:
    """The table whose system tables are compared: written by us (``ours``) or by Java (``javas``)."""
    if who == "ours":
        build(catalog)
        return IDENT
    _java_history(java_paimon, warehouse)
    return "db.j"


@pytest.mark.parametrize("who", ["ours", "javas"])
def test_files_agree_with_java_but_the_columns_the_snapshot_lacks(java_paimon, warehouse, who):
    catalog = Catalog(warehouse)
    ident = _history(catalog, java_paimon, warehouse, who)
    ours = _ours(catalog, "files", ident)
    root = lake_open(warehouse, ident).paths.root
    assert all(p.startswith(root + "/") for p in ours["file_path"].to_pylist())
    assert set(ours["file_source"].to_pylist()) <= {"APPEND", "COMPACT"}
    _same(_java(java_paimon, warehouse, "files", ident), _files_as_the_snapshot_prints_them(ours), ordered=False)


@pytest.mark.xfail(
    strict=True,
    reason="the Java 1.0-SNAPSHOT jar predates release 1.0.0's $files.file_source column and full "
    "file_path (it prints the file name only); we follow the release",
)
def test_files_columns_are_javas(java_paimon, warehouse):
    catalog = Catalog(warehouse)
    build(catalog)
    _same(_java(java_paimon, warehouse, "files"), _ours(catalog, "files"), ordered=False)


@pytest.mark.parametrize("who", ["ours", "javas"])
def test_manifests_agree_with_java_but_the_partition_stats(java_paimon, warehouse, who):
    catalog = Catalog(warehouse)
    ident = _history(catalog, java_paimon, warehouse, who)
    ours = _ours(catalog, "manifests", ident)
    assert ours["min_partition_stats"].null_count == 0
    _same(
        _java(java_paimon, warehouse, "manifests", ident),
        ours.drop_columns(list(_MANIFESTS_SNAPSHOT_LACKS)),
        ordered=True,
    )


@pytest.mark.xfail(
    strict=True,
    reason="the Java 1.0-SNAPSHOT jar predates release 1.0.1's $manifests.min_partition_stats and "
    "max_partition_stats columns; we follow the release",
)
def test_manifests_columns_are_javas(java_paimon, warehouse):
    catalog = Catalog(warehouse)
    build(catalog)
    _same(_java(java_paimon, warehouse, "manifests"), _ours(catalog, "manifests"), ordered=True)


@pytest.mark.xfail(
    strict=True,
    reason="the Java 1.0-SNAPSHOT jar lists $partitions and $buckets in hash order; release 1.0.0 "
    "(apache/paimon#4306) sorts them by the partition's text (then bucket), as we do",
)
@pytest.mark.parametrize("name", ["partitions", "buckets"])
def test_partitions_and_buckets_in_javas_order(java_paimon, warehouse, name):
    _java_history(java_paimon, warehouse)
    _same(_java(java_paimon, warehouse, name, "db.j"), _ours(Catalog(warehouse), name, "db.j"), ordered=True)


def test_an_unknown_system_table_is_refused_by_both(java_paimon, warehouse):
    catalog = Catalog(warehouse)
    build(catalog)
    with pytest.raises(JavaPaimonError):
        _java(java_paimon, warehouse, "nonsense")
    with pytest.raises(TableNotFoundError):
        _ours(catalog, "nonsense")


def test_tag_times_print_as_java(java_paimon, warehouse):
    """A tag Java made with a time retained: its create time and Duration text as Java's."""
    _java_history(java_paimon, warehouse)
    ours = _ours(Catalog(warehouse), "tags", "db.j").to_pylist()
    kept = next(r for r in ours if r["tag_name"] == "kept")
    assert kept["time_retained"] == "PT1M30S"
    assert isinstance(kept["create_time"], dt.datetime)
    assert next(r for r in ours if r["tag_name"] == "first")["create_time"] is None


AUDIT_ENGINES = {
    "deduplicate": {},
    "aggregation": {"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"},
    "first-row": {"merge-engine": "first-row", "ignore-delete": "true"},
    "deletion-vectors": {"deletion-vectors.enabled": "true"},
    "lookup": {"changelog-producer": "lookup"},
    "partial-update": pytest.param(
        {"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"},
        marks=pytest.mark.xfail(
            strict=True,
            reason="Java 1.0 leaves out of $audit_log a key whose partial-update merge ended in a -D "
            "that reset its row (partial-update.remove-record-on-delete, the key held a row before); "
            "we show it as -D with the key and null values",
        ),
    ),
}


@pytest.mark.parametrize("options", AUDIT_ENGINES.values(), ids=AUDIT_ENGINES.keys())
def test_audit_log_per_merge_engine_as_java(java_paimon, warehouse, options):
    """Retractions (-U, +U, -D) over a compacted level: the merged row of each key with its kind."""
    schema = pa.schema([pa.field("k", pa.int32(), nullable=False), ("v", pa.int64())])
    t = java_paimon.create_table(warehouse, "db.a", schema, primary_keys=["k"], options={"bucket": "1", **options})
    java_paimon.write(t, pa.table({"k": [1, 2, 3, 4], "v": [10, 20, 30, 40]}, schema=schema))
    java_paimon.compact(t)
    java_paimon.write(
        t,
        pa.table({"k": [1, 1, 2, 3, 5], "v": [10, 11, 20, 7, 50]}, schema=schema),
        kinds=["-U", "+U", "-D", "+I", "-D"],
    )
    ours = _ours(Catalog(warehouse), "audit_log", "db.a")
    _same(_java(java_paimon, warehouse, "audit_log", "db.a"), ours, ordered=False)


HIDDEN_LEVEL0 = {
    "deletion-vectors": {"deletion-vectors.enabled": "true"},
    "first-row": {"merge-engine": "first-row"},
    "lookup": {"changelog-producer": "lookup"},
}


@pytest.mark.parametrize("options", HIDDEN_LEVEL0.values(), ids=HIDDEN_LEVEL0.keys())
def test_files_partitions_buckets_where_batch_reads_hide_level_0(java_paimon, warehouse, options):
    """A level-0 file left by a write-only commit over a compacted level: ``$files`` lists what
    Java's batch scan plans (above level 0 where its reads hide level 0), the totals agree."""
    schema = pa.schema([pa.field("k", pa.int32(), nullable=False), ("v", pa.int64())])
    t = java_paimon.create_table(warehouse, "db.h", schema, primary_keys=["k"], options={"bucket": "1", **options})
    java_paimon.write(t, pa.table({"k": [1, 2], "v": [10, 20]}, schema=schema))
    java_paimon.compact(t)
    java_paimon.write(t, pa.table({"k": [1, 3], "v": [11, 30]}, schema=schema), options={"write-only": "true"})
    catalog = Catalog(warehouse)
    files = _files_as_the_snapshot_prints_them(_ours(catalog, "files", "db.h"))
    _same(_java(java_paimon, warehouse, "files", "db.h"), files, ordered=False)
    for name in ("partitions", "buckets"):
        _same(_java(java_paimon, warehouse, name, "db.h"), _ours(catalog, name, "db.h"), ordered=False)


def test_audit_log_keeps_the_retractions_of_a_large_run_as_java(java_paimon, warehouse):
    """A large run holding -D rows merged with a small newer one (our sparse merge's shape): the -D
    rows of keys the small run does not touch stay, as in Java."""
    catalog = Catalog(warehouse)
    catalog.create_database("db")
    schema = pa.schema([("k", pa.int64()), ("v", pa.int64()), ("op", pa.string())])
    t = catalog.create_table("db.r", schema, primary_keys=["k"], options={"bucket": "1", "rowkind.field": "op"})
    t.write_arrow(
        pa.table({"k": list(range(100)), "v": list(range(100)), "op": ["+I"] * 90 + ["-D"] * 10}, schema=schema)
    )
    t.write_arrow(pa.table({"k": [5], "v": [55], "op": ["+U"]}, schema=schema))
    ours = _ours(catalog, "audit_log", "db.r")
    assert ours.num_rows == 100
    _same(_java(java_paimon, warehouse, "audit_log", "db.r"), ours, ordered=False)
