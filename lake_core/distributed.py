"""One protocol for the maintenance operations that run in parts: plan → run units anywhere →
commit once → abort (dedicated compaction, bucket rescale).

A :class:`DistributedJob` is made on a driver from metadata (the plan) and pickles, so an executor
can ship it to its workers. It has four parts:

- ``units``: the work, frozen and picklable (a compaction's (partition, bucket), a rescale's
  partition);
- ``run_unit(unit)``: runs in any process (thread, process, Spark task), writes new files and
  commits nothing; its outcome pickles back;
- ``commit(outcomes)``: once, on the driver, with ``outcomes[i]`` the outcome of ``units[i]``;
  it owns its own failure (deleting what certainly did not land, keeping what may have);
- ``abort(outcomes)``: deletes the files of executed units when another unit failed and nothing
  will be committed;

plus ``describe_unit(unit)`` for error messages. :func:`run_locally` executes a job in threads;
``jobs.tasks.run_job`` executes the same job on Spark, with the same abort-on-failure semantics.
The module sits at the bottom of lake_core (it imports nothing of it), so every stage can
implement the protocol.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Protocol, TypeVar

from lake_core.decode_threads import one_of_several_workers

log = logging.getLogger(__name__)

UnitT = TypeVar("UnitT")
OutcomeT = TypeVar("OutcomeT")
ResultT = TypeVar("ResultT", covariant=True)  # only returned


class DistributedJob(Protocol[UnitT, OutcomeT, ResultT]):
    """A planned maintenance operation whose units run anywhere and commit once (see the module)."""

    @property
    def units(self) -> Sequence[UnitT]:
        """The work, frozen and picklable, in the order ``commit`` expects the outcomes."""
        ...

    def run_unit(self, unit: UnitT) -> OutcomeT:
        """Run one unit: write its new files, commit nothing; the outcome is picklable."""
        ...

    def commit(self, outcomes: Sequence[OutcomeT]) -> ResultT:
        """One commit of every outcome (``outcomes[i]`` belongs to ``units[i]``) and the job's result."""
        ...

    def abort(self, outcomes: Sequence[OutcomeT]) -> None:
        """Delete the files of executed units that will not be committed (another unit failed)."""
        ...

    def describe_unit(self, unit: UnitT) -> str:
        """The operation and the unit, for an error message ('compaction of db.t, partition ...')."""
        ...


#: A progress callback: ``progress(done, total)`` after each finished unit (and ``(0, total)`` first).
Progress = Callable[[int, int], None]


def run_units_locally(
    job: DistributedJob[UnitT, OutcomeT, ResultT], *, parallelism: int = 1, progress: Progress | None = None
) -> list[OutcomeT]:
    """Every unit of ``job`` in a pool of ``parallelism`` threads; the outcomes in ``units``' order.
    ``progress(done, total)`` is called in this thread as units finish (a command's progress bar).
    If a unit fails, the units not started are cancelled, the finished ones aborted, and its
    exception raised: nothing of the job is left behind. Parquet and zstd release the GIL, so
    threads use the cores."""
    units = list(job.units)
    outcomes: list[OutcomeT | None] = [None] * len(units)
    if progress is not None:
        progress(0, len(units))
    several = parallelism > 1 and len(units) > 1

    def run(unit: UnitT) -> OutcomeT:
        with one_of_several_workers(several):  # units side by side decode in their own threads
            return job.run_unit(unit)

    with ThreadPoolExecutor(max_workers=max(1, parallelism)) as pool:
        futures = {pool.submit(run, unit): i for i, unit in enumerate(units)}
        for done, future in enumerate(as_completed(futures), 1):
            i = futures[future]
            try:
                outcomes[i] = future.result()
            except Exception:
                for f in futures:
                    f.cancel()
                # f.exception() waits for the units still running: their files go too
                job.abort(
                    [f.result() for f, j in futures.items() if j != i and not f.cancelled() and f.exception() is None]
                )
                raise
            log.info("%s: done (%d/%d unit(s))", job.describe_unit(units[i]), done, len(units))
            if progress is not None:
                progress(done, len(units))
    return outcomes  # type: ignore[return-value]


def run_locally(
    job: DistributedJob[UnitT, OutcomeT, ResultT], *, parallelism: int = 1, progress: Progress | None = None
) -> ResultT:
    """Run ``job`` in this process: its units in threads (:func:`run_units_locally`, which calls
    ``progress``), then its one commit. The in-process counterpart of ``jobs.tasks.run_job`` (Spark)."""
    return job.commit(run_units_locally(job, parallelism=parallelism, progress=progress))
