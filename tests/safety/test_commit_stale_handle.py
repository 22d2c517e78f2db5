"""Item 8: a table handle notices at commit that its table was dropped or replaced."""

from __future__ import annotations

import pyarrow as pa
import pytest

from lake_core import Catalog
from lake_core.errors import LakeError, StaleTableError

from .helpers import SCHEMA, as_dict, kv, new_table, where  # noqa: F401 (fixture)


def test_a_stale_handle_cannot_write_into_a_dropped_table(where):
    uri, opts = where
    stale = new_table(uri, opts)
    stale.write_arrow(kv([1], ["a"]))
    cat = Catalog(uri, opts)
    cat.drop_table("db.t")
    with pytest.raises(StaleTableError, match=r"db\.t.*dropped"):
        stale.write_arrow(kv([2], ["b"]))
    assert cat.list_tables("db") == []
    assert not cat.table_exists("db.t")


def test_a_stale_handle_cannot_write_into_a_recreated_table(where):
    uri, opts = where
    stale = new_table(uri, opts)
    stale.write_arrow(kv([1], ["a"]))
    cat = Catalog(uri, opts)
    cat.drop_table("db.t")
    other = pa.schema([pa.field("k", pa.int64(), nullable=False), ("w", pa.int32())])
    fresh = cat.create_table("db.t", schema=other, primary_keys=["k"], options={"bucket": "2"})
    fresh.write_arrow(pa.table({"k": [5], "w": [50]}, schema=other))
    with pytest.raises(StaleTableError, match=r"db\.t.*(re-?created|replaced)"):
        stale.write_arrow(kv([2], ["b"]))
    with pytest.raises(StaleTableError):
        stale.delete_where(stale.predicate_builder().equal("k", 1))
    # The new table is intact and readable.
    again = cat.get_table("db.t")
    assert again.to_arrow().to_pylist() == [{"k": 5, "w": 50}]
    assert [s.id for s in again.snapshots()] == [1]


def test_a_handle_from_before_a_schema_change_is_refused(warehouse):
    """A commit records the handle's schema id; if schema-N+1 appeared since, the handle is stale."""
    from dataclasses import replace

    t = new_table(warehouse)
    t.write_arrow(kv([1], ["a"]))
    # Another engine (Java ALTER TABLE) adds schema-1.
    newer = replace(t.schema, id=t.schema.id + 1)
    t.schema_manager.create(newer)
    with pytest.raises(StaleTableError, match=r"schema"):
        t.write_arrow(kv([2], ["b"]))
    assert issubclass(StaleTableError, LakeError)
    assert as_dict(Catalog(warehouse).get_table("db.t")) == {1: "a"}
