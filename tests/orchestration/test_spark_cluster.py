"""The maintenance assets on a real Spark standalone cluster (a master and two one-core workers on
loopback, :mod:`fixtures.spark_standalone`), on the S3 test server.

The credentials are given only through the ``lake`` resource (tables.yaml names the variables;
they are set in the Dagster process alone): the workers' environment has none, so the tasks can
only open the table with the options that travel with the job. The Dagster run is a fresh process
(the driver), as a run launched by the Dagster daemon is, so no test session is reused.

Oracle: the same writes, compacted and rescaled in this process by lake_core
(``table.maintenance.compact`` / ``rescale``), read back row for row.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pytest
import yaml

from lake_core import Catalog

pytestmark = [pytest.mark.dagster, pytest.mark.spark, pytest.mark.s3, pytest.mark.slow]

REPO_ROOT = Path(__file__).resolve().parents[2]
SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("v", pa.int64()), ("op", pa.string())])
OPTIONS = {"bucket": "2", "rowkind.field": "op", "write-only": "true"}

SCRIPT = textwrap.dedent(
    """
    import json, sys
    import dagster as dg
    from orchestration.config import load_tables_config
    from orchestration.definitions import build_definitions

    defs = build_definitions(load_tables_config(sys.argv[1]))
    out = {}
    for name, config in (("compaction", {"full": True}), ("rescale", None)):
        key = dg.AssetKey(["db", "t", name])
        op = defs.resolve_assets_def(key).node_def.name
        run_config = {"ops": {op: {"config": config}}} if config else None
        with dg.DagsterInstance.ephemeral() as instance:
            result = dg.materialize([defs.resolve_assets_def(key)], instance=instance, run_config=run_config)
        [event] = [e for e in result.asset_materializations_for_node(op) if e.asset_key == key]
        out[name] = {
            "metadata": {k: v.value for k, v in event.metadata.items() if isinstance(v.value, (int, str))},
            "check": [c.passed for c in result.get_asset_check_evaluations()],
        }
    print(json.dumps(out))
    """
)


def _write(table, commits: int = 4) -> None:
    """Several level-0 files per bucket, with updates and deletes across them."""
    for c in range(commits):
        rows = []
        for i in range(c * 15, c * 15 + 40):
            op = "-D" if c and i % 7 == c else "+I"
            rows.append((i, f"n{i % 5}", c * 1000 + i, op))
        table.write_arrow(pa.table(dict(zip(SCHEMA.names, zip(*rows))), schema=SCHEMA))


def _rows(table) -> list[dict]:
    return sorted(table.to_arrow().to_pylist(), key=lambda r: r["id"])


def test_compaction_and_rescale_assets_on_a_standalone_cluster(spark_cluster, s3_warehouse, tmp_path):
    catalog = Catalog(s3_warehouse.uri, storage_options=s3_warehouse.storage_options)
    catalog.create_database("db")
    for name in ("db.t", "db.ref"):
        _write(catalog.create_table(name, schema=SCHEMA, primary_keys=["id"], options=OPTIONS))
    config = {
        "warehouse": {
            "uri": s3_warehouse.uri,
            "s3": {
                "endpoint_url_env": "CLUSTER_TEST_S3_ENDPOINT",
                "access_key_env": "CLUSTER_TEST_S3_KEY",
                "secret_key_env": "CLUSTER_TEST_S3_SECRET",
            },
        },
        "spark": {
            "master": spark_cluster.master_url,
            "driver_memory": "1g",
            "conf": {
                # what a user sets for their cluster: the executors' Python, and an address of the
                # driver they can reach (loopback here; nothing is forced for a non-local master)
                "spark.pyspark.python": sys.executable,
                "spark.driver.host": "127.0.0.1",
                "spark.executor.memory": "512m",
            },
        },
        "tables": [
            {
                "name": "db.t",
                "schema": {"id": "BIGINT", "name": "STRING", "v": "BIGINT", "op": "STRING"},
                "primary_keys": ["id"],
                "options": OPTIONS,
                "maintenance": {"rescale": {"target_buckets": 3}},
            }
        ],
    }
    path = tmp_path / "tables.yaml"
    path.write_text(yaml.safe_dump(config))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "LAKE_SPARK_"))}
    env.update(
        PYTHONPATH=str(REPO_ROOT),
        CLUSTER_TEST_S3_ENDPOINT=s3_warehouse.endpoint_url,
        CLUSTER_TEST_S3_KEY=s3_warehouse.storage_options["key"],
        CLUSTER_TEST_S3_SECRET=s3_warehouse.storage_options["secret"],
    )
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(path)], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-4000:] + "\n" + spark_cluster.logs()
    out = json.loads(done.stdout.strip().splitlines()[-1])

    compaction, rescale = out["compaction"]["metadata"], out["rescale"]["metadata"]
    assert out["compaction"]["check"] == [True] and out["rescale"]["check"] == [True]
    assert compaction["units_run"] == 2 and "skipped" not in compaction, compaction
    assert rescale["partitions_rescaled"] == 1 and rescale["bucket"] == 3, rescale
    # The tasks ran on the cluster's executors, not in the driver.
    apps = spark_cluster.status()["completedapps"] + spark_cluster.status()["activeapps"]
    assert len(apps) >= 1, spark_cluster.status()

    reference = catalog.get_table("db.ref")
    reference.maintenance.compact(full=True)
    reference = catalog.get_table("db.ref")
    reference.maintenance.rescale(bucket=3)
    table, reference = catalog.get_table("db.t"), catalog.get_table("db.ref")
    assert _rows(table) == _rows(reference)
    assert table.options.get("bucket") == reference.options.get("bucket") == "3"
