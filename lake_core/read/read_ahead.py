"""Reading several streams at once: each source's stream runs in its own thread, at most ``ahead``
items in front of the consumer, and the items are handed over source by source, in order. Up to
``threads`` sources run at a time, so memory is bounded by threads x (a stream's own working set
+ ``ahead`` items). Parquet decoding, zstd and Arrow kernels release the GIL, so two threads use
both cores."""
from __future__ import annotations

import queue
import threading
from collections import deque
from dataclasses import dataclass
from typing import Callable, Iterator, Sequence, TypeVar

S = TypeVar("S")
T = TypeVar("T")

_DONE = object()


@dataclass(frozen=True)
class _Failed:
    error: BaseException


def read_ahead(sources: Sequence[S], stream: Callable[[S], Iterator[T]], *, threads: int,
               ahead: int = 2) -> Iterator[tuple[S, T]]:
    """``(source, item)`` for every item of ``stream(source)``, sources in order. An error of a
    stream is raised in the consumer; closing the iterator early stops every thread."""
    if threads <= 1 or len(sources) <= 1:
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

    def start_next() -> None:
        for s in todo:
            q: queue.Queue = queue.Queue(maxsize=ahead)
            # daemon: a reader dropped half-way must never keep the interpreter from exiting
            threading.Thread(target=produce, args=(s, q), daemon=True, name="lake-core-read-ahead").start()
            running.append((s, q))
            return

    try:
        for _ in range(threads):
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
