"""A real browser against a real ``dagster dev``: the asset graph shows the configured tables.

``dagster dev`` runs from a scratch directory holding a copy of the checkout's dagster.yaml (so
its storage lands there, not in the checkout) with the checkout's workspace.yaml, and a tables
config pointing at a temp warehouse. Every process it or Chromium starts lives in its own process
group, which the fixture kills and waits for.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.dagster, pytest.mark.slow]

REPO_ROOT = Path(__file__).resolve().parents[2]
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run", "--window-size=1400,900",
    "--virtual-time-budget=20000",
]


def _chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed; .ci/run must `apt-get install -y chromium`")
        pytest.skip("chromium is not installed (apt-get install -y chromium)")
    return exe


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop_group(proc: subprocess.Popen, timeout: float = 30) -> None:
    """SIGTERM the whole process group, then SIGKILL whatever is left; wait until it is gone."""
    pgid = proc.pid  # start_new_session=True: the group id is the leader's pid
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 10)):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            proc.poll()
            try:
                os.killpg(pgid, 0)  # anyone left in the group?
            except ProcessLookupError:
                return
            time.sleep(0.2)
    proc.wait(timeout=10)
    with pytest.raises(ProcessLookupError):
        os.killpg(pgid, 0)


def _graphql(url: str, query: str) -> dict:
    req = urllib.request.Request(f"{url}/graphql", data=json.dumps({"query": query}).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read())


@pytest.fixture
def dagster_dev(tmp_path, warehouse, write_tables_config):
    workdir = tmp_path / "dev"
    workdir.mkdir()
    shutil.copy(REPO_ROOT / "dagster.yaml", workdir / "dagster.yaml")
    env = {k: v for k, v in os.environ.items() if k != "DAGSTER_HOME"}
    env.update(
        LAKE_TABLES_CONFIG=str(write_tables_config(warehouse)),
        PYTHONPATH=os.pathsep.join([str(REPO_ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep),
    )
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    log = (tmp_path / "dagster-dev.log").open("wb")
    dagster = Path(sys.executable).with_name("dagster")
    proc = subprocess.Popen(
        [str(dagster), "dev", "-w", str(REPO_ROOT / "workspace.yaml"), "-h", "127.0.0.1", "-p", str(port)],
        cwd=workdir, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        start_new_session=True,  # its own group: webserver, daemon and code servers die with it
    )
    try:
        deadline = time.monotonic() + 180
        keys: list = []
        while time.monotonic() < deadline and not keys:
            assert proc.poll() is None, (tmp_path / "dagster-dev.log").read_text()[-3000:]
            try:
                data = _graphql(url, "{ assetNodes { assetKey { path } } }")
                keys = [n["assetKey"]["path"] for n in (data.get("data") or {}).get("assetNodes") or []]
            except OSError:
                pass
            time.sleep(1)
        assert keys, "dagster dev did not serve the code location in time:\n" + (tmp_path / "dagster-dev.log").read_text()[-3000:]
        yield url, keys, workdir
    finally:
        _stop_group(proc)
        log.close()


def _render(chromium: str, tmp_path: Path, url: str, name: str) -> tuple[str, Path]:
    """The page's DOM after scripts ran, and its screenshot; both kept in tmp_path for a post-mortem."""
    shot = tmp_path / f"{name}.png"
    browser = subprocess.Popen(
        [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / f'chromium-{name}'}", f"--screenshot={shot}",
         "--dump-dom", url],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, start_new_session=True,
    )
    try:
        dom, _ = browser.communicate(timeout=120)
    finally:
        _stop_group(browser, timeout=10)
    html = dom.decode("utf-8", "replace")
    (tmp_path / f"{name}.html").write_text(html)
    return html, shot


def test_asset_graph_renders_the_table_assets(dagster_dev, tmp_path):
    chromium = _chromium()
    url, keys, workdir = dagster_dev
    assert sorted(keys) == [["demo", "orders"], ["demo", "orders_by_day"]]
    # The global lineage shows one asset group per table (group nodes carry their name as a tooltip).
    html, shot = _render(chromium, tmp_path, f"{url}/asset-groups", "lineage")
    assert "Global asset lineage" in html
    for group in ("demo__orders", "demo__orders_by_day"):
        assert f'data-tooltip="{group}"' in html, f"asset group {group} not rendered"
    assert shot.exists() and shot.stat().st_size > 10_000
    # A table's group shows its assets: graph nodes carry the asset name as a tooltip.
    html, shot = _render(chromium, tmp_path, f"{url}/locations/lake/asset-groups/demo__orders", "group")
    assert 'data-tooltip="orders"' in html, "asset node orders not rendered in its group"
    assert 'data-tooltip="orders_by_day"' not in html  # the derived table is a group of its own
    assert "Never materialized" in html
    assert shot.exists() and shot.stat().st_size > 10_000
    # dagster dev stored its state in the scratch dir, per dagster.yaml (not in a temp DAGSTER_HOME).
    assert (workdir / ".dagster" / "storage").is_dir()
