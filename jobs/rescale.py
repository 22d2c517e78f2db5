"""Distributed bucket rescale of selected partitions of a fixed-bucket table.

    driver   ─ ``table.maintenance.rescale_job``: plan (metadata only: which selected partitions
               are not yet at the target count), set the table's ``bucket`` option (a schema
               change, as ``table.maintenance.rescale``) → a picklable ``RescaleJob``
    workers  ─ ``jobs.tasks.run_job``: Spark tasks (the partitions packed by bytes into at most the
               cluster's parallelism, as DataFrame rows through ``mapInArrow``) run the job's ``run_unit``:
               lake_core reads it, writes it into the new buckets and verifies the new files,
               returning the uncommitted, picklable result (the commit message of a rescale)
    driver   ─ the job's one OVERWRITE commit of every prepared partition; if any task failed, the
               others' new files are deleted (the job's ``abort``) and nothing is committed

Spark's JVM never touches a table file: every read and write goes through lake_core's FileIO in the
Python workers (so s3:// works without a Hadoop connector); DataFrame API only, so it runs over
Spark Connect too. A re-run after a failure (or after a commit that landed) plans again: partitions
already at the target are skipped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from jobs.tasks import run_job
from lake_core import Catalog
from lake_core.errors import LakeError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


class RescaleTaskError(LakeError):
    """A partition's Spark task failed with an error that could not travel back as itself."""


def rescale_partitions(
    spark: SparkSession | None,
    warehouse: str,
    table_name: str,
    *,
    bucket: int,
    partitions: Sequence[Mapping[str, Any]],
    commit_user: str,
    storage_options: Mapping[str, Any] | None = None,
    max_tasks: int | None = None,
):
    """Rescale exactly ``partitions`` (``{column: value}`` for every partition column; ``[{}]`` for
    an unpartitioned table) of ``table_name`` to ``bucket`` buckets in one Spark job and one commit.

    Returns lake_core's ``RescaleResult``: every requested partition appears in ``partitions`` of
    the result, rewritten or with the reason it was skipped (already at ``bucket`` buckets, no
    data). ``spark`` may be None when no partition needs rewriting (a re-run): nothing starts then.
    ``max_tasks``: at most this many Spark tasks (default: the cluster's parallelism)."""
    table = Catalog(warehouse, storage_options=dict(storage_options or {})).get_table(table_name)
    specs = [dict(p) for p in partitions]
    if spark is None:  # refuse before the job sets the bucket option
        wanted = {_key(spec) for spec in specs}
        todo = [u.spec for u in table.maintenance.plan_rescale(bucket=bucket).units if _key(u.spec) in wanted]
        if todo:
            raise RescaleTaskError(
                f"rescale of {table_name}: {len(todo)} partition(s) need rewriting "
                f"({', '.join(map(str, todo))}) but no Spark session was given"
            )
    # A backfill names partitions that may be gone by now (partition expiry): the job reports them
    # as skipped with their reason, as it does those already at ``bucket`` buckets.
    job = table.maintenance.rescale_job(bucket=bucket, partitions=specs, commit_user=commit_user)
    return run_job(spark, job, error=RescaleTaskError, max_tasks=max_tasks)


def _key(spec: Mapping[str, Any]) -> tuple:
    return tuple(sorted(spec.items()))
