"""The common shape of every maintenance result: frozen, typed, and flattenable to metadata."""

from __future__ import annotations

import dataclasses
from typing import Any


@dataclasses.dataclass(frozen=True, kw_only=True)
class OperationResult:
    """Base of every maintenance result (``CompactionResult``, ``ExpireSnapshotsResult``, ...).

    Subclasses add their own fields (counts, bytes, snapshot ids, what was skipped and why).
    ``as_metadata()`` flattens them to plain numbers and strings, which Dagster records as
    materialization metadata (numbers become plottable numeric metadata).
    """

    operation: str
    table: str
    dry_run: bool = False
    duration_s: float = 0.0

    def as_metadata(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            out.update(_flatten(f.name, getattr(self, f.name)))
        return out


def _flatten(name: str, value: Any) -> dict[str, Any]:
    if value is None or isinstance(value, (bool, int, float, str)):
        return {name: value}
    if dataclasses.is_dataclass(value):
        return {
            f"{name}.{k}": v
            for f in dataclasses.fields(value)
            for k, v in _flatten(f.name, getattr(value, f.name)).items()
        }
    if isinstance(value, dict):
        return {f"{name}.{k}": v for key, item in value.items() for k, v in _flatten(str(key), item).items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = list(value)
        if all(isinstance(v, (bool, int, float, str)) for v in items) and len(items) <= 50:
            return {name: ", ".join(map(str, items)), f"{name}.count": len(items)}
        return {f"{name}.count": len(items)}
    return {name: str(value)}
