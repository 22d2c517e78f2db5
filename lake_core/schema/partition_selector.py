"""Which partitions a maintenance call acts on: one parser and matcher of partition selectors.

A selector is ``{column: value}`` (a subset of the partition columns; ``{}`` matches every partition), ``'dt=2024-01-01/hr=3'`` text
(what Dagster partition keys and the command line use), or a list of them; None selects every
partition. Values are cast to the columns' types, so ``{"hr": "3"}`` selects an INT partition 3.
A selector that names an unknown column is refused before anything is read, and one that matches
no partition holding data is refused with :class:`PartitionNotFoundError` (Java's "The specified
partition does not have any data files"), so a typo never becomes a silent no-op.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from lake_core.errors import PartitionNotFoundError, PartitionSpecError
from lake_core.schema.table_schema import TableSchema

_SHOWN = 5  # partitions named in an error, at most


def partition_text(names: Sequence[str], values: Sequence[Any]) -> str:
    """``dt=2024-01-01/hr=3`` ('' for an unpartitioned table)."""
    return "/".join(f"{n}={v}" for n, v in zip(names, values))


@dataclass(frozen=True)
class PartitionSelector:
    table: str
    operation: str
    names: tuple[str, ...]  # the table's partition columns
    specs: tuple[tuple[tuple[str, Any], ...], ...]  # ((column, typed value), ...) per selector

    @classmethod
    def of(cls, schema: TableSchema, partitions: Any, *, table: str, operation: str) -> PartitionSelector | None:
        """The selector of ``partitions`` (None: every partition, returned as None)."""
        if partitions is None:
            return None
        names = tuple(schema.partition_keys)
        items = [partitions] if isinstance(partitions, (Mapping, str)) else partitions
        if not isinstance(items, (list, tuple)) or not items:
            raise PartitionSpecError(
                f"{operation} of {table}: 'partitions' must be a dict {{column: value}}, 'column=value/...' text or a "
                f"non-empty list of them, got {partitions!r}"
            )
        where = f"{operation} of {table}"
        return cls(table, operation, names, tuple(_parse(schema, names, item, where) for item in items))

    def matches(self, values: Sequence[Any]) -> bool:
        return any(self._spec_matches(spec, values) for spec in self.specs)

    def may_match_range(self, lows: Sequence[Any], highs: Sequence[Any]) -> bool:
        """Whether a partition between ``lows`` and ``highs`` (per column, as a manifest's
        partition statistics bound its partitions) may be selected; True when unsure."""
        return any(self._spec_in_range(spec, lows, highs) for spec in self.specs)

    def _spec_in_range(self, spec: tuple[tuple[str, Any], ...], lows: Sequence[Any], highs: Sequence[Any]) -> bool:
        for k, v in spec:
            i = self.names.index(k)
            lo, hi = lows[i], highs[i]
            if v is None or lo is None or hi is None:
                continue  # nulls are not bounded by min/max
            try:
                if v < lo or v > hi:
                    return False
            except TypeError:
                continue
        return True

    def _spec_matches(self, spec: tuple[tuple[str, Any], ...], values: Sequence[Any]) -> bool:
        return all(values[self.names.index(k)] == v for k, v in spec)

    def check_matched(self, partitions: Iterable[Sequence[Any]]) -> None:
        """Raise :class:`PartitionNotFoundError` unless every selector matches one of
        ``partitions`` (the values of the partitions holding data)."""
        seen = list(partitions)
        unmatched = [spec for spec in self.specs if not any(self._spec_matches(spec, v) for v in seen)]
        if not unmatched:
            return
        shown = ", ".join(sorted(partition_text(self.names, v) for v in seen)[:_SHOWN])
        more = f" and {len(seen) - _SHOWN} more" if len(seen) > _SHOWN else ""
        have = f"partitions with data: {shown}{more}" if seen else "the table holds no data"
        raise PartitionNotFoundError(
            f"{self.operation} of {self.table}: partition {' and '.join(repr(dict(s)) for s in unmatched)} "
            f"{'matches' if len(unmatched) == 1 else 'match'} no partition with data files ({have}); nothing was "
            "changed"
        )


def _parse(schema: TableSchema, names: tuple[str, ...], item: Any, where: str) -> tuple[tuple[str, Any], ...]:
    shown = repr(item)  # as the caller wrote it, in errors
    if isinstance(item, str):
        pairs = [p.partition("=") for p in item.split("/") if p]
        if not pairs or any(not eq for _n, eq, _v in pairs):
            raise PartitionSpecError(
                f"{where}: partition {item!r} must be 'column=value' pairs joined by '/' over "
                f"the partition columns {list(names)}"
            )
        item = {n: v for n, _eq, v in pairs}
    if not isinstance(item, Mapping):  # {} selects every partition (an unpartitioned table's one)
        raise PartitionSpecError(
            f"{where}: a partition selector must be a dict {{column: value}} or 'column=value' text, got {item!r}"
        )
    out = []
    for column, value in item.items():
        if column not in names:
            raise PartitionSpecError(
                f"{where}: partition {shown} names {column!r}, which is not a partition column "
                f"(partition columns: {list(names)})"
            )
        out.append((column, _typed(schema, column, value, f"{where}: partition {shown}")))
    return tuple(out)


def _typed(schema: TableSchema, column: str, value: Any, where: str) -> Any:
    """``value`` as the column's Python value (text from a key or a command line is cast)."""
    if value is None:
        return None
    arrow_type = schema.field(column).type
    try:
        return pa.scalar(value).cast(arrow_type).as_py()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
        raise PartitionSpecError(
            f"{where}: column {column!r} is {arrow_type}; {value!r} is not a value of that type"
        ) from None
