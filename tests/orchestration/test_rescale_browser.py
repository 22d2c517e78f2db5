"""A person in the Dagster UI rescales two partitions of a table by launching a backfill, and reads
in the UI what issue 27 asked for: checks executed on demand, each partition's own figures, and
no downstream run for a snapshot that changes no rows.

Real parts end to end: ``dagster dev`` (webserver + daemon: the partitions, snapshot and lease
sensors and the backfill daemon), Debian's Chromium driven over the DevTools protocol with mouse
clicks, the Spark rescale and downstream jobs, and lake_core reading the table afterwards. One
``dagster dev`` for all of it (it is the slow part to start). What the test asserts is what the
pages say; GraphQL only finds the backfill and counts runs. On failure, screenshots and DOM dumps
of every step are kept in ``test-artifacts/browser/<test>/`` at the repository root. Takes 3–7
minutes on a two-core machine, depending on its load (dagster dev start, a downstream Spark run
for the table's data, two check-only runs, the Spark rescale, the backfill daemon's 30 s
iteration); it was 100–170 s before it covered items 1, 3 and 4.

The table: ``demo.orders`` (the demo's change feed, three batches, three partitions), its derived
``demo.orders_by_day``, a rescale target of 3 buckets, and ``dt=2024-01-03`` already rescaled to 3
before ``dagster dev`` starts (snapshot 4, an OVERWRITE). The backfill selects ``dt=2024-01-02``
(rescaled: snapshot 5) and ``dt=2024-01-03`` (skipped: already at 3).
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
import yaml
from maintenance.rescale_helpers import bucket_counts

from fixtures.browser import Browser
from fixtures.dagster_dev import REPO_ROOT, dagster_dev, graphql
from fixtures.tables_config import demo_orders_by_day, demo_orders_table
from lake_core import Catalog
from orchestration.config import parse_tables_config
from orchestration.defs.ledger import read_ledger
from orchestration.demo.source import orders

pytestmark = [pytest.mark.browser, pytest.mark.dagster, pytest.mark.spark, pytest.mark.slow, pytest.mark.timeout(1200)]

BACKFILLS = "{ partitionBackfillsOrError { ... on PartitionBackfills { results { id status partitionNames } } } }"
DOWNSTREAM_RUNS = """{ runsOrError(filter: {pipelineName: "demo__orders__downstream"}) {
  ... on Runs { results { runId status tags { key value } } } } }"""
PARTS = ["2024-01-01", "2024-01-02", "2024-01-03"]
DONE_BEFORE = PARTS[2]  # rescaled before dagster dev starts: the backfill skips it
# the metadata table of the selected partition, as a person reads it: rows of a key, its value (and
# an empty cell); the run's table of partitions nested in one of them has rows of six cells
METADATA = (
    "Object.fromEntries([...document.querySelectorAll('tr')].map(r => [...r.children])"
    ".filter(c => c.length === 2 || c.length === 3).map(c => [c[0].innerText.trim(), c[1].innerText.trim()]))"
)


def _config(path: Path, warehouse: str) -> Path:
    raw = {
        "warehouse": {"uri": warehouse},
        "tables": [
            demo_orders_table(sensor={"minimum_interval_seconds": 5}, maintenance={"rescale": {"target_buckets": 3}})
        ],
        "downstream": [demo_orders_by_day()],
    }
    path.write_text(yaml.safe_dump(raw))
    return path


def _orders(warehouse: str, config: Path) -> tuple[Catalog, pa.Table]:
    """demo.orders as the config creates it, three batches written, one partition already at 3
    buckets; returns its rows."""
    from jobs.tables import TableSpec, ensure_table

    spec = parse_tables_config(yaml.safe_load(config.read_text())).table("demo.orders")
    catalog = Catalog(warehouse)
    table = ensure_table(
        catalog, TableSpec(spec.name, spec.arrow_schema(), spec.primary_keys, spec.partition_keys, spec.options)
    )
    source = orders()
    for b in range(3):
        table.write_arrow(source.batch(b))
    catalog.get_table("demo.orders").maintenance.rescale(bucket=3, partitions=[{"dt": DONE_BEFORE}])
    return catalog, _sorted(catalog.get_table("demo.orders").to_arrow())


def _sorted(rows: pa.Table) -> pa.Table:
    return rows.sort_by([("dt", "ascending"), ("order_id", "ascending")])


def test_a_backfill_launched_in_the_ui_rescales_and_the_ui_says_what_happened(tmp_path, warehouse, request):
    config = _config(tmp_path / "tables.yaml", warehouse)
    catalog, before = _orders(warehouse, config)
    assert catalog.get_table("demo.orders").latest_snapshot().id == 4
    started = time.monotonic()
    artifacts = tmp_path / "screenshots"
    with (
        dagster_dev(tmp_path, config) as (url, keys, _workdir),
        Browser(tmp_path, artifacts=artifacts) as browser,
    ):
        try:
            assert ["demo", "orders", "rescale"] in keys
            _checks_on_demand(browser, url)
            backfill = _backfill_from_the_materialize_dialog(browser, url)
            rescaled = catalog.get_table("demo.orders").latest_snapshot().id
            _no_downstream_run_for_the_rescale(browser, url, rescaled)
            in_partition = before.filter(pc.equal(before["dt"], PARTS[1])).num_rows
            _each_partition_its_own_metadata(browser, url, rescaled, in_partition)
            _health_check_passed(browser, url)
        except BaseException:
            _keep(browser, artifacts, request.node.name)
            raise
    # The table, read with lake_core: the two partitions are at 3 buckets, the rows unchanged.
    table = catalog.get_table("demo.orders")
    assert rescaled == 5 and table.latest_snapshot().commit_kind.value == "OVERWRITE"
    assert bucket_counts(table) == {PARTS[0]: {2}, PARTS[1]: {3}, PARTS[2]: {3}}
    assert _sorted(table.to_arrow()).equals(before)
    # The maintenance ledger says why the run happened: the backfill launched in the UI.
    [entry] = read_ledger(catalog, table="demo.orders", operation="rescale").to_pylist()
    assert entry["status"] == "succeeded" and entry["snapshot_id"] == rescaled
    assert entry["reason"] == f"backfill {backfill['id']} for 2 partition(s): dt={PARTS[1]}, dt={PARTS[2]}"
    print(f"browser rescale test: {time.monotonic() - started:.0f}s")


def _checks_on_demand(browser: Browser, url: str) -> None:
    """Issue 27 item 3: a check that nothing evaluated yet, executed on its own from the asset's
    Checks tab, turns from Not Evaluated to passed. A health check of the table (launched, its
    result read at the end) and the rescale asset's blocking check: the asset has partitions, the
    check runs with none and rescales nothing."""
    browser.goto(f"{url}/assets/demo/orders?view=checks")
    browser.wait_for("document.body.innerText.includes('sorted_runs')", "the table's checks")
    browser.click_text("sorted_runs", "the sorted_runs check")
    browser.wait_for("/sorted_runs\\s+Execute/.test(document.body.innerText)", "sorted_runs selected")
    assert "Not Evaluated" in browser.text()
    browser.click_text("Execute", "Execute on sorted_runs", selector="button")
    browser.wait_for("document.body.innerText.includes('Launched run')", "the sorted_runs run launched")
    browser.goto(f"{url}/assets/demo/orders/rescale?view=checks")
    browser.wait_for(
        "/rescale_verified\\s+Not Evaluated/.test(document.body.innerText)", "rescale_verified not evaluated"
    )
    browser.screenshot("rescale-check-not-evaluated")
    browser.click_text("Execute", "Execute on rescale_verified", selector="button")
    browser.wait_for(
        "/Evaluation result\\s+Passed/.test(document.body.innerText)"
        " && document.body.innerText.includes('no rescale of demo.orders has committed a snapshot: nothing to verify')",
        "rescale_verified executed alone to pass",
        240,
    )
    browser.screenshot("rescale-check-passed")


def _backfill_from_the_materialize_dialog(browser: Browser, url: str) -> dict:
    """The table's asset group → the rescale node → Materialize selected → two partitions → Launch
    backfill; waits on the backfill's page until it succeeds."""
    browser.goto(f"{url}/locations/lake/asset-groups/demo__orders")
    browser.wait_for("document.querySelector('[data-tooltip=\"rescale\"]')", "the rescale asset node")
    browser.wait_for("document.body.innerText.includes('3 partitions')", "the sensor's 3 partitions", 180)
    browser.screenshot("group")
    # Select the rescale node (the group holds the other maintenance assets too), then
    # Materialize → choose two partitions → Launch backfill.
    browser.click("document.querySelector('[data-tooltip=\"rescale\"]')", "the rescale asset node")
    browser.click("window.__lake.startsWith('Materialize selected')", "the Materialize selected button")
    # demo.orders was written outside Dagster: the UI asks whether to go on without its materialization
    asked = browser.wait_for(
        "document.body.innerText.includes('Are you sure?') ? 'asked'"
        " : document.body.innerText.includes('materialize demo / orders / rescale')",
        "the launch dialog or the question about the upstream asset",
    )
    if asked == "asked":
        assert "have not been materialized yet" in browser.text()
        browser.click_text("Confirm", "Confirm", selector="button")
    browser.wait_for(
        "document.body.innerText.includes('materialize demo / orders / rescale')", "the rescale launch dialog"
    )
    browser.click_text("Select a partition or create one", "the partition picker")
    # the picker's list is complete (and has stopped moving) once it offers to select all three
    browser.wait_for("document.body.innerText.includes('Select all (3)')", "the picker's list")
    time.sleep(1)
    for picked, part in enumerate((PARTS[1], PARTS[2]), start=1):
        browser.click_text(f"dt={part}")
        browser.wait_for(f"document.body.innerText.includes('{picked} partition')", f"{picked} partition(s) picked")
    # Close the picker by clicking the dialog's title (Escape may close the whole dialog).
    browser.click(
        "[...document.querySelectorAll('div, span, h4')].filter(e => window.__lake.visible(e)"
        " && e.textContent.includes('Launch runs to materialize')).pop()",
        "the dialog's title",
    )
    browser.wait_for(
        "document.body.innerText.includes('2 partitions') && !document.body.innerText.includes('Filter partitions')",
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
        "document.body.innerText.includes('100% completed') && /Status\\s+Succeeded/.test(document.body.innerText)",
        "the backfill to succeed",
        600,
    )
    browser.screenshot("succeeded")
    return backfill


