"""Shared pieces of the commit safety tests: a small keyed table and a dict oracle."""
from __future__ import annotations

import pyarrow as pa
import pytest

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
    wb = table.new_batch_write_builder()
    if user:
        wb = wb.with_commit_user(user)
    w = wb.new_write()
    w.write_arrow(kv(keys, values))
    return wb, w.prepare_commit()


@pytest.fixture(params=["local", pytest.param("s3", marks=pytest.mark.s3)])
def where(request) -> tuple[str, dict]:
    """(warehouse URI, storage options): a local directory, then a bucket on the moto S3 server."""
    if request.param == "local":
        return request.getfixturevalue("warehouse"), {}
    s3 = request.getfixturevalue("s3_warehouse")
    return s3.uri, s3.storage_options
