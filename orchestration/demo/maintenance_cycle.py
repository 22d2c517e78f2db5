"""One maintenance cycle of the demo: every maintenance asset of each table, in the order a data
engineer would run them, through the same Dagster assets (and checks, pools and ledger) the UI shows.

1. The policy's view: the health evaluation the health sensor makes, each operation's decision and
   reason.
2. A reader pins the current snapshot with a lease (as a queued downstream run does).
3. ``compaction`` on Spark (full), with its blocking content check; ``manifest_compaction``;
   ``snapshot_expiry`` with a retention of one snapshot, which must keep the leased one; the lease
   is released; ``record_expiry`` (the policy's TTL); ``rescale`` of every partition as a
   single-run backfill to the policy's target bucket count, with its blocking check (a partition
   already there is skipped, with the reason in its own metadata). The service is left as the
   config says: every partition at ``maintenance.rescale.target_buckets``, so ``config_drift``
   passes and later ingests warn of nothing.
4. The maintenance ledger: one row per run.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import dagster as dg

from lake_core import Catalog, LakeError
from orchestration.config import TableConfig, TablesConfig
from orchestration.defs.health_sensor import evaluate_table
from orchestration.defs.ledger import LEDGER_TABLE
from orchestration.defs.naming import PARTITIONS_SENSOR, REASON_TAG, maintenance_asset_key
from orchestration.defs.policy import HEALTH_OPERATIONS, SCHEDULED_OPERATIONS

LEASE_HOLDER = "demo-reader"


@dataclass
class CycleSummary:
    decisions: dict[str, list[str]] = field(default_factory=dict)  # table → the policy's reasons
    runs: dict[str, dict[str, dict]] = field(default_factory=dict)  # table → operation → metadata
    leased_snapshot: dict[str, int] = field(default_factory=dict)  # table → snapshot a reader pinned
    leased_snapshot_survived: dict[str, bool] = field(default_factory=dict)
    rescaled: dict[str, list[str]] = field(default_factory=dict)  # table → partitions of the rescale backfill
    ledger: list[dict] = field(default_factory=list)  # the ledger's rows of this cycle


def _figures(meta: dict, names: tuple[str, ...]) -> str:
    return ", ".join(f"{n} {meta[n]}" for n in names if meta.get(n) is not None) or "no figures"


def _materialize(
    defs: dg.Definitions,
    instance: dg.DagsterInstance,
    key: dg.AssetKey,
    *,
    reason: str,
    quiet: dict,
    config: dict | None = None,
    tags: dict | None = None,
) -> tuple[dict, str]:
    op = defs.resolve_assets_def(key).node_def.name  # per operation, one op over all tables
    run_config = {**quiet, **({"ops": {op: {"config": config}}} if config else {})}
    result = dg.materialize(
        [defs.resolve_assets_def(key)],
        selection=[key],  # this table's asset of the operation's op
        instance=instance,
        run_config=run_config,
        tags={REASON_TAG: reason, **(tags or {})},
    )
    events = [e for e in result.asset_materializations_for_node(op) if e.asset_key == key]
    meta = {k: v.value for k, v in events[-1].metadata.items()} if events else {}
    return meta, result.run_id


def _sync_partitions(defs: dg.Definitions, instance: dg.DagsterInstance, table: TableConfig, lake) -> None:
    """One tick of the lake's partitions sensor: the rescale assets' partitions follow the tables'."""
    for sensor in defs.sensors or ():
        if sensor.name == PARTITIONS_SENSOR:
            tick = sensor(dg.build_sensor_context(instance=instance, resources={"lake": lake}))
            for request in getattr(tick, "dynamic_partitions_requests", None) or ():
                if isinstance(request, dg.AddDynamicPartitionsRequest):
                    instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))


