"""Downstream jobs: rebuild a derived lake table from one exact snapshot of a source table.

The source is read through the ``paimon`` Spark data source pinned to ``snapshot_id``; the result
is written with :func:`jobs.write.distributed_write` under the identity
(``downstream:<target>``, ``snapshot_id``), so re-running the job for the same snapshot is
recognised as already committed and snapshot ids (which only grow) are valid Paimon identifiers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyspark.sql import functions as F

from jobs.datasource import read_table
from jobs.tables import TableSpec, ensure_table
from jobs.write import WriteResult, distributed_write
from lake_core import Catalog

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


@dataclass(frozen=True)
class Transform:
    """A derived table: its schema, keys, options and the Spark function that computes it."""

    name: str
    schema: pa.Schema
    primary_keys: tuple[str, ...]
    options: Mapping[str, str]
    compute: Callable[[DataFrame], DataFrame]
    partition_keys: tuple[str, ...] = ()


ORDERS_BY_DAY_SCHEMA = pa.schema(
    [
        pa.field("dt", pa.string(), nullable=False),
        pa.field("orders", pa.int64()),
        pa.field("cancelled", pa.int64()),
        pa.field("customers", pa.int64()),
        pa.field("items", pa.int64()),
        pa.field("revenue", pa.decimal128(22, 2)),  # Spark's sum(DECIMAL(12,2)) is DECIMAL(22,2)
    ]
)


def _orders_by_day(orders: DataFrame) -> DataFrame:
    """Per order day: orders, cancellations, distinct customers, items and revenue (not cancelled)."""

    live = F.col("status") != F.lit("cancelled")
    return orders.groupBy("dt").agg(
        F.count(F.lit(1)).cast("long").alias("orders"),
        F.sum(F.when(~live, 1).otherwise(0)).cast("long").alias("cancelled"),
        F.countDistinct("customer_id").cast("long").alias("customers"),
        F.sum(F.when(live, F.col("quantity")).otherwise(0)).cast("long").alias("items"),
        F.coalesce(F.sum(F.when(live, F.col("amount"))), F.lit(0).cast("decimal(22,2)"))
        .cast("decimal(22,2)")
        .alias("revenue"),
    )


TRANSFORMS: dict[str, Transform] = {
    "orders_by_day": Transform(
        name="orders_by_day",
        schema=ORDERS_BY_DAY_SCHEMA,
        primary_keys=("dt",),
        options={"bucket": "1"},
        compute=_orders_by_day,
    ),
}


def commit_user_for(target: str) -> str:
    return f"downstream:{target}"


def target_spec(name: str, transform: Transform) -> TableSpec:
    """The derived table's definition: the transform's schema, keys and options under ``name``."""
    return TableSpec(name, transform.schema, transform.primary_keys, transform.partition_keys, transform.options)


def run_downstream(
    spark: SparkSession,
    warehouse: str,
    *,
    source_table: str,
    snapshot_id: int,
    target_table: str,
    transform: str,
    storage_options: Mapping[str, Any] | None = None,
) -> WriteResult:
    """Compute ``transform`` over ``source_table`` at exactly ``snapshot_id`` into ``target_table``.

    The derived table is keyed by the transform's primary keys and upserted, so it always holds
    the aggregate of the newest snapshot processed.
    """
    spec = TRANSFORMS[transform]
    options = dict(storage_options or {})
    ensure_table(Catalog(warehouse, storage_options=options), target_spec(target_table, spec))
    source = read_table(spark, warehouse, source_table, snapshot_id=snapshot_id, storage_options=options)
    result = spec.compute(source).orderBy(*spec.primary_keys)
    return distributed_write(
        result,
        warehouse,
        target_table,
        commit_user=commit_user_for(target_table),
        identifier=snapshot_id,
        storage_options=options,
    )
