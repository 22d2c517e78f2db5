"""Bad input gets our own errors and leaves the table as it was (issue 8, items 12 and 14)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from lake_core import errors

SCHEMA = pa.schema([("p", pa.string()), ("k", pa.int64()), ("v", pa.string())])
BASE = pa.table({"p": ["a", "a", "b"], "k": [1, 2, 3], "v": ["x", "y", "z"]}, schema=SCHEMA)


def _table(store, **kw):
    cat = store.catalog()
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_keys=["p", "k"], partition_keys=["p"], options={"bucket": "1"}, **kw)
    t.write_arrow(BASE)
    return cat, t


def _state(t):
    return [s.id for s in t.snapshots()], sorted(t.to_arrow().to_pylist(), key=lambda r: (r["p"], r["k"]))


def _assert_unchanged(store, cat, before_tree, before_state):
    assert _state(cat.get_table("db.t")) == before_state
    assert {p for p in store.tree() if "/snapshot/" in p or "/manifest/" in p} == {
        p for p in before_tree if "/snapshot/" in p or "/manifest/" in p
    }


def test_duplicate_column_names_in_data(local_store):
    cat, t = _table(local_store)
    tree, state = local_store.tree(), _state(t)
    data = pa.Table.from_arrays(
        [pa.array(["a"]), pa.array([9]), pa.array(["q"]), pa.array(["r"])], names=["p", "k", "v", "v"]
    )
    with pytest.raises(errors.SchemaMismatchError, match=r"duplicate column\(s\) \['v'\]"):
        t.write_arrow(data)
    _assert_unchanged(local_store, cat, tree, state)


@pytest.mark.parametrize("spec,needle", [({"zz": "a"}, "'zz'"), ({"v": "x"}, "'v'"), ({"p": 5}, "'p' = 5")])
def test_bad_overwrite_spec(local_store, spec, needle):
    cat, t = _table(local_store)
    tree, state = local_store.tree(), _state(t)
    with pytest.raises(errors.InvalidDataError) as info:
        t.write_arrow(pa.table({"p": ["a"], "k": [9], "v": ["q"]}, schema=SCHEMA), overwrite=spec)
    assert needle in str(info.value)
    _assert_unchanged(local_store, cat, tree, state)


def test_nul_bytes_in_names(local_store):
    cat, t = _table(local_store)
    tree, state = local_store.tree(), _state(t)
    for call, kind in (
        (lambda: cat.create_database("a\x00b"), "database name"),
        (lambda: cat.create_table("db.a\x00b", SCHEMA), "table name"),
        (lambda: cat.get_table("db.a\x00b"), "table name"),
        (lambda: t.create_tag("a\x00b"), "tag name"),
    ):
        with pytest.raises(errors.InvalidNameError) as info:
            call()
        assert info.value.kind == kind and "U+0000" in str(info.value)
    with pytest.raises(errors.SchemaError, match="U\\+0000"):
        cat.create_table("db.n", pa.schema([("a\x00b", pa.int64())]))
    assert local_store.tree() == tree
    _assert_unchanged(local_store, cat, tree, state)


def test_partition_value_too_long_for_a_file_name(store):
    cat, t = _table(store)
    tree, state = store.tree(), _state(t)
    long_value = "x" * 300
    rows = pa.table({"p": ["a", long_value], "k": [7, 8], "v": ["ok", "too long"]}, schema=SCHEMA)
    with pytest.raises(errors.InvalidDataError) as info:
        t.write_arrow(rows)
    msg = str(info.value)
    assert "'p'" in msg and "300 characters" in msg and "255" in msg
    assert store.tree() == tree  # refused before any file was written
    _assert_unchanged(store, cat, tree, state)
    t.write_arrow(pa.table({"p": ["y" * 200], "k": [8], "v": ["fits"]}, schema=SCHEMA))  # 202 bytes: fine
    assert ("y" * 200, 8, "fits") in [(r["p"], r["k"], r["v"]) for r in t.to_arrow().to_pylist()]


# -- 14. empty overwrite truncates, as in Paimon --------------------------------------------------------------
def test_empty_overwrite_truncates_the_table_and_says_so(local_store):
    cat, t = _table(local_store)
    from lake_core.table import FileStoreTable

    doc = FileStoreTable.write_arrow.__doc__
    assert "empty" in doc and "truncates" in doc
    snap = t.write_arrow(SCHEMA.empty_table(), overwrite=True)
    assert snap is not None and snap.commit_kind == "OVERWRITE"
    assert t.to_arrow().num_rows == 0
    assert t.to_arrow(snapshot_id=1).num_rows == 3  # time travel still sees the old rows


def test_empty_partition_overwrite_empties_only_that_partition(local_store):
    cat, t = _table(local_store)
    t.write_arrow(SCHEMA.empty_table(), overwrite={"p": "a"})
    assert t.to_arrow().to_pylist() == [{"p": "b", "k": 3, "v": "z"}]
