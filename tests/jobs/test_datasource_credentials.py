"""``spark.read.format("paimon")`` on an S3 warehouse: the credentials are explicit (the
``storage-options`` JSON, or environment variables *named* to ``read_table``), and a missing one
fails when the scan is planned, naming the bucket, the endpoint and where it looked, instead of in
every task."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from pyspark.errors import AnalysisException

from jobs.datasource import read_table
from jobs.storage import StorageCredentialsError
from lake_core import Catalog

pytestmark = [pytest.mark.spark, pytest.mark.s3, pytest.mark.slow]

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def _table(s3_warehouse) -> pa.Table:
    catalog = Catalog(s3_warehouse.uri, storage_options=s3_warehouse.storage_options)
    catalog.create_database("db")
    table = catalog.create_table("db.t", schema=SCHEMA, primary_keys=["id"], options={"bucket": "2"})
    data = pa.table({"id": list(range(20)), "v": [f"v{i}" for i in range(20)]}, schema=SCHEMA)
    table.write_arrow(data)
    return data


def test_credentials_from_named_variables_or_explicit_options(spark, s3_warehouse, monkeypatch):
    data = _table(s3_warehouse)
    opts = s3_warehouse.storage_options
    monkeypatch.setenv("DS_TEST_ENDPOINT", opts["endpoint_url"])
    monkeypatch.setenv("DS_TEST_KEY", opts["key"])
    monkeypatch.setenv("DS_TEST_SECRET", opts["secret"])
    named = read_table(
        spark,
        s3_warehouse.uri,
        "db.t",
        endpoint_url_env="DS_TEST_ENDPOINT",
        access_key_env="DS_TEST_KEY",
        secret_key_env="DS_TEST_SECRET",
    )
    assert named.toArrow().sort_by("id").to_pylist() == data.to_pylist()
    explicit = (
        spark.read.format("paimon")
        .option("warehouse", s3_warehouse.uri)
        .option("table", "db.t")
        .option("storage-options", json.dumps(opts))
        .load()
    )
    assert explicit.toArrow().sort_by("id").to_pylist() == data.to_pylist()


def test_a_missing_credential_fails_before_any_task(spark, s3_warehouse, monkeypatch):
    _table(s3_warehouse)
    endpoint = s3_warehouse.endpoint_url
    monkeypatch.setenv("DS_TEST_ENDPOINT", endpoint)
    monkeypatch.delenv("DS_TEST_SECRET", raising=False)
    monkeypatch.setenv("DS_TEST_KEY", "testing")
    # read_table resolves the named variables here, before Spark is asked anything
    with pytest.raises(StorageCredentialsError) as raised:
        read_table(
            spark,
            s3_warehouse.uri,
            "db.t",
            endpoint_url_env="DS_TEST_ENDPOINT",
            access_key_env="DS_TEST_KEY",
            secret_key_env="DS_TEST_SECRET",
        )
    message = str(raised.value)
    assert f"bucket '{s3_warehouse.bucket}'" in message and endpoint in message, message
    assert "$DS_TEST_SECRET" in message and "no secret key" in message, message
    # the data source itself: refused where the scan is planned (the driver), not in the tasks
    options = {k: v for k, v in s3_warehouse.storage_options.items() if k != "secret"}
    reader = (
        spark.read.format("paimon")
        .option("warehouse", s3_warehouse.uri)
        .option("table", "db.t")
        .option("storage-options", json.dumps(options))
    )
    with pytest.raises(AnalysisException) as raised_in_driver:  # at planning, not a failed job
        reader.load().collect()
    message = str(raised_in_driver.value)
    assert "StorageCredentialsError" in message and f"bucket '{s3_warehouse.bucket}'" in message, message
    assert endpoint in message and "storage-options" in message, message
    assert "Task" not in message and "stage" not in message.lower(), message  # no task ran (and none retried)