def _no_downstream_run_for_the_rescale(browser: Browser, url: str, rescaled: int) -> None:
    """Issue 27 item 1: the snapshot sensor's tick that saw the rescale's snapshot says, in its log,
    that it requests nothing and why; the run list holds the one downstream run of the table's data
    (snapshot 3), whose tags name the earlier rescale snapshot it skipped (4), and none for 4 or 5."""
    browser.goto(f"{url}/locations/lake/sensors/lake__snapshot_sensor")
    first_tick = (
        f"[...document.querySelectorAll('tr')].filter(r => r.innerText.includes('\"snapshot\": {rescaled},')).pop()"
    )
    browser.wait_for(first_tick, f"a snapshot-sensor tick that saw snapshot {rescaled}", 120)
    browser.click(
        f"[...({first_tick}).querySelectorAll('a, button, span')]"
        ".filter(e => e.textContent.trim() === 'View logs').pop()",
        "View logs of that tick",
    )
    said = (
        f"demo.orders: snapshot {rescaled}: OVERWRITE of a bucket rescale (same rows in new buckets): requests nothing"
    )
    browser.wait_for(f"document.body.innerText.includes({json.dumps(said)})", "the tick's log saying why")
    browser.screenshot("sensor-tick-log")
    browser.goto(f"{url}/runs?q%5B0%5D=job%3Ademo__orders__downstream")
    browser.wait_for(
        "document.body.innerText.includes('lake/snapshots-skipped: snapshot 4: OVERWRITE of a bucket rescale')",
        "the downstream run's tags",
    )
    text = browser.text()
    assert "lake/snapshot: 3" in text and "lake/snapshot-range: 3" in text
    assert "lake/snapshot: 4" not in text and f"lake/snapshot: {rescaled}" not in text
    browser.screenshot("downstream-runs")
    runs = graphql(url, DOWNSTREAM_RUNS)["data"]["runsOrError"]["results"]
    assert [{t["key"]: t["value"] for t in r["tags"]}["lake/snapshot"] for r in runs] == ["3"]


