"""Property tests: the engines against the dictionary model (tests/merge/model.py) over random
batches, row kinds, NULLs, sequence values and batch boundaries, and fold invariance (the same
answer whether rows arrive in one batch or many) where Paimon's semantics allow it."""

from __future__ import annotations

import math

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from lake_core.errors import LakeError

from .model import Driver, Model, ModelError, Spec, strip

I, L, D = pa.int32(), pa.int64(), pa.float64()
SETTINGS = dict(
    max_examples=int(__import__("os").environ.get("MERGE_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)

small = st.one_of(st.none(), st.integers(-3, 3))
seqv = st.one_of(st.none(), st.integers(0, 4))


MAP_COLUMNS = {"mm"}


def norm(v, col=None):
    if col in MAP_COLUMNS and isinstance(v, list):
        return dict(v)
    if isinstance(v, dict):
        return v
    if isinstance(v, float) and math.isnan(v):
        return "NaN"
    return v


def canon(rows):
    return [{k: norm(v, k) for k, v in r.items()} for r in strip(rows)]


def run_both(spec: Spec, batches, partition=()):
    model = Model(spec)
    try:
        want = model.run(batches)
    except ModelError as e:
        event(f"rejected: {e}")
        with pytest.raises(LakeError):
            d = Driver(spec.schema, spec.pk, spec.options, partition)
            for b in batches:
                d.write(b)
            d.read()
        return None
    d = Driver(spec.schema, spec.pk, spec.options, partition)
    for b in batches:
        d.write(b)
    got = d.read()
    assert canon(got) == canon(want)
    return got


def batches_of(row_strategy, max_batches=4, max_rows=12):
    return st.lists(st.lists(row_strategy, min_size=0, max_size=max_rows), min_size=1, max_size=max_batches)


def rows(kinds, **cols):
    return st.fixed_dictionaries({"k": st.integers(0, 4), "_kind": st.sampled_from(kinds), **cols})


ADDS = [0, 2]
ALL_KINDS = [0, 1, 2, 3]


def flatten(batches):
    return [[r for b in batches for r in b]]


# -- partial-update --------------------------------------------------------------------------------

PU_PLAIN = pa.schema([("k", I), ("a", I), ("b", pa.string()), ("c", D)])
pu_plain_rows = lambda kinds: rows(
    kinds,
    a=small,
    b=st.one_of(st.none(), st.sampled_from(["x", "y", ""])),
    c=st.one_of(st.none(), st.floats(-5, 5, allow_nan=False)),
)


@settings(**SETTINGS)
@given(batches_of(pu_plain_rows(ADDS)))
def test_pu_plain_matches_model_and_is_fold_invariant(batches):
    spec = Spec(PU_PLAIN, ("k",), {"merge-engine": "partial-update"})
    got = run_both(spec, batches)
    assert canon(got) == canon(run_both(spec, flatten(batches)))


@settings(**SETTINGS)
@given(
    batches_of(pu_plain_rows(ALL_KINDS)),
    st.sampled_from(["ignore-delete", "partial-update.ignore-delete", "partial-update.remove-record-on-delete", None]),
)
def test_pu_plain_deletes(batches, opt):
    opts = {"merge-engine": "partial-update"}
    if opt:
        opts[opt] = "true"
    spec = Spec(PU_PLAIN, ("k",), opts)
    got = run_both(spec, batches)
    if opt and "ignore" in opt:
        assert canon(got) == canon(run_both(spec, flatten(batches)))


PU_GROUPS = pa.schema([("k", I), ("a", I), ("b", I), ("g1", I), ("c", I), ("d", I), ("g2", I), ("g3", I), ("p", I)])
pu_group_rows = lambda kinds: rows(kinds, a=small, b=small, g1=seqv, c=small, d=small, g2=seqv, g3=seqv, p=small)
AGGS_ANY = [
    "sum",
    "max",
    "min",
    "last_value",
    "last_non_null_value",
    "first_value",
    "first_non_null_value",
    "product",
    "count",
    "bool_or",
]


@settings(**SETTINGS)
@given(
    batches_of(pu_group_rows(ALL_KINDS)),
    st.sampled_from(
        [
            None,
            "sum",
            "max",
            "last_value",
            "last_non_null_value",
            "first_value",
            "first_non_null_value",
            "count",
            "product",
        ]
    ),
    st.sampled_from([None, "sum", "last_non_null_value", "min"]),
    st.booleans(),
    st.sampled_from([None, "g1", "g2", "g1,g3"]),
)
def test_pu_sequence_groups_match_model(batches, agg_b, agg_d, ignore_retract, rosg):
    opts = {"merge-engine": "partial-update", "fields.g1.sequence-group": "a,b", "fields.g2,g3.sequence-group": "c,d"}
    if agg_b:
        opts["fields.b.aggregate-function"] = agg_b
    if agg_d:
        opts["fields.d.aggregate-function"] = agg_d
    if ignore_retract:
        opts["fields.b.ignore-retract"] = "true"
        opts["fields.d.ignore-retract"] = "true"
    if rosg:
        opts["partial-update.remove-record-on-sequence-group"] = rosg
    run_both(Spec(PU_GROUPS, ("k",), opts), batches)


@settings(**SETTINGS)
@given(batches_of(pu_group_rows(ADDS)), st.sampled_from([None, "sum", "max", "min", "count", "bool_or"]))
def test_pu_sequence_groups_fold_invariant_for_order_free_aggregates(batches, agg):
    """Without retractions and with order-free aggregates, folding per batch changes nothing."""
    if agg == "bool_or":
        return
    opts = {"merge-engine": "partial-update", "fields.g1.sequence-group": "a,b", "fields.g2,g3.sequence-group": "c,d"}
    if agg:
        opts["fields.b.aggregate-function"] = agg
        opts["fields.d.aggregate-function"] = agg
    spec = Spec(PU_GROUPS, ("k",), opts)
    assert canon(run_both(spec, batches)) == canon(run_both(spec, flatten(batches)))


PU_SEQ = pa.schema([("k", I), ("a", I), ("b", I), ("ts", I)])


@settings(**SETTINGS)
@given(batches_of(rows(ADDS, a=small, b=small, ts=seqv)), st.booleans())
def test_pu_sequence_field_with_nulls(batches, pad):
    opts = {"merge-engine": "partial-update", "sequence.field": "ts"}
    if pad:
        opts["sequence.auto-padding"] = "row-kind-flag"
    run_both(Spec(PU_SEQ, ("k",), opts), batches)


# -- aggregation ------------------------------------------------------------------------------------

AGG_SCHEMA = pa.schema(
    [
        ("k", I),
        ("s", L),
        ("m", I),
        ("f", D),
        ("l", pa.string()),
        ("lv", I),
        ("c", I),
        ("fv", I),
        ("co", pa.list_(I)),
        ("mm", pa.map_(I, I)),
    ]
)
nonzero = st.one_of(st.none(), st.sampled_from([-2, -1, 1, 2, 3]))
agg_rows = lambda kinds: rows(
    kinds,
    s=small,
    m=nonzero,
    f=st.one_of(st.none(), st.floats(-1e3, 1e3, allow_nan=False)),
    l=st.one_of(st.none(), st.sampled_from(["x", "y", " ", "x,y"])),
    lv=small,
    c=small,
    fv=small,
    co=st.one_of(st.none(), st.lists(st.integers(0, 3), max_size=3)),
    mm=st.one_of(
        st.none(), st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2)), max_size=2, unique_by=lambda t: t[0])
    ),
)

