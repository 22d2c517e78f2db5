"""How Java's system tables print values: ``Arrays.toString`` of a partition or key, a ``TreeMap``'s
``toString``, a ``Duration``, Jackson's flat JSON, and ``LocalDateTime.ofInstant(ms, systemDefault)``.

Everything here works on metadata (one value per snapshot, schema, tag, manifest or data file),
never on a data file's rows."""

from __future__ import annotations

import datetime as _dt
import json
import math
import time
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa

from lake_core.schema.table_schema import java_hashmap_order

_EPOCH_DAY = _dt.date(1970, 1, 1)
_EPOCH = _dt.datetime(1970, 1, 1)


def java_double(value: float) -> str:
    """Java ``Double.toString``: ``1.0``, ``0.001``, ``1.0E7``, ``1.5E-4``, ``NaN``, ``Infinity``
    (shortest digits, as Python's ``repr``)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    return _java_floating(repr(value), value)


def java_float(value: float) -> str:
    """Java ``Float.toString`` of a FLOAT value (the shortest digits of the 32-bit float)."""
    if math.isnan(value) or math.isinf(value) or value == 0:
        return java_double(value)
    return _java_floating(str(np.float32(value)), value)


def _java_floating(shortest: str, value: float) -> str:
    sign, digits, exponent = Decimal(shortest).as_tuple()
    assert isinstance(exponent, int)
    text = "".join(map(str, digits)).rstrip("0") or "0"
    point = len(digits) + int(exponent)  # the decimal point sits after this many digits
    minus = "-" if sign else ""
    if 1e-3 <= abs(value) < 1e7:
        if point <= 0:
            return f"{minus}0.{'0' * -point}{text}"
        whole, frac = text[:point].ljust(point, "0"), text[point:]
        return f"{minus}{whole}.{frac or '0'}"
    return f"{minus}{text[0]}.{text[1:] or '0'}E{point - 1}"


def java_text(value: Any, arrow_type: pa.DataType | None = None) -> str:
    """``String.valueOf`` of the internal value Java holds for ``value`` (``Arrays.toString``'s items):
    a DATE is its epoch day, a TIMESTAMP ``LocalDateTime.toString()``, a DECIMAL its plain text."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return java_float(value) if arrow_type is not None and pa.types.is_float32(arrow_type) else java_double(value)
    if isinstance(value, _dt.datetime):
        return _local_date_time_text(value.replace(tzinfo=None))
    if isinstance(value, _dt.date):
        return str((value - _EPOCH_DAY).days)
    if isinstance(value, Decimal):
        return format(value, "f")
    if isinstance(value, (bytes, bytearray)):
        return "[" + ", ".join(str(b - 256 if b > 127 else b) for b in value) + "]"
    return str(value)


def _local_date_time_text(t: _dt.datetime) -> str:
    """Java ``LocalDateTime.toString()`` (``Timestamp.toString`` of a TIMESTAMP value)."""
    text = f"{t.year:04d}-{t.month:02d}-{t.day:02d}T{t.hour:02d}:{t.minute:02d}"
    if t.second or t.microsecond:
        text += f":{t.second:02d}"
        if t.microsecond:
            text += f".{t.microsecond // 1000:03d}" if t.microsecond % 1000 == 0 else f".{t.microsecond:06d}"
    return text


def java_array_text(values: Sequence[Any], types: Sequence[pa.DataType]) -> str:
    """Java ``Arrays.toString``: ``[a, b]``, ``[]`` for none."""
    return "[" + ", ".join(java_text(v, t) for v, t in zip(values, types)) + "]"


def java_map_text(entries: Iterable[tuple[str, Any, pa.DataType | None]]) -> str:
    """Java ``TreeMap.toString`` of string keys: ``{a=1, b=null}``, sorted by key."""
    ordered = sorted(entries, key=lambda e: e[0])
    return "{" + ", ".join(f"{k}={java_text(v, t)}" for k, v, t in ordered) + "}"


def java_duration(delta: _dt.timedelta) -> str:
    """Java ``Duration.toString``: ``PT1H``, ``PT48H``, ``PT1M30S``, ``PT0.5S``, ``PT0S``."""
    micros = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    if micros == 0:
        return "PT0S"
    sign = "-" if micros < 0 else ""
    micros = abs(micros)
    hours, rest = divmod(micros, 3_600_000_000)
    minutes, rest = divmod(rest, 60_000_000)
    seconds, frac = divmod(rest, 1_000_000)
    out = "PT"
    if hours:
        out += f"{sign}{hours}H"
    if minutes:
        out += f"{sign}{minutes}M"
    if seconds or frac:
        out += f"{sign}{seconds}"
        if frac:
            out += "." + f"{frac:06d}".rstrip("0")
        out += "S"
    return out


def flat_json(value: Any) -> str:
    """Jackson's compact JSON (``JsonSerdeUtil.toFlatJson``): no spaces, keys in the given order."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def local_millis(epoch_millis: Sequence[int | None]) -> pa.Array:
    """``LocalDateTime.ofInstant(Instant.ofEpochMilli(ms), ZoneId.systemDefault())`` as Arrow
    ``timestamp[ms]`` without zone: the wall clock of this process's time zone (as Java's, set by
    ``TZ``)."""
    out: list[int | None] = []
    for ms in epoch_millis:
        if ms is None:
            out.append(None)
            continue
        offset = time.localtime(ms // 1000).tm_gmtoff or 0
        out.append(ms + offset * 1000)
    return pa.array(out, pa.timestamp("ms"))


def naive_millis(t: _dt.datetime | None) -> int | None:
    """A ``LocalDateTime`` (naive datetime) as milliseconds of an Arrow ``timestamp[ms]``."""
    if t is None:
        return None
    return (t - _EPOCH) // _dt.timedelta(milliseconds=1)


def options_in_java_order(options: Mapping[str, str]) -> list[tuple[str, str]]:
    """The options as Java's ``HashMap`` iterates them (what ``$options`` and ``$schemas`` show)."""
    return [(k, options[k]) for k in java_hashmap_order(options)]
