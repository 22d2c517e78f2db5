"""first-row engine: Paimon docs examples, delete handling, option checks."""

from __future__ import annotations

import pyarrow as pa
import pytest

from lake_core.errors import InvalidDataError, InvalidOptionError
from lake_core.merge import create_merge_engine

from .model import Driver, rows_of

I = pa.int32()
S = pa.schema([("k", I), ("v1", pa.float64()), ("v2", pa.string())])


def test_docs_example_first_row_keeps_apple():
    d = Driver(S, ["k"], {"merge-engine": "first-row"})
    for r in [(1, 2.0, "apple"), (1, 4.0, "banana"), (1, 8.0, "cherry")]:
        d.write(rows_of(S.names, r))
    assert d.read_tuples() == [(1, 2.0, "apple")]


def test_docs_example_first_row_in_one_batch():
    d = Driver(S, ["k"], {"merge-engine": "first-row"})
    d.write(rows_of(S.names, (1, 2.0, "apple"), (1, 4.0, "banana"), (1, 8.0, "cherry")))
    assert d.read_tuples() == [(1, 2.0, "apple")]


def test_docs_example_first_row_with_lookup_changelog():
    s = pa.schema([("id", I), ("name", pa.string()), ("salary", I)])
    d = Driver(s, ["id"], {"merge-engine": "first-row", "changelog-producer": "lookup"})
    d.write(rows_of(s.names, (1, "flink", 1000)))
    d.write(rows_of(s.names, (1, "flink", 2000)))
    assert d.read_tuples() == [(1, "flink", 1000)]


@pytest.mark.parametrize("kind", ["-D", "-U"])
def test_retractions_rejected(kind):
    d = Driver(S, ["k"], {"merge-engine": "first-row"})
    d.write(rows_of(S.names, (1, 2.0, "a")))
    with pytest.raises(InvalidDataError) as e:
        d.write(rows_of(S.names, (1, 2.0, "a"), kinds=[kind]))
    assert "ignore-delete" in str(e.value)
    with pytest.raises(InvalidDataError):
        d.engine.merge(d.to_table(rows_of(S.names, (1, 2.0, "a"), (1, 3.0, "b"), kinds=["+I", kind])), True)


@pytest.mark.parametrize("opt", ["ignore-delete", "first-row.ignore-delete"])
def test_ignore_delete(opt):
    d = Driver(S, ["k"], {"merge-engine": "first-row", opt: "true"})
    d.write(rows_of(S.names, (1, 2.0, "a"), (2, 1.0, "x")))
    d.write(rows_of(S.names, (1, 0.0, "gone?"), (3, 1.0, "y"), kinds=["-D", "-U"]))
    d.write(rows_of(S.names, (1, 9.0, "later"), (3, 3.0, "z")))
    assert d.read_tuples() == [(1, 2.0, "a"), (2, 1.0, "x"), (3, 3.0, "z")]


def test_sequence_field_refused():
    s = pa.schema([("k", I), ("v", I), ("ts", I)])
    with pytest.raises(InvalidOptionError, match="sequence.field"):
        Driver(s, ["k"], {"merge-engine": "first-row", "sequence.field": "ts"})


@pytest.mark.parametrize("cp,ok", [("none", True), ("lookup", True), ("input", False), ("full-compaction", False)])
def test_changelog_producers(cp, ok):
    if ok:
        Driver(S, ["k"], {"merge-engine": "first-row", "changelog-producer": cp})
    else:
        with pytest.raises(InvalidOptionError, match="changelog-producer"):
            Driver(S, ["k"], {"merge-engine": "first-row", "changelog-producer": cp})


def test_hides_level0_and_keeps_the_first_rows_sequence_number():
    d = Driver(S, ["k"], {"merge-engine": "first-row"})
    assert d.engine.hides_level0
    out = d.write(rows_of(S.names, (2, 1.0, "x"), (1, 2.0, "a"), (1, 3.0, "b")))
    assert out["k"].to_pylist() == [1, 2]
    assert out["_SEQUENCE_NUMBER"].to_pylist() == [1, 0]
    assert out["v2"].to_pylist() == ["a", "x"]


def test_other_engines_do_not_hide_level0():
    for eng in ("partial-update", "aggregation"):
        assert not Driver(S, ["k"], {"merge-engine": eng}).engine.hides_level0


def test_factory_registers_all_engines():
    for eng in ("first-row", "partial-update", "aggregation"):
        d = Driver(S, ["k"], {"merge-engine": eng})
        assert d.engine.name == eng
        assert type(create_merge_engine(d.table_schema)).__name__ == type(d.engine).__name__