RETRACTABLE = {
    "s": "sum",
    "m": "product",
    "f": "sum",
    "lv": "last_value",
    "c": "count",
    "fv": "last_non_null_value",
    "co": "collect",
    "mm": "merge_map",
    "l": "listagg",
}
ADD_ONLY = {
    "s": "sum",
    "m": "max",
    "f": "min",
    "l": "listagg",
    "lv": "last_value",
    "c": "count",
    "fv": "first_value",
    "co": "collect",
    "mm": "merge_map",
}


@settings(**SETTINGS)
@given(batches_of(agg_rows(ADDS)), st.booleans())
def test_aggregation_adds_match_model_and_fold_invariant(batches, distinct):
    opts = {"merge-engine": "aggregation", **{f"fields.{c}.aggregate-function": f for c, f in ADD_ONLY.items()}}
    if distinct:
        opts["fields.l.distinct"] = "true"
        opts["fields.co.distinct"] = "true"
    spec = Spec(AGG_SCHEMA, ("k",), opts)
    got = run_both(spec, batches)
    one = run_both(spec, flatten(batches))
    # float min and everything else is exact; listagg/collect concatenate in the same order
    assert canon(got) == canon(one)


@settings(**SETTINGS)
@given(batches_of(agg_rows(ALL_KINDS)), st.booleans(), st.booleans())
def test_aggregation_retractions_match_model(batches, rod, first_non_null):
    opts = {
        "merge-engine": "aggregation",
        **{f"fields.{c}.aggregate-function": f for c, f in RETRACTABLE.items()},
        "fields.l.ignore-retract": "true",
    }
    if first_non_null:
        opts["fields.fv.aggregate-function"] = "first_non_null_value"  # no retraction: must fail on -U
    if rod:
        opts["aggregation.remove-record-on-delete"] = "true"
    run_both(Spec(AGG_SCHEMA, ("k",), opts), batches)


