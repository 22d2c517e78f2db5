"""read_ahead: sources' items in source order, at most ``threads`` sources in flight on as many
long-lived threads, errors raised in the consumer, threads gone once the consumer closes."""

from __future__ import annotations

import threading
import time

import pytest

from lake_core.read.read_ahead import read_ahead


def _stream(seen: dict):
    def stream(source: int):
        seen.setdefault(source, threading.current_thread())  # the object: an ident can be reused
        for i in range(5):
            time.sleep(0.001 * (source % 3))  # sources finish out of order
            yield source * 10 + i

    return stream


@pytest.mark.parametrize("ahead", [1, 2, None])
def test_items_arrive_in_source_order_on_at_most_threads_threads(ahead):
    seen: dict = {}
    out = [item for _s, item in read_ahead(list(range(9)), _stream(seen), threads=2, ahead=ahead)]
    assert out == [s * 10 + i for s in range(9) for i in range(5)]
    # one thread per slot for the whole read: nine sources, two threads
    assert len(set(seen.values())) == 2 and threading.current_thread() not in seen.values()


def test_an_error_is_raised_in_the_consumer_and_the_threads_end():
    def stream(source: int):
        yield source
        if source == 2:
            raise ValueError("source 2 is broken")

    got = []
    with pytest.raises(ValueError, match="source 2"):
        for _s, item in read_ahead(list(range(6)), stream, threads=2):
            got.append(item)
    assert got == [0, 1, 2]
    deadline = time.monotonic() + 30
    while any(t.name == "lake-core-read-ahead" for t in threading.enumerate()) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not any(t.name == "lake-core-read-ahead" for t in threading.enumerate())
