"""Fixtures for the Dagster tests: one Spark session per run, and temp tables configs."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pytest
import yaml

from fixtures.tables_config import demo_orders_by_day, demo_orders_table


def pytest_configure(config):
    # Registered here so --strict-markers accepts it even before pyproject.toml lists it.
    config.addinivalue_line("markers", "browser: drives a real headless Chromium against `dagster dev`")


@pytest.fixture(scope="session")
def spark():
    """The session every Spark test shares (start-up costs 6–15 s; two cores, so one JVM).

    jobs.spark.spark_session is getOrCreate: tests/jobs' fixture gets this same session.
    """
    from jobs.spark import spark_session

    session = spark_session(master="local[2]", app_name="lake-tests", driver_memory="2g", shuffle_partitions=2)
    yield session
    session.stop()


def tables_config_dict(warehouse: str, **warehouse_extra: Any) -> dict:
    """The demo pipeline's config (orders + orders_by_day) against ``warehouse``."""
    return {
        "warehouse": {"uri": warehouse, **warehouse_extra},
        "tables": [demo_orders_table(sensor={"minimum_interval_seconds": 5})],
        "downstream": [demo_orders_by_day()],
    }


@pytest.fixture
def write_tables_config(tmp_path: Path) -> Callable[..., Path]:
    """Write a tables.yaml for ``warehouse`` into tmp_path and return its path."""

    def write(warehouse: str, **kwargs: Any) -> Path:
        path = tmp_path / "tables.yaml"
        path.write_text(yaml.safe_dump(tables_config_dict(warehouse, **kwargs)))
        return path

    return write
