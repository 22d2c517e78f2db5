"""The partitions of a table's ``rescale`` asset: the table's own partitions, as a
``DynamicPartitionsDefinition`` per table (``demo__orders__partitions``, keys like
``dt=2024-01-01``), kept in sync by one sensor for all tables that adds new partitions and removes
dropped ones, reading a table's metadata only (manifests, no data) and only when its ``LATEST``
hint moved since the sensor's cursor entry; round-robin within the tick budget as the other
lake-wide sensors (:mod:`orchestration.defs.ticks`)."""

from typing import TYPE_CHECKING, Any

import dagster as dg

from orchestration.config import TableConfig, TablesConfig, duration_seconds
from orchestration.defs.naming import PARTITIONS_SENSOR, identifier
from orchestration.defs.resources import LakeCatalogResource
from orchestration.defs.ticks import LakeCursor, TickBudget, Visit, round_robin, table_failure

if TYPE_CHECKING:
    from lake_core import Catalog, FileStoreTable


def partitions_def_name(table_name: str) -> str:
    return f"{identifier(table_name)}__partitions"


def partition_key(named: tuple[tuple[str, Any], ...]) -> str:
    """((dt, 2024-01-01), (hr, 3)) → 'dt=2024-01-01/hr=3': the text lake_core's rescale results use."""
    return "/".join(f"{name}={value}" for name, value in named)


def table_partitions(table: "FileStoreTable") -> dict[str, dict[str, Any]]:
    """Partition key → {column: value} of every partition with live files (manifests only)."""
    plan = table.maintenance.plan_rescale(bucket=max(table.options.bucket, 1))
    named = [unit.partition for unit in plan.units] + list(plan.already_rescaled)
    return {partition_key(n): dict(n) for n in sorted(named, key=partition_key)}


def rescalable(table: TableConfig) -> bool:
    """Only fixed-bucket tables ('bucket' >= 1) can be rescaled; others grow buckets by themselves."""
    try:
        return int(table.options.get("bucket", "-1")) >= 1
    except ValueError:
        return False


def partitions_def(table_name: str) -> dg.DynamicPartitionsDefinition:
    return dg.DynamicPartitionsDefinition(name=partitions_def_name(table_name))


def _sync_table(
    context: dg.SensorEvaluationContext, catalog: "Catalog", name: str, entry: dict | None
) -> tuple[list, str, dict | None]:
    """One table: (its partitions requests, what the tick says of it, its new cursor entry)."""
    latest = catalog.latest_snapshot_id(name)
    if entry is not None and latest is not None and entry.get("snapshot") == latest:
        return [], "unchanged", entry
    if not catalog.table_exists(name):
        return [], f"{name} does not exist yet", None
    partitions = partitions_def(name)
    current = list(table_partitions(catalog.get_table(name)))
    known = set(context.instance.get_dynamic_partitions(partitions.name))
    added = [k for k in current if k not in known]
    removed = sorted(known - set(current))
    new_entry = {"snapshot": latest} if latest is not None else None
    if not added and not removed:
        return [], f"{name}: {len(current)} partition(s), already in sync", new_entry
    context.log.info(
        f"{name}: {len(added)} partition(s) added ({', '.join(added[:10])}), "
        f"{len(removed)} removed ({', '.join(removed[:10])})"
    )
    requests = ([partitions.build_add_request(added)] if added else []) + (
        [partitions.build_delete_request(removed)] if removed else []
    )
    return requests, f"{name}: {len(added)} added, {len(removed)} removed", new_entry


def build_partitions_sensor(config: TablesConfig) -> dg.SensorDefinition | None:
    """Keeps every rescale asset's partitions equal to its table's partitions (manifests only)."""
    tables = [t for t in config.tables if rescalable(t) and t.partition_keys]
    if not tables:
        return None
    names = sorted(t.name for t in tables)
    budget_s = duration_seconds(config.control.tick_budget)

    @dg.sensor(
        name=PARTITIONS_SENSOR,
        minimum_interval_seconds=min(t.sensor.minimum_interval_seconds for t in tables),
        default_status=dg.DefaultSensorStatus.RUNNING,
        description=f"Adds new partitions of each of the {len(names)} rescalable table(s) to its rescale asset "
        "and removes dropped ones (reads a table's manifests only when its LATEST hint moved).",
    )
    def sync_partitions(context: dg.SensorEvaluationContext, lake: LakeCatalogResource):
        cursor = LakeCursor.decode(context.cursor)
        budget, visit = TickBudget(budget_s), Visit(len(names))
        catalog = lake.catalog()
        requests: list = []
        said: list[str] = []
        for name in round_robin(names, cursor.next, budget, visit):
            try:
                found, text, entry = _sync_table(context, catalog, name, cursor.tables.get(name))
            except Exception as error:  # noqa: BLE001 - one broken table must not stop the others' ticks
                said.append(table_failure(lake, name, error))  # a storage problem fails the tick, in one line
                context.log.error(said[-1])
                continue
            requests += found
            if text != "unchanged":
                said.append(text)
            if entry is None:
                cursor.tables.pop(name, None)
            else:
                cursor.tables[name] = entry
        cursor.next = visit.next
        summary = visit.summary(budget)
        context.log.info(summary)
        if not requests:
            return dg.SensorResult(skip_reason="; ".join([*said, summary]), cursor=cursor.encode())
        return dg.SensorResult(dynamic_partitions_requests=requests, cursor=cursor.encode())

    return sync_partitions
