"""Shared pieces of the commit safety tests: a small keyed table and a dict oracle."""

from __future__ import annotations

import pyarrow as pa
import pytest

from fixtures.commits import prepared_write
from lake_core import Catalog

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.string())])


def kv(keys, values) -> pa.Table:
    return pa.table({"k": pa.array(keys, pa.int64()), "v": pa.array(values, pa.string())}, schema=SCHEMA)


def new_table(uri: str, storage_options: dict | None = None, name: str = "db.t", options: dict | None = None):
    cat = Catalog(uri, storage_options or {})
    cat.create_database("db", ignore_if_exists=True)
    opts = {"bucket": "1", **(options or {})}
    return cat.create_table(name, schema=SCHEMA, primary_keys=["k"], options=opts)


def as_dict(table) -> dict:
    return {r["k"]: r["v"] for r in table.to_arrow().to_pylist()}


def prepared(table, keys, values, user: str | None = None):
    """(builder, messages) of one write whose files exist but are not committed yet."""
    return prepared_write(table, kv(keys, values), user)


@pytest.fixture
def where(storage) -> tuple[str, dict]:
    """(warehouse URI, storage options): a local directory, then a bucket on the moto S3 server."""
    return storage
