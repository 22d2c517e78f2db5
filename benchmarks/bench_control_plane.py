"""Control-plane benchmark: how the Dagster code location scales with the number of tables.

1. **Definitions load**: a ``tables.yaml`` with N copies of the demo table (``demo.orders_0000``,
   ..., each with the repository's maintenance policy and one derived table) is written into a temp
   dir; a fresh Python process imports the code location, loads the config, builds the definitions
   (``build_definitions``) and resolves the repository (``Definitions.get_repository_def()``, what
   the webserver and the daemon do). Reported per N: import, config, build and resolve seconds,
   and the numbers of assets, asset checks, sensors and schedules.
2. **Sensor tick** over N unchanged local tables (each written once): one tick of the snapshot
   sensor and one of the health sensor, after a first tick that brought every table's cursor up to
   date, so the timed tick reads each table's ``LATEST`` hint and finds nothing new.

No assertions: figures only (docs/service/many-tables.md lists them).

    .venv/bin/python -m benchmarks.bench_control_plane [--tables 10 100 500] [--tick 500] [--runs 1]
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]

_LOAD = r"""
import json, sys, time, warnings
warnings.filterwarnings("ignore")
t0 = time.perf_counter()
import dagster as dg
from orchestration.config import load_tables_config
from orchestration.definitions import build_definitions
t1 = time.perf_counter()
config = load_tables_config(sys.argv[1])
t2 = time.perf_counter()
defs = build_definitions(config)
t3 = time.perf_counter()
repo = defs.get_repository_def()
t4 = time.perf_counter()
graph = repo.asset_graph
print(json.dumps({
    "import_s": t1 - t0, "config_s": t2 - t1, "build_s": t3 - t2, "resolve_s": t4 - t3,
    "assets": len(graph.get_all_asset_keys()),
    "asset_checks": len(graph.asset_check_keys),
    "sensors": len(repo.sensor_defs), "schedules": len(repo.schedule_defs),
}))
"""


def table_names(n: int) -> list[str]:
    return [f"demo.orders_{i:04d}" for i in range(n)]


def write_config(n: int, directory: Path, warehouse: str | None = None) -> Path:
    """``tables.yaml`` with ``n`` copies of the repository's demo table (and derived table)."""
    raw = yaml.safe_load((ROOT / "tables.yaml").read_text())
    base, derived = raw["tables"][0], raw["downstream"][0]
    raw["tables"], raw["downstream"] = [], []
    for name in table_names(n):
        table = copy.deepcopy(base)
        table["name"] = name
        raw["tables"].append(table)
        raw["downstream"].append({**derived, "name": f"{name}_by_day", "source_table": name})
    raw["warehouse"]["uri"] = warehouse or str(directory / "lake")
    path = directory / "tables.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def load_once(path: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", _LOAD, str(path)], capture_output=True, text=True, env=env, check=True, cwd=ROOT
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def bench_load(counts: list[int], runs: int) -> list[dict]:
    rows = []
    for n in counts:
        with tempfile.TemporaryDirectory() as tmp:
            path = write_config(n, Path(tmp))
            samples = [load_once(path) for _ in range(runs)]
        row = {k: statistics.median(s[k] for s in samples) for k in samples[0]}
        row["total_s"] = row["import_s"] + row["config_s"] + row["build_s"] + row["resolve_s"]
        row["tables"] = n
        rows.append(row)
        print(
            f"{n:5d} tables: load {row['total_s']:.2f} s (import {row['import_s']:.2f}, config {row['config_s']:.2f}, "
            f"build {row['build_s']:.2f}, resolve {row['resolve_s']:.2f}); {row['assets']:.0f} assets, "
            f"{row['asset_checks']:.0f} checks, {row['sensors']:.0f} sensors, {row['schedules']:.0f} schedules",
            flush=True,
        )
    return rows


def _tick(defs, sensor_name: str, instance, cursor: str | None):
    import dagster as dg  # noqa: PLC0415 - the load benchmark imports dagster in fresh processes only

    ctx = dg.build_sensor_context(instance=instance, cursor=cursor, resources={"lake": defs.resources["lake"]})
    started = time.perf_counter()
    result = defs.resolve_sensor_def(sensor_name)(ctx)
    return result, time.perf_counter() - started


