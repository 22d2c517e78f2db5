"""Every Spark asset of a table, materialized through the real ``dagster asset materialize`` command,
on a Spark Connect server and on a standalone cluster (the session's ones), over the S3 test server.

What a deployment does: ``LAKE_TABLES_CONFIG`` names a tables.yaml whose ``spark:`` block says where
Spark runs and whose ``warehouse.s3`` block names the credential variables; those variables are set in
the Dagster process alone. Neither the Connect server nor the cluster's workers have credentials of
their own, so every task opens the table with the options that travel with the job. Each command is
a fresh process (the Spark driver, or the Connect client), as a run the daemon launches.

The sequence, per mode: ingest + downstream in one run, record expiry, a full compaction, then a
rescale backfill of two of the three partitions (``--partition-range``, one run). Oracle: the demo
source's own expectation (``expected_orders``), with the records older than each run's reported TTL
cutoff removed, and the per-day aggregate computed here; the blocking checks must pass.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import pyarrow as pa
import pyarrow.compute as pc
import pytest
import yaml

from fixtures.tables_config import demo_orders_by_day, demo_orders_table
from jobs.tables import TableSpec, ensure_table
from lake_core import Catalog
from orchestration.config import load_tables_config
from orchestration.defs.maintenance.partitions import partitions_def_name
from orchestration.demo.source import orders

pytestmark = [pytest.mark.dagster, pytest.mark.spark, pytest.mark.s3, pytest.mark.slow]

REPO_ROOT = Path(__file__).resolve().parents[2]
DAGSTER = Path(sys.executable).parent / "dagster"
BATCHES = 3  # two written here, the third by the ingest asset
TARGET_BUCKETS = 3


def _spark_block(mode: str, request: pytest.FixtureRequest) -> dict:
    if mode == "connect":
        return {"remote": request.getfixturevalue("spark_connect_server").url}
    cluster = request.getfixturevalue("spark_cluster")
    return {
        "master": cluster.master_url,
        "driver_memory": "1g",
        # what a user sets for their cluster: the executors' Python and a driver address they reach
        "conf": {
            "spark.pyspark.python": sys.executable,
            "spark.driver.host": "127.0.0.1",
            "spark.executor.memory": "512m",
        },
    }


def _retention_hours() -> int:
    """A record TTL whose cutoff falls inside the data's last-but-one day (the demo's clock is 2024)."""
    since = datetime.now(UTC) - datetime(2024, 1, 3, 0, tzinfo=UTC)
    return math.ceil(since.total_seconds() / 3600) + 6


class Cli:
    """``dagster asset materialize`` in a fresh process against one tables.yaml and one instance."""

    def __init__(self, config: Path, home: Path, env: dict[str, str]) -> None:
        self.config, self.home, self.env = config, home, env
        self.durations: dict[str, float] = {}

    def materialize(self, select: str, *extra: str) -> dict[str, dict]:
        started = time.monotonic()
        done = subprocess.run(
            [str(DAGSTER), "asset", "materialize", "-m", "orchestration.definitions", "-a", "defs"]
            + ["--select", select, *extra],
            cwd=REPO_ROOT,
            env={**self.env, "LAKE_TABLES_CONFIG": str(self.config), "DAGSTER_HOME": str(self.home)},
            capture_output=True,
            text=True,
            timeout=900,
        )
        self.durations[select] = time.monotonic() - started
        with dg.DagsterInstance.from_config(str(self.home)) as instance:
            [run] = instance.get_runs(limit=1)
            logs = instance.all_logs(run.run_id)
        assert done.returncode == 0 and run.status == dg.DagsterRunStatus.SUCCESS, (
            f"{select}: exit {done.returncode}, run {run.status}\n{done.stderr[-6000:]}"
        )
        out: dict[str, dict] = {}
        for record in logs:
            event = record.dagster_event
            if event is None:
                continue
            if event.event_type == dg.DagsterEventType.ASSET_MATERIALIZATION:
                materialization = event.event_specific_data.materialization
                out["/".join(materialization.asset_key.path)] = {
                    k: v.value for k, v in materialization.metadata.items()
                }
            elif event.event_type == dg.DagsterEventType.ASSET_CHECK_EVALUATION:
                evaluation = event.event_specific_data
                out[f"check:{evaluation.check_name}"] = {"passed": evaluation.passed}
        return out


def _by_order(table: pa.Table) -> list[dict]:
    return sorted(table.to_pylist(), key=lambda r: r["order_id"])


def _alive(expected: pa.Table, cutoff_s: int) -> pa.Table:
    """lake_core's record-level rule: a record expires when its time, in whole seconds, is older."""
    seconds = pc.divide(expected["updated_at"].cast(pa.int64()), 1_000_000)
    return expected.filter(pc.greater_equal(seconds, cutoff_s))


def _by_day(expected: pa.Table) -> dict:
    out: dict = {}
    for r in expected.to_pylist():
        n, c, rev = out.get(r["dt"], (0, 0, 0))
        live = r["status"] != "cancelled"
        out[r["dt"]] = (n + 1, c + (not live), rev + (r["amount"] if live else 0))
    return out


