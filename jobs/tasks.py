"""Units of a maintenance job (compaction units, rescale partitions) run as Spark tasks that write
files the driver commits once, failures returned as values. :func:`run_job` runs any of lake_core's
``DistributedJob``s this way (the Spark counterpart of ``lake_core.run_locally``).

DataFrame API only, so the same code runs on a classic session and over Spark Connect (which has no
RDDs and no SparkContext): the units are packed into at most the cluster's parallelism batches,
balanced by bytes (largest first into the least-loaded batch, as Paimon's ``sys.compact`` since
apache/paimon#4158), each batch one row of a DataFrame placed alone in its Spark partition, run
through ``mapInArrow``; each unit's outcome comes back as a row with a pickled blob.

A task that raises would make Spark retry it and then fail the job, leaving the files the other
tasks wrote behind. Here every unit returns ``ok`` or ``error`` as a row; the driver collects all of
them (in the items' order), lets the caller delete the written files of the successful ones, and
raises the first error (the original exception when it unpickles). Before touching any file, each
task checks that it imported the driver's ``lake_core`` build, release and source digest (:class:`ExecutorVersionError`)."""

from __future__ import annotations

import heapq
import pickle
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from lake_core import build_id
from lake_core.errors import LakeError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from lake_core import DistributedJob

_OK, _ERROR, _VERSION = "ok", "error", "version"
# one row per unit: the batch (Spark task) it ran in, Spark's partition id, its position, status, pickled value
_RESULT_SCHEMA = pa.schema(
    [
        ("task", pa.int32()),
        ("partition", pa.int32()),
        ("index", pa.int32()),
        ("status", pa.string()),
        ("payload", pa.binary()),
    ]
)
_RESULT_DDL = "task int, partition int, index int, status string, payload binary"


class ExecutorVersionError(LakeError):
    """A Spark task imported another lake_core version than the driver's: its files or commit
    messages could differ from what the driver commits, so the job stops before any file is written."""


@dataclass(frozen=True)
class UnitResult:
    """What came back for one item: the batch and Spark partition it ran in, ``ok``/``error``/``version``
    and the unpickled value (the outcome; ``(blob, text, item)`` for an error; the task's version)."""

    index: int
    task: int
    partition: int
    status: str
    value: Any


def is_connect(spark: SparkSession) -> bool:
    """A Spark Connect session (no SparkContext, no RDDs): the class lives in pyspark.sql.connect."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def cluster_parallelism(spark: SparkSession) -> int:
    """The cluster's default parallelism: ``spark.default.parallelism`` when set; on a classic session
    the SparkContext's; over Connect ``local[N]``'s N, else a tiny probe job (a range spreads over the
    default parallelism)."""
    conf = spark.conf.get("spark.default.parallelism", None)
    if conf:
        return max(1, int(conf))
    if not is_connect(spark):
        return max(1, spark.sparkContext.defaultParallelism)
    master = spark.conf.get("spark.master", None) or ""
    local = re.fullmatch(r"local(?:\[(\d+)(?:,\s*\d+)?\])?", master.strip())
    if local:
        return max(1, int(local.group(1) or 1))
    probe = spark.range(0, 1 << 16).selectExpr("spark_partition_id() AS p").agg({"p": "max"}).first()
    return max(1, int(probe[0]) + 1) if probe is not None and probe[0] is not None else 1


def unit_bytes(item: Any) -> int:
    """An item's weight for packing: its ``bytes`` (compaction units and rescale partitions have it), else 1."""
    size = getattr(item, "bytes", None)
    return max(1, size) if isinstance(size, int) and not isinstance(size, bool) else 1


