"""The newest snapshot ids of many tables, read a few at a time ahead of need.

A poller over a lake (the control plane's sensor ticks) asks each table's ``LATEST`` hint in turn.
On an object store each hint is a GET and two HEADs, tens of milliseconds of waiting that the
poller spends idle, so reading one after another makes a tick's cost grow with the lake.
:class:`LatestSnapshotIds` knows the order the ids will be asked for and keeps up to
``2 x concurrency`` of the next ones in flight on a small thread pool: the poller gets each id as
soon as it is read, and when it stops early (its time budget is spent) at most that many reads were
made for nothing. On local disk a hint is a few microseconds and threads only add overhead, so
``concurrency=1`` reads each id when asked.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from types import TracebackType

from lake_core.errors import InvalidOptionError


def check_concurrency(concurrency: int) -> int:
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise InvalidOptionError(f"latest_snapshot_ids: concurrency={concurrency!r} must be a whole number >= 1")
    return concurrency


class LatestSnapshotIds:
    """``get(identifier)``: the table's newest snapshot id (None: no snapshot, no table), as
    ``read(identifier)`` returns it or raising what it raised. A context manager: leaving it drops
    the reads not started and waits for those under way (one round trip at most)."""

    def __init__(self, read: Callable[[str], int | None], order: Sequence[str], *, concurrency: int):
        check_concurrency(concurrency)
        self._read = read
        self._order = list(order)
        self._position = {name: i for i, name in reversed(list(enumerate(self._order)))}
        self._ahead = 2 * concurrency
        self._pool = ThreadPoolExecutor(concurrency, thread_name_prefix="latest-hint") if concurrency > 1 else None
        self._futures: dict[str, Future[int | None]] = {}
        self._submitted = 0

    def get(self, identifier: str) -> int | None:
        position = self._position.get(identifier)
        if self._pool is None or position is None:  # not in the announced order: read it now
            return self._read(identifier)
        self._fill(position + 1 + self._ahead)
        future = self._futures.pop(identifier, None)
        if future is None:  # asked twice: the first answer was handed out, read it again
            return self._read(identifier)
        return future.result()

    def _fill(self, upto: int) -> None:
        assert self._pool is not None
        while self._submitted < min(upto, len(self._order)):
            name = self._order[self._submitted]
            self._submitted += 1
            if name not in self._futures:
                self._futures[name] = self._pool.submit(self._read, name)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._futures.clear()

    def __enter__(self) -> LatestSnapshotIds:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()