@pytest.mark.parametrize("mode", [pytest.param("connect", marks=pytest.mark.spark_connect), "cluster"])
def test_spark_assets_through_the_dagster_cli(mode, request, s3_warehouse, tmp_path):
    config = {
        "warehouse": {
            "uri": s3_warehouse.uri,
            "s3": {
                "endpoint_url_env": "CLI_TEST_S3_ENDPOINT",
                "access_key_env": "CLI_TEST_S3_KEY",
                "secret_key_env": "CLI_TEST_S3_SECRET",
            },
        },
        "spark": _spark_block(mode, request),
        "tables": [
            demo_orders_table(
                maintenance={
                    "record_expiry": {"field": "updated_at", "retention": f"{_retention_hours()} h"},
                    "rescale": {"target_buckets": TARGET_BUCKETS, "backfill": "single_run"},
                }
            )
        ],
        "downstream": [demo_orders_by_day()],
    }
    path = tmp_path / "tables.yaml"
    path.write_text(yaml.safe_dump(config))
    home = tmp_path / "dagster_home"
    home.mkdir()
    opts = s3_warehouse.storage_options
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "LAKE_SPARK_", "DAGSTER_"))}
    env.update(
        PYTHONPATH=str(REPO_ROOT),
        CLI_TEST_S3_ENDPOINT=opts["endpoint_url"],
        CLI_TEST_S3_KEY=opts["key"],
        CLI_TEST_S3_SECRET=opts["secret"],
    )
    cli = Cli(path, home, env)

    # Batches 0 and 1 as earlier ingest runs would have committed them (so the asset's next batch is 2).
    table_config = load_tables_config(path).tables[0]
    spec = TableSpec(
        name=table_config.name,
        schema=table_config.arrow_schema(),
        primary_keys=tuple(table_config.primary_keys),
        partition_keys=tuple(table_config.partition_keys),
        options=dict(table_config.options),
    )
    catalog = Catalog(s3_warehouse.uri, storage_options=opts)
    table = ensure_table(catalog, spec)
    source = orders()
    for b in range(BATCHES - 1):
        table.write_arrow(source.batch(b), commit_user="ingest:earlier-run", commit_identifier=b)
    expected = source.expected(BATCHES)

    # 1. ingest (the Spark write) and the downstream aggregate (the paimon data source), one run
    out = cli.materialize("demo/orders,demo/orders_by_day")
    assert out["demo/orders"]["batch"] == BATCHES - 1, out
    assert _by_order(catalog.get_table("demo.orders").to_arrow()) == _by_order(expected)
    by_day = catalog.get_table("demo.orders_by_day").to_arrow().to_pylist()
    assert {r["dt"]: (r["orders"], r["cancelled"], r["revenue"]) for r in by_day} == _by_day(expected)

    # 2. record expiry: exactly the records past the run's cutoff are gone
    out = cli.materialize("demo/orders/record_expiry")
    expiry = out["demo/orders/record_expiry"]
    assert out["check:only_expired_records_dropped"] == {"passed": True}, out
    assert expiry["rows_expired"] > 0 and expiry["units_run"] >= 1, expiry
    survivors = _alive(expected, expiry["expiry_cutoff_s"])
    assert 0 < survivors.num_rows < expected.num_rows
    assert _by_order(catalog.get_table("demo.orders").to_arrow()) == _by_order(survivors)

    # 3. a full compaction (the policy's TTL applies too, at its own, later cutoff)
    out = cli.materialize(
        "demo/orders/compaction",
        "--config-json",
        json.dumps({"ops": {"lake_maintenance__compaction": {"config": {"full": True}}}}),
    )
    compaction = out["demo/orders/compaction"]
    assert out["check:content_unchanged"] == {"passed": True}, out
    assert compaction["units_run"] >= 1 and "skipped_units" not in compaction, compaction
    survivors = _alive(expected, compaction["expiry_cutoff_s"])
    assert _by_order(catalog.get_table("demo.orders").to_arrow()) == _by_order(survivors)

    # 4. a backfill of two of the three partitions, in one run
    keys = sorted({r["dt"] for r in expected.to_pylist()})
    with dg.DagsterInstance.from_config(str(home)) as instance:
        instance.add_dynamic_partitions(partitions_def_name("demo.orders"), [f"dt={k}" for k in keys])
    out = cli.materialize("demo/orders/rescale", "--partition-range", f"dt={keys[1]}...dt={keys[2]}")
    rescale = out["demo/orders/rescale"]
    assert out["check:rescale_verified"] == {"passed": True}, out
    assert rescale["run.partitions_rescaled"] == 2, rescale  # the run's totals, on each partition
    table = catalog.get_table("demo.orders")
    assert _by_order(table.to_arrow()) == _by_order(survivors)
    plan = table.maintenance.plan_rescale(bucket=TARGET_BUCKETS)
    assert [dict(u.partition) for u in plan.units] == [{"dt": keys[0]}], plan  # the one left out
    assert sorted(dict(p)["dt"] for p in plan.already_rescaled) == keys[1:]
    print(f"{mode}: " + ", ".join(f"{select} {seconds:.1f} s" for select, seconds in cli.durations.items()))
