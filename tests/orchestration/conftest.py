"""Fixtures for the Dagster tests: temp tables configs (the Spark session is tests/conftest.py's)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from fixtures.tables_config import demo_orders_by_day, demo_orders_table


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