@settings(**SETTINGS)
@given(batches_of(rows(ALL_KINDS, s=small, c=small, lv=small)))
def test_aggregation_sum_count_last_value_fold_invariant_with_retractions(batches):
    schema = pa.schema([("k", I), ("s", L), ("c", L), ("lv", I)])
    spec = Spec(
        schema,
        ("k",),
        {
            "merge-engine": "aggregation",
            "fields.s.aggregate-function": "sum",
            "fields.c.aggregate-function": "count",
            "fields.lv.aggregate-function": "last_value",
        },
    )
    got = run_both(spec, batches)
    one = run_both(spec, flatten(batches))
    # a key whose only rows are a single retraction is dropped on read (passed through as -U/-D),
    # the same retraction folded with others becomes a visible +I: compare keys present in both
    g, o = {r["k"]: r for r in got}, {r["k"]: r for r in one}
    for k in set(g) & set(o):
        assert g[k] == o[k]


@settings(**SETTINGS)
@given(batches_of(rows(ALL_KINDS, s=small, m=small, ts=seqv, ts2=seqv)), st.booleans(), st.booleans())
def test_aggregation_sequence_fields_and_row_kind_padding(batches, pad, two_fields):
    schema = pa.schema([("k", I), ("s", L), ("m", I), ("ts", I), ("ts2", I)])
    opts = {
        "merge-engine": "aggregation",
        "fields.s.aggregate-function": "sum",
        "sequence.field": "ts",
        "fields.m.aggregate-function": "last_value",
    }
    if two_fields:
        opts["sequence.field"] = "ts,ts2"
    if pad:
        opts["sequence.auto-padding"] = "row-kind-flag"
    run_both(Spec(schema, ("k",), opts), batches)


# -- first-row --------------------------------------------------------------------------------------


@settings(**SETTINGS)
@given(batches_of(rows(ALL_KINDS, a=small, b=small)), st.booleans())
def test_first_row(batches, ignore):
    schema = pa.schema([("k", I), ("a", I), ("b", I)])
    opts = {"merge-engine": "first-row"}
    if ignore:
        opts["first-row.ignore-delete"] = "true"
    got = run_both(Spec(schema, ("k",), opts), batches)
    if got is not None:
        assert canon(got) == canon(run_both(Spec(schema, ("k",), opts), flatten(batches)))


# -- deduplicate (the ordering shared by every engine: sequence fields, NULLs, row-kind-flag) ------


@settings(**SETTINGS)
@given(batches_of(rows(ALL_KINDS, a=small, ts=seqv, ts2=seqv)), st.booleans(), st.booleans())
def test_deduplicate_ordering(batches, pad, two_fields):
    schema = pa.schema([("k", I), ("a", I), ("ts", I), ("ts2", I)])
    opts = {"merge-engine": "deduplicate", "sequence.field": "ts,ts2" if two_fields else "ts"}
    if pad:
        opts["sequence.auto-padding"] = "row-kind-flag"
    run_both(Spec(schema, ("k",), opts), batches)


# -- composite keys and partitions ------------------------------------------------------------------


@settings(**SETTINGS)
@given(
    st.lists(
        st.lists(
            st.fixed_dictionaries(
                {
                    "dt": st.just("2024"),
                    "k": st.integers(0, 2),
                    "k2": st.sampled_from(["a", "b"]),
                    "_kind": st.sampled_from(ADDS),
                    "a": small,
                    "b": small,
                }
            ),
            max_size=10,
        ),
        min_size=1,
        max_size=3,
    ),
    st.sampled_from(["partial-update", "aggregation"]),
)
def test_composite_keys(batches, engine):
    schema = pa.schema([("dt", pa.string()), ("k", I), ("k2", pa.string()), ("a", I), ("b", I)])
    opts = {"merge-engine": engine}
    if engine == "aggregation":
        opts["fields.a.aggregate-function"] = "sum"
    spec = Spec(schema, ("dt", "k", "k2"), opts)
    model = Model(spec)
    want = model.run(batches)
    d = Driver(schema, ("dt", "k", "k2"), opts, partition=("dt",))
    for b in batches:
        d.write(b)
    assert canon(d.read()) == canon(want)
