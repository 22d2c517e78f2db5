"""Whether a Parquet read decodes a batch's columns in Arrow's threads or in the reading thread.

Arrow decodes the columns of a batch in its own thread pool (one thread per core), which lets a
lone reader use every core. A worker that is one of several running side by side (a compaction's
buckets two at a time, a rescale's routes and read-backs) already keeps the cores busy: there the
pool only adds hand-offs between threads, and each worker waits for its batch while its columns
queue behind the other workers'. Decoding in the worker's own thread measured 9-14% less wall
time for a full compaction (1M rows + 200k updates, 4 buckets, two at a time: 16-20 alternating
pairs, faster in 13-16 of them) and 8% for a 2 -> 8 rescale (30 pairs, faster in 24); a lone read (a
table's ``to_arrow``, whose two read-ahead threads leave the last split alone at the end) keeps
Arrow's threads: it was 9% slower without them.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

_THREAD = threading.local()


def arrow_decode_threads() -> bool:
    """Whether this thread's Parquet reads decode in Arrow's threads (not inside
    :func:`one_of_several_workers`)."""
    return not getattr(_THREAD, "worker", False)


@contextmanager
def one_of_several_workers(several: bool = True) -> Iterator[None]:
    """Within it, this thread's Parquet reads decode in this thread (when ``several``: the caller
    runs other workers beside this one). Restores the previous setting on exit; a thread setting,
    so enter it in the worker's own thread (not around a generator another thread drives)."""
    before = getattr(_THREAD, "worker", False)
    _THREAD.worker = before or several
    try:
        yield
    finally:
        _THREAD.worker = before
