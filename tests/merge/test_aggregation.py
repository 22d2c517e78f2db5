"""aggregation engine: Paimon docs examples, every aggregate function, retraction rules, type checks."""

from __future__ import annotations

import decimal
import math

import pyarrow as pa
import pytest

from lake_core.errors import InvalidDataError, InvalidOptionError, SchemaError
from lake_core.merge.aggregate.registry import FUNCTIONS

from .model import Driver, Model, Spec, rows_of, strip

I, L, D = pa.int32(), pa.int64(), pa.float64()


def agg_driver(schema, **fields):
    opts = {"merge-engine": "aggregation"}
    for k, v in fields.items():
        if k.startswith("opt_"):
            opts[k[4:].replace("__", ".").replace("_", "-")] = v
    for k, v in fields.items():
        if not k.startswith("opt_"):
            opts[f"fields.{k}.aggregate-function"] = v
    return Driver(schema, ["k"], opts)


def one_col(t, fn, values, kinds=None, extra=None, batches=1):
    """Fold ``values`` for key 1 (in ``batches`` write batches) and read column v back."""
    s = pa.schema([("k", I), ("v", t)])
    opts = {"merge-engine": "aggregation", "fields.v.aggregate-function": fn, **(extra or {})}
    d = Driver(s, ["k"], opts)
    rows = rows_of(s.names, *[(1, v) for v in values], kinds=kinds)
    step = max(1, math.ceil(len(rows) / batches))
    for i in range(0, len(rows), step):
        d.write(rows[i : i + step])
    out = d.read()
    return out[0]["v"] if out else "<deleted>"


# -- Paimon docs examples ------------------------------------------------------------------------------------------


def test_docs_example_max_and_sum():
    s = pa.schema([("product_id", L), ("price", D), ("sales", L)])
    d = Driver(
        s,
        ["product_id"],
        {
            "merge-engine": "aggregation",
            "fields.price.aggregate-function": "max",
            "fields.sales.aggregate-function": "sum",
        },
    )
    d.write(rows_of(s.names, (1, 23.0, 15)))
    d.write(rows_of(s.names, (1, 30.2, 20)))
    assert d.read_tuples() == [(1, 30.2, 35)]


def test_docs_example_aggregation_salary_max_sum_cnt_sum():
    s = pa.schema([("id", I), ("name", pa.string()), ("salary", I), ("sum_cnt", I)])
    d = Driver(
        s,
        ["id"],
        {
            "merge-engine": "aggregation",
            "fields.salary.aggregate-function": "max",
            "fields.sum_cnt.aggregate-function": "sum",
            "changelog-producer": "lookup",
        },
    )
    d.write(rows_of(s.names, (2, "flink", 1000, 1000)))
    d.write(rows_of(s.names, (2, "flink", 2000, 500)))
    d.write(rows_of(s.names, (3, "flink", 500, 500)))
    assert d.read_tuples() == [(2, "flink", 2000, 1500), (3, "flink", 500, 500)]


def test_docs_example_aggregation_in_one_batch():
    s = pa.schema([("product_id", L), ("price", D), ("sales", L)])
    d = Driver(
        s,
        ["product_id"],
        {
            "merge-engine": "aggregation",
            "fields.price.aggregate-function": "max",
            "fields.sales.aggregate-function": "sum",
        },
    )
    d.write(rows_of(s.names, (1, 23.0, 15), (1, 30.2, 20)))
    assert d.read_tuples() == [(1, 30.2, 35)]


def test_default_is_last_non_null_value():
    s = pa.schema([("k", I), ("a", I), ("b", pa.string())])
    d = Driver(s, ["k"], {"merge-engine": "aggregation"})
    d.write(rows_of(s.names, (1, 1, "x"), (1, None, "y"), (1, 3, None)))
    assert d.read_tuples() == [(1, 3, "y")]


