"""The common shape of every maintenance result: frozen, typed, and flattenable to metadata.

Every result reads the same way to a person too: ``summary()`` is one line (what was done, the
counts, the snapshot produced, how long it took, or why nothing was done) and ``describe()`` a
screen at most (every figure that is not empty, bytes and times human-readable, long lists cut to
a few items and "… and N more"). Both are made here from the fields and their metadata
(:func:`fact`), so a new result only declares its fields.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import math
from collections.abc import Callable, Mapping
from typing import Any

#: Lines of :meth:`OperationResult.describe` at most, and items of one list shown before "… and N more".
DESCRIBE_LINES = 20
LIST_ITEMS = 5


def fact(
    default: Any = dataclasses.MISSING,
    *,
    default_factory: Any = dataclasses.MISSING,
    label: str | None = None,
    summary: bool = False,
    counts: bool = True,
    unit: str | None = None,
    hidden: bool = False,
    item: Callable[[Any], str] | None = None,
    size: str | None = None,
) -> Any:
    """A result field with how a person reads it.

    ``label``: its name in the texts (default: the field name, underscores as spaces).
    ``summary``: shown in the one-line ``summary()`` when it is not empty; a result whose summary
    facts are all empty did nothing (its ``skipped`` says why); ``counts=False``: a summary fact
    that is context (the earliest snapshot after an expiry), set whether or not anything was done. ``unit``: ``'bytes'`` or
    ``'seconds'`` or ``'epoch'`` (seconds since 1970; default from the name: ``bytes*``/``*_bytes*`` and ``*_s``). ``hidden``: kept
    in ``as_metadata()`` but not in the texts. ``item``: how one element of a list reads.
    ``size``: the field holding these files' bytes, shown with the count in the summary
    (``'files read 15 (38.5 KiB)'``)."""
    metadata = {
        "label": label,
        "summary": summary,
        "counts": counts,
        "unit": unit,
        "hidden": hidden,
        "item": item,
        "size": size,
    }
    if default_factory is not dataclasses.MISSING:
        return dataclasses.field(default_factory=default_factory, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


@dataclasses.dataclass(frozen=True, kw_only=True)
class OperationResult:
    """Base of every maintenance result (``CompactionResult``, ``ExpireSnapshotsResult``, ...).

    Subclasses add their own fields (counts, bytes, snapshot ids, what was skipped and why).
    ``as_metadata()`` flattens them to plain numbers and strings, which Dagster records as
    materialization metadata (numbers become plottable numeric metadata). ``summary()`` and
    ``describe()`` are the texts a person reads (see the module).
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

    # -- the texts a person reads -------------------------------------------------------------------
    def did_something(self) -> bool:
        """Whether any summary fact is non-empty (a dry run: would do something)."""
        return any(
            not _empty(getattr(self, f.name))
            for f in self._facts()
            if f.metadata.get("summary") and f.metadata.get("counts", True)
        )

    def noop_reason(self) -> str | None:
        """Why nothing was done (None: something was): the ``skipped`` text when no summary fact
        is set, else "nothing to do"."""
        if self.did_something():
            return None
        skipped = getattr(self, "skipped", None)
        if isinstance(skipped, str) and skipped:
            return skipped
        if isinstance(skipped, (tuple, list)) and skipped:
            return "; ".join(map(str, skipped))
        return "nothing to do"

    def headline(self) -> str:
        """``'compact on db.t'`` (``' (dry run)'`` appended for a dry run)."""
        return f"{self.operation} on {self.table}" + (" (dry run)" if self.dry_run else "")

    def summary(self) -> str:
        """One line: what was done (or, in a dry run, would be), the snapshot produced and the time;
        or why nothing was done."""
        took = f"; took {human_duration(self.duration_s)}" if self.duration_s else ""
        reason = self.noop_reason()
        if reason is not None:
            return f"{self.headline()}: nothing done — {reason}{took}"
        parts = [
            _fact_text(f, getattr(self, f.name), inline=True)
            + (f" ({human_bytes(getattr(self, f.metadata['size']))})" if f.metadata.get("size") else "")
            for f in self._facts()
            if f.metadata.get("summary") and not _empty(getattr(self, f.name))
        ]
        return f"{self.headline()}: {'; '.join(parts)}{took}"

    def describe(self) -> str:
        """A screen at most (:data:`DESCRIBE_LINES`): the summary, then every non-empty fact on its
        own line, lists cut to :data:`LIST_ITEMS` items."""
        lines = [self.summary()]
        for f in self._facts():
            value = getattr(self, f.name)
            if _empty(value) or (f.name == "skipped" and self.noop_reason() == value):
                continue
            lines += _fact_lines(f, value)
        if len(lines) > DESCRIBE_LINES:
            cut = len(lines) - (DESCRIBE_LINES - 1)
            lines = lines[: DESCRIBE_LINES - 1] + [f"  … and {cut} more lines (as_metadata() or --json has all)"]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()

    def _facts(self) -> list[dataclasses.Field]:
        return [f for f in dataclasses.fields(self) if f.name not in _BASE_FIELDS and not f.metadata.get("hidden")]


_BASE_FIELDS = frozenset({"operation", "table", "dry_run", "duration_s"})  # in the headline and the time


# -- formatting ---------------------------------------------------------------------------------------


