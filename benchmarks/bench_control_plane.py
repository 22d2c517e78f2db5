"""Control-plane benchmark: how the Dagster code location scales with the number of tables.

1. **Definitions load**: a ``tables.yaml`` with N copies of the demo table (``demo.orders_0000``,
   ..., each with the repository's maintenance policy and one derived table) is written into a temp
   dir; a fresh Python process imports the code location, loads the config, builds the definitions
   (``build_definitions``) and resolves the repository (``Definitions.get_repository_def()``, what
   the webserver and the daemon do). Reported per N: import, config, build and resolve seconds,
   and the numbers of assets, asset checks, sensors and schedules.
2. **Sensor tick** over N unchanged local tables (each written once): one tick of the snapshot
   sensor and one of the health sensor, after a first tick that brought every table's cursor up to
   date, so the timed tick reads each table's ``LATEST`` hint and finds nothing new; then one more
   commit to every table (from another process) and a health tick that re-reads them all.
3. **Ticks on S3** (``--tick-s3 N``, moto): ticks bounded by ``--tick-budget``, the tables not
   reached carried to the next tick; then the unchanged tick with the ``LATEST`` hints read one
   after another and read ahead (``orchestration.defs.ticks.HINT_READS`` at a time), at moto's own
   speed and with ``--s3-round-trip-ms`` (default 20) added to every request, as S3's round trips.

No assertions: figures only (docs/service/many-tables.md lists them).

    .venv/bin/python -m benchmarks.bench_control_plane [--tables 10 100 500] [--tick 500] [--runs 1]
    .venv/bin/python -m benchmarks.bench_control_plane --tables --tick 0 --tick-s3 200 --tick-budget 2   # S3 (moto)
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import os
import re
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


def write_config(n: int, directory: Path, warehouse: str | None = None, extra: dict | None = None) -> Path:
    """``tables.yaml`` with ``n`` copies of the repository's demo table (and derived table);
    ``extra``: top-level settings merged in (``control``) and warehouse settings (``s3``)."""
    raw = yaml.safe_load((ROOT / "tables.yaml").read_text())
    base, derived = raw["tables"][0], raw["downstream"][0]
    raw["tables"], raw["downstream"] = [], []
    for name in table_names(n):
        table = copy.deepcopy(base)
        table["name"] = name
        raw["tables"].append(table)
        raw["downstream"].append({**derived, "name": f"{name}_by_day", "source_table": name})
    raw["warehouse"]["uri"] = warehouse or str(directory / "lake")
    for key, value in (extra or {}).items():
        if key == "s3":
            raw["warehouse"]["s3"] = value
        else:
            raw[key] = value
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

    import lake_core  # noqa: PLC0415
    from lake_core import Catalog  # noqa: PLC0415
    from orchestration.config import load_tables_config  # noqa: PLC0415
    from orchestration.definitions import build_definitions  # noqa: PLC0415
    from orchestration.defs.naming import HEALTH_SENSOR, SNAPSHOT_SENSOR  # noqa: PLC0415

    warnings.filterwarnings("ignore")
    out: dict = {"tables": n}
    with tempfile.TemporaryDirectory() as tmp:
        warehouse = (Path(tmp) / "lake").resolve()
        warehouse.mkdir()
        catalog = Catalog(warehouse.as_uri())
        started = time.perf_counter()
        _write_tables(catalog, n)
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
            # Every table gets one more commit from another process (a writer's new manifests are
            # not in this process's cache, its older ones are), then one health tick re-reads them all.
            started = time.perf_counter()
            subprocess.run([sys.executable, "-c", _WRITE_ONCE_MORE, warehouse.as_uri(), str(n)], check=True)
            print(f"tick: one more commit to each of {n} tables in {time.perf_counter() - started:.1f} s", flush=True)
            stats = getattr(lake_core, "manifest_cache_stats", None)  # None: a lake_core without the cache
            before = stats() if stats else None
            result, seconds = _tick(defs, HEALTH_SENSOR, instance, result.cursor)
            out["health_changed_tick_s"] = seconds
            if stats and before:
                after = stats()
                print(
                    f"tick: manifests and lists of the changed tables: {after.hits - before.hits} from the "
                    f"process's cache, {after.misses - before.misses} read and decoded",
                    flush=True,
                )
            out["health_changed_says"] = result.skip_reason.skip_message if result.skip_reason else ""
    print(
        f"tick over {n} tables: snapshot sensor first {out['snapshot_first_tick_s']:.2f} s, unchanged "
        f"{out['snapshot_unchanged_tick_s']:.3f} s; health sensor first {out['health_first_tick_s']:.2f} s, "
        f"unchanged {out['health_unchanged_tick_s']:.3f} s, every table changed {out['health_changed_tick_s']:.2f} s",
        flush=True,
    )
    print(f"  health tick after the commits: {out['health_changed_says'][-200:]}")
    print(f"  snapshot tick: {out['snapshot_tick_says']}\n  health tick: {out['health_tick_says'][-200:]}")
    return out


_WRITE_ONCE_MORE = """
import sys
from lake_core import Catalog
from benchmarks.bench_control_plane import table_names
from orchestration.demo.source import orders
catalog = Catalog(sys.argv[1])
batch = orders(orders_per_batch=5).batch(1)
for name in table_names(int(sys.argv[2])):
    catalog.get_table(name).write_arrow(batch)
