"""The demo pipeline on the embedded default: ``python -m orchestration.demo``.

One run = ingest the next batch of every configured source (the Spark write asset), one tick of
each table's snapshot sensor, the downstream runs it requests (Spark reads that exact snapshot
through ``spark.read.format("paimon")`` and writes the derived table), then a summary. Runs are
recorded in the same Dagster storage that ``dagster dev`` (started from the checkout) shows.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import dagster as dg
from dagster._core.instance.ref import InstanceRef  # not exported at top level; stable for years

from orchestration.assets import table_asset_key
from orchestration.config import TablesConfig, load_tables_config
from orchestration.definitions import DEFAULT_CONFIG, build_definitions

REPO_ROOT = Path(__file__).resolve().parents[1]


@dataclass
class DemoSummary:
    ingested: dict[str, dict] = field(default_factory=dict)  # table → write metadata
    requests: list[str] = field(default_factory=list)  # run keys requested by the sensors
    downstream: dict[str, dict] = field(default_factory=dict)  # derived table → write metadata
    tables: dict[str, int] = field(default_factory=dict)  # table → live rows at its latest snapshot


# The summary lines below say what happened; Dagster's per-event DEBUG lines stay in its storage (UI).
_QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


def _metadata(result: dg.ExecuteInProcessResult, key: dg.AssetKey) -> dict:
    events = result.asset_materializations_for_node(key.to_python_identifier())
    return {k: v.value for k, v in events[-1].metadata.items()} if events else {}


def run_demo(
    config: TablesConfig, instance: dg.DagsterInstance, *, batches: int = 1, say: Callable[[str], None] = print
) -> DemoSummary:
    defs = build_definitions(config)
    lake = defs.resources["lake"]
    summary = DemoSummary()
    with dg.build_resources({"lake": lake}) as res:  # resolves EnvVar credentials, as a run would
        catalog = res.lake.catalog()

    def latest_id(name: str) -> int | None:
        if not catalog.table_exists(name):
            return None
        snap = catalog.get_table(name).latest_snapshot()
        return snap.id if snap else None

    # The sensors' cursors: what they had seen before this ingest.
    cursors = {t.name: latest_id(t.name) for t in config.tables}

    for table in config.tables:
        if table.source is None:
            continue
        asset = defs.resolve_assets_def(table_asset_key(table.name))
        for _ in range(batches):
            started = time.monotonic()
            meta = _metadata(dg.materialize([asset], instance=instance, run_config=_QUIET), table_asset_key(table.name))
            summary.ingested[table.name] = meta
            say(f"ingest   {table.name}: batch {meta.get('batch')} → snapshot {meta.get('snapshot_id')} "
                f"({meta.get('rows')} change rows, {meta.get('files')} files, {meta.get('bytes')} bytes) "
                f"in {time.monotonic() - started:.1f}s")

    for sensor in defs.sensors:
        table_name = next(t.name for t in config.tables if sensor.name == f"{t.name.replace('.', '__')}__snapshot_sensor")
        cursor = cursors.get(table_name)
        ctx = dg.build_sensor_context(instance=instance, cursor=str(cursor) if cursor else None,
                                      resources={"lake": lake})
        tick = sensor(ctx)
        assert isinstance(tick, dg.SensorResult)
        if not tick.run_requests:
            reason = tick.skip_reason.skip_message if tick.skip_reason else "nothing new"
            say(f"sensor   {sensor.name}: skipped ({reason})")
            continue
        job = defs.resolve_job_def(sensor.job_name or "")
        for request in tick.run_requests:
            summary.requests.append(request.run_key or "")
            say(f"sensor   {sensor.name}: run_key {request.run_key} → job {job.name}")
            started = time.monotonic()
            run_config = {**(request.run_config or {}), **_QUIET}
            result = job.execute_in_process(run_config=run_config, tags=request.tags, instance=instance)
            for d in config.downstream:
                if d.source_table == table_name:
                    meta = _metadata(result, table_asset_key(d.name))
                    summary.downstream[d.name] = meta
                    say(f"derive   {d.name} from {table_name}@{meta.get('source_snapshot_id')} → snapshot "
                        f"{meta.get('snapshot_id')} ({meta.get('rows')} rows) in {time.monotonic() - started:.1f}s")

    for name in [t.name for t in config.tables] + [d.name for d in config.downstream]:
        if catalog.table_exists(name):
            summary.tables[name] = catalog.get_table(name).to_arrow().num_rows
    for d in config.downstream:
        if catalog.table_exists(d.name):
            table = catalog.get_table(d.name)
            rows = table.to_arrow().sort_by([(k, "ascending") for k in table.schema.primary_keys]).to_pylist()
            say(f"\n{d.name} (latest snapshot, last 10 rows):")
            say(_format_rows(rows[-10:]))
    say("")
    for name, n in summary.tables.items():
        say(f"table    {name}: {n} rows")
    return summary


def _format_rows(rows: list[dict]) -> str:
    if not rows:
        return "  (empty)"
    cols = list(rows[0])
    cells = [[str(r[c]) for c in cols] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(cols)]
    line = lambda vals: "  " + "  ".join(v.rjust(w) for v, w in zip(vals, widths))
    return "\n".join([line(cols)] + [line(r) for r in cells])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m orchestration.demo", description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=None, help=f"tables config (default: {DEFAULT_CONFIG.name})")
    parser.add_argument("--batches", type=int, default=1, help="source batches to ingest per table (default 1)")
    args = parser.parse_args(argv)

    # dagster.yaml keeps its storage under .dagster/ relative to the checkout, as `dagster dev` does.
    os.chdir(REPO_ROOT)
    config_path = args.config.resolve() if args.config else DEFAULT_CONFIG
    config = load_tables_config(config_path)
    Path(".dagster").mkdir(exist_ok=True)
    instance = dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(REPO_ROOT / ".dagster"), config_dir=str(REPO_ROOT)))

    from jobs.spark import spark_session

    print(f"demo: tables from {config_path}, warehouse {config.warehouse.uri}; starting Spark ({config.spark.master})")
    # One session for the whole demo: the assets' SparkResource reuses it instead of starting one per step.
    spark = spark_session(master=config.spark.master, driver_memory=config.spark.driver_memory,
                          shuffle_partitions=config.spark.shuffle_partitions, conf=config.spark.conf)
    try:
        with instance:
            run_demo(config, instance, batches=args.batches)
    finally:
        spark.stop()
    print("\nWatch it in the UI: .venv/bin/dagster dev   (from the checkout; then open http://127.0.0.1:3000)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
