"""A person in the Dagster UI rescales two partitions of a table by launching a backfill.

Real parts end to end: ``dagster dev`` (webserver + daemon: the partitions sensor and the backfill
daemon), Debian's Chromium driven over the DevTools protocol with mouse clicks, the Spark rescale
job, and lake_core reading the table afterwards. On failure, screenshots and DOM dumps of every
step are kept in ``test-artifacts/browser/<test>/`` at the repository root. Takes about 2–3 minutes
on a quiet two-core machine (dagster dev start, one sensor tick, one Spark run, and the backfill
daemon's 30 s iteration).
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest
import yaml
from maintenance.rescale_helpers import PARTS, PK, bucket_counts, filled_table, rows

from fixtures.browser import Browser
from fixtures.dagster_dev import REPO_ROOT, dagster_dev, graphql
from orchestration.defs.ledger import read_ledger

pytestmark = [pytest.mark.browser, pytest.mark.dagster, pytest.mark.spark, pytest.mark.slow, pytest.mark.timeout(900)]

BACKFILLS = "{ partitionBackfillsOrError { ... on PartitionBackfills { results { id status partitionNames } } } }"


def _config(path: Path, warehouse: str) -> Path:
    table = {
        "name": "db.t",
        "schema": {"dt": "STRING", "id": "BIGINT", "name": "STRING", "v": "BIGINT", "op": "STRING"},
        "primary_keys": PK,
        "partition_keys": ["dt"],
        "options": {"bucket": 2, "rowkind.field": "op"},
        "sensor": {"minimum_interval_seconds": 5},
        "maintenance": {"rescale": {"target_buckets": 3}},
    }
    path.write_text(yaml.safe_dump({"warehouse": {"uri": warehouse}, "tables": [table]}))
    return path


def test_a_backfill_launched_in_the_ui_rescales_the_two_partitions(tmp_path, warehouse, request):
    catalog, table, model = filled_table(warehouse, seed=4)
    started = time.monotonic()
    artifacts = tmp_path / "screenshots"
    with (
        dagster_dev(tmp_path, _config(tmp_path / "tables.yaml", warehouse)) as (url, keys, _workdir),
        Browser(tmp_path, artifacts=artifacts) as browser,
    ):
        try:
            assert ["db", "t", "rescale"] in keys
            # The table's asset group; the partitions sensor (running by default) has found its partitions.
            browser.goto(f"{url}/locations/lake/asset-groups/db__t")
            browser.wait_for("document.querySelector('[data-tooltip=\"rescale\"]')", "the rescale asset node")
            browser.wait_for("document.body.innerText.includes('3 partitions')", "the sensor's 3 partitions", 180)
            browser.screenshot("group")
            # Select the rescale node (the group holds the other maintenance assets too), then
            # Materialize → choose two partitions → Launch backfill.
            browser.click("document.querySelector('[data-tooltip=\"rescale\"]')", "the rescale asset node")
            browser.click("window.__lake.startsWith('Materialize selected')", "the Materialize selected button")
            browser.wait_for(
                "document.body.innerText.includes('materialize db / t / rescale')", "the rescale launch dialog"
            )
            browser.click_text("Select a partition or create one", "the partition picker")
            browser.click_text(f"dt={PARTS[1]}")
            browser.click_text(f"dt={PARTS[2]}")
            # Close the picker by clicking the dialog's title (Escape may close the whole dialog).
            browser.click(
                "[...document.querySelectorAll('div, span, h4')].filter(e => window.__lake.visible(e)"
                " && e.textContent.includes('Launch runs to materialize')).pop()",
                "the dialog's title",
            )
            browser.wait_for(
                "document.body.innerText.includes('2 partitions')"
                " && !document.body.innerText.includes('Filter partitions')",
                "the two partitions selected",
            )
            browser.wait_for(
                "document.body.innerText.includes('Backfills all partitions in a single run')",
                "the single-run backfill policy",
            )
            browser.screenshot("selected")
            browser.click_text("Launch backfill", "the Launch backfill button", selector="button")
            backfill = _wait_for_backfill(url)
            assert sorted(backfill["partitionNames"]) == [f"dt={PARTS[1]}", f"dt={PARTS[2]}"]
            # The backfill's page, as a person would watch it until it succeeds.
            browser.goto(f"{url}/runs/b/{backfill['id']}")
            browser.wait_for(
                "document.body.innerText.includes('100% completed')"
                " && /Status\\s+Succeeded/.test(document.body.innerText)",
                "the backfill to succeed",
                480,
            )
            browser.screenshot("succeeded")
        except BaseException:
            _keep(browser, artifacts, request.node.name)
            raise
    # The table, read with lake_core: exactly the two partitions are at 3 buckets, rows unchanged.
    table = catalog.get_table("db.t")
    assert bucket_counts(table) == {PARTS[0]: {2}, PARTS[1]: {3}, PARTS[2]: {3}}
    assert rows(table.to_arrow()) == model.expected()
    # The maintenance ledger says why the run happened: the backfill launched in the UI.
    [entry] = read_ledger(catalog, table="db.t", operation="rescale").to_pylist()
    assert entry["status"] == "succeeded"
    assert entry["reason"] == f"backfill {backfill['id']} for 2 partition(s): dt={PARTS[1]}, dt={PARTS[2]}"
    print(f"browser rescale test: {time.monotonic() - started:.0f}s")


def _wait_for_backfill(url: str, timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        results = graphql(url, BACKFILLS)["data"]["partitionBackfillsOrError"]["results"]
        if results:
            return results[0]
        time.sleep(1)
    raise AssertionError("no backfill was created after clicking Launch backfill")


def _keep(browser: Browser, artifacts: Path, test: str) -> None:
    """The last page, plus every screenshot taken so far, copied where CI keeps artifacts."""
    try:
        browser.screenshot("failure")
    except Exception:  # noqa: BLE001 - a dead browser must not hide the original failure
        pass
    target = REPO_ROOT / "test-artifacts" / "browser" / test
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(artifacts, target)
    print(f"screenshots kept in {target}")