def test_fields_default_aggregate_function():
    s = pa.schema([("k", I), ("a", I), ("b", I)])
    d = Driver(
        s,
        ["k"],
        {
            "merge-engine": "aggregation",
            "fields.default-aggregate-function": "sum",
            "fields.b.aggregate-function": "max",
        },
    )
    d.write(rows_of(s.names, (1, 1, 1), (1, 2, 5), (1, 3, 2)))
    assert d.read_tuples() == [(1, 6, 5)]


# -- every function ---------------------------------------------------------------------------------


@pytest.mark.parametrize("batches", [1, 2, 4])
@pytest.mark.parametrize(
    "t,fn,values,want",
    [
        (I, "sum", [1, None, 2, 3], 6),
        (pa.int8(), "sum", [100, 100], -56),  # Java byte arithmetic wraps
        (D, "sum", [0.1, 0.2, 0.3], 0.1 + 0.2 + 0.3),
        (pa.float32(), "sum", [0.1, 0.2], float(pa.array([0.1], pa.float32())[0].as_py()) + 0 or None),
        (pa.decimal128(10, 2), "sum", [decimal.Decimal("1.10"), decimal.Decimal("2.25")], decimal.Decimal("3.35")),
        (pa.decimal128(30, 2), "sum", [decimal.Decimal("1.10"), decimal.Decimal("2.25")], decimal.Decimal("3.35")),
        (I, "sum", [None, None], None),
        (L, "product", [2, 3, None, 4], 24),
        (D, "product", [1.5, 2.0], 3.0),
        (pa.decimal128(10, 2), "product", [decimal.Decimal("1.50"), decimal.Decimal("2.00")], decimal.Decimal("3.00")),
        (L, "count", [7, None, 8, 9], 3),
        (I, "count", [None], 0),
        (I, "max", [3, None, 9, 1], 9),
        (I, "min", [3, None, 9, 1], 1),
        (pa.string(), "max", ["b", "ab", None, "c"], "c"),
        (pa.string(), "min", ["b", "ab", None, "c"], "ab"),
        (D, "max", [1.0, float("nan"), 2.0], "nan"),
        (D, "min", [1.0, float("nan"), 0.5], 0.5),
        (pa.date32(), "max", [10, 30, 20], 30),
        (pa.timestamp("us"), "min", [10, 30, 20], 10),
        (pa.decimal128(5, 1), "max", [decimal.Decimal("1.5"), decimal.Decimal("-2.0")], decimal.Decimal("1.5")),
        (pa.decimal128(25, 1), "min", [decimal.Decimal("1.5"), decimal.Decimal("-2.0")], decimal.Decimal("-2.0")),
        (I, "last_value", [1, 2, None], None),
        (I, "last_non_null_value", [1, 2, None], 2),
        (I, "first_value", [None, 2, 3], None),
        (I, "first_non_null_value", [None, 2, 3], 2),
        (I, "first_not_null_value", [None, 2, 3], 2),
        (pa.string(), "listagg", ["a", None, " ", "b", "c"], "a,b,c"),
        (pa.bool_(), "bool_and", [True, None, True], True),
        (pa.bool_(), "bool_and", [True, False, True], False),
        (pa.bool_(), "bool_or", [False, None, False], False),
        (pa.bool_(), "bool_or", [False, True], True),
        (pa.list_(I), "collect", [[1, 2], None, [2, 3]], [1, 2, 2, 3]),
        (pa.map_(pa.string(), I), "merge_map", [[("a", 1), ("b", 2)], [("b", 3)], None], [("a", 1), ("b", 3)]),
    ],
)
def test_function(t, fn, values, want, batches):
    if fn == "sum" and t == pa.float32():
        want = float(
            pa.array([0.1], pa.float32())[0]
            .as_py()
            .__class__(__import__("numpy").float32(0.1) + __import__("numpy").float32(0.2))
        )
        if batches > 1:
            pass
    got = one_col(t, fn, values, batches=batches)
    if want == "nan":
        assert got != got
    elif t == pa.date32() and isinstance(want, int):
        assert got == pa.array([want], t)[0].as_py()
    elif pa.types.is_timestamp(t):
        assert got == pa.array([want], t)[0].as_py()
    else:
        assert got == want


