"""The kinds of option value: how each is parsed for typed access, checked when a table is
defined, and described on the reference page.

``parse`` converts a stored value (Java's ``ConfigOption`` type); ``check`` is the stricter test a
new or altered definition must pass (ranges, choices, minimums). Both raise
:class:`InvalidOptionError` naming the option and the value, with the one grammar of
:mod:`lake_core.option_values`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar, Protocol, TypeVar

from lake_core.errors import InvalidNameError, InvalidOptionError, UnsupportedOptionError
from lake_core.names import validate_file_prefix
from lake_core.option_values import (
    INT_RANGE,
    LONG_RANGE,
    parse_bool,
    parse_duration_ms,
    parse_int,
    parse_memory_size,
    parse_ratio,
)

T = TypeVar("T", covariant=True)


class OptionType(Protocol[T]):
    #: an empty value of an option without a default reads as unset (as the old getters' ``if v``)
    empty_is_unset: ClassVar[bool]

    def parse(self, key: str, text: str) -> T: ...

    def check(self, key: str, text: str) -> None: ...

    def describe(self) -> str: ...


@dataclass(frozen=True)
class Text:
    """Free text, kept as written (``lower``: compared in lower case, as Java's case-insensitive ones)."""

    lower: bool = False
    empty_is_unset: ClassVar[bool] = False

    def parse(self, key: str, text: str) -> str:
        return text.lower() if self.lower else text

    def check(self, key: str, text: str) -> None:
        pass

    def describe(self) -> str:
        return "text"


@dataclass(frozen=True)
class NonBlankText(Text):
    """Text that must not be empty or blank, because of ``reason``."""

    reason: str = ""

    def check(self, key: str, text: str) -> None:
        if not text.strip():
            raise InvalidOptionError(
                f"option '{key}' = {text!r} is invalid: {self.reason}, so it must not be empty or blank"
            )

    def describe(self) -> str:
        return "text, not blank"


@dataclass(frozen=True)
class FilePrefix(Text):
    """The start of a file name: may be empty, never a path (the path builder refuses one as well)."""

    def check(self, key: str, text: str) -> None:
        try:
            validate_file_prefix(key, text)
        except InvalidNameError as e:
            raise InvalidOptionError(str(e)) from None

    def describe(self) -> str:
        return "file name prefix (may be empty; no `/`, no leading `.`)"


class _CheckedByParsing:
    """A value that is valid when it parses."""

    empty_is_unset: ClassVar[bool] = True

    def parse(self, key: str, text: str) -> object:
        raise NotImplementedError

    def check(self, key: str, text: str) -> None:
        self.parse(key, text)


@dataclass(frozen=True)
class Bool(_CheckedByParsing):
    def parse(self, key: str, text: str) -> bool:
        return parse_bool(key, text)

    def describe(self) -> str:
        return "`true` or `false`"


@dataclass(frozen=True)
class Int:
    """An integer as strict as Java's ``Integer.parseInt`` (``long``: ``Long.parseLong``), checked
    against ``minimum..maximum`` (less ``excluded``); ``what`` says the allowed values in words."""

    minimum: int
    what: str
    maximum: int = INT_RANGE[1]
    excluded: tuple[int, ...] = ()
    long: bool = False
    empty_is_unset: ClassVar[bool] = True

    def parse(self, key: str, text: str) -> int:
        return parse_int(key, text, LONG_RANGE if self.long else INT_RANGE)

    def check(self, key: str, text: str) -> None:
        n = self.parse(key, text)  # as the typed read will: a value past Java's int is out of range
        if not self.minimum <= n <= self.maximum or n in self.excluded:
            raise InvalidOptionError(f"option '{key}' = {text!r} is invalid: it must be {self.what}")

    def describe(self) -> str:
        return f"{'long' if self.long else 'integer'}: {self.what}"


@dataclass(frozen=True)
class MemorySize:
    """Bytes, written as ``128 mb``, ``64kib`` or ``1024`` (Java's ``MemorySize``)."""

    minimum: int = 1
    empty_is_unset: ClassVar[bool] = True

    def parse(self, key: str, text: str) -> int:
        return parse_memory_size(key, text)

    def check(self, key: str, text: str) -> None:
        if parse_memory_size(key, text) < self.minimum:
            raise InvalidOptionError(f"option '{key}' = {text!r} must be at least {self.minimum} byte(s)")

    def describe(self) -> str:
        return f"memory size (`128 mb`, `64 kib`, `1024`), at least {self.minimum} byte(s)"


@dataclass(frozen=True)
class Duration(_CheckedByParsing):
    """Milliseconds, written as ``1 h``, ``30 min`` or ``500`` (Java's ``TimeUtils.parseDuration``)."""

    def parse(self, key: str, text: str) -> int:
        return parse_duration_ms(key, text)

    def describe(self) -> str:
        return "duration (`500 ms`, `30 min`, `1 h`, `7 d`)"


@dataclass(frozen=True)
class Ratio(_CheckedByParsing):
    def parse(self, key: str, text: str) -> float:
        return parse_ratio(key, text)

    def describe(self) -> str:
        return "number, 0 or more"


@dataclass(frozen=True)
class Choice:
    """One of ``choices`` (``ignore_case``: in any case, as Java's enum options; the typed value is
    then lower case). ``refused`` maps the values Paimon has and lake_core does not implement to the
    rest of the refusal, which is an :class:`UnsupportedOptionError`, not a typo."""

    choices: tuple[str, ...]
    ignore_case: bool = False
    refused: Mapping[str, str] = field(default_factory=dict)
    empty_is_unset: ClassVar[bool] = False

    def parse(self, key: str, text: str) -> str:
        return text.lower() if self.ignore_case else text

    def check(self, key: str, text: str) -> None:
        value = self.parse(key, text)
        if value in self.refused:
            raise UnsupportedOptionError(
                f"option '{key}' = {value!r} is not supported by lake_core{self.refused[value]}"
            )
        if value not in self.choices:
            raise InvalidOptionError(f"option '{key}' = {text!r} is invalid; choose one of {', '.join(self.choices)}")

    def describe(self) -> str:
        text = "one of " + ", ".join(f"`{c}`" for c in self.choices)
        if self.ignore_case:
            text += " (any case)"
        if self.refused:
            text += "; refused: " + ", ".join(f"`{v}`" for v in self.refused)
        return text
