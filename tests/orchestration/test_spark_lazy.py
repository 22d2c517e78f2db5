"""Plan first, Spark only when there is work: a maintenance run whose plan (made from metadata in
the Dagster process) is empty ends with its reason and never starts or attaches to Spark.

A real Dagster run in a fresh process (no session of a test fixture to reuse), whose Spark target
is a Spark Connect URL nothing listens on: any attempt to attach would fail the run."""

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

pytestmark = pytest.mark.dagster

REPO_ROOT = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent(
    """
    import json, sys, time
    import dagster as dg
    from orchestration.config import load_tables_config
    from orchestration.definitions import build_definitions

    defs = build_definitions(load_tables_config(sys.argv[1]))
    out = {}
    for name in ("compaction", "rescale"):
        key = dg.AssetKey(["db", "t", name])
        started = time.monotonic()
        with dg.DagsterInstance.ephemeral() as instance:
            result = dg.materialize([defs.resolve_assets_def(key)], instance=instance)
        op = defs.resolve_assets_def(key).node_def.name
        [event] = [e for e in result.asset_materializations_for_node(op) if e.asset_key == key]
        out[name] = {
            "seconds": time.monotonic() - started,
            "skipped": event.metadata["skipped"].value,
            "check": [c.passed for c in result.get_asset_check_evaluations()],
        }
    spark = sys.modules.get("pyspark.sql")
    out["session"] = spark is not None and (
        spark.SparkSession._instantiatedSession is not None or spark.SparkSession.getActiveSession() is not None
    )
    out["jvm"] = "pyspark" in sys.modules and sys.modules["pyspark"].SparkContext._gateway is not None
    connect = sys.modules.get("pyspark.sql.connect.session")
    out["connect"] = connect is not None and connect.SparkSession._get_default_session() is not None
    print(json.dumps(out))
    """
)


def test_a_noop_compaction_and_rescale_never_reach_spark(tmp_path, warehouse):
    catalog = Catalog(warehouse)
    catalog.create_database("db")
    schema = pa.schema([("id", pa.int64()), ("v", pa.int64())])
    table = catalog.create_table("db.t", schema=schema, primary_keys=["id"], options={"bucket": "2"})
    table.write_arrow(pa.table({"id": list(range(10)), "v": list(range(10))}, schema=schema))  # one sorted run
    config = {
        "warehouse": {"uri": warehouse},
        "tables": [
            {
                "name": "db.t",
                "schema": {"id": "BIGINT", "v": "BIGINT"},
                "primary_keys": ["id"],
                "options": {"bucket": 2},
                "maintenance": {"rescale": {"target_buckets": 2}},  # already there: nothing to rewrite
            }
        ],
    }
    path = tmp_path / "tables.yaml"
    path.write_text(yaml.safe_dump(config))
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO_ROOT),
        # Where Spark would be reached: nothing listens there, so an attach would fail the run. The
        # run-time guard (local warehouse, remote Spark) sits on the same path and is not reached either.
        "LAKE_SPARK_REMOTE": "sc://127.0.0.1:9",
    }
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(path)], cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert (out["session"], out["jvm"], out["connect"]) == (False, False, False), out
    compaction, rescale = out["compaction"], out["rescale"]
    assert compaction["skipped"].startswith("nothing to compact: none needs compaction among the 2 selected bucket(s)")
    assert "Spark was not started" in compaction["skipped"] and compaction["check"] == [True]
    assert "already" in rescale["skipped"] and rescale["check"] == [True]
    assert len(Catalog(warehouse).get_table("db.t").snapshots()) == 1  # nothing committed
    print(f"no-op compaction {compaction['seconds']:.2f} s, rescale {rescale['seconds']:.2f} s")