"""


def _write_tables(catalog, n: int) -> None:
    from orchestration.demo.source import ORDERS_SCHEMA, orders  # noqa: PLC0415

    catalog.create_database("demo", ignore_if_exists=True)
    batch = orders(orders_per_batch=5).batch(0)
    for name in table_names(n):
        table = catalog.create_table(
            name,
            schema=ORDERS_SCHEMA,
            primary_keys=["dt", "order_id"],
            partition_keys=["dt"],
            options={"bucket": "2", "rowkind.field": "op"},
        )
        table.write_arrow(batch)


@contextlib.contextmanager
def _hint_reads(ticks, n: int):
    """The ticks read ``n`` LATEST hints at a time (1: one after another)."""
    saved, ticks.HINT_READS = ticks.HINT_READS, n
    try:
        yield
    finally:
        ticks.HINT_READS = saved


def bench_tick_s3(n: int, budget_s: float, s3_round_trip_ms: float = 0.0) -> dict:
    """Snapshot-sensor ticks over ``n`` tables on the S3 test server (moto) with a tick budget of
    ``budget_s``: how many tables each tick reaches within it, and that the ones it did not reach are
    visited first by the next tick, until every table has been seen; then an unchanged tick, with the
    hints read one after another and read ahead, at moto's speed and with ``s3_round_trip_ms`` added
    to every request."""
    import warnings  # noqa: PLC0415

    import dagster as dg  # noqa: PLC0415

    from lake_core import Catalog  # noqa: PLC0415
    from orchestration.config import load_tables_config  # noqa: PLC0415
    from orchestration.definitions import build_definitions  # noqa: PLC0415
    from orchestration.defs import ticks  # noqa: PLC0415
    from orchestration.defs.naming import SNAPSHOT_SENSOR  # noqa: PLC0415
    from orchestration.defs.ticks import LakeCursor  # noqa: PLC0415
    from tests.fixtures.s3 import start_s3_server  # noqa: PLC0415 - the test suite's moto server

    warnings.filterwarnings("ignore")
    server = start_s3_server()
    try:
        uri = f"s3://{server.create_bucket()}/lake"
        options = server.storage_options()
        os.environ.update(
            BENCH_S3_ENDPOINT=options["endpoint_url"], BENCH_S3_KEY=options["key"], BENCH_S3_SECRET=options["secret"]
        )
        started = time.perf_counter()
        catalog = Catalog(uri, storage_options=options)
        _write_tables(catalog, n)
        print(f"tick on S3: {n} tables written in {time.perf_counter() - started:.1f} s", flush=True)
        extra = {
            "control": {"tick_budget": f"{budget_s:g} s"},
            "s3": {
                "endpoint_url_env": "BENCH_S3_ENDPOINT",
                "access_key_env": "BENCH_S3_KEY",
                "secret_key_env": "BENCH_S3_SECRET",
                "region": "us-east-1",
                "path_style": True,
            },
        }
        with tempfile.TemporaryDirectory() as tmp:
            defs = build_definitions(load_tables_config(write_config(n, Path(tmp), uri, extra)))
        out: dict = {"tables": n, "budget_s": budget_s, "ticks": []}
        with dg.DagsterInstance.ephemeral() as instance:
            cursor, seen = None, set()
            for _ in range(50):  # until every table has been visited once
                result, seconds = _tick(defs, SNAPSHOT_SENSOR, instance, cursor)
                cursor = result.cursor
                entries = LakeCursor.decode(cursor).tables if cursor else {}
                seen |= set(entries)
                for request in result.run_requests:  # the runs "finish": their leases are released
                    catalog.get_table(request.tags["lake/table"]).maintenance.release_lease(
                        consumer_id=request.tags["lake/lease"]
                    )
                out["ticks"].append(
                    {"seconds": seconds, "requested": len(result.run_requests), "tables_known": len(entries)}
                )
                print(
                    f"  tick {len(out['ticks'])}: {seconds:.2f} s, {len(result.run_requests)} run(s) requested, "
                    f"{len(entries)} of {n} tables in the cursor",
                    flush=True,
                )
                if len(entries) >= n:
                    break
            # the ticks after the runs: each sweeps its tables' released leases (a few reads more per
            # table) within the budget; one full pass over the tables, then the timed unchanged tick
            swept = sweeps = 0
            while swept < n and sweeps < 200:
                result, seconds = _tick(defs, SNAPSHOT_SENSOR, instance, cursor)
                cursor, sweeps = result.cursor, sweeps + 1
                says = result.skip_reason.skip_message if result.skip_reason else ""
                swept += int(m.group(1)) if (m := re.search(r"visited (\d+) of", says)) else 0
            print(f"  {sweeps} tick(s) swept the leases", flush=True)
            out["unchanged"] = []
            # The unchanged tick, from the same cursor, with the hints read one after another (as
            # before they were read ahead) and read ahead; with moto's own speed and with a round trip
            # added to every request (moto answers from this process in about a millisecond of CPU;
            # S3 takes tens of ms, spent waiting).
            for round_trip_ms in sorted({0.0, s3_round_trip_ms}):
                server.round_trip.seconds = round_trip_ms / 1000
                runs: dict[int, list[tuple[float, int]]] = {1: [], ticks.HINT_READS: []}
                for _ in range(3):  # alternating, medians: the machine's load moves
                    for hint_reads in runs:
                        with _hint_reads(ticks, hint_reads):
                            result, seconds = _tick(defs, SNAPSHOT_SENSOR, instance, cursor)
                        says = result.skip_reason.skip_message if result.skip_reason else ""
                        visited = int(m.group(1)) if (m := re.search(r"visited (\d+) of", says)) else 0
                        runs[hint_reads].append((seconds, visited))
                for hint_reads, samples in runs.items():
                    per_table = statistics.median(1000 * s / max(v, 1) for s, v in samples)
                    out["unchanged"].append({"round_trip_ms": round_trip_ms, "hint_reads": hint_reads, "runs": samples})
                    print(
                        f"  unchanged tick, round trip +{round_trip_ms:g} ms, hints {hint_reads} at a time: median "
                        f"{per_table:.1f} ms a table; (s, tables visited): "
                        + ", ".join(f"({s:.2f}, {v})" for s, v in samples),
                        flush=True,
                    )
            server.round_trip.seconds = 0.0
        return out
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tables", type=int, nargs="*", default=[10, 100, 500])
    parser.add_argument("--tick", type=int, default=500, help="tables of the sensor-tick benchmark (0: skip it)")
    parser.add_argument("--runs", type=int, default=1, help="fresh processes per table count (median)")
    parser.add_argument("--tick-s3", type=int, default=0, help="tables of the S3 tick benchmark (0: skip it)")
    parser.add_argument("--tick-budget", type=float, default=2.0, help="the S3 ticks' budget in seconds")
    parser.add_argument(
        "--s3-round-trip-ms", type=float, default=20.0, help="added to every S3 request in the unchanged ticks"
    )
    args = parser.parse_args()
    rows = bench_load(args.tables, args.runs)
    if len(rows) > 1:
        first, last = rows[0], rows[-1]
        print(f"load({last['tables']}) / load({first['tables']}) = {last['total_s'] / first['total_s']:.1f}x")
    if args.tick:
        bench_tick(args.tick)
    if args.tick_s3:
        bench_tick_s3(args.tick_s3, args.tick_budget, args.s3_round_trip_ms)


if __name__ == "__main__":
    main()
