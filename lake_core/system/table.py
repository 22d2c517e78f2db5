"""A metadata system table of a Paimon table (``db.t$snapshots``, ...): read-only, read with
:meth:`SystemTable.to_arrow` or the read builder the ``paimon`` Spark data source drives
(``new_read_builder().new_scan().plan().splits()``, then ``new_read().to_arrow(splits)``)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn

import pyarrow as pa

from lake_core.errors import InvalidOptionError, PredicateError, ReadOnlyTableError
from lake_core.system.kind import SystemTableKind

if TYPE_CHECKING:
    from lake_core.table import FileStoreTable

#: Read options that would ask a system table for another snapshot or a change read: refused, not ignored.
_TIME_TRAVEL_OPTIONS = (
    "incremental-between",
    "incremental-between-scan-mode",
    "scan.snapshot-id",
    "scan.tag-name",
    "scan.timestamp-millis",
    "scan.mode",
)


@dataclass(frozen=True, kw_only=True)
class SystemSplit:
    """One part of a system table's plan: the table's latest snapshot id when planned, and the
    part (``$audit_log``: a data split; the others: None, the whole table)."""

    system_table: str
    snapshot_id: int | None
    part: Any = None


@dataclass(frozen=True, kw_only=True)
class SystemTable:
    """``<table>$<kind>``: rows built from ``table``'s metadata. Writes, commits, tags, leases and
    maintenance raise :class:`ReadOnlyTableError`."""

    table: FileStoreTable
    kind: SystemTableKind

    @property
    def identifier(self) -> str:
        return f"{self.table.identifier}${self.kind.name}"

    @property
    def name(self) -> str:
        return self.kind.name

    def arrow_schema(self) -> pa.Schema:
        return self.kind.schema(self.table)

    def to_arrow(self, *, columns: Sequence[str] | None = None) -> pa.Table:
        """Every row, now (the latest snapshot's metadata); ``columns``: only those, in that order."""
        builder = self._builder(columns)
        return builder.new_read().to_arrow(builder.new_scan().plan().splits())

    def to_arrow_batch_reader(self, *, columns: Sequence[str] | None = None) -> pa.RecordBatchReader:
        """The rows of :meth:`to_arrow` part by part (``$audit_log``: split by split)."""
        builder = self._builder(columns)
        return builder.new_read().to_arrow_batch_reader(builder.new_scan().plan().splits())

    def _builder(self, columns: Sequence[str] | None) -> SystemReadBuilder:
        builder = self.new_read_builder()
        return builder if columns is None else builder.with_projection(columns)

    def new_read_builder(self) -> SystemReadBuilder:
        return SystemReadBuilder(table=self)

    # -- refused: a system table is read-only ------------------------------------------------------
    def _refuse(self, what: str) -> NoReturn:
        raise ReadOnlyTableError(
            f"{self.identifier} is a read-only system table: {what} is refused; write to {self.table.identifier} instead"
        )

    def write_arrow(self, *args: Any, **kwargs: Any) -> NoReturn:
        self._refuse("write_arrow")

    def delete_where(self, *args: Any, **kwargs: Any) -> NoReturn:
        self._refuse("delete_where")

    def new_batch_write_builder(self) -> NoReturn:
        self._refuse("a write builder")

    def create_tag(self, *args: Any, **kwargs: Any) -> NoReturn:
        self._refuse("create_tag")

    def delete_tag(self, *args: Any, **kwargs: Any) -> NoReturn:
        self._refuse("delete_tag")

    def lease(self, *args: Any, **kwargs: Any) -> NoReturn:
        self._refuse("a lease")

    @property
    def maintenance(self) -> NoReturn:
        self._refuse("maintenance")


@dataclass(frozen=True, kw_only=True)
class SystemReadBuilder:
    """The read builder of a system table: a projection, no filter, no time travel."""

    table: SystemTable
    projection: tuple[str, ...] | None = None

    def with_projection(self, columns: Sequence[str]) -> SystemReadBuilder:
        names = self.table.arrow_schema().names
        unknown = [c for c in columns if c not in names]
        if unknown:
            raise PredicateError(f"{self.table.identifier} has no column {unknown}; its columns: {names}")
        return SystemReadBuilder(table=self.table, projection=tuple(columns))

    def with_filter(self, predicate: object) -> SystemReadBuilder:
        if predicate is not None:
            raise PredicateError(
                f"a read of the system table {self.table.identifier} takes no filter; filter its Arrow rows instead"
            )
        return self

    def with_options(self, options: Mapping[str, Any]) -> SystemReadBuilder:
        """Paimon read options: those that change which snapshot is read are refused (a system table
        shows the latest metadata); the rest (the data source's own) are ignored."""
        asked = sorted(k for k in options if str(k).lower() in _TIME_TRAVEL_OPTIONS and options[k] not in (None, ""))
        if asked:
            raise InvalidOptionError(
                f"the system table {self.table.identifier} shows the latest metadata; it takes no {asked} "
                "(read the data table for time travel or changes)"
            )
        return self

    def new_scan(self, snapshot: object = None, snapshot_id: int | None = None) -> SystemScan:
        if snapshot is not None or snapshot_id is not None:
            raise InvalidOptionError(
                f"the system table {self.table.identifier} shows the latest metadata; it has no time travel"
            )
        return SystemScan(table=self.table)

    def new_read(self) -> SystemRead:
        return SystemRead(table=self.table, projection=self.projection)


@dataclass(frozen=True, kw_only=True)
class SystemScan:
    """Pinned to the latest snapshot when planned."""

    table: SystemTable

    def plan(self) -> SystemScan:
        return self

    def splits(self) -> list[SystemSplit]:
        data = self.table.table
        snapshot = data.latest_snapshot()
        sid = None if snapshot is None else snapshot.id
        name = self.table.identifier
        return [SystemSplit(system_table=name, snapshot_id=sid, part=p) for p in self.table.kind.parts(data, snapshot)]


@dataclass(frozen=True, kw_only=True)
class SystemRead:
    table: SystemTable
    projection: tuple[str, ...] | None = None

    def output_schema(self) -> pa.Schema:
        schema = self.table.arrow_schema()
        return schema if self.projection is None else pa.schema([schema.field(c) for c in self.projection])

    def read_split(self, split: SystemSplit) -> pa.Table:
        if split.system_table != self.table.identifier:
            raise InvalidOptionError(f"a split of {split.system_table} was handed to a read of {self.table.identifier}")
        data = self.table.table
        snapshot = None if split.snapshot_id is None else data.snapshot(split.snapshot_id)
        rows = self.table.kind.rows(data, snapshot, split.part)
        return rows if self.projection is None else rows.select(list(self.projection))

    def to_arrow(self, splits: Sequence[SystemSplit]) -> pa.Table:
        parts = [self.read_split(s) for s in splits]
        if not parts:
            return self.output_schema().empty_table()
        return pa.concat_tables(parts) if len(parts) > 1 else parts[0]

    def to_arrow_batch_reader(self, splits: Sequence[SystemSplit]) -> pa.RecordBatchReader:
        """One split at a time: memory holds one part's rows (one data split's, for ``$audit_log``)."""

        def batches() -> Iterator[pa.RecordBatch]:
            for split in splits:
                yield from self.read_split(split).to_batches()

        return pa.RecordBatchReader.from_batches(self.output_schema(), batches())
