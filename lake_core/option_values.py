"""The one parser for option values: memory sizes, durations, booleans, integers and ratios.

Every layer that reads an option (``options`` for table options, ``format.data_file`` for the
writer's ``parquet.*`` keys) parses it here, so a value means the same thing
everywhere and a bad one fails with the same :class:`InvalidOptionError` naming option and value.
The grammars follow Paimon's ``MemorySize.parse``, ``TimeUtils.parseDuration`` and
``OptionsUtils.convertToBoolean`` / ``Integer.parseInt``.
"""

from __future__ import annotations

import re

from lake_core.errors import InvalidOptionError

__all__ = [
    "INT_RANGE",
    "LONG_RANGE",
    "parse_bool",
    "parse_duration_ms",
    "parse_int",
    "parse_memory_size",
    "parse_ratio",
]

INT_RANGE = (-(1 << 31), (1 << 31) - 1)  # Java int: what Paimon parses most integer options into
LONG_RANGE = (-(1 << 63), (1 << 63) - 1)

_SIZE = re.compile(r"^\s*(\d+)\s*([a-z]*)\s*$", re.IGNORECASE)
# MemorySize.MemoryUnit's names ("k", "kb", "kibibytes", ...) plus the IEC short forms ("kib").
_SIZE_UNITS = {"": 1, "b": 1, "byte": 1, "bytes": 1}
for _i, (_short, _long) in enumerate(
    (("k", "kibibytes"), ("m", "mebibytes"), ("g", "gibibytes"), ("t", "tebibytes")), start=1
):
    for _name in (_short, _short + "b", _short + "ib", _long):
        _SIZE_UNITS[_name] = 1 << (10 * _i)

_DURATION = re.compile(r"^\s*(\d+)\s*([a-z]*)\s*$", re.IGNORECASE)
_DURATION_MS = {
    "": 1,
    "ms": 1,
    "milli": 1,
    "millis": 1,
    "millisecond": 1,
    "milliseconds": 1,
    "s": 1000,
    "sec": 1000,
    "secs": 1000,
    "second": 1000,
    "seconds": 1000,
    "min": 60_000,
    "mins": 60_000,
    "minute": 60_000,
    "minutes": 60_000,
    "m": 60_000,
    "h": 3_600_000,
    "hour": 3_600_000,
    "hours": 3_600_000,
    "d": 86_400_000,
    "day": 86_400_000,
    "days": 86_400_000,
}

_INT = re.compile(r"^[+-]?[0-9]+$")


def parse_memory_size(key: str, value: str) -> int:
    """Bytes of a memory size such as ``'128 mb'``, ``'64kib'`` or ``'1024'`` (bytes)."""
    m = _SIZE.match(str(value))
    if not m:
        raise InvalidOptionError(f"option '{key}' = {value!r} is not a memory size (e.g. '128 mb')")
    mult = _SIZE_UNITS.get(m.group(2).lower())
    if mult is None:
        raise InvalidOptionError(f"option '{key}' = {value!r}: unknown size unit {m.group(2)!r}")
    return int(m.group(1)) * mult


def parse_duration_ms(key: str, value: str) -> int:
    """Milliseconds of a duration such as ``'1 h'``, ``'30 min'`` or ``'500'`` (ms)."""
    m = _DURATION.match(str(value))
    if not m or m.group(2).lower() not in _DURATION_MS:
        raise InvalidOptionError(f"option '{key}' = {value!r} is not a duration (e.g. '1 h', '30 min')")
    return int(m.group(1)) * _DURATION_MS[m.group(2).lower()]


def parse_bool(key: str, value: str) -> bool:
    # Java's OptionsUtils.convertToBoolean: 'true'/'false' in any case, nothing around them.
    v = str(value).lower()
    if v in ("true", "false"):
        return v == "true"
    raise InvalidOptionError(f"option '{key}' = {value!r} must be 'true' or 'false'")


def parse_int(key: str, value: str, bounds: tuple[int, int] = INT_RANGE) -> int:
    # Strict like Java's Integer.parseInt: no spaces, no '1_000', so Java and pypaimon read the
    # same number from the stored option (' 2 ' is accepted by Python's int(), refused by Java).
    text = str(value)
    if not _INT.match(text):
        raise InvalidOptionError(f"option '{key}' = {value!r} must be an integer (digits only, no spaces)")
    n = int(text)
    if not bounds[0] <= n <= bounds[1]:
        raise InvalidOptionError(f"option '{key}' = {value!r} is out of range; allowed: {bounds[0]}..{bounds[1]}")
    return n


def parse_ratio(key: str, value: str) -> float:
    """A finite number, 0 or more, such as ``'0.7'`` (Java's ``Double.parseDouble``, NaN refused)."""
    try:
        x = float(str(value))
    except ValueError:
        x = float("nan")
    if not (x >= 0 and x != float("inf")):  # also refuses NaN
        raise InvalidOptionError(f"option '{key}' = {value!r} must be a finite number, 0 or more (e.g. '0.7')")
    return x
