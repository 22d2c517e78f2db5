"""What the lake-wide sensors share: one JSON cursor holding an entry per table, a time budget per
tick, and a round-robin start so slow tables do not starve the others.

The cursor is ``{"tables": {<table name>: {"table": <identity>, "snapshot": <id>, ...}}, "next": <i>}``:
each entry is a table's own cursor (its identity — warehouse, name and ``schema-0`` creation time,
see :func:`orchestration.defs.sensors.table_identity` — and the last snapshot seen, plus what the
sensor keeps besides), and ``next`` the position in the table list where the next tick starts.

A tick visits the tables from ``next`` on, wrapping around, until every table was visited or the
budget is spent; the tables not reached are counted in the tick's log and visited first by the
next tick. A table that cannot be read is named (:func:`table_failure`) and the tick goes on.
The tables' ``LATEST`` hints are read in that same order a few ahead of the visits
(:func:`latest_hints`), so on S3 a tick waits for a round trip per handful of tables, not per table.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lake_core import Catalog, LatestSnapshotIds

HINT_READS = 8  # LATEST hints read at once (on object stores): a few dozen ms each on S3


@dataclass
class LakeCursor:
    tables: dict[str, dict[str, Any]] = field(default_factory=dict)
    next: int = 0
    extra: dict[str, Any] = field(default_factory=dict)  # sensor-wide state (e.g. the lake_health key)

    def encode(self) -> str:
        return json.dumps({"tables": self.tables, "next": self.next, **self.extra}, sort_keys=True)

    @staticmethod
    def decode(text: str | None) -> LakeCursor:
        """An empty cursor for None or unreadable text. A single-table cursor of the per-table sensors
        (``{"table": <identity>, "snapshot": <id>}``) becomes that table's entry."""
        try:
            data = json.loads(text) if text else None
        except ValueError:
            return LakeCursor()
        if not isinstance(data, dict):
            return LakeCursor()
        if "tables" not in data and "table" in data and "snapshot" in data:
            identity = str(data["table"])
            name = identity.rsplit("@", 1)[0].rsplit("/", 1)[-1]
            return LakeCursor({name: {"table": identity, "snapshot": data["snapshot"]}})
        tables = data.get("tables")
        extra = {k: v for k, v in data.items() if k not in ("tables", "next")}
        try:
            start = int(data.get("next", 0))
        except (TypeError, ValueError):
            start = 0
        return LakeCursor(dict(tables) if isinstance(tables, dict) else {}, start, extra)


class TickBudget:
    """Seconds a tick may spend visiting tables (``control.tick_budget`` in ``tables.yaml``)."""

    def __init__(self, seconds: float, clock: Callable[[], float] | None = None):
        self.seconds = seconds
        self._clock = clock if clock is not None else time.monotonic
        self.started = self._clock()

    @property
    def elapsed(self) -> float:
        return self._clock() - self.started

    def spent(self) -> bool:
        return self.elapsed >= self.seconds


@dataclass
class Visit:
    """The tables one tick visited and the position the next tick starts at."""

    total: int
    visited: int = 0
    next: int = 0

    @property
    def carried(self) -> int:
        return self.total - self.visited

    def summary(self, budget: TickBudget) -> str:
        text = f"visited {self.visited} of {self.total} table(s) in {budget.elapsed:.2f} s"
        if self.carried:
            text += (
                f"; {self.carried} not reached within the tick budget ({budget.seconds:g} s), "
                f"carried to the next tick (it starts at table #{self.next})"
            )
        return text


def table_failure(lake: Any, name: str, error: Exception) -> str:
    """What a tick says of a table it could not visit, after making sure the storage itself is
    reachable (``lake.check_access()`` raises a one-line error naming bucket, endpoint and
    variables, which fails the tick). Any other problem is that table's: the tick goes on with the
    other tables and says it here."""
    lake.check_access()
    return f"{name}: not visited, {type(error).__name__}: {error}"


def rotation(names: Sequence[str], start: int) -> list[str]:
    """The names in the order a tick starting at ``start`` visits them (wrapping around)."""
    n = len(names)
    start = start % n if n else 0
    return [*names[start:], *names[:start]]


def latest_hints(catalog: Catalog, names: Sequence[str], start: int, polled: Collection[str]) -> LatestSnapshotIds:
    """The ``LATEST`` hints of the ``polled`` tables among ``names``, read ahead in the order a tick
    starting at ``start`` visits them (a context manager: leaving it drops the reads that a tick
    stopped by its budget will not use)."""
    order = [name for name in rotation(names, start) if name in polled]
    return catalog.latest_snapshot_ids(order, concurrency=HINT_READS)


def round_robin(names: Sequence[str], start: int, budget: TickBudget, visit: Visit) -> Iterator[str]:
    """The names from ``start`` on (wrapping around) while the budget lasts; ``visit`` records how
    far it got. The first table is always visited, so every tick makes progress."""
    n = len(names)
    start = start % n if n else 0
    visit.next = start
    for i, name in enumerate(rotation(names, start)):
        if i > 0 and budget.spent():
            break
        visit.visited = i + 1
        visit.next = (start + i + 1) % n
        yield name
