"""Distributed bucket rescale of selected partitions of a fixed-bucket table.

    driver   ─ plan (metadata only): which selected partitions are not yet at the target count
             ─ set the table's ``bucket`` option (a schema change, as ``table.maintenance.rescale``)
    workers  ─ one Spark task per partition: lake_core reads it, writes it into the new buckets and
               verifies the new files (``prepare_rescale_partition``), returning the uncommitted,
               picklable result (the commit message of a rescale)
    driver   ─ one OVERWRITE commit of every prepared partition (``commit_rescale``); if any task
               failed, the others' new files are deleted and nothing is committed

Spark's JVM never touches a table file: every read and write goes through lake_core's FileIO in the
Python workers (so s3:// works without a Hadoop connector). A re-run after a failure (or after a
commit that landed) plans again: partitions already at the target are skipped.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from jobs.tasks import run_tasks
from lake_core import Catalog
from lake_core.errors import LakeError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


class RescaleTaskError(LakeError):
    """A partition's Spark task failed with an error that could not travel back as itself."""


def _prepare(warehouse: str, table_name: str, bucket: int, storage_options: Mapping[str, Any]):
    """Executor side: prepare one partition with lake_core."""

    def prepare(spec: Mapping[str, Any]):
        table = Catalog(warehouse, storage_options=dict(storage_options)).get_table(table_name)
        return table.maintenance.prepare_rescale_partition(partition=dict(spec), bucket=bucket)

    return prepare


def rescale_partitions(
    spark: SparkSession | None,
    warehouse: str,
    table_name: str,
    *,
    bucket: int,
    partitions: Sequence[Mapping[str, Any]],
    commit_user: str,
    storage_options: Mapping[str, Any] | None = None,
):
    """Rescale exactly ``partitions`` (``{column: value}`` for every partition column; ``[{}]`` for
    an unpartitioned table) of ``table_name`` to ``bucket`` buckets in one Spark job and one commit.

    Returns lake_core's ``RescaleResult``: every requested partition appears in ``partitions`` of
    the result, rewritten or with the reason it was skipped (already at ``bucket`` buckets, no
    data). ``spark`` may be None when no partition needs rewriting (a re-run): nothing starts then."""
    started = time.monotonic()
    options = dict(storage_options or {})
    table = Catalog(warehouse, storage_options=options).get_table(table_name)
    previous = table.options.bucket
    specs = list({_key(p): dict(p) for p in partitions}.values())  # each partition once, in order
    # A backfill names partitions that may be gone by now (partition expiry): they are reported as
    # skipped with their reason, not refused as a selector that matches nothing would be.
    wanted = {_key(spec) for spec in specs}
    plan = table.maintenance.plan_rescale(bucket=bucket) if specs else None
    todo = [unit.spec for unit in plan.units if _key(unit.spec) in wanted] if plan else []
    if todo and spark is None:
        raise RescaleTaskError(
            f"rescale of {table_name}: {len(todo)} partition(s) need rewriting "
            f"({', '.join(map(str, todo))}) but no Spark session was given"
        )
    table = table.maintenance.set_bucket(bucket=bucket)

    prepared: dict[tuple, Any] = {}
    if todo:
        collected = run_tasks(  # in todo's order
            spark,
            todo,
            _prepare(warehouse, table_name, bucket, options),
            abort=lambda outcomes: table.maintenance.abort_rescale(outcomes=outcomes),
            error=lambda spec, text: RescaleTaskError(
                f"rescale of {table_name} partition {spec} failed in its Spark task: {text}"
            ),
        )
        prepared = {_key(spec): value for spec, value in zip(todo, collected)}
    # Partitions with nothing to rewrite: lake_core says why (metadata only, on the driver).
    outcomes = [
        prepared.get(_key(spec)) or table.maintenance.prepare_rescale_partition(partition=spec, bucket=bucket)
        for spec in specs
    ]
    return table.maintenance.commit_rescale(
        outcomes=outcomes, bucket=bucket, previous_bucket=previous, commit_user=commit_user, started=started
    )


def _key(spec: Mapping[str, Any]) -> tuple:
    return tuple(sorted(spec.items()))
