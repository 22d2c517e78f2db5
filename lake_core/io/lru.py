"""A thread-safe least-recently-used map bounded by the total weight of its values, for the
process-wide caches of immutable files (decoded manifests, the key columns of data files): each
value has a weight (entries, bytes), and the oldest used values go first once the sum exceeds
``max_weight``. A value heavier than the whole bound is not kept."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable, Iterable
from typing import Any


class WeightedLru:
    def __init__(self, max_weight: int) -> None:
        self.max_weight = max_weight
        self._data: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._weight = 0
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> Any | None:
        """The value of ``key`` (now the most recently used), or None."""
        with self._lock:
            hit = self._data.get(key)
            if hit is None:
                return None
            self._data.move_to_end(key)
            return hit[0]

    def peek(self, keys: Iterable[Hashable]) -> dict[Hashable, Any]:
        """The values held for ``keys``, their recency unchanged (see :meth:`touch`)."""
        with self._lock:
            return {k: hit[0] for k in keys if (hit := self._data.get(k)) is not None}

    def touch(self, keys: Iterable[Hashable]) -> None:
        with self._lock:
            for k in keys:
                if k in self._data:
                    self._data.move_to_end(k)

    def put(self, key: Hashable, value: Any, *, weight: int) -> None:
        if weight > self.max_weight:  # heavier than the whole bound (or the cache is off)
            return
        with self._lock:
            self._drop(key)
            self._data[key] = (value, weight)
            self._weight += weight
            self._evict()

    def discard(self, key: Hashable) -> None:
        with self._lock:
            self._drop(key)

    def resize(self, max_weight: int) -> None:
        with self._lock:
            self.max_weight = max_weight
            self._evict()

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
            self._weight = 0

    @property
    def weight(self) -> int:
        return self._weight

    def __len__(self) -> int:
        return len(self._data)

    def _drop(self, key: Hashable) -> None:
        old = self._data.pop(key, None)
        if old is not None:
            self._weight -= old[1]

    def _evict(self) -> None:
        while self._data and self._weight > self.max_weight:
            _key, (_value, weight) = self._data.popitem(last=False)
            self._weight -= weight


__all__ = ["WeightedLru"]