def pack(weights: Sequence[int], bins: int) -> list[list[int]]:
    """Indices of ``weights`` in at most ``bins`` non-empty batches: largest first into the least-loaded
    batch (ties: the lower batch, the earlier item), so the batches' totals are balanced."""
    n = min(max(1, bins), len(weights))
    heap = [(0, b) for b in range(n)]
    batches: list[list[int]] = [[] for _ in range(n)]
    for i in sorted(range(len(weights)), key=lambda i: (-weights[i], i)):
        load, b = heapq.heappop(heap)
        batches[b].append(i)
        heapq.heappush(heap, (load + weights[i], b))
    return [sorted(batch) for batch in batches if batch]


def _guarded(fn: Callable[[Any], Any], item: Any) -> tuple[str, Any]:
    try:
        return _OK, fn(item)
    except Exception as e:  # noqa: BLE001 - re-raised by the driver
        try:  # exceptions whose __init__ takes other arguments do not unpickle: send the text too
            blob: bytes | None = pickle.dumps(e)
            pickle.loads(blob)
        except Exception:  # noqa: BLE001
            blob = None
        return _ERROR, (blob, f"{type(e).__name__}: {e}", item)


def _run_batches(driver_version: str, fn_blob: bytes, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The ``mapInArrow`` function (bound to its first two arguments): each input row is one batch
    ``(task, pickled [(index, item)])``. A module function, so it pickles by reference and
    ``build_id()`` is the worker's own, not the driver's captured with a closure."""
    from pyspark import TaskContext  # noqa: PLC0415 - in the Python worker only

    context = TaskContext.get()
    partition = context.partitionId() if context is not None else -1
    fn = None
    for batch in batches:
        for task, payload in zip(batch.column("task").to_pylist(), batch.column("payload").to_pylist()):
            items = pickle.loads(payload)
            rows: list[tuple[int, str, bytes]] = []
            if build_id() != driver_version:  # before unpickling the job: no file is touched
                rows = [(i, _VERSION, pickle.dumps(build_id())) for i, _item in items]
            else:
                if fn is None:
                    fn = pickle.loads(fn_blob)
                for i, item in items:
                    status, value = _guarded(fn, item)
                    rows.append((i, status, pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)))
            yield pa.RecordBatch.from_arrays(
                [
                    pa.array([task] * len(rows), pa.int32()),
                    pa.array([partition] * len(rows), pa.int32()),
                    pa.array([i for i, _s, _p in rows], pa.int32()),
                    pa.array([s for _i, s, _p in rows], pa.string()),
                    pa.array([p for _i, _s, p in rows], pa.binary()),
                ],
                schema=_RESULT_SCHEMA,
            )


def map_units(
    spark: SparkSession,
    items: Sequence[Any],
    fn: Callable[[Any], Any],
    *,
    max_tasks: int | None = None,
    lake_core_version: str | None = None,
) -> list[UnitResult]:
    """``fn(item)`` for every item in Spark tasks, one :class:`UnitResult` per item in ``items``' order.
    The items are packed by :func:`unit_bytes` into at most ``max_tasks`` (default: the cluster's
    parallelism) batches, one Spark task each. ``lake_core_version``: the driver's (default: this
    process's); a task that imported another reports ``version`` for its items and runs none."""
    from pyspark import cloudpickle  # noqa: PLC0415 - pyspark stays out of loading the Dagster definitions

    if not items:
        return []
    parallelism = max_tasks or cluster_parallelism(spark)
    batches = pack([unit_bytes(item) for item in items], parallelism)
    rows = pa.table(
        {
            "task": pa.array(range(len(batches)), pa.int64()),
            # cloudpickle: lambdas and closures of the driver travel too
            "payload": pa.array([cloudpickle.dumps([(i, items[i]) for i in batch]) for batch in batches], pa.binary()),
        }
    )
    # One batch per Spark partition. A local relation of at most the cluster's parallelism in rows is
    # sliced one row per partition (Spark's LocalTableScan) with no extra job; more batches than that
    # (an explicit max_tasks) take a range of exactly that many partitions, each batch joined to its
    # task number through a broadcast (no shuffle), at 0.3-0.5 s more per job. DataFrame methods only,
    # so classic and Connect alike.
    frame = spark.createDataFrame(rows)
    if max_tasks is not None:
        frame = (
            spark.range(0, len(batches), 1, len(batches))
            .withColumnRenamed("id", "task")
            .join(frame.hint("broadcast"), "task")
        )
    run = partial(_run_batches, lake_core_version or build_id(), cloudpickle.dumps(fn))
    table = frame.mapInArrow(run, _RESULT_DDL).toArrow()
    results = [
        UnitResult(index=i, task=t, partition=p, status=s, value=pickle.loads(blob))
        for t, p, i, s, blob in zip(*(table.column(name).to_pylist() for name in _RESULT_SCHEMA.names))
    ]
    results.sort(key=lambda r: r.index)
    if [r.index for r in results] != list(range(len(items))):  # Spark lost or repeated a row: never commit then
        raise LakeError(f"the Spark tasks returned {len(results)} outcome(s) for {len(items)} unit(s)")
    return results


def run_tasks(
    spark: SparkSession | None,
    items: Sequence[Any],
    fn: Callable[[Any], Any],
    *,
    abort: Callable[[list[Any]], None],
    error: Callable[[Any, str], Exception],
    max_tasks: int | None = None,
    lake_core_version: str | None = None,
) -> list[Any]:
    """``fn(item)`` in Spark tasks (:func:`map_units`); the outcomes in ``items``' order. If any task
    failed, ``abort(outcomes of the others)`` runs, then the task's exception (or ``error(item, text)``
    when it could not travel back) is raised; if a task imported another lake_core than
    ``lake_core_version`` (default: the driver's), :class:`ExecutorVersionError` naming both."""
    if not items:  # no session needed (a re-run with nothing to do may have none)
        return []
    if spark is None:  # only a job with no units may run without a session
        raise LakeError(
            f"{len(items)} unit(s) to run in Spark tasks but no Spark session was given: pass a session "
            "(jobs.spark.spark_session(...)), or run the job in-process with lake_core.run_locally"
        )
    driver_version = lake_core_version or build_id()
    results = map_units(spark, items, fn, max_tasks=max_tasks, lake_core_version=driver_version)
    ok = [r.value for r in results if r.status == _OK]
    if len(ok) < len(results):
        abort(ok)
        mismatch = next((r for r in results if r.status == _VERSION), None)
        if mismatch is not None:
            raise ExecutorVersionError(
                f"a Spark task imported lake_core {mismatch.value}, the driver lake_core {driver_version} "
                "(release+source digest): "
                "install the same lake_core on the cluster's Python workers (nothing was written or committed)"
            )
        blob, text, item = next(r.value for r in results if r.status == _ERROR)
        raise pickle.loads(blob) if blob is not None else error(item, text)
    return ok


def run_job(
    spark: SparkSession | None,
    job: DistributedJob,
    *,
    error: type[Exception],
    max_tasks: int | None = None,
    lake_core_version: str | None = None,
) -> Any:
    """Run lake_core's ``job`` on Spark: ``job.run_unit`` over its units packed into at most
    ``max_tasks`` (default: the cluster's parallelism) tasks (the job pickles with them), the
    outcomes back to the driver, then ``job.commit(outcomes)`` once. If a task failed, ``job.abort``
    deletes the others' files, nothing is committed and the task's exception is raised (an ``error``
    naming the unit when it could not travel back). ``spark`` may be None when the job has no units:
    nothing starts then. ``lake_core_version``: what the tasks must import (default: the driver's)."""
    outcomes = run_tasks(
        spark,
        job.units,
        job.run_unit,
        abort=job.abort,
        error=lambda unit, text: error(f"{job.describe_unit(unit)} failed in its Spark task: {text}"),
        max_tasks=max_tasks,
        lake_core_version=lake_core_version,
    )
    return job.commit(outcomes)
