"""Where Spark runs, measured: embedded local mode against a long-lived Spark Connect server.

    .venv/bin/python -m benchmarks.bench_spark_modes [--runs 3] [--rows 2250000] [--only dagster|compaction]

(a) ``dagster asset materialize`` of a table's ``compaction`` asset (``full: true``), each run a fresh
    command, as the daemon launches runs: ``noop`` finds nothing to compact (planned from metadata,
    Spark is never started nor attached), ``tiny`` compacts one small new commit (Spark starts a
    local JVM, or attaches to the server). Wall time of the command (process start, code location
    load, run, exit) and the step's duration from the run's event log.
(b) A full compaction of ``rows`` + 20 % updates (2.7M rows in by default, ``bucket=4``) in three
    long-lived workers, warm: lake_core in-process (2 threads), ``jobs.compact.compact_on_spark``
    over Spark Connect, and on an embedded ``local[2]`` session. Each run compacts a fresh copy of one
    prepared table; rows/s and the ratio to in-process.

Modes alternate within each run, in one sitting, so a change of load hits all of them alike. The
Connect server (``local[2]`` inside it) is started and stopped here (:mod:`jobs.connect_server`).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO_ROOT = Path(__file__).resolve().parents[1]
DAGSTER = Path(sys.executable).parent / "dagster"
TABLE = "db.t"
MODES = ("in-process", "connect", "local[2]")


# -- (a) a maintenance run through the dagster command ---------------------------------------------


def _dagster_config(warehouse: str, spark: dict) -> dict:
    return {
        "warehouse": {"uri": warehouse},
        "spark": spark,
        "tables": [
            {
                "name": TABLE,
                "schema": {"id": "BIGINT", "qty": "INT", "price": "DOUBLE", "name": "STRING", "ts": "BIGINT"},
                "primary_keys": ["id"],
                "options": {"bucket": 2, "write-only": "true"},
            }
        ],
    }


def _materialize(config: Path, home: Path) -> dict:
    import dagster as dg

    run_config = {"ops": {"lake_maintenance__compaction": {"config": {"full": True}}}}
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LAKE_SPARK_", "DAGSTER_"))}
    env.update(LAKE_TABLES_CONFIG=str(config), DAGSTER_HOME=str(home), PYTHONPATH=str(REPO_ROOT))
    started = time.monotonic()
    done = subprocess.run(
        [str(DAGSTER), "asset", "materialize", "-m", "orchestration.definitions", "-a", "defs"]
        + ["--select", "db/t/compaction", "--config-json", json.dumps(run_config)],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    wall = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"dagster asset materialize failed:\n{done.stderr[-4000:]}")
    with dg.DagsterInstance.from_config(str(home)) as instance:
        [run] = instance.get_runs(limit=1)
        [step] = instance.get_run_step_stats(run.run_id)
        record = instance.get_run_record_by_id(run.run_id)
        [event] = instance.all_logs(run.run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION)
    assert record is not None and record.start_time and record.end_time and step.end_time and step.start_time
    units = event.dagster_event.event_specific_data.materialization.metadata["units_run"].value
    return {
        "wall": wall,
        "run": record.end_time - record.start_time,
        "step": step.end_time - step.start_time,
        "units": units,
    }


def bench_dagster(runs: int, server_url: str, workdir: Path) -> None:
    from benchmarks import workload
    from lake_core import Catalog

    warehouse = workdir / "dagster-wh"
    catalog = Catalog(f"file://{warehouse}")
    catalog.create_database("db")
    table = catalog.create_table(
        TABLE, schema=workload.SCHEMA, primary_keys=["id"], options={"bucket": "2", "write-only": "true"}
    )
    table.write_arrow(workload.initial(20_000))
    table.maintenance.compact(full=True)
    configs = {
        # the Connect server runs on this machine, so a local warehouse is shared with its workers
        "embedded": {"master": "local[2]"},
        "connect": {"remote": server_url, "shared_filesystem": True},
    }
    paths = {}
    for mode, spark in configs.items():
        paths[mode] = workdir / f"tables-{mode}.yaml"
        paths[mode].write_text(yaml.safe_dump(_dagster_config(str(warehouse), spark)))
    results: dict[tuple[str, str], list[dict]] = {}
    for run in range(runs):
        for mode in configs:
            for case in ("noop", "tiny"):
                if case == "tiny":  # one small commit: the next full compaction has one unit to run
                    catalog.get_table(TABLE).write_arrow(workload.updates(20_000, 500 + run))
                home = workdir / f"home-{mode}-{case}-{run}"
                home.mkdir()
                r = _materialize(paths[mode], home)
                assert (r["units"] == 0) == (case == "noop"), r
                results.setdefault((mode, case), []).append(r)
                print(
                    f"run {run + 1} {mode:9s} {case:5s} command {r['wall']:6.2f} s  run {r['run']:6.2f} s  "
                    f"step {r['step']:6.2f} s",
                    flush=True,
                )
    print("\n(a) dagster asset materialize <table>/compaction, medians (min-max):")
    print(f"{'mode':10s} {'case':6s} {'command':>18s} {'run':>18s} {'step':>18s}")
    for (mode, case), rs in results.items():
        cells = []
        for key in ("wall", "run", "step"):
            values = [r[key] for r in rs]
            cells.append(f"{statistics.median(values):6.2f} ({min(values):.1f}-{max(values):.1f})")
        print(f"{mode:10s} {case:6s} " + " ".join(f"{c:>18s}" for c in cells))


# -- (b) a full compaction, warm, in three long-lived workers -----------------------------------------


def _prepare(path: Path, rows: int) -> None:
    from benchmarks import workload
    from lake_core import Catalog

    catalog = Catalog(f"file://{path}")
    catalog.create_database("db")
    table = catalog.create_table(
        TABLE, schema=workload.SCHEMA, primary_keys=["id"], options={"bucket": "4", "write-only": "true"}
    )
    table.write_arrow(workload.initial(rows))
    table.write_arrow(workload.updates(rows, rows // 5))


def worker(mode: str, remote: str | None) -> None:
    """Serve compactions: read a warehouse path per line, compact its table fully, print a JSON line."""
    from lake_core import Catalog

    compact = None
    if mode != "in-process":
        from jobs.compact import compact_on_spark
        from jobs.spark import spark_session

        spark = spark_session(remote=remote) if mode == "connect" else spark_session(master="local[2]")
        compact = lambda path: compact_on_spark(spark, f"file://{path}", TABLE, full=True)
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        path = line.strip()
        started = time.monotonic()
        if compact is None:
            result = Catalog(f"file://{path}").get_table(TABLE).maintenance.compact(full=True)
        else:
            result = compact(path)
        seconds = time.monotonic() - started
        print(json.dumps({"seconds": seconds, "rows_in": result.rows_in, "rows_out": result.rows_out}), flush=True)


def bench_compaction(runs: int, rows: int, server_url: str, workdir: Path) -> None:
    template = workdir / "template"
    started = time.monotonic()
    _prepare(template, rows)
    print(f"prepared {rows:,} rows + {rows // 5:,} updates in {time.monotonic() - started:.1f} s", flush=True)
    workers = {}
    try:
        for mode in MODES:
            args = [sys.executable, "-m", "benchmarks.bench_spark_modes", "--worker", mode, "--remote", server_url]
            env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
            workers[mode] = subprocess.Popen(
                args, cwd=REPO_ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
            )
        for process in workers.values():
            assert process.stdout is not None
            json.loads(process.stdout.readline())  # ready
        results: dict[str, list[dict]] = {mode: [] for mode in MODES}
        # run 0 warms each worker (first job: Python workers start, modules import); not counted
        for run in range(runs + 1):
            for mode, process in workers.items():
                copy = workdir / f"run-{run}-{mode.replace('[', '').replace(']', '')}"
                shutil.copytree(template, copy)
                assert process.stdin is not None and process.stdout is not None
                process.stdin.write(f"{copy}\n")
                process.stdin.flush()
                r = json.loads(process.stdout.readline())
                shutil.rmtree(copy)
                if run:
                    results[mode].append(r)
                print(
                    f"run {run} {mode:10s} {r['seconds']:6.2f} s  {r['rows_in'] / r['seconds']:>12,.0f} rows/s"
                    + ("  (warm-up)" if not run else ""),
                    flush=True,
                )
    finally:
        for process in workers.values():
            if process.stdin is not None:
                process.stdin.close()
        for process in workers.values():
            process.wait(timeout=120)
    rows_in = results["in-process"][0]["rows_in"]
    base = statistics.median(r["seconds"] for r in results["in-process"])
    print(f"\n(b) full compaction of {rows_in:,} rows (bucket=4), medians of {runs} warm runs:")
    print(f"{'runner':12s} {'seconds':>8s} {'rows/s':>12s} {'vs in-process':>14s}")
    for mode in MODES:
        seconds = statistics.median(r["seconds"] for r in results[mode])
        print(f"{mode:12s} {seconds:8.2f} {rows_in / seconds:12,.0f} {base / seconds:13.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--rows", type=int, default=2_250_000, help="initial rows; 20%% updates come on top")
    parser.add_argument("--only", choices=["dagster", "compaction"])
    parser.add_argument("--worker", choices=MODES, help=argparse.SUPPRESS)
    parser.add_argument("--remote", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.remote)
        return

    from jobs.connect_server import start_local_connect_server

    print(f"load average at start: {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} cores")
    workdir = Path(tempfile.mkdtemp(prefix="bench-spark-modes-"))
    started = time.monotonic()
    server = start_local_connect_server(workdir=workdir / "connect")
    try:
        print(f"Spark Connect server up in {time.monotonic() - started:.1f} s at {server.url}", flush=True)
        if args.only in (None, "dagster"):
            bench_dagster(args.runs, server.url, workdir)
        if args.only in (None, "compaction"):
            bench_compaction(args.runs, args.rows, server.url, workdir)
    finally:
        server.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"load average at end: {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