def _each_partition_its_own_metadata(browser: Browser, url: str, rescaled: int, rows: int) -> None:
    """Issue 27 item 4: on the rescale asset's Partitions tab, each partition of the backfill shows
    its own figures; the skipped one says why and has no snapshot."""
    browser.goto(f"{url}/assets/demo/orders/rescale?view=partitions")
    browser.wait_for("document.body.innerText.includes('Materialized (2)')", "two partitions materialized")
    figures = {}
    for part in (PARTS[1], PARTS[2]):
        browser.click_text(f"dt={part}", f"partition dt={part}")
        browser.wait_for(
            f"(() => {{ const m = {METADATA}; return m.partition === 'dt={part}' && m.buckets_after; }})()",
            f"the metadata of dt={part}",
        )
        browser.screenshot(f"partition-{part}")
        figures[part] = browser.evaluate(METADATA)
    done, skipped = figures[PARTS[1]], figures[PARTS[2]]
    assert (done["buckets_before"], done["buckets_after"], done["snapshot_id"]) == ("2", "3", str(rescaled))
    assert (done["rows"], done["skipped"]) == (str(rows), "null")
    assert done["snapshot"].endswith(f"snapshot/snapshot-{rescaled}")
    assert (skipped["buckets_before"], skipped["buckets_after"], skipped["rows"]) == ("3", "3", "0")
    assert (skipped["snapshot_id"], skipped["snapshot"], skipped["skipped"]) == ("null", "null", "already at 3 buckets")
    # the run's totals are there too, apart, under run.*
    assert done["run.partitions_rescaled"] == skipped["run.partitions_rescaled"] == "1"


def _health_check_passed(browser: Browser, url: str) -> None:
    """The health check launched at the start passed (nothing else evaluates it here)."""
    browser.goto(f"{url}/assets/demo/orders?view=checks")
    browser.wait_for("document.body.innerText.includes('sorted_runs')", "the table's checks")
    browser.click_text("sorted_runs", "the sorted_runs check")
    browser.wait_for(
        "/Evaluation result\\s+Passed/.test(document.body.innerText)"
        " && document.body.innerText.includes('max sorted runs per bucket')",
        "sorted_runs passed",
        120,
    )
    browser.screenshot("health-check-passed")


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