def bench_tick(n: int, runs: int = 3) -> dict:
    """One snapshot-sensor tick and one health-sensor tick over ``n`` unchanged local tables."""
    import warnings  # noqa: PLC0415

    import dagster as dg  # noqa: PLC0415

    from lake_core import Catalog  # noqa: PLC0415
    from orchestration.config import load_tables_config  # noqa: PLC0415
    from orchestration.definitions import build_definitions  # noqa: PLC0415
    from orchestration.defs.naming import HEALTH_SENSOR, SNAPSHOT_SENSOR  # noqa: PLC0415
    from orchestration.demo.source import ORDERS_SCHEMA, orders  # noqa: PLC0415

    warnings.filterwarnings("ignore")
    out: dict = {"tables": n}
    with tempfile.TemporaryDirectory() as tmp:
        warehouse = (Path(tmp) / "lake").resolve()
        warehouse.mkdir()
        catalog = Catalog(warehouse.as_uri())
        catalog.create_database("demo")
        batch = orders(orders_per_batch=5).batch(0)
        started = time.perf_counter()
        for name in table_names(n):
            table = catalog.create_table(
                name,
                schema=ORDERS_SCHEMA,
                primary_keys=["dt", "order_id"],
                partition_keys=["dt"],
                options={"bucket": "2", "rowkind.field": "op"},
            )
            table.write_arrow(batch)
        print(f"tick: {n} tables written in {time.perf_counter() - started:.1f} s", flush=True)
        defs = build_definitions(load_tables_config(write_config(n, Path(tmp), warehouse.as_uri())))
        with dg.DagsterInstance.ephemeral() as instance:
            # Snapshot sensor: the first tick requests one run per table (and leases its snapshot); the
            # runs "finish" (leases released), the next tick sweeps; then every table is unchanged.
            first, seconds = _tick(defs, SNAPSHOT_SENSOR, instance, None)
            out["snapshot_first_tick_s"] = seconds
            for request in first.run_requests:
                catalog.get_table(request.tags["lake/table"]).maintenance.release_lease(
                    consumer_id=request.tags["lake/lease"]
                )
            swept, _ = _tick(defs, SNAPSHOT_SENSOR, instance, first.cursor)
            cursor = swept.cursor
            times = []
            for _ in range(runs):
                result, seconds = _tick(defs, SNAPSHOT_SENSOR, instance, cursor)
                assert not result.run_requests
                times.append(seconds)
            out["snapshot_unchanged_tick_s"] = statistics.median(times)
            out["snapshot_tick_says"] = result.skip_reason.skip_message if result.skip_reason else ""
            # Health sensor: the first tick reads every table's health; then every table is unchanged.
            first, seconds = _tick(defs, HEALTH_SENSOR, instance, None)
            out["health_first_tick_s"] = seconds
            times = []
            for _ in range(runs):
                result, seconds = _tick(defs, HEALTH_SENSOR, instance, first.cursor)
                times.append(seconds)
            out["health_unchanged_tick_s"] = statistics.median(times)
            out["health_tick_says"] = result.skip_reason.skip_message if result.skip_reason else ""
    print(
        f"tick over {n} tables: snapshot sensor first {out['snapshot_first_tick_s']:.2f} s, unchanged "
        f"{out['snapshot_unchanged_tick_s']:.3f} s; health sensor first {out['health_first_tick_s']:.2f} s, "
        f"unchanged {out['health_unchanged_tick_s']:.3f} s",
        flush=True,
    )
    print(f"  snapshot tick: {out['snapshot_tick_says']}\n  health tick: {out['health_tick_says'][-200:]}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tables", type=int, nargs="*", default=[10, 100, 500])
    parser.add_argument("--tick", type=int, default=500, help="tables of the sensor-tick benchmark (0: skip it)")
    parser.add_argument("--runs", type=int, default=1, help="fresh processes per table count (median)")
    args = parser.parse_args()
    rows = bench_load(args.tables, args.runs)
    if len(rows) > 1:
        first, last = rows[0], rows[-1]
        print(f"load({last['tables']}) / load({first['tables']}) = {last['total_s'] / first['total_s']:.1f}x")
    if args.tick:
        bench_tick(args.tick)


if __name__ == "__main__":
    main()