def test_listagg_delimiter_and_distinct():
    assert one_col(pa.string(), "listagg", ["a", "b"], extra={"fields.v.list-agg-delimiter": "|"}) == "a|b"
    got = one_col(pa.string(), "listagg", ["a,b", "b,c", "a", "d,,c"], extra={"fields.v.distinct": "true"})
    assert got == "a,b,c,d"
    got = one_col(pa.string(), "listagg", ["a,b", "b,c", "a", "d,,c"], extra={"fields.v.distinct": "true"}, batches=4)
    assert got == "a,b,c,d"


def test_collect_distinct():
    assert one_col(pa.list_(I), "collect", [[1, 2, 2], [2, 3], None, [1]], extra={"fields.v.distinct": "true"}) == [
        1,
        2,
        3,
    ]


def test_nested_update_with_and_without_key():
    row = pa.struct([("id", I), ("name", pa.string())])
    t = pa.list_(row)
    vals = [[{"id": 1, "name": "a"}, {"id": 2, "name": "b"}], [{"id": 1, "name": "A"}, None], [{"id": 3, "name": "c"}]]
    got = one_col(t, "nested_update", vals, extra={"fields.v.nested-key": "id"})
    assert got == [{"id": 1, "name": "A"}, {"id": 2, "name": "b"}, {"id": 3, "name": "c"}]
    got = one_col(t, "nested_update", vals)
    assert got == [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}, {"id": 1, "name": "A"}, {"id": 3, "name": "c"}]
    got = one_col(t, "nested_update", vals, extra={"fields.v.nested-key": "id", "fields.v.count-limit": "2"})
    assert got == [{"id": 1, "name": "A"}, {"id": 2, "name": "b"}]
    # retraction by key
    got = one_col(
        t,
        "nested_update",
        vals + [[{"id": 2, "name": "zzz"}]],
        kinds=["+I", "+I", "+I", "-U"],
        extra={"fields.v.nested-key": "id"},
    )
    assert got == [{"id": 1, "name": "A"}, {"id": 3, "name": "c"}]


def test_rbm32_and_rbm64():
    from pyroaring import BitMap, BitMap64

    a, b = BitMap([1, 2, 3]), BitMap([3, 100000, 5])
    got = one_col(pa.binary(), "rbm32", [a.serialize(), None, b.serialize()], batches=2)
    assert BitMap.deserialize(got) == a | b
    ref = a | b
    ref.run_optimize()
    assert got == ref.serialize()
    a64, b64 = BitMap64([1, 2**40]), BitMap64([7, 2**50])
    got = one_col(pa.binary(), "rbm64", [a64.serialize(), b64.serialize()])
    assert BitMap64.deserialize(got) == a64 | b64
    single = BitMap([4, 5]).serialize()
    assert one_col(pa.binary(), "rbm32", [single]) == single  # a lone value is kept byte for byte


def test_hll_and_theta_sketches():
    from datasketches import compact_theta_sketch, hll_sketch, update_theta_sketch

    hs = []
    for lo in (0, 500, 1000):
        h = hll_sketch(12)
        for i in range(lo, lo + 1000):
            h.update(i)
        hs.append(h.serialize_compact())
    got = one_col(pa.binary(), "hll_sketch", hs, batches=2)
    assert abs(hll_sketch.deserialize(got).get_estimate() - 2000) < 100
    ts = []
    for lo in (0, 500):
        s = update_theta_sketch()
        for i in range(lo, lo + 1000):
            s.update(i)
        ts.append(s.compact().serialize())
    got = one_col(pa.binary(), "theta_sketch", ts)
    assert abs(compact_theta_sketch.deserialize(got).get_estimate() - 1500) < 75
    with pytest.raises(InvalidDataError, match="theta"):
        one_col(pa.binary(), "theta_sketch", [b"xx", b"yy"])


