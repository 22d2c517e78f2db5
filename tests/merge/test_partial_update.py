"""partial-update engine: the Paimon docs' examples (one test each, outputs as the docs state) and
the semantics the docs leave to Java (deletes, sequence-group retraction, row kinds)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from lake_core.errors import InvalidDataError, InvalidOptionError, LakeError, SchemaError

from .model import Driver, Model, Spec, rows_of, strip

I = pa.int32()


def ints(*names):
    return pa.schema([(n, I) for n in names])


def run_each(d: Driver, names, *tuples, kinds=None):
    for i, t in enumerate(tuples):
        d.write(rows_of(names, t, kinds=None if kinds is None else [kinds[i]]))


# -- Paimon docs (merge engines): latest non-null value per field ---------------------------------------------


def test_docs_example_partial_update_latest_non_null():
    s = pa.schema([("k", I), ("a", pa.float64()), ("b", pa.int64()), ("c", pa.string())])
    d = Driver(s, ["k"], {"merge-engine": "partial-update"})
    run_each(d, s.names, (1, 23.0, 10, None), (1, None, None, "This is a book"), (1, 25.2, None, None))
    assert d.read_tuples() == [(1, 25.2, 10, "This is a book")]


def test_docs_example_partial_update_in_one_batch_too():
    s = pa.schema([("k", I), ("a", pa.float64()), ("b", pa.int64()), ("c", pa.string())])
    d = Driver(s, ["k"], {"merge-engine": "partial-update"})
    d.write(rows_of(s.names, (1, 23.0, 10, None), (1, None, None, "This is a book"), (1, 25.2, None, None)))
    assert d.read_tuples() == [(1, 25.2, 10, "This is a book")]


def test_docs_example_two_streams_fill_one_row():
    s = pa.schema([("id", I), ("name", pa.string()), ("salary", pa.int64())])
    d = Driver(s, ["id"], {"merge-engine": "partial-update", "changelog-producer": "lookup"})
    run_each(d, s.names, (1, "flink", None), (1, None, 2000))
    assert d.read_tuples() == [(1, "flink", 2000)]


# -- Paimon docs (merge engines): sequence groups --------------------------------------------------------------------


def test_docs_example_sequence_group():
    s = ints("k", "a", "b", "g_1", "c", "d", "g_2")
    d = Driver(
        s,
        ["k"],
        {"merge-engine": "partial-update", "fields.g_1.sequence-group": "a,b", "fields.g_2.sequence-group": "c,d"},
    )
    d.write(rows_of(s.names, (1, 1, 1, 1, 1, 1, 1)))
    d.write(rows_of(s.names, (1, 2, 2, 2, 2, 2, None)))  # g_2 is null, c, d should not be updated
    assert d.read_tuples() == [(1, 2, 2, 2, 1, 1, 1)]
    d.write(rows_of(s.names, (1, 3, 3, 1, 3, 3, 3)))  # g_1 is smaller, a, b should not be updated
    assert d.read_tuples() == [(1, 2, 2, 2, 3, 3, 3)]


def test_docs_example_sequence_group_multiple_sequence_fields():
    s = ints("k", "a", "b", "g_1", "c", "d", "g_2", "g_3")
    d = Driver(
        s,
        ["k"],
        {"merge-engine": "partial-update", "fields.g_1.sequence-group": "a,b", "fields.g_2,g_3.sequence-group": "c,d"},
    )
    d.write(rows_of(s.names, (1, 1, 1, 1, 1, 1, 1, 1)))
    d.write(rows_of(s.names, (1, 2, 2, 2, 2, 2, 1, None)))  # g_2, g_3 should not be updated
    assert d.read_tuples() == [(1, 2, 2, 2, 1, 1, 1, 1)]
    d.write(rows_of(s.names, (1, 3, 3, 1, 3, 3, 3, 1)))  # g_1 should not be updated
    assert d.read_tuples() == [(1, 2, 2, 2, 3, 3, 3, 1)]


def test_docs_example_sequence_group_stream_outputs():
    s = pa.schema([("id", I), ("name", pa.string()), ("sg_1", I), ("salary", pa.int64()), ("sg_2", I)])
    d = Driver(
        s,
        ["id"],
        {
            "merge-engine": "partial-update",
            "changelog-producer": "input",
            "fields.sg_1.sequence-group": "name",
            "fields.sg_2.sequence-group": "salary",
        },
    )
    steps = [
        ((1, "flink", 1, 1, 1), (1, "flink", 1, 1, 1)),
        ((1, "flink1", 0, 1, None), (1, "flink", 1, 1, 1)),
        ((1, "flink2", 1, 2000, 1), (1, "flink2", 1, 2000, 1)),
        ((1, "flink3", 0, 3000, 0), (1, "flink2", 1, 2000, 1)),
        ((1, "flink3", 2, 3000, 2), (1, "flink3", 2, 3000, 2)),
    ]
    for row, want in steps:
        d.write(rows_of(s.names, row))
        assert d.read_tuples() == [want]


def test_docs_example_last_stated_output_is_a_typo():
    """The docs example states '+I | 1 | flink3 | 1 | 3000 | 1' after inserting (1,'flink3',2,3000,2): the
    sequence columns are updated with the group (Java sets sg_1 = 2, sg_2 = 2); the example's text
    kept the old sequence values. The group columns (name, salary) agree with the example."""
    s = pa.schema([("id", I), ("name", pa.string()), ("sg_1", I), ("salary", pa.int64()), ("sg_2", I)])
    d = Driver(
        s,
        ["id"],
        {
            "merge-engine": "partial-update",
            "fields.sg_1.sequence-group": "name",
            "fields.sg_2.sequence-group": "salary",
        },
    )
    for r in [
        (1, "flink", 1, 1, 1),
        (1, "flink1", 0, 1, None),
        (1, "flink2", 1, 2000, 1),
        (1, "flink3", 0, 3000, 0),
        (1, "flink3", 2, 3000, 2),
    ]:
        d.write(rows_of(s.names, r))
    (row,) = d.read()
    assert (row["name"], row["salary"]) == ("flink3", 3000)


# -- Paimon docs (merge engines): aggregation inside partial update -------------------------------------------------


def test_docs_example_partial_update_aggregate_in_sequence_group():
    s = ints("k", "a", "b", "c", "d")
    d = Driver(
        s,
        ["k"],
        {
            "merge-engine": "partial-update",
            "fields.a.sequence-group": "b",
            "fields.b.aggregate-function": "first_value",
            "fields.c.sequence-group": "d",
            "fields.d.aggregate-function": "sum",
        },
    )
    run_each(d, s.names, (1, 1, 1, None, None), (1, None, None, 1, 1), (1, 2, 2, None, None), (1, None, None, 2, 2))
    assert d.read_tuples() == [(1, 2, 1, 2, 3)]


def test_docs_example_partial_update_aggregate_multiple_sequence_fields():
    s = pa.schema([("k", I), ("a", I), ("b", I), ("g_1", I), ("c", pa.string()), ("g_2", I), ("g_3", I)])
    d = Driver(
        s,
        ["k"],
        {
            "merge-engine": "partial-update",
            "fields.a.aggregate-function": "sum",
            "fields.g_1,g_3.sequence-group": "a",
            "fields.g_2.sequence-group": "c",
        },
    )
    d.write(rows_of(s.names, (1, 1, 1, 1, "1", 1, 1)))
    d.write(rows_of(s.names, (1, 2, 2, 2, "2", None, 2)))  # g_2 should not be updated
    assert d.read_tuples() == [(1, 3, 2, 2, "1", 1, 2)]
    d.write(rows_of(s.names, (1, 3, 3, 2, "3", 3, 1)))  # g_1, g_3 should not be updated
    assert d.read_tuples() == [(1, 6, 3, 2, "3", 3, 2)]


def test_docs_example_partial_update_default_aggregate_function():
    s = ints("k", "a", "b", "c", "d")
    d = Driver(
        s,
        ["k"],
        {
            "merge-engine": "partial-update",
            "fields.a.sequence-group": "b",
            "fields.c.sequence-group": "d",
            "fields.default-aggregate-function": "last_non_null_value",
            "fields.d.aggregate-function": "sum",
        },
    )
    run_each(d, s.names, (1, 1, 1, None, None), (1, None, None, 1, 1), (1, 2, 2, None, None), (1, None, None, 2, 2))
    assert d.read_tuples() == [(1, 2, 2, 2, 3)]


def test_docs_example_max_and_sum_in_groups():
    s = pa.schema([("k", I), ("a", pa.string()), ("b", I), ("g_1", I), ("c", pa.string()), ("d", I), ("g_2", I)])
    d = Driver(
        s,
        ["k"],
        {
            "merge-engine": "partial-update",
            "fields.g_1.sequence-group": "a,b",
            "fields.b.aggregate-function": "max",
            "fields.g_2.sequence-group": "c,d",
            "fields.d.aggregate-function": "sum",
        },
    )
    run_each(d, s.names, (1, "x", 5, 1, "p", 10, 1), (1, "y", 3, 2, None, 7, 2), (1, "z", 9, 1, "q", 1, 1))
    # a follows g_1's newest (y at 2); b is max over every row touching g_1; d sums every row
    assert d.read_tuples() == [(1, "y", 9, 2, None, 18, 2)]


# -- deletes ---------------------------------------------------------------------------------------


def test_deletes_rejected_by_default_with_the_options_to_set():
    s = ints("k", "a")
    d = Driver(s, ["k"], {"merge-engine": "partial-update"})
    d.write(rows_of(s.names, (1, 1)))
    with pytest.raises(InvalidDataError) as e:
        d.write(rows_of(s.names, (1, 1), kinds=["-D"]))
    msg = str(e.value)
    for opt in (
        "ignore-delete",
        "partial-update.remove-record-on-delete",
        "sequence-group",
        "partial-update.remove-record-on-sequence-group",
    ):
        assert opt in msg
    with pytest.raises(InvalidDataError):
        d.write(rows_of(s.names, (1, 1), kinds=["-U"]))


def test_merge_also_rejects_deletes_found_in_files():
    s = ints("k", "a")
    d = Driver(s, ["k"], {"merge-engine": "partial-update"})
    t = d.to_table(rows_of(s.names, (1, 1), (1, 2), kinds=["+I", "-D"]))
    with pytest.raises(InvalidDataError):
        d.engine.merge(t, drop_deletes=True)


@pytest.mark.parametrize("opt", ["ignore-delete", "partial-update.ignore-delete"])
def test_ignore_delete(opt):
    s = ints("k", "a", "b")
    d = Driver(s, ["k"], {"merge-engine": "partial-update", opt: "true"})
    d.write(rows_of(s.names, (1, 1, None), (2, 2, 2)))
    d.write(rows_of(s.names, (1, 5, 5), (2, None, None), kinds=["-D", "-U"]))
    d.write(rows_of(s.names, (1, None, 3)))
    assert d.read_tuples() == [(1, 1, 3), (2, 2, 2)]


def test_remove_record_on_delete():
    s = ints("k", "a", "b")
    d = Driver(s, ["k"], {"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"})
    d.write(rows_of(s.names, (1, 1, 1), (2, 2, 2)))
    d.write(rows_of(s.names, (1, None, None), kinds=["-D"]))
    assert d.read_tuples() == [(2, 2, 2)]
    d.write(rows_of(s.names, (1, None, 7)))  # the old columns are gone
    assert d.read_tuples() == [(1, None, 7), (2, 2, 2)]
    d.write(rows_of(s.names, (2, 9, 9), kinds=["-U"]))  # -U is ignored, only -D removes
    assert d.read_tuples() == [(1, None, 7), (2, 2, 2)]


def test_remove_record_on_delete_within_one_batch():
    s = ints("k", "a", "b")
    d = Driver(s, ["k"], {"merge-engine": "partial-update", "partial-update.remove-record-on-delete": "true"})
    folded = d.write(
        rows_of(
            s.names,
            (1, 1, 1),
            (1, None, None),
            (2, 2, None),
            (2, None, None),
            (2, None, 3),
            kinds=["+I", "-D", "+I", "-D", "+I"],
        )
    )
    assert folded["_VALUE_KIND"].to_pylist() == [3, 0]  # key 1 ends deleted: the delete marker is kept
    assert d.read_tuples() == [(2, None, 3)]


def test_retraction_through_sequence_group():
    s = ints("k", "a", "b", "g_1", "c", "g_2")
    d = Driver(
        s,
        ["k"],
        {"merge-engine": "partial-update", "fields.g_1.sequence-group": "a,b", "fields.g_2.sequence-group": "c"},
    )
    d.write(rows_of(s.names, (1, 1, 1, 1, 1, 1)))
    d.write(rows_of(s.names, (1, 9, 9, 2, None, None), kinds=["-U"]))  # retracts a, b at sequence 2
    assert d.read_tuples() == [(1, None, None, 2, 1, 1)]
    d.write(rows_of(s.names, (1, 5, 5, 1, None, None)))  # older than the retraction: ignored
    assert d.read_tuples() == [(1, None, None, 2, 1, 1)]
    d.write(rows_of(s.names, (1, None, None, None, 7, 3), kinds=["-D"]))  # retracts c at 3
    assert d.read_tuples() == [(1, None, None, 2, None, 3)]


def test_retraction_of_aggregate_in_sequence_group():
    s = ints("k", "a", "g")
    d = Driver(
        s,
        ["k"],
        {"merge-engine": "partial-update", "fields.g.sequence-group": "a", "fields.a.aggregate-function": "sum"},
    )
    d.write(rows_of(s.names, (1, 10, 1), (1, 5, 2)))
    d.write(rows_of(s.names, (1, 10, 3), kinds=["-U"]))
    assert d.read_tuples() == [(1, 5, 3)]


def test_remove_record_on_sequence_group():
    s = ints("k", "a", "g_1", "b", "g_2")
    d = Driver(
        s,
        ["k"],
        {
            "merge-engine": "partial-update",
            "fields.g_1.sequence-group": "a",
            "fields.g_2.sequence-group": "b",
            "partial-update.remove-record-on-sequence-group": "g_1",
        },
    )
    d.write(rows_of(s.names, (1, 1, 1, 1, 1), (2, 2, 2, 2, 2)))
    d.write(rows_of(s.names, (1, None, None, 5, 3), kinds=["-D"]))  # a -D of g_2 only retracts b
    assert d.read_tuples() == [(1, 1, 1, None, 3), (2, 2, 2, 2, 2)]
    d.write(rows_of(s.names, (1, None, 0, None, None), kinds=["-D"]))  # g_1 older: no effect
    assert d.read_tuples() == [(1, 1, 1, None, 3), (2, 2, 2, 2, 2)]
    d.write(rows_of(s.names, (1, None, 5, None, None), kinds=["-D"]))  # g_1 newer: whole row removed
    assert d.read_tuples() == [(2, 2, 2, 2, 2)]
    d.write(rows_of(s.names, (1, None, None, 7, 9)))
    assert d.read_tuples() == [(1, None, None, 7, 9), (2, 2, 2, 2, 2)]


def test_remove_record_on_sequence_group_in_one_batch_after_an_older_delete():
    s = ints("k", "a", "g_1")
    d = Driver(
        s,
        ["k"],
        {
            "merge-engine": "partial-update",
            "fields.g_1.sequence-group": "a",
            "partial-update.remove-record-on-sequence-group": "g_1",
        },
    )
    rows = rows_of(
        s.names, (1, 1, 5), (1, None, 3), (1, 2, 4), (1, None, 4), (1, 8, 1), kinds=["+I", "-D", "+I", "-D", "+I"]
    )
    # -D@3 is older than 5: no effect; +I@4 older: ignored; -D@4 older: no effect; +I@1 ignored
    d.write(rows)
    assert d.read_tuples() == [(1, 1, 5)]
    d2 = Driver(s, ["k"], dict(d.table_schema.options))
    rows = rows_of(
        s.names, (1, 1, 5), (1, None, 6), (1, 2, 4), (1, None, 5), (1, 8, 1), kinds=["+I", "-D", "+I", "-D", "+I"]
    )
    # -D@6 removes the row; +I@4 starts again; -D@5 is newer than 4: removes it again; +I@1 adds
    d2.write(rows)
    assert d2.read_tuples() == [(1, 8, 1)]
    assert strip(Model(Spec(s, ("k",), dict(d.table_schema.options))).run([rows])) == d2.read()


# -- validation ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "opts,exc,needle",
    [
        ({"fields.a.aggregate-function": "sum"}, InvalidOptionError, "sequence group"),
        ({"fields.g.sequence-group": "zz"}, InvalidOptionError, "zz"),
        ({"fields.zz.sequence-group": "a"}, InvalidOptionError, "zz"),
        ({"fields.g.sequence-group": "a", "fields.h.sequence-group": "a"}, InvalidOptionError, "repeatedly"),
        ({"fields.g.sequence-group": "a", "fields.g.aggregate-function": "sum"}, InvalidOptionError, "g"),
        ({"fields.s.sequence-group": "a"}, SchemaError, "s"),
        ({"ignore-delete": "true", "partial-update.remove-record-on-delete": "true"}, InvalidOptionError, "conflict"),
        (
            {"fields.g.sequence-group": "a", "partial-update.remove-record-on-delete": "true"},
            InvalidOptionError,
            "sequence group",
        ),
        (
            {"fields.g.sequence-group": "a", "partial-update.remove-record-on-sequence-group": "a"},
            InvalidOptionError,
            "remove-record-on-sequence-group",
        ),
        (
            {"fields.g.sequence-group": "a", "fields.a.aggregate-function": "sum", "fields.s.sequence-group": "h"},
            SchemaError,
            "s",
        ),
        ({"fields.g.sequence-group": "s", "fields.s.aggregate-function": "sum"}, SchemaError, "'s'"),
    ],
)
def test_validation(opts, exc, needle):
    s = pa.schema([("k", I), ("a", I), ("g", I), ("h", I), ("s", pa.string())])
    with pytest.raises(exc) as e:
        Driver(s, ["k"], {"merge-engine": "partial-update", **opts})
    assert needle in str(e.value)


def test_last_non_null_default_needs_no_group():
    s = ints("k", "a", "b")
    d = Driver(s, ["k"], {"merge-engine": "partial-update", "fields.default-aggregate-function": "last_non_null_value"})
    run_each(d, s.names, (1, 1, None), (1, None, 2))
    assert d.read_tuples() == [(1, 1, 2)]


# -- ordering, row kinds, sequence numbers -------------------------------------------------------


def test_sequence_field_orders_rows_and_null_is_smallest():
    s = ints("k", "a", "b", "ts")
    d = Driver(s, ["k"], {"merge-engine": "partial-update", "sequence.field": "ts"})
    d.write(rows_of(s.names, (1, 1, 1, 5), (1, 2, None, 3), (1, 3, 3, None)))
    # order: ts NULL (3,3) < ts 3 (2,None) < ts 5 (1,1)
    assert d.read_tuples() == [(1, 1, 1, 5)]


def test_folded_row_carries_max_sequence_number_and_insert_kind():
    s = ints("k", "a")
    d = Driver(s, ["k"], {"merge-engine": "partial-update"})
    out = d.write(rows_of(s.names, (1, 1), (2, 2), (1, None), (1, 3), kinds=["+I", "+U", "+U", "+I"]))
    assert out["_SEQUENCE_NUMBER"].to_pylist() == [3, 1]
    assert out["_VALUE_KIND"].to_pylist() == [0, 2]  # a lone +U passes through (Java reducer)
    assert out["a"].to_pylist() == [3, 2]


def test_only_retractions_in_sequence_groups_give_a_delete():
    s = ints("k", "a", "g")
    d = Driver(s, ["k"], {"merge-engine": "partial-update", "fields.g.sequence-group": "a"})
    out = d.write(rows_of(s.names, (1, 1, 1), (1, 1, 2), kinds=["-U", "-D"]))
    assert out["_VALUE_KIND"].to_pylist() == [3]
    assert d.read() == []


def test_rowkind_field_drives_kinds_through_writer_column():
    """rowkind.field is turned into _VALUE_KIND by the writer; the engine sees kinds only."""
    s = pa.schema([("k", I), ("a", I), ("op", pa.string())])
    d = Driver(s, ["k"], {"merge-engine": "partial-update", "rowkind.field": "op", "ignore-delete": "true"})
    d.write(rows_of(s.names, (1, 1, "+I"), (1, 2, "-D"), kinds=["+I", "-D"]))
    assert d.read_tuples() == [(1, 1, "+I")]


def test_composite_key_and_partition_columns():
    s = pa.schema([("dt", pa.string()), ("k1", I), ("k2", pa.string()), ("a", I), ("b", I)])
    d = Driver(s, ["dt", "k1", "k2"], {"merge-engine": "partial-update"}, partition=["dt"])
    d.write(rows_of(s.names, ("d", 1, "x", 1, None), ("d", 1, "y", 2, None), ("d", 1, "x", None, 5)))
    assert d.read_tuples() == [("d", 1, "x", 1, 5), ("d", 1, "y", 2, None)]


def test_a_rejected_delete_is_a_lake_error_and_leaves_the_table_unchanged(tmp_path):
    from lake_core import Catalog

    cat = Catalog(f"file://{tmp_path}")
    cat.create_database("db")
    t = cat.create_table(
        "db.t",
        schema=pa.schema([("k", I), ("a", I), ("op", pa.string())]),
        primary_keys=["k"],
        options={"merge-engine": "partial-update", "bucket": "1", "rowkind.field": "op"},
    )
    t.write_arrow(pa.table({"k": [1], "a": [1], "op": ["+I"]}, schema=t.schema.arrow_schema()))
    before = t.latest_snapshot().id
    # Callers catch the project's one base class; the message names the option to set.
    with pytest.raises(LakeError, match="ignore-delete") as e:
        t.write_arrow(pa.table({"k": [1], "a": [1], "op": ["-D"]}, schema=t.schema.arrow_schema()))
    assert isinstance(e.value, InvalidDataError)
    assert t.latest_snapshot().id == before
    assert t.to_arrow().select(["k", "a"]).to_pylist() == [{"k": 1, "a": 1}]


@pytest.mark.parametrize(
    "fn,t,vals",
    [
        ("listagg", pa.string(), ["a", "b", "c", "d", "e"]),
        ("collect", pa.list_(I), [[1], [2], [3], [4], [5]]),
        ("merge_map", pa.map_(I, I), [[(1, 1)], [(1, 2)], [(2, 2)], [(1, 3)], [(2, 4)]]),
        ("first_non_null_value", I, [None, 2, None, 4, 5]),
        ("last_non_null_value", I, [1, None, 3, None, 5]),
    ],
)
def test_order_sensitive_aggregates_with_out_of_order_sequences(fn, t, vals):
    """Rows older than the group's stored sequence fold with Java's aggReversed (agg(input, acc))."""
    s = pa.schema([("k", I), ("v", t), ("g", I)])
    opts = {"merge-engine": "partial-update", "fields.g.sequence-group": "v", "fields.v.aggregate-function": fn}
    seqs = [3, 1, 5, 2, 4]
    rows = rows_of(s.names, *[(1, v, g) for v, g in zip(vals, seqs)])
    d = Driver(s, ["k"], opts)
    d.write(rows)
    want = strip(Model(Spec(s, ("k",), opts)).run([rows]))
    got = d.read()
    if fn == "merge_map":
        got = [{**r, "v": dict(r["v"])} for r in got]
    assert got == want
    if fn == "listagg":
        assert got[0]["v"] == "e,d,b,a,c"  # b, d, e were older than the stored 3 / 5: prepended