def human_bytes(n: float) -> str:
    """``1536`` → ``'1.5 KiB'``; plain bytes below 1 KiB."""
    if abs(n) < 1024:
        return f"{int(n)} B"
    value = float(n)
    for unit in ("KiB", "MiB", "GiB", "TiB", "PiB"):
        value /= 1024
        if abs(value) < 1024 or unit == "PiB":
            return f"{value:.1f} {unit}"
    raise AssertionError("unreachable")


def human_duration(seconds: float | _dt.timedelta) -> str:
    """A duration as a person writes it: ``0.25`` → ``'250 ms'``, ``-3600`` → ``'-1h'``,
    ``93784`` → ``'1d 2h 3m 4s'``; a timedelta likewise (``timedelta(days=-1, seconds=82800)``
    → ``'-1h'``)."""
    if isinstance(seconds, _dt.timedelta):
        seconds = seconds.total_seconds()
    if not math.isfinite(seconds):
        return str(seconds)
    sign = "-" if seconds < 0 else ""
    s = abs(seconds)
    if s < 1:
        return f"{sign}{s * 1000:.0f} ms"
    if s < 60:
        return f"{sign}{s:.1f} s" if s < 10 and s != int(s) else f"{sign}{s:.0f} s"
    whole = int(round(s))
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if whole >= size:
            parts.append(f"{whole // size}{unit}")
            whole %= size
    return sign + " ".join(parts)


def shown(value: Any) -> str:
    """A value for an error message: a timedelta humanly (``'-1h'``), anything else as its repr."""
    if isinstance(value, _dt.timedelta):
        return human_duration(value)
    return repr(value)


def _empty(value: Any) -> bool:
    return value is None or value is False or value == 0 or (isinstance(value, (str, tuple, list, dict)) and not value)


def _unit(f: dataclasses.Field) -> str | None:
    if f.metadata.get("unit"):
        return f.metadata["unit"]
    if f.name.startswith("bytes") or "_bytes" in f.name:
        return "bytes"
    if f.name.endswith("_s") and f.type in ("int", "float", "int | None", "float | None"):
        return "seconds"
    return None


def _label(f: dataclasses.Field) -> str:
    return f.metadata.get("label") or f.name.replace("_", " ")


def _scalar(f: dataclasses.Field, value: Any) -> str:
    unit = _unit(f)
    if isinstance(value, bool):
        return "yes" if value else "no"
    if unit == "bytes" and isinstance(value, (int, float)):
        return human_bytes(value)
    if unit == "seconds" and isinstance(value, (int, float)):
        return human_duration(value)
    if unit == "epoch" and isinstance(value, (int, float)):
        return _dt.datetime.fromtimestamp(value, _dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    return str(value)


def _ids_range(items: list[Any]) -> str | None:
    """``[3, 4, 5, 6]`` → ``'3..6 (4)'``: consecutive ids read as a range."""
    if len(items) > 2 and all(isinstance(v, int) and not isinstance(v, bool) for v in items):
        if items == list(range(items[0], items[0] + len(items))):
            return f"{items[0]}..{items[-1]} ({len(items)})"
    return None


def _item(f: dataclasses.Field, value: Any) -> str:
    fmt = f.metadata.get("item")
    return fmt(value) if fmt else str(value)


def _fact_text(f: dataclasses.Field, value: Any, *, inline: bool) -> str:
    """``'files read 12'`` / ``'bytes read 4.2 MiB'`` / ``'expired snapshots 1..68 (68)'``."""
    label = _label(f)
    if isinstance(value, Mapping):
        return f"{label} " + ", ".join(f"{k}={v}" for k, v in value.items())
    if isinstance(value, (tuple, list, set, frozenset)):
        items = list(value)
        ids = _ids_range(items)
        if ids is not None:
            return f"{label} {ids}"
        if inline:
            return f"{label} {len(items)}"
        head = ", ".join(_item(f, v) for v in items[:LIST_ITEMS])
        more = f" … and {len(items) - LIST_ITEMS} more" if len(items) > LIST_ITEMS else ""
        return f"{label}: {head}{more}"
    if isinstance(value, bool):
        return f"{label}: {_scalar(f, value)}"
    if isinstance(value, str):
        return f"{label}: {value}"
    return f"{label} {_scalar(f, value)}"


def _fact_lines(f: dataclasses.Field, value: Any) -> list[str]:
    """The lines of one fact in ``describe()``: lists of long items (paths) one per line, cut."""
    if isinstance(value, (tuple, list)) and value and _ids_range(list(value)) is None:
        items = [_item(f, v) for v in value]
        if any(len(s) > 40 for s in items) or f.metadata.get("item"):
            lines = [f"  {_label(f)} ({len(items)}):"] + [f"    {s}" for s in items[:LIST_ITEMS]]
            if len(items) > LIST_ITEMS:
                lines.append(f"    … and {len(items) - LIST_ITEMS} more")
            return lines
    return [f"  {_fact_text(f, value, inline=False)}"]


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
    if isinstance(value, (tuple, list, set, frozenset)):
        items = list(value)
        if all(isinstance(v, (bool, int, float, str)) for v in items) and len(items) <= 50:
            return {name: ", ".join(map(str, items)), f"{name}.count": len(items)}
        return {f"{name}.count": len(items)}
    return {name: str(value)}