# -- retraction ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fn,t,values,kinds,want",
    [
        ("sum", I, [5, 3, 2], ["+I", "+I", "-U"], 6),
        ("sum", I, [5, 3], ["-D", "-D"], -8),
        ("product", L, [6, 4, 3], ["+I", "+I", "-U"], 8),
        ("count", I, [5, 3, None, 1], ["+I", "+I", "-U", "-D"], 1),
        ("last_value", I, [5, 3], ["+I", "-U"], None),
        ("last_non_null_value", I, [5, 3, None], ["+I", "-U", "+I"], None),
        ("last_non_null_value", I, [5, None], ["+I", "-U"], 5),
        ("collect", pa.list_(I), [[1, 2, 2], [2]], ["+I", "-U"], [1, 2]),
        ("merge_map", pa.map_(I, I), [[(1, 1), (2, 2)], [(1, 0)]], ["+I", "-D"], [(2, 2)]),
    ],
)
def test_retraction_supported(fn, t, values, kinds, want):
    assert one_col(t, fn, values, kinds=kinds) == want


@pytest.mark.parametrize(
    "fn,t",
    [
        ("max", I),
        ("min", I),
        ("first_value", I),
        ("first_non_null_value", I),
        ("listagg", pa.string()),
        ("bool_and", pa.bool_()),
        ("bool_or", pa.bool_()),
        ("rbm32", pa.binary()),
        ("rbm64", pa.binary()),
        ("hll_sketch", pa.binary()),
        ("theta_sketch", pa.binary()),
    ],
)
def test_retraction_unsupported_fails_unless_ignore_retract(fn, t):
    sample = {I: 1, pa.string(): "a", pa.bool_(): True, pa.binary(): None}[t]
    with pytest.raises(InvalidDataError) as e:
        one_col(t, fn, [sample, sample], kinds=["+I", "-U"])
    assert "fields.v.ignore-retract" in str(e.value) and fn in str(e.value) and "'v'" in str(e.value)
    got = one_col(t, fn, [sample, sample], kinds=["+I", "-U"], extra={"fields.v.ignore-retract": "true"})
    assert got == sample


def test_ignore_retract_on_sum():
    assert one_col(I, "sum", [5, 3], kinds=["+I", "-U"], extra={"fields.v.ignore-retract": "true"}) == 5


def test_remove_record_on_delete():
    extra = {"aggregation.remove-record-on-delete": "true"}
    assert one_col(I, "sum", [5, 3, 1], kinds=["+I", "+I", "-D"], extra=extra) == "<deleted>"
    assert one_col(I, "sum", [5, 3, 1, 4], kinds=["+I", "-D", "+I", "+I"], extra=extra) == 5
    assert one_col(I, "sum", [5, 3, 1], kinds=["+I", "-U", "+I"], extra=extra) == 3  # -U still retracts
    # max does not support retraction, but -D removes the row and is not a retraction here
    assert one_col(I, "max", [5, 3, 1], kinds=["+I", "-D", "+I"], extra=extra, batches=3) == 1
    with pytest.raises(InvalidDataError):
        one_col(I, "max", [5, 3], kinds=["+I", "-U"], extra=extra)


def test_ignore_delete_drops_retractions():
    assert one_col(I, "max", [5, 3, 9], kinds=["+I", "-D", "-U"], extra={"ignore-delete": "true"}) == 5


# -- type checks at table creation -----------------------------------------------------------------


