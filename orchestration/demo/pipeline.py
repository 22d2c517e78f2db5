"""The demo pipeline on the embedded default: ``python -m orchestration.demo``.

One run = ingest the next batches (three by default) of every configured source (the Spark write
asset), one tick of the lake's snapshot sensor, the downstream run it requests per table (one run
covering every new snapshot: Spark reads the newest through ``spark.read.format("paimon")`` and
writes the derived table), a maintenance cycle (:mod:`orchestration.demo.maintenance_cycle`;
``--no-maintenance`` skips it), then a summary. Runs are
recorded in the same Dagster storage that ``dagster dev`` (started from the checkout) shows, and
the downstream runs carry the sensor's run key and name: a snapshot the demo derived is never
derived again by a running ``dagster dev`` (its sensor requests nothing for a run key that has a
run, and its daemon would drop such a request), and one the daemon derived is skipped here. Runs execute one
at a time, and wait while another run of the same table is in progress (the ``lake/table`` limit
of one in ``dagster.yaml``).

The tables config is ``--config``, else ``$LAKE_TABLES_CONFIG``, else the checkout's ``tables.yaml``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import dagster as dg
from dagster._core.instance.ref import InstanceRef  # not exported at top level; stable for years
from dagster._core.storage.dagster_run import IN_PROGRESS_RUN_STATUSES
from dagster._core.storage.tags import RUN_KEY_TAG, SENSOR_NAME_TAG

from jobs.spark_target import SparkConfigError
from lake_core import Catalog, LakeError
from orchestration.config import TablesConfig, load_tables_config
from orchestration.definitions import CONFIG_ENV, build_definitions, config_path
from orchestration.defs.leases import LEASE_TAG, release_run_lease
from orchestration.defs.naming import SNAPSHOT_SENSOR, table_asset_key
from orchestration.defs.resources import spark_resource
from orchestration.defs.sensors import RANGE_TAG, SensorCursor, existing_run, table_identity
from orchestration.defs.ticks import LakeCursor
from orchestration.demo.maintenance_cycle import CycleSummary, run_maintenance_cycle

REPO_ROOT = Path(__file__).resolve().parents[2]
WAIT_FOR_TABLE_S = 600  # how long a run waits for another run of its table to finish


@dataclass
class DemoSummary:
    ingested: dict[str, dict] = field(default_factory=dict)  # table → write metadata
    requests: list[str] = field(default_factory=list)  # run keys requested by the sensors
    skipped: list[str] = field(default_factory=list)  # run keys that already had a run
    downstream: dict[str, dict] = field(default_factory=dict)  # derived table → write metadata
    tables: dict[str, int] = field(default_factory=dict)  # table → live rows at its latest snapshot
    maintenance: CycleSummary | None = None  # the maintenance cycle, when it ran


# The summary lines below say what happened; Dagster's per-event DEBUG lines stay in its storage (UI).
_QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


def _metadata(result: dg.ExecuteInProcessResult, key: dg.AssetKey) -> dict:
    events = result.asset_materializations_for_node(key.to_python_identifier())
    return {k: v.value for k, v in events[-1].metadata.items()} if events else {}


def _wait_for_table(instance: dg.DagsterInstance, table_name: str, say: Callable[[str], None]) -> None:
    """Honour the one-run-per-table limit against runs launched elsewhere (e.g. by dagster dev)."""
    deadline = time.monotonic() + WAIT_FOR_TABLE_S
    while True:
        busy = instance.get_runs(
            filters=dg.RunsFilter(tags={"lake/table": table_name}, statuses=list(IN_PROGRESS_RUN_STATUSES)), limit=1
        )
        if not busy:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"run {busy[0].run_id} of {table_name} is still in progress after {WAIT_FOR_TABLE_S}s")
        say(f"wait     {table_name}: run {busy[0].run_id[:8]} is in progress")
        time.sleep(2)


def _run_downstream(
    defs: dg.Definitions,
    config: TablesConfig,
    instance: dg.DagsterInstance,
    catalog: Catalog,
    sensor_name: str,
    request: dg.RunRequest,
    summary: DemoSummary,
    say: Callable[[str], None],
) -> None:
    """Run one request of the snapshot sensor as the daemon would (unless a run already has its key)."""
    table_name = request.tags["lake/table"]
    job = defs.resolve_job_def(request.job_name or "")
    key = request.run_key or ""
    summary.requests.append(key)
    _wait_for_table(instance, table_name, say)
    # The tick requested nothing that had a run; a run the daemon made since (while this demo waited)
    # has the key too: checked right before the run starts, as the daemon does before it launches.
    done = existing_run(instance, key)
    if done is not None:
        summary.skipped.append(key)
        say(f"sensor   {sensor_name}: run_key {key} already has run {done.run_id[:8]} ({done.status.value})")
        # no run will carry this request's snapshot lease: release it now
        catalog.get_table(table_name).maintenance.release_lease(consumer_id=request.tags[LEASE_TAG])
        return
    say(f"sensor   {sensor_name}: run_key {key} → job {job.name} (snapshots {request.tags.get(RANGE_TAG)})")
    started = time.monotonic()
    tags = {**request.tags, RUN_KEY_TAG: key, SENSOR_NAME_TAG: sensor_name}
    result = job.execute_in_process(run_config={**(request.run_config or {}), **_QUIET}, tags=tags, instance=instance)
    released = release_run_lease(catalog, instance.get_run_by_id(result.run_id))  # what the run-status sensor does
    if released:
        say(f"lease    {released}")
    for d in config.downstream:
        if d.source_table == table_name:
            meta = _metadata(result, table_asset_key(d.name))
            summary.downstream[d.name] = meta
            say(
                f"derive   {d.name} from {table_name}@{meta.get('source_snapshot_id')} → snapshot "
                f"{meta.get('snapshot_id')} ({meta.get('table_rows')} rows) in {time.monotonic() - started:.1f}s"
            )


def run_demo(
    config: TablesConfig,
    instance: dg.DagsterInstance,
    *,
    batches: int = 1,
    maintenance: bool = False,
    say: Callable[[str], None] = print,
) -> DemoSummary:
    defs = build_definitions(config)
    lake = defs.resources["lake"]
    summary = DemoSummary()
    with dg.build_resources({"lake": lake}) as res:  # resolves EnvVar credentials, as a run would
        res.lake.check_access()
        catalog = res.lake.catalog()
        warehouse = res.lake.warehouse

    def entry_of(name: str) -> dict | None:
        """The table's entry of the sensor's cursor as it stood before this ingest (None: a first tick)."""
        if not catalog.table_exists(name):
            return None
        table = catalog.get_table(name)
        snap = table.latest_snapshot()
        return SensorCursor(table_identity(warehouse, table), snap.id).entry() if snap else None

    entries = {t.name: entry_of(t.name) for t in config.tables}
    cursor = LakeCursor({name: e for name, e in entries.items() if e is not None}).encode()

    for table in config.tables:
        if table.source is None:
            continue
        asset = defs.resolve_assets_def(table_asset_key(table.name))
        for _ in range(batches):
            started = time.monotonic()
            _wait_for_table(instance, table.name, say)
            result = dg.materialize([asset], instance=instance, run_config=_QUIET, tags={"lake/table": table.name})
            meta = _metadata(result, table_asset_key(table.name))
            summary.ingested[table.name] = meta
            say(
                f"ingest   {table.name}: batch {meta.get('batch')} → snapshot {meta.get('snapshot_id')} "
                f"({meta.get('change_rows')} change rows; table {meta.get('table_rows')} rows in "
                f"{meta.get('live_files')} files, {meta.get('total_bytes')} bytes) in {time.monotonic() - started:.1f}s"
            )

    if defs.sensors and SNAPSHOT_SENSOR in {s.name for s in defs.sensors}:
        sensor = defs.resolve_sensor_def(SNAPSHOT_SENSOR)
        tick = sensor(dg.build_sensor_context(instance=instance, cursor=cursor, resources={"lake": lake}))
        assert isinstance(tick, dg.SensorResult)
        if not tick.run_requests:
            reason = tick.skip_reason.skip_message if tick.skip_reason else "nothing new"
            say(f"sensor   {sensor.name}: skipped ({reason})")
        for request in tick.run_requests:
            _run_downstream(defs, config, instance, catalog, sensor.name, request, summary, say)

    if maintenance:
        summary.maintenance = run_maintenance_cycle(config, defs, instance, catalog, warehouse, quiet=_QUIET, say=say)

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
    parser.add_argument(
        "--config",
        type=Path,
        default=None,
        help=f"tables config (default: ${CONFIG_ENV}, else tables.yaml in the checkout)",
    )
    parser.add_argument("--batches", type=int, default=3, help="source batches to ingest per table (default 3)")
    parser.add_argument(
        "--no-maintenance",
        action="store_true",
        help="skip the maintenance cycle (compaction, manifest compaction, expiry, rescale)",
    )
    args = parser.parse_args(argv)

    # Resolve before chdir: a relative --config or $LAKE_TABLES_CONFIG is relative to where the user is.
    config_file = (args.config or config_path()).resolve()
    try:
        config = load_tables_config(config_file)
    except LakeError as e:  # a config error is the user's to fix: its message, not a traceback
        print(f"demo: {e}", file=sys.stderr)
        return 2
    # dagster.yaml keeps its storage under .dagster/ relative to the checkout, as `dagster dev` does.
    os.chdir(REPO_ROOT)
    Path(".dagster").mkdir(exist_ok=True)
    instance = dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(REPO_ROOT / ".dagster"), config_dir=str(REPO_ROOT)))

    print(f"demo: tables from {config_file}, warehouse {config.warehouse.uri}")
    spark = spark_resource(config)
    try:
        with dg.build_resources({"lake": build_definitions(config).resources["lake"]}) as res:
            res.lake.check_access()  # before Spark starts
        target = spark.target()  # $LAKE_SPARK_REMOTE / $LAKE_SPARK_MASTER, else tables.yaml's spark: block
    except (LakeError, dg.DagsterInvalidConfigError) as e:  # e.g. an unset credentials variable
        print(f"demo: {e}", file=sys.stderr)
        return 2
    print(f"demo: {'attaching to' if target.remote else 'starting'} Spark ({target.describe()})")
    # One session for the whole demo (the same resource the assets use): their steps reuse it
    # instead of starting (or attaching) one each.
    try:
        with spark.session(warehouse=config.warehouse.uri), instance:
            run_demo(config, instance, batches=args.batches, maintenance=not args.no_maintenance)
    except SparkConfigError as e:
        print(f"demo: {e}", file=sys.stderr)
        return 2
    print("\nWatch it in the UI: .venv/bin/dagster dev   (from the checkout; then open http://127.0.0.1:3000)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
