"""Time travel reads a snapshot with the schema it was written under (Java's ``TimeTravelUtil`` /
``FileStoreTable.copy`` with the snapshot's ``schemaId``), against a plain model of the table at
each snapshot: the column names and values a user saw when that snapshot was the latest.

The history (time_travel_history.py): snapshot 1 writes (k, a, c); snapshot 2 is a full
compaction; then ``a`` is renamed to ``b``, a new ``a`` (STRING) is added and ``c`` dropped;
snapshot 3 writes (k, b, a). Reading snapshot 1 must give (k, a, c) with ``a``'s old values, not
(k, b, a) with ``a`` NULL.

Incremental reads and stream scans are not time travel: they read every change in the table's
current schema, columns matched by field id (a renamed column keeps its values under its new
name; a column added later is NULL in older changes), as Java's ``incremental-between`` and a
consumer's restored stream do.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from lake_core import ROW_KIND, Catalog, SchemaChange
from lake_core.errors import PredicateError, SchemaError, SchemaMismatchError
from schema_evolution.time_travel_history import NEW, OLD, build, model, rows_of


@pytest.fixture(params=["local", pytest.param("s3", marks=pytest.mark.s3)])
def catalog(request, warehouse):
    if request.param == "local":
        return Catalog(warehouse)
    s3 = request.getfixturevalue("s3_warehouse")
    return Catalog(s3.uri, s3.storage_options)


def test_time_travel_reads_each_snapshot_with_its_own_schema(catalog):
    t = build(catalog)
    m = model()
    for sid in (1, 2, 3):
        assert rows_of(t.to_arrow(snapshot_id=sid)) == m[sid], sid
        reader = t.to_arrow_batch_reader(snapshot_id=sid)
        assert reader.schema.names == m[sid][0]
        assert rows_of(reader.read_all()) == m[sid], sid
    assert rows_of(t.to_arrow(tag="v1")) == m[1]
    assert rows_of(t.to_arrow(timestamp_millis=t.snapshot(2).time_millis)) == m[2]
    assert rows_of(t.to_arrow()) == m[3]  # no time travel: the latest, in the current schema
    # the old snapshot's types too: a is BIGINT there, STRING now
    assert t.to_arrow(snapshot_id=1).schema.field("a").type == pa.int64()


def test_builder_api_scans_and_reads_in_the_snapshot_schema(warehouse):
    t = build(Catalog(warehouse))
    m = model()
    rb = t.new_read_builder()
    splits = rb.new_scan(snapshot_id=1).plan().splits()
    assert {s.schema_id for s in splits} == {0}
    assert rows_of(rb.new_read().to_arrow(splits)) == m[1]
    # splits carry their schema: a reader from another builder reads them in it too (Spark workers)
    assert rows_of(t.new_read_builder().new_read().to_arrow(splits)) == m[1]
    assert rows_of(t.new_read_builder().new_read().to_arrow_batch_reader(splits).read_all()) == m[1]
    tagged = t.new_read_builder()
    assert rows_of(tagged.new_read().to_arrow(tagged.new_scan(snapshot=t.tag("v1")).plan().splits())) == m[1]
    # a column dropped since is still there at the snapshot, projected through the builder
    rb = t.new_read_builder().with_projection(["c", "a"])
    got = rb.new_read().to_arrow(rb.new_scan(snapshot_id=1).plan().splits())
    assert got.column_names == ["c", "a"] and rows_of(got.select(["a", "c"]))[1] == {
        a: (c,) for a, c in m[1][1].values()
    }
    latest = t.new_read_builder()
    latest_splits = latest.new_scan().plan().splits()
    assert rows_of(latest.new_read().to_arrow(latest_splits)) == m[3]
    # splits of two schemas have different columns: one result cannot hold both
    with pytest.raises(SchemaMismatchError, match=r"db\.t.*different schemas \(\[0, 1\]: snapshots \[1, 3\]\)"):
        t.new_read_builder().new_read().to_arrow(splits + latest_splits)


def test_projection_and_filter_name_the_snapshot_columns(warehouse):
    t = build(Catalog(warehouse))
    m = model()
    got = t.to_arrow(snapshot_id=1, columns=["c", "a"])
    assert got.column_names == ["c", "a"]
    assert sorted(zip(got["a"].to_pylist(), got["c"].to_pylist())) == sorted(m[1][1].values())
    pb = t.predicate_builder(snapshot_id=1)  # checks names and literals against schema 0
    got = t.to_arrow(snapshot_id=1, filter=pb.and_predicates([pb.greater_than("a", 20), pb.startswith("c", "c")]))
    assert rows_of(got) == (OLD, {k: v for k, v in m[1][1].items() if v[0] > 20})
    # a predicate is a column name: at snapshot 1 'a' is the old BIGINT column, whoever built it
    assert t.to_arrow(snapshot_id=1, filter=t.predicate_builder().is_null("a")).num_rows == 0
    assert t.to_arrow(filter=t.predicate_builder().is_null("a")).num_rows == 3
    for kwargs in (
        {"columns": ["b"]},
        {"filter": t.predicate_builder().greater_than("b", 1)},
        {"columns": ["k"], "filter": t.predicate_builder().is_null("b")},
    ):
        with pytest.raises(PredicateError, match=r"'b'.*db\.t.*snapshot 1.*schema 0.*\['k', 'a', 'c'\]"):
            t.to_arrow(snapshot_id=1, **kwargs)
        rb = t.new_read_builder().with_filter(kwargs.get("filter"))
        rb = rb.with_projection(kwargs["columns"]) if "columns" in kwargs else rb
        with pytest.raises(PredicateError, match=r"'b'.*snapshot 1.*schema 0"):
            rb.new_scan(snapshot_id=1)
    with pytest.raises(PredicateError, match=r"'b'.*snapshot 1.*schema 0"):
        t.predicate_builder(tag="v1").equal("b", 1)
    # today's 'a' is a STRING: its literal does not fit the snapshot's BIGINT 'a'
    with pytest.raises(PredicateError, match=r"'new4'.*'a' of type int64.*db\.t at snapshot 1 \(schema 0\)"):
        t.to_arrow(snapshot_id=1, filter=t.predicate_builder().equal("a", "new4"))
    with pytest.raises(PredicateError, match=r"'c'.*db\.t"):  # dropped: not in the current schema
        t.to_arrow(columns=["c"])


def test_read_optimized_table_travels_too(warehouse):
    catalog = Catalog(warehouse)
    build(catalog)
    m = model()
    ro = catalog.get_table("db.t$ro")
    assert rows_of(ro.to_arrow(snapshot_id=2)) == m[2]  # what the full compaction wrote, in schema 0
    assert ro.to_arrow(snapshot_id=1).column_names == OLD and ro.to_arrow(snapshot_id=1).num_rows == 0  # level 0
    # an empty plan names no schema: the builder's reader reads in its time-travel scan's
    rb = ro.new_read_builder()
    splits = rb.new_scan(snapshot_id=1).plan().splits()
    assert splits == [] and rb.new_read().to_arrow(splits).column_names == OLD
    assert rb.new_read().to_arrow_batch_reader(splits).schema.names == OLD
    # latest: the top level (snapshot 2's files) in the current schema
    assert rows_of(ro.to_arrow()) == (NEW, {k: (a, None) for k, (a, _c) in m[1][1].items()})


def test_incremental_reads_and_stream_scans_use_the_current_schema(warehouse):
    """Changes written under schema 0 come back in schema 1's names, matched by field id: the old
    ``a`` under its new name ``b``, the new ``a`` NULL, the dropped ``c`` gone."""
    t = build(Catalog(warehouse))
    first = t.to_arrow(incremental_between=(0, 1))
    assert first.column_names == NEW + [ROW_KIND]
    assert sorted(first.to_pylist(), key=lambda r: r["k"]) == [
        {"k": k, "b": k * 10, "a": None, ROW_KIND: "+I"} for k in range(1, 7)
    ]
    whole = t.to_arrow(incremental_between=(0, 3))
    assert whole.column_names == NEW + [ROW_KIND] and whole.num_rows == 6 + 5
    pb = t.predicate_builder()
    assert t.to_arrow(incremental_between=(0, 1), filter=pb.equal("b", 30))["k"].to_pylist() == [3]
    with pytest.raises(PredicateError, match="'c'"):  # the current schema's names, as a read of the latest
        t.to_arrow(incremental_between=(0, 1), columns=["c"])
    # a consumer restored at snapshot 1 reads its changes in the current schema as well
    t.new_read_builder().new_stream_scan(consumer_id="job").notify_checkpoint_complete(1)
    scan = t.new_read_builder().new_stream_scan(consumer_id="job")
    rb = t.new_read_builder()
    got = rb.new_read().to_arrow(scan.plan().splits())
    assert got.column_names == NEW + [ROW_KIND]
    assert sorted(got["b"].to_pylist()) == [k * 10 for k in range(1, 7)] and set(got["a"].to_pylist()) == {None}


def test_a_snapshot_whose_schema_file_is_missing_is_refused_clearly(warehouse, warehouse_path):
    t = build(Catalog(warehouse))
    (warehouse_path / "db.db" / "t" / "schema" / "schema-0").unlink()
    t = Catalog(warehouse).get_table("db.t")
    with pytest.raises(SchemaError, match=r"db\.t.*snapshot 1.*schema 0"):
        t.to_arrow(snapshot_id=1)
    with pytest.raises(SchemaError, match=r"db\.t.*snapshot 1.*schema 0"):
        t.predicate_builder(snapshot_id=1)


def test_a_snapshot_is_read_with_its_own_options(warehouse):
    """The snapshot's schema file is its columns, keys *and* options: an option switched on later
    (deletion vectors, whose batch reads hide level 0) does not hide what the snapshot held, and
    an option naming a renamed column (``sequence.field``) names it as the snapshot's columns do.
    (Java 1.0 keeps today's options: see tests/java_interop/test_time_travel.py.)"""
    cat = Catalog(warehouse)
    cat.create_database("db")
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.int64()), ("seq", pa.int64())])
    t = cat.create_table("db.t", schema, primary_keys=["k"], options={"bucket": "1", "sequence.field": "seq"})
    t.write_arrow(pa.table({"k": [1, 2], "v": [1, 2], "seq": [5, 5]}, schema=schema))
    t.write_arrow(pa.table({"k": [2, 3], "v": [20, 3], "seq": [1, 1]}, schema=schema))  # k=2 loses: lower seq
    then = {1: (1, 5), 2: (2, 5), 3: (3, 1)}
    t = cat.alter_table(
        "db.t",
        [SchemaChange.rename_column("seq", "version"), SchemaChange.set_option("deletion-vectors.enabled", "true")],
    )
    assert t.schema.options["sequence.field"] == "version"
    for travel in ({"snapshot_id": 2}, {"timestamp_millis": t.snapshot(2).time_millis}):
        assert rows_of(t.to_arrow(**travel)) == (["k", "v", "seq"], then)
    rb = t.new_read_builder()
    assert rows_of(rb.new_read().to_arrow(rb.new_scan(snapshot_id=2).plan().splits())) == (["k", "v", "seq"], then)