@pytest.mark.parametrize(
    "fn,bad,good",
    [
        ("sum", pa.string(), pa.decimal128(10, 2)),
        ("product", pa.bool_(), pa.float32()),
        ("count", pa.int16(), pa.int64()),
        ("max", pa.bool_(), pa.timestamp("ms", tz="UTC")),
        ("min", pa.binary(), pa.time32("ms")),
        ("listagg", I, pa.string()),
        ("bool_and", I, pa.bool_()),
        ("bool_or", pa.string(), pa.bool_()),
        ("collect", I, pa.list_(pa.string())),
        ("merge_map", pa.list_(I), pa.map_(I, I)),
        ("nested_update", pa.list_(I), pa.list_(pa.struct([("x", I)]))),
        ("rbm32", pa.string(), pa.binary()),
        ("rbm64", I, pa.binary()),
        ("hll_sketch", pa.string(), pa.binary()),
        ("theta_sketch", pa.list_(I), pa.binary()),
    ],
)
def test_type_checks_name_column_and_function(fn, bad, good):
    with pytest.raises(SchemaError) as e:
        Driver(
            pa.schema([("k", I), ("col_x", bad)]),
            ["k"],
            {"merge-engine": "aggregation", "fields.col_x.aggregate-function": fn},
        )
    assert "col_x" in str(e.value) and fn in str(e.value)
    Driver(
        pa.schema([("k", I), ("col_x", good)]),
        ["k"],
        {"merge-engine": "aggregation", "fields.col_x.aggregate-function": fn},
    )


def test_last_value_accepts_any_type():
    # last_value has no type restriction in Paimon (FieldLastValueAgg), lists included.
    s = pa.schema([("k", I), ("m", pa.list_(I))])
    d = Driver(s, ["k"], {"merge-engine": "aggregation", "fields.m.aggregate-function": "last_value"})
    d.write([{"k": 1, "m": [1, 2]}, {"k": 2, "m": [3]}])
    d.write([{"k": 1, "m": [9]}])
    assert sorted(d.read_table().select(["k", "m"]).to_pylist(), key=lambda r: r["k"]) == [
        {"k": 1, "m": [9]},
        {"k": 2, "m": [3]},
    ]


def test_unknown_function_and_unknown_column():
    with pytest.raises(InvalidOptionError, match="nope"):
        Driver(
            pa.schema([("k", I), ("v", I)]),
            ["k"],
            {"merge-engine": "aggregation", "fields.v.aggregate-function": "nope"},
        )
    with pytest.raises(InvalidOptionError, match="zz"):
        Driver(
            pa.schema([("k", I), ("v", I)]),
            ["k"],
            {"merge-engine": "aggregation", "fields.zz.aggregate-function": "sum"},
        )
    with pytest.raises(InvalidOptionError, match="default-aggregate-function"):
        Driver(
            pa.schema([("k", I), ("v", I)]),
            ["k"],
            {"merge-engine": "aggregation", "fields.default-aggregate-function": "nope"},
        )
    with pytest.raises(InvalidOptionError, match="sequence field"):
        Driver(
            pa.schema([("k", I), ("v", I), ("ts", I)]),
            ["k"],
            {"merge-engine": "aggregation", "sequence.field": "ts", "fields.ts.aggregate-function": "sum"},
        )


def test_every_listed_function_is_registered():
    assert set(FUNCTIONS) >= {
        "sum",
        "product",
        "count",
        "max",
        "min",
        "last_value",
        "last_non_null_value",
        "first_value",
        "first_non_null_value",
        "listagg",
        "bool_and",
        "bool_or",
        "collect",
        "merge_map",
        "nested_update",
        "rbm32",
        "rbm64",
        "hll_sketch",
        "theta_sketch",
    }


# -- ordering and passthrough ------------------------------------------------------------------------


