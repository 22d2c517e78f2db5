"""The partitions of a table's ``rescale`` asset: the table's own partitions, as a
``DynamicPartitionsDefinition`` per table (``demo__orders__partitions``, keys like
``dt=2024-01-01``), kept in sync by a sensor that adds new partitions and removes dropped ones,
reading the table's metadata only (manifests, no data)."""

from typing import TYPE_CHECKING, Any

import dagster as dg

from orchestration.config import TableConfig
from orchestration.defs.naming import identifier
from orchestration.defs.resources import LakeCatalogResource

if TYPE_CHECKING:
    from lake_core import FileStoreTable


def partitions_def_name(table_name: str) -> str:
    return f"{identifier(table_name)}__partitions"


def partitions_sensor_name(table_name: str) -> str:
    return f"{identifier(table_name)}__partitions_sensor"


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


def build_partitions_sensor(table: TableConfig) -> dg.SensorDefinition | None:
    """Keeps the rescale asset's partitions equal to the table's partitions (manifests only)."""
    if not (rescalable(table) and table.partition_keys):
        return None
    partitions = dg.DynamicPartitionsDefinition(name=partitions_def_name(table.name))

    @dg.sensor(
        name=partitions_sensor_name(table.name),
        minimum_interval_seconds=table.sensor.minimum_interval_seconds,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description=f"Adds new partitions of {table.name} to its rescale asset and removes dropped ones.",
    )
    def sync_partitions(context: dg.SensorEvaluationContext, lake: LakeCatalogResource):
        catalog = lake.catalog()
        if not catalog.table_exists(table.name):
            return dg.SkipReason(f"{table.name} does not exist yet")
        current = list(table_partitions(catalog.get_table(table.name)))
        known = set(context.instance.get_dynamic_partitions(partitions.name))
        added = [k for k in current if k not in known]
        removed = sorted(known - set(current))
        if not added and not removed:
            return dg.SkipReason(f"{table.name}: {len(current)} partition(s), already in sync")
        context.log.info(
            f"{table.name}: {len(added)} partition(s) added ({', '.join(added[:10])}), "
            f"{len(removed)} removed ({', '.join(removed[:10])})"
        )
        requests = ([partitions.build_add_request(added)] if added else []) + (
            [partitions.build_delete_request(removed)] if removed else []
        )
        return dg.SensorResult(dynamic_partitions_requests=requests)

    return sync_partitions
