"""One Spark task per item, failures returned as values: the pattern of the maintenance jobs
(compaction units, rescale partitions) whose tasks write files that the driver commits once.
:func:`run_job` runs any of lake_core's ``DistributedJob``s this way (the Spark counterpart of
``lake_core.run_locally``).

A task that raises would make Spark retry it and then fail the job, leaving the files the other
tasks wrote behind. Here each task returns ``("ok", outcome)`` or ``("error", ...)``; the driver
collects all of them (in the items' order), lets the caller delete the written files of the
successful ones, and raises the first error (the original exception when it unpickles)."""

from __future__ import annotations

import pickle
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from lake_core import DistributedJob


def _guarded(fn: Callable[[Any], Any]) -> Callable[[Any], tuple[str, Any]]:
    def run(item: Any) -> tuple[str, Any]:
        try:
            return "ok", fn(item)
        except Exception as e:  # noqa: BLE001 - re-raised by the driver
            try:  # exceptions whose __init__ takes other arguments do not unpickle: send the text too
                blob = pickle.dumps(e)
                pickle.loads(blob)
            except Exception:  # noqa: BLE001
                blob = None
            return "error", (blob, f"{type(e).__name__}: {e}", item)

    return run


def run_tasks(
    spark: SparkSession | None,
    items: Sequence[Any],
    fn: Callable[[Any], Any],
    *,
    abort: Callable[[list[Any]], None],
    error: Callable[[Any, str], Exception],
) -> list[Any]:
    """``fn(item)`` in one Spark task per item; the outcomes in ``items``' order. If any task failed,
    ``abort(outcomes of the others)`` runs, then the task's exception (or ``error(item, text)`` when
    it could not travel back) is raised."""
    if not items:  # no session needed (a re-run with nothing to do may have none)
        return []
    assert spark is not None, "Spark tasks need a Spark session"
    collected = spark.sparkContext.parallelize(list(items), len(items)).map(_guarded(fn)).collect()
    failed = [value for status, value in collected if status == "error"]
    if failed:
        abort([value for status, value in collected if status == "ok"])
        blob, text, item = failed[0]
        raise pickle.loads(blob) if blob is not None else error(item, text)
    return [value for _status, value in collected]


def run_job(spark: SparkSession | None, job: DistributedJob, *, error: type[Exception]) -> Any:
    """Run lake_core's ``job`` on Spark: ``job.run_unit`` in one task per unit (the job pickles
    with the task), the outcomes back to the driver, then ``job.commit(outcomes)`` once. If a task
    failed, ``job.abort`` deletes the others' files, nothing is committed and the task's exception
    is raised (an ``error`` naming the unit when it could not travel back). ``spark`` may be None
    when the job has no units: nothing starts then."""
    outcomes = run_tasks(
        spark,
        job.units,
        job.run_unit,
        abort=job.abort,
        error=lambda unit, text: error(f"{job.describe_unit(unit)} failed in its Spark task: {text}"),
    )
    return job.commit(outcomes)
