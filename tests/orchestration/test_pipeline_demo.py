"""The demo pipeline (``python -m orchestration.demo``): ingest, sensor tick, downstream run."""
from __future__ import annotations

import dagster as dg
import pytest

from lake_core import Catalog
from lake_core.demo_source import orders
from orchestration.config import load_tables_config
from orchestration.demo import run_demo

pytestmark = [pytest.mark.spark, pytest.mark.dagster, pytest.mark.slow]


def test_demo_runs_the_whole_pipeline_twice(spark, warehouse, write_tables_config):
    config = load_tables_config(write_tables_config(warehouse))
    lines: list[str] = []
    with dg.DagsterInstance.ephemeral() as instance:
        first = run_demo(config, instance, say=lines.append)
        second = run_demo(config, instance, batches=2, say=lines.append)
        runs = instance.get_runs()
    assert first.ingested["demo.orders"]["snapshot_id"] == 1 and first.requests == ["demo.orders:1"]
    assert second.ingested["demo.orders"]["snapshot_id"] == 3
    assert second.requests == ["demo.orders:2", "demo.orders:3"]  # one downstream run per new snapshot
    assert second.downstream["demo.orders_by_day"]["source_snapshot_id"] == 3
    assert second.tables["demo.orders"] == orders().expected(3).num_rows
    assert Catalog(warehouse).get_table("demo.orders_by_day").to_arrow().num_rows == 3  # three order days
    assert len(runs) == 1 + 1 + 2 + 2 and all(r.is_success for r in runs)
    text = "\n".join(lines)
    assert "run_key demo.orders:3" in text and "table    demo.orders_by_day: 3 rows" in text
