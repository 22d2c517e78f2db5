"""One table option, declared once (Java's ``ConfigOption``: key, type, default, description):
names, parsing, validation, typed access and the reference page all derive from it."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

from lake_core.options.option_types import OptionType

T = TypeVar("T")


class Support(enum.Enum):
    SUPPORTED = "supported"
    #: accepted and validated (Java reads it), but it changes nothing in lake_core
    IGNORED = "ignored"


# eq=False: a declaration is one object (Java's static final), hashed and compared by identity
@dataclass(frozen=True, kw_only=True, eq=False)
class ConfigOption(Generic[T]):
    key: str
    type: OptionType[T]
    #: the value when unset, as a schema stores it (Paimon's default); None: no value
    default: str | None
    description: str
    #: Paimon's other names for it (``withFallbackKeys``): accepted and checked like ``key``
    fallback_keys: tuple[str, ...] = ()
    support: Support = Support.SUPPORTED
    #: what lake_core does when the option is unset and has no default (for the reference page)
    unset: str | None = None
    #: refused on a table without a primary key
    primary_key_only: bool = False
    #: cannot change once the table has a snapshot (Java's ``@Immutable``)
    immutable: bool = False
    #: the value is a comma-separated list of columns, renamed with them
    names_columns: bool = False

    @property
    def keys(self) -> tuple[str, ...]:
        return (self.key, *self.fallback_keys)

    def text(self, raw: Mapping[str, str]) -> str | None:
        """The value as stored, else the default."""
        return raw.get(self.key, self.default)

    def read(self, raw: Mapping[str, str]) -> T | None:
        """The typed value of ``raw`` (a schema's options), else of the default; None when neither."""
        text = self.text(raw)
        if text is None or (text == "" and self.default is None and self.type.empty_is_unset):
            return None
        return self.type.parse(self.key, text)


@dataclass(frozen=True, kw_only=True, eq=False)
class FieldOption:
    """A per-column option, ``fields.<name>.<suffix>``; its column must exist (checked with the schema)."""

    suffix: str
    description: str
    support: Support = Support.SUPPORTED

    @property
    def pattern(self) -> str:
        return f"fields.<name>.{self.suffix}"

    def key(self, column: str) -> str:
        return f"fields.{column}.{self.suffix}"
