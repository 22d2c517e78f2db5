"""A real browser against a real ``dagster dev`` (:mod:`fixtures.dagster_dev`): the asset graph
shows the configured tables."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from fixtures.browser import CHROMIUM_FLAGS, chromium_executable, stop_group
from fixtures.dagster_dev import dagster_dev as run_dagster_dev

pytestmark = [pytest.mark.browser, pytest.mark.dagster, pytest.mark.slow]


@pytest.fixture
def dagster_dev(tmp_path, warehouse, write_tables_config):
    with run_dagster_dev(tmp_path, write_tables_config(warehouse)) as running:
        yield running


def _render(chromium: str, tmp_path: Path, url: str, name: str, *, height: int = 900) -> tuple[str, Path]:
    """The page's DOM after scripts ran, and its screenshot; both kept in tmp_path for a post-mortem."""
    shot = tmp_path / f"{name}.png"
    browser = subprocess.Popen(
        [
            chromium,
            *CHROMIUM_FLAGS,
            f"--window-size=1400,{height}",
            "--virtual-time-budget=20000",
            f"--user-data-dir={tmp_path / f'chromium-{name}'}",
            f"--screenshot={shot}",
            "--dump-dom",
            url,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        dom, _ = browser.communicate(timeout=120)
    finally:
        stop_group(browser, timeout=10)
    html = dom.decode("utf-8", "replace")
    (tmp_path / f"{name}.html").write_text(html)
    return html, shot


def test_asset_graph_renders_the_table_assets(dagster_dev, tmp_path):
    chromium = chromium_executable()
    url, keys, workdir = dagster_dev
    maintenance = [
        "compaction",
        "manifest_compaction",
        "orphan_cleanup",
        "partition_expiry",
        "record_expiry",
        "rescale",
        "snapshot_expiry",
    ]
    assert sorted(keys) == [
        ["demo", "orders"],
        *(["demo", "orders", op] for op in maintenance),
        ["demo", "orders_by_day"],
        ["lake", "lake_health"],  # the whole lake at a glance
    ]
    # The global lineage shows one asset group per table (group nodes carry their name as a tooltip).
    html, shot = _render(chromium, tmp_path, f"{url}/asset-groups", "lineage")
    assert "Global asset lineage" in html
    for group in ("demo__orders", "demo__orders_by_day"):
        assert f'data-tooltip="{group}"' in html, f"asset group {group} not rendered"
    assert shot.exists() and shot.stat().st_size > 10_000
    # A table's group shows its assets: graph nodes carry the asset name as a tooltip.
    # tall enough for every node: the graph renders only the nodes in view
    html, shot = _render(chromium, tmp_path, f"{url}/locations/lake/asset-groups/demo__orders", "group", height=2400)
    assert 'data-tooltip="orders"' in html, "asset node orders not rendered in its group"
    for op in maintenance:  # every maintenance operation is an asset in the table's group
        assert f'data-tooltip="{op}"' in html, f"maintenance asset {op} not rendered in the table's group"
    assert 'data-tooltip="orders_by_day"' not in html  # the derived table is a group of its own
    assert "Never materialized" in html
    assert shot.exists() and shot.stat().st_size > 10_000
    # dagster dev stored its state in the scratch dir, per dagster.yaml (not in a temp DAGSTER_HOME).
    assert (workdir / ".dagster" / "storage").is_dir()
