"""The cyclic garbage collector paused around bulk work that allocates many objects and frees
none (decoding a manifest into entries, encoding them back, planning one unit per bucket).

Such work builds no reference cycles, but every few hundred allocations CPython's collector
walks the young objects, and every so often all of them: with hundreds of thousands of entries
alive, that walk costs as much as the decoding itself. Pauses nest and may overlap between
threads: the collector runs again when the last one ends (if it ran before the first began).
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["paused_gc"]

_lock = threading.Lock()
_depth = 0
_was_enabled = False


@contextmanager
def paused_gc() -> Iterator[None]:
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                gc.enable()
