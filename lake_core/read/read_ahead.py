"""Reading several streams at once: each source's stream runs in its own thread, at most ``ahead``
items in front of the consumer, and the items are handed over source by source, in order. Up to
``threads`` sources run at a time, so memory is bounded by threads x (a stream's own working set
+ ``ahead`` items). Parquet decoding, zstd and Arrow kernels release the GIL, so two threads use
both cores."""

from __future__ import annotations

import queue
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TypeVar

S = TypeVar("S")
T = TypeVar("T")

_DONE = object()


@dataclass(frozen=True)
class _Failed:
    error: BaseException


def read_ahead(
    sources: Sequence[S],
    stream: Callable[[S], Iterator[T]],
    *,
    threads: int,
    ahead: int | None = 2,
    background: bool = False,
) -> Iterator[tuple[S, T]]:
    """``(source, item)`` for every item of ``stream(source)``, sources in order. An error of a
    stream is raised in the consumer; closing the iterator early stops every thread. ``ahead=None``:
    no bound, each thread runs its stream to the end (for a consumer that keeps every item anyway).
    ``background``: a single source (or ``threads`` = 1) still runs in a thread of its own, so the
    consumer's work overlaps the stream's (a pipeline of two stages)."""
    if not background and (threads <= 1 or len(sources) <= 1):
        for s in sources:
            for item in stream(s):
                yield s, item
        return
    stop = threading.Event()

    def put(q: queue.Queue, item) -> bool:
        while not stop.is_set():
            try:
                q.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def produce(source: S, q: queue.Queue) -> None:
        try:
            for item in stream(source):
                if not put(q, item):
                    return
        except BaseException as e:  # noqa: BLE001 - handed to the consumer's thread, which raises it
            put(q, _Failed(e))
            return
        put(q, _DONE)

    todo = iter(sources)
    running: deque = deque()
    tasks: queue.Queue = queue.Queue()

    def work() -> None:
        # one thread per slot for the whole read, not one per source: a thread's allocator arenas
        # are warm by its second source (a thread per source costs about 5% more CPU)
        while (task := tasks.get()) is not None and not stop.is_set():
            produce(*task)

    def start_next() -> None:
        for s in todo:
            q: queue.Queue = queue.Queue(maxsize=ahead or 0)
            tasks.put((s, q))
            running.append((s, q))
            return

    workers = min(max(threads, 1), len(sources))
    for _ in range(workers):
        # daemon: a reader dropped half-way must never keep the interpreter from exiting
        threading.Thread(target=work, daemon=True, name="lake-core-read-ahead").start()
    try:
        for _ in range(workers):
            start_next()
        while running:
            s, q = running[0]
            item = q.get()
            if item is _DONE:
                running.popleft()
                start_next()
            elif isinstance(item, _Failed):
                raise item.error
            else:
                yield s, item
    finally:
        stop.set()
        for _ in range(workers):
            tasks.put(None)