def run_maintenance_cycle(
    config: TablesConfig,
    defs: dg.Definitions,
    instance: dg.DagsterInstance,
    catalog: Catalog,
    warehouse: str,
    *,
    quiet: dict,
    say: Callable[[str], None] = print,
) -> CycleSummary:
    summary = CycleSummary()
    lake = defs.resources["lake"]
    started_at = time.time()
    asset_keys = set(defs.resolve_all_asset_keys())
    for table in config.tables:
        if not catalog.table_exists(table.name):
            continue
        lake_table = catalog.get_table(table.name)
        has = lambda op: maintenance_asset_key(table.name, op) in asset_keys  # noqa: E731
        say(f"\nmaintain {table.name}")

        evaluation = evaluate_table(catalog, warehouse, table, HEALTH_OPERATIONS + SCHEDULED_OPERATIONS)
        summary.decisions[table.name] = [d.reason for d in evaluation.decisions]
        for d in evaluation.decisions:
            say(f"  policy   {'due ' if d.request else 'skip'} {d.reason}")

        def run(
            op: str, reason: str, config: dict | None = None, tags: dict | None = None, figures: tuple[str, ...] = ()
        ) -> dict | None:
            if not has(op):
                say(f"  {op:<19} no asset (disabled in the policy)")
                return None
            t0 = time.monotonic()
            meta, _ = _materialize(
                defs,
                instance,
                maintenance_asset_key(table.name, op),
                quiet=quiet,
                reason=f"demo maintenance cycle: {reason}",
                config=config,
                tags={"lake/table": table.name, **(tags or {})},
            )
            summary.runs.setdefault(table.name, {})[op] = meta
            skipped = meta.get("skipped")
            say(
                f"  {op:<19} {_figures(meta, figures)}{f'; skipped: {skipped}' if skipped else ''} "
                f"({time.monotonic() - t0:.1f}s)"
            )
            return meta

        pinned = lake_table.latest_snapshot()
        lease = lake_table.maintenance.acquire_lease(snapshot_id=pinned.id, holder=LEASE_HOLDER) if pinned else None
        if pinned:
            summary.leased_snapshot[table.name] = pinned.id
            say(f"  lease    {LEASE_HOLDER} pins snapshot {pinned.id} (a downstream reader still needs it)")

        run(
            "compaction",
            "full compaction on Spark",
            {"full": True},
            figures=(
                "units_run",
                "files_read",
                "files_written",
                "files_upgraded",
                "rows_in",
                "rows_out",
                "snapshot_id",
            ),
        )
        run(
            "manifest_compaction",
            "fold every manifest",
            {"mode": "full"},
            figures=("manifests_before", "manifests_after", "snapshot_id"),
        )
        try:
            run(
                "snapshot_expiry",
                "keep one snapshot (and whatever a lease pins)",
                {"retain_min": 1, "retain_max": 1, "time_retained": "1 s"},
                figures=(
                    "expired_snapshots",
                    "earliest_snapshot",
                    "deleted_data_files",
                    "deleted_metadata_files",
                    "bytes_reclaimed",
                ),
            )
            if pinned:
                survived = lake_table.has_snapshot(pinned.id)
                summary.leased_snapshot_survived[table.name] = survived
                say(
                    f"  lease    snapshot {pinned.id} {'still readable' if survived else 'WAS EXPIRED'}: "
                    f"{lake_table.to_arrow(snapshot_id=pinned.id).num_rows if survived else 0} rows"
                )
        finally:
            if lease is not None:
                lake_table.maintenance.release_lease(consumer_id=lease.consumer_id)
                say(f"  lease    released by {LEASE_HOLDER}")
        run(
            "record_expiry",
            "the policy's record TTL",
            figures=("units_run", "rows_expired", "ttl_lag_after_s", "snapshot_id"),
        )

        target = table.maintenance.rescale.target_buckets
        if has("rescale") and target:
            _sync_partitions(defs, instance, table, lake)
            keys = instance.get_dynamic_partitions(_partitions_def_name(defs, table))  # every partition
            if keys:
                tags = {"dagster/asset_partition_range_start": keys[0], "dagster/asset_partition_range_end": keys[-1]}
                run(
                    "rescale",
                    f"backfill of {', '.join(keys)} to {target} buckets",
                    tags=tags,
                    figures=(
                        "run.partitions_rescaled",
                        "run.partitions_skipped",
                        "run.previous_bucket",
                        "run.bucket",
                        "run.rows",
                        "run.snapshot_id",
                    ),
                )
                summary.rescaled[table.name] = list(keys)
        else:
            say("  rescale             skipped: no maintenance.rescale.target_buckets in the policy")

    if catalog.table_exists(LEDGER_TABLE):
        rows = catalog.get_table(LEDGER_TABLE).to_arrow().to_pylist()
        summary.ledger = sorted(
            (r for r in rows if r["recorded_at"].timestamp() >= started_at - 1), key=lambda r: r["recorded_at"]
        )
        say(f"\nledger   {LEDGER_TABLE}: {len(summary.ledger)} row(s) from this cycle ({len(rows)} in all)")
        for r in summary.ledger:
            say(
                f"  {r['recorded_at']:%H:%M:%S}  {r['table_name']:<14} {r['operation']:<19} {r['status']:<9} "
                f"{(r['skipped'] or r['error'] or '')[:60]}"
            )
    return summary


def _partitions_def_name(defs: dg.Definitions, table: TableConfig) -> str:
    asset = defs.resolve_assets_def(maintenance_asset_key(table.name, "rescale"))
    partitions_def = asset.partitions_def
    if not isinstance(partitions_def, dg.DynamicPartitionsDefinition) or partitions_def.name is None:
        raise LakeError(f"table {table.name!r}: its rescale asset is not partitioned by the table's partitions")
    return partitions_def.name
