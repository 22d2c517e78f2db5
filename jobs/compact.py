"""Dedicated compaction of a primary-key table on Spark.

    driver   ─ plan (metadata only): ``table.maintenance.compaction_job`` → a picklable
               ``CompactionJob`` whose frozen units are one per (partition, bucket) the picker (or
               ``full`` / ``expire_records``) selects
    workers  ─ ``jobs.tasks.run_job``: the units, packed by bytes into at most the cluster's
               parallelism tasks, go out as DataFrame rows through ``mapInArrow``; each runs the
               job's ``run_unit`` in the Python worker (reads the unit's files, writes the merged
               ones) and returns its outcome (commit message and row counters) as a row, committing
               nothing
    driver   ─ the job's one COMPACT commit of every outcome: a unit whose input files another job
               compacted meanwhile is skipped and reported, its new files deleted; if any task
               failed, every new file is deleted (the job's ``abort``) and nothing is committed

Spark's JVM never touches a table file: every read and write goes through lake_core's FileIO in the
Python workers (so s3:// works without a Hadoop connector). DataFrame API only: the same job runs
over Spark Connect.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from jobs.spark_target import add_spark_arguments, check_warehouse_reachable, conf_from_args, target_from_args
from jobs.storage import add_storage_arguments, storage_options_from_args
from jobs.tasks import run_job, run_tasks
from lake_core import Catalog, PartitionSelector
from lake_core.errors import LakeError, PartitionSpecError  # noqa: F401 (PartitionSpecError: part of this API)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from lake_core import FileStoreTable


class CompactionTaskError(LakeError):
    """A unit's Spark task failed with an error that could not travel back as itself."""


def parse_partitions(table: FileStoreTable, specs: Sequence[str] | None) -> list[dict[str, Any]] | None:
    """['dt=2024-01-01/hr=3'] → [{'dt': '2024-01-01', 'hr': 3}], values cast to the columns' types
    (the text Dagster partition keys and the command line use); lake_core's one selector parser, so
    a bad spec fails here with its ``PartitionSpecError`` before Spark starts."""
    if specs is None:
        return None
    selector = PartitionSelector.of(table.schema, list(specs), table=table.identifier, operation="compaction")
    return [dict(spec) for spec in selector.specs]


def run_units(
    spark: SparkSession, table: FileStoreTable, units: Sequence[Any], *, max_tasks: int | None = None
) -> list[Any]:
    """The units in Spark tasks (packed by bytes into at most ``max_tasks``, default the cluster's
    parallelism), running lake_core's ``compact_unit`` in the Python worker; returns
    the outcomes in ``units``' order (raises, after deleting every written file, if any task failed).
    The first half of ``run_job``, for a driver that commits them itself (``commit_compaction``)."""
    return run_tasks(
        spark,
        units,
        lambda unit: table.maintenance.compact_unit(unit=unit),
        abort=lambda outcomes: table.maintenance.abort_compaction(outcomes=outcomes),
        error=lambda unit, text: CompactionTaskError(
            f"compaction of {table.identifier}, {unit.describe()} failed in its Spark task: {text}"
        ),
        max_tasks=max_tasks,
    )


def compact_on_spark(
    spark: SparkSession,
    warehouse: str,
    table_name: str,
    *,
    full: bool = False,
    partitions: Mapping[str, Any] | Sequence[Mapping[str, Any] | str] | None = None,
    expire_records: bool = False,
    dry_run: bool = False,
    options: Mapping[str, str] | None = None,
    storage_options: Mapping[str, Any] | None = None,
    max_tasks: int | None = None,
    verify: bool = False,
):
    """Compact ``table_name`` as ``table.maintenance.compact`` does, in Spark tasks: the units packed
    by bytes into at most ``max_tasks`` (default: the cluster's parallelism).

    ``options``: dynamic planning options for this job (e.g. ``num-sorted-run.compaction-trigger``,
    ``record-level.expire-time``/``record-level.time-field``). ``partitions``: ``{column: value}``
    dicts, or texts like ``'dt=2024-01-01'``. ``verify``: the tasks compute the figures
    ``result.check()`` compares (each unit's written files read back in its task). Returns
    lake_core's ``CompactionResult`` (``snapshot_id`` None when nothing was committed)."""
    table = Catalog(warehouse, storage_options=dict(storage_options or {})).get_table(table_name)
    job = table.maintenance.compaction_job(
        full=full,
        partitions=partitions,
        expire_records=expire_records,
        options=options,
        dry_run=dry_run,
        verify=verify,
    )
    return run_compaction(spark, job, max_tasks=max_tasks)


def run_compaction(spark: SparkSession | None, job: Any, *, max_tasks: int | None = None):
    """Run a planned ``CompactionJob`` (``table.maintenance.compaction_job``): units in Spark tasks
    (packed into at most ``max_tasks``, default the cluster's parallelism), one COMPACT commit. ``spark`` may be None when the job has no units (nothing starts)."""
    return run_job(spark, job, error=CompactionTaskError, max_tasks=max_tasks)


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    """``python -m jobs.compact --warehouse URI --table db.t [--full] [--partition dt=...] ...``"""

    from jobs.spark import spark_session  # noqa: PLC0415 - pyspark only when run as a command, not when the definitions import this

    parser = argparse.ArgumentParser(prog="python -m jobs.compact", description=__doc__.split("\n")[0])
    parser.add_argument("--warehouse", required=True, help="file:///path or s3://bucket/prefix")
    parser.add_argument("--table", required=True, help="database.table")
    parser.add_argument("--full", action="store_true", help="every selected bucket to the top level")
    parser.add_argument("--partition", action="append", help="'dt=2024-01-01' (repeatable); default: all")
    parser.add_argument("--expire-records", action="store_true", help="only buckets holding expired records")
    parser.add_argument("--option", action="append", default=[], help="dynamic planning option key=value")
    parser.add_argument("--dry-run", action="store_true")
    parser.add_argument(
        "--verify", action="store_true", help="the tasks compute the in-task check's figures; print the check"
    )
    add_spark_arguments(parser)
    add_storage_arguments(parser)
    args = parser.parse_args(argv)
    env = os.environ if environ is None else environ
    options = dict(o.split("=", 1) for o in args.option)
    try:
        # Everything that can be wrong in the setup fails here, before a JVM starts or a task runs.
        target = target_from_args(args, env)
        check_warehouse_reachable(args.warehouse, target, shared_filesystem=args.shared_filesystem)
        storage_options = storage_options_from_args(args, args.warehouse, env)
        spark = spark_session(
            remote=target.remote, master=target.master, app_name="lake-compact", conf=conf_from_args(args)
        )
        result = compact_on_spark(
            spark,
            args.warehouse,
            args.table,
            full=args.full,
            partitions=args.partition,
            expire_records=args.expire_records,
            dry_run=args.dry_run,
            options=options,
            storage_options=storage_options,
            verify=args.verify,
        )
    except LakeError as e:
        print(f"error: {e}")
        return 2
    out = result.as_metadata()
    passed = True
    if args.verify:
        check = result.check()
        out["check"] = check.as_metadata() | {"problems": list(check.problems)}
        passed = check.passed
    print(json.dumps(out, indent=2, default=str))
    return 0 if passed else 1


if __name__ == "__main__":
    raise SystemExit(main())
