"""``NanoDatetime``: the value of a TIMESTAMP(9) whose nanoseconds are not a whole microsecond."""

from __future__ import annotations

import datetime as _dt


class NanoDatetime(_dt.datetime):
    """A ``datetime`` carrying the sub-microsecond digits of a TIMESTAMP(9) value.

    ``deserialize_row`` returns it only when the nanoseconds are not a whole microsecond (a plain
    ``datetime`` cannot hold them); it compares and hashes consistently with ``datetime``.
    """

    __slots__ = ("_nano",)
    _nano: int

    def __new__(cls, *args, nanosecond: int = 0, **kwargs):
        self = super().__new__(cls, *args, **kwargs)
        self._nano = nanosecond
        return self

    @property
    def nanosecond(self) -> int:
        return self._nano

    def _cmp(self, other) -> int | None:
        if not isinstance(other, _dt.datetime):
            return None
        if _dt.datetime.__eq__(self, other) is True:
            nano = getattr(other, "nanosecond", 0)
            return (self._nano > nano) - (self._nano < nano)
        return -1 if _dt.datetime.__lt__(self, other) else 1

    def __eq__(self, other):
        c = self._cmp(other)
        return NotImplemented if c is None else c == 0

    def __ne__(self, other):
        c = self._cmp(other)
        return NotImplemented if c is None else c != 0

    def __lt__(self, other):
        c = self._cmp(other)
        return NotImplemented if c is None else c < 0

    def __le__(self, other):
        c = self._cmp(other)
        return NotImplemented if c is None else c <= 0

    def __gt__(self, other):
        c = self._cmp(other)
        return NotImplemented if c is None else c > 0

    def __ge__(self, other):
        c = self._cmp(other)
        return NotImplemented if c is None else c >= 0

    def __hash__(self):
        return hash((_dt.datetime.__hash__(self), self._nano))

    def __repr__(self):
        return f"{_dt.datetime.__repr__(self)[:-1]}, nanosecond={self._nano})"

    def __reduce_ex__(self, protocol):
        # datetime's own reduce would rebuild us through __new__ without the nanoseconds.
        return (nano_datetime_from_parts, (_dt.datetime.combine(self.date(), self.timetz()), self._nano))


def nano_datetime_from_parts(base: _dt.datetime, nano: int) -> NanoDatetime:
    return NanoDatetime(
        base.year,
        base.month,
        base.day,
        base.hour,
        base.minute,
        base.second,
        base.microsecond,
        base.tzinfo,
        nanosecond=nano,
    )