def test_sequence_field_takes_last_value_and_orders():
    s = pa.schema([("k", I), ("v", pa.string()), ("ts", I)])
    d = Driver(
        s, ["k"], {"merge-engine": "aggregation", "sequence.field": "ts", "fields.v.aggregate-function": "listagg"}
    )
    d.write(rows_of(s.names, (1, "c", 3), (1, "a", 1)))
    d.write(rows_of(s.names, (1, "b", 2)))
    # the first batch folds to ("a,c", ts 3); on read the second file's b@2 sorts before it
    assert d.read_tuples() == [(1, "b,a,c", 3)]
    assert (
        strip(
            Model(Spec(s, ("k",), dict(d.table_schema.options))).run(
                [rows_of(s.names, (1, "c", 3), (1, "a", 1)), rows_of(s.names, (1, "b", 2))]
            )
        )
        == d.read()
    )


def test_lone_blank_listagg_row_passes_through_like_java():
    s = pa.schema([("k", I), ("v", pa.string())])
    d = Driver(s, ["k"], {"merge-engine": "aggregation", "fields.v.aggregate-function": "listagg"})
    d.write(rows_of(s.names, (1, " "), (2, " "), (2, "x")))
    assert d.read_tuples() == [(1, " "), (2, "x")]


def test_folded_output_kind_and_sequence():
    s = pa.schema([("k", I), ("v", I)])
    d = Driver(s, ["k"], {"merge-engine": "aggregation", "fields.v.aggregate-function": "sum"})
    out = d.write(rows_of(s.names, (1, 1), (1, 2), (2, 5), (3, 1), (3, 1), kinds=["+I", "-U", "-D", "-U", "-D"]))
    assert out["_VALUE_KIND"].to_pylist() == [0, 3, 0]  # merged rows are +I; a lone -D passes through
    assert out["_SEQUENCE_NUMBER"].to_pylist() == [1, 2, 4]
    assert out["v"].to_pylist() == [-1, 5, -2]
    assert d.read_tuples() == [(1, -1), (3, -2)]


# -- sequence.auto-padding -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "padding,want",
    [
        (None, (1, None, None)),
        ("row-kind-flag", (1, 5, 100)),
        ("millis-to-micro,row-kind-flag", (1, 5, 100)),
        ("second-to-micro", (1, None, None)),
    ],
)
def test_auto_padding_row_kind_flag_orders_retraction_first(padding, want):
    s = pa.schema([("k", I), ("v", I), ("ts", L)])
    opts = {"merge-engine": "aggregation", "fields.v.aggregate-function": "last_value", "sequence.field": "ts"}
    if padding:
        opts["sequence.auto-padding"] = padding
    d = Driver(s, ["k"], opts)
    # a +U arrives before its -U with the same op_ts: only row-kind-flag puts the -U first
    # (without it the -U comes last and last_value retracts v and the sequence column to NULL)
    d.write(rows_of(s.names, (1, 5, 100), (1, 3, 100), kinds=["+U", "-U"]))
    assert d.read_tuples() == [want]


def test_auto_padding_validation():
    s = pa.schema([("k", I), ("v", I), ("ts", L)])
    with pytest.raises(InvalidOptionError, match="auto-padding"):
        Driver(s, ["k"], {"merge-engine": "aggregation", "sequence.field": "ts", "sequence.auto-padding": "nanos"})
    with pytest.raises(InvalidOptionError, match="sequence.field"):
        Driver(s, ["k"], {"merge-engine": "aggregation", "sequence.auto-padding": "row-kind-flag"})


def test_multiple_sequence_fields_compare_in_order():
    s = pa.schema([("k", I), ("v", I), ("a", I), ("b", I)])
    d = Driver(
        s, ["k"], {"merge-engine": "aggregation", "fields.v.aggregate-function": "last_value", "sequence.field": "a,b"}
    )
    d.write(rows_of(s.names, (1, 10, 2, 1), (1, 20, 1, 9), (1, 30, 2, None)))
    # order: (1,9) < (2,NULL) < (2,1)
    assert d.read_tuples() == [(1, 10, 2, 1)]
