"""Filesystem catalog: ``<warehouse>/<db>.db/<table>``, as Paimon's FileSystemCatalog."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from lake_core.definition import commit_schema_changes, define_table
from lake_core.errors import (
    CatalogError,
    DatabaseAlreadyExistsError,
    DatabaseNotFoundError,
    PathEscapeError,
    ReadOnlyTableError,
    TableAlreadyExistsError,
    TableNotFoundError,
)
from lake_core.io.fileio import FileIO
from lake_core.names import DB_SUFFIX, check_not_system_database, split_identifier, validate_database_name
from lake_core.options import CoreOptions
from lake_core.paths import TablePaths, join
from lake_core.schema.change import SchemaChange
from lake_core.schema.schema_manager import SchemaManager
from lake_core.snapshot.latest_ids import LatestSnapshotIds, check_concurrency
from lake_core.snapshot.snapshot_manager import SnapshotManager
from lake_core.system import SYSTEM_TABLES, SystemTable
from lake_core.table import FileStoreTable, ReadOptimizedTable

#: Every suffix ``get_table`` takes after ``$``: the read-optimized table and the metadata tables.
SYSTEM_TABLE_SUFFIXES = ("ro", *SYSTEM_TABLES)


class Catalog:
    def __init__(
        self, warehouse: str, storage_options: Mapping[str, Any] | None = None, *, fileio: FileIO | None = None
    ):
        """``fileio``: the FileIO every table of this catalog uses instead of one built from
        ``warehouse`` and ``storage_options`` (e.g. a wrapper that counts or fails operations)."""
        if "://" not in warehouse:
            warehouse = "file://" + os.path.abspath(warehouse)
        self.warehouse = warehouse.rstrip("/")
        self.storage_options = dict(storage_options or {})
        self.fileio = fileio if fileio is not None else FileIO(self.warehouse, self.storage_options)

    def __reduce__(self):
        return (Catalog, (self.warehouse, self.storage_options))

    # -- databases ------------------------------------------------------------------------------
    def _db_path(self, name: str) -> str:
        return join(self.warehouse, validate_database_name(name) + DB_SUFFIX, what="database directory")

    def database_exists(self, name: str) -> bool:
        validate_database_name(name)
        return self.fileio.directory_exists(self._db_path(name))

    def create_database(self, name: str, ignore_if_exists: bool = False, properties: dict | None = None) -> None:
        validate_database_name(name)
        check_not_system_database(name)
        if self.database_exists(name):
            if ignore_if_exists:
                return
            raise DatabaseAlreadyExistsError(f"database '{name}' already exists in {self.warehouse}")
        self.fileio.create_directory(self._db_path(name))

    def list_databases(self) -> list[str]:
        return sorted(n[: -len(DB_SUFFIX)] for n in self.fileio.list_names(self.warehouse) if n.endswith(DB_SUFFIX))

    def drop_database(self, name: str, ignore_if_not_exists: bool = False, cascade: bool = False) -> None:
        validate_database_name(name)
        check_not_system_database(name)
        if not self.database_exists(name):
            if ignore_if_not_exists:
                return
            raise DatabaseNotFoundError(f"database '{name}' does not exist in {self.warehouse}")
        tables = self.list_tables(name)
        if tables and not cascade:
            raise CatalogError(f"database '{name}' is not empty (tables: {tables}); pass cascade=True to drop it")
        self.fileio.delete_dir(self._db_path(name))

    # -- tables ---------------------------------------------------------------------------------
    def table_path(self, identifier: str) -> str:
        db, tbl = split_identifier(identifier)
        return join(self._db_path(db), tbl, what="table directory")

    def list_tables(self, database: str) -> list[str]:
        if not self.database_exists(database):
            raise DatabaseNotFoundError(f"database '{database}' does not exist in {self.warehouse}")
        out = []
        db_path = self._db_path(database)
        for name in self.fileio.list_names(db_path):
            try:
                schema_dir = join(db_path, name, "schema")
            except PathEscapeError:
                continue  # a stray entry whose name could not be a table's
            if self.fileio.list_names(schema_dir):
                out.append(name)
        return sorted(out)

    def table_exists(self, identifier: str) -> bool:
        return bool(SchemaManager(self.fileio, TablePaths(self.table_path(identifier))).list_ids())

    def create_table(
        self,
        identifier: str,
        schema: pa.Schema,
        primary_keys: Sequence[str] = (),
        partition_keys: Sequence[str] = (),
        options: Mapping[str, Any] | None = None,
        comment: str | None = None,
        ignore_if_exists: bool = False,
    ) -> FileStoreTable:
        db, _ = split_identifier(identifier)
        if not self.database_exists(db):
            raise DatabaseNotFoundError(
                f"database '{db}' does not exist in {self.warehouse}; create it first with create_database('{db}')"
            )
        if self.table_exists(identifier):
            if ignore_if_exists:
                return self._data_table(identifier)
            raise TableAlreadyExistsError(f"table {identifier} already exists in {self.warehouse}")
        table_schema = define_table(identifier, schema, primary_keys, partition_keys, options, comment)
        table = FileStoreTable(self.fileio, self.table_path(identifier), identifier, table_schema)
        try:
            table.schema_manager.create(table_schema)
        except TableAlreadyExistsError:
            if not ignore_if_exists:
                raise
            # Another creator won the exclusive create of schema-0 since the check above: theirs is the table.
            return self._data_table(identifier)
        return table

    def get_table(self, identifier: str) -> FileStoreTable | SystemTable:
        """The table ``'db.t'``, or one of its read-only system tables (Java ``SystemTableLoader``):
        ``'db.t$ro'`` (the read-optimized table: top-level files only, no merge) or a metadata
        table, ``'db.t$snapshots'``, ``$schemas``, ``$options``, ``$files``, ``$manifests``,
        ``$partitions``, ``$buckets``, ``$tags``, ``$consumers``, ``$audit_log``
        (:class:`SystemTable`, docs/reference/system-tables.md)."""
        if isinstance(identifier, str) and "$" in identifier:
            return self._system_table(identifier)
        return self._data_table(identifier)

    def _data_table(self, identifier: str) -> FileStoreTable:
        db, _ = split_identifier(identifier)
        path = self.table_path(identifier)
        schema = SchemaManager(self.fileio, TablePaths(path)).latest()
        if schema is None:
            if not self.database_exists(db):
                raise DatabaseNotFoundError(f"database '{db}' does not exist in {self.warehouse}")
            raise TableNotFoundError(f"table {identifier} does not exist in {self.warehouse}")
        return FileStoreTable(self.fileio, path, identifier, schema)

    def _system_table(self, identifier: str) -> FileStoreTable | SystemTable:
        base, name = self._system_suffix(identifier)
        table = self._data_table(base)
        if name == "ro":
            return ReadOptimizedTable(table.fileio, table.paths.root, base + ReadOptimizedTable.SUFFIX, table.schema)
        return SystemTable(table=table, kind=SYSTEM_TABLES[name])

    @staticmethod
    def _system_suffix(identifier: str) -> tuple[str, str]:
        """``('db.t', 'snapshots')`` of ``'db.t$snapshots'``; an unknown suffix is a table we do not have."""
        base, _, system = identifier.rpartition("$")
        name = system.lower()
        if name not in SYSTEM_TABLE_SUFFIXES:
            raise TableNotFoundError(
                f"system table '{system}' of {base} ({identifier}) is not supported by lake_core; "
                f"supported: {', '.join('$' + s for s in SYSTEM_TABLE_SUFFIXES)}"
            )
        return base, name

    @classmethod
    def _refuse_system_table(cls, identifier: str, what: str) -> None:
        if isinstance(identifier, str) and "$" in identifier:
            base, _name = cls._system_suffix(identifier)
            raise ReadOnlyTableError(
                f"{identifier} is a read-only system table: {what} is refused; {what} {base} instead"
            )

    def alter_table(self, identifier: str, changes) -> FileStoreTable:
        """Apply ``SchemaChange``s (one or a list) as the table's next ``schema-N``; returns the
        table with its new schema. Refused changes raise and leave the table unchanged."""
        self._refuse_system_table(identifier, "alter_table")
        changes = [changes] if isinstance(changes, SchemaChange) else list(changes)
        new = commit_schema_changes(self._data_table(identifier), changes)
        return FileStoreTable(self.fileio, self.table_path(identifier), identifier, new)

    def latest_snapshot_id(self, identifier: str) -> int | None:
        """The id of the table's newest snapshot without opening the table (no schema read): the
        ``LATEST`` hint, trusted as ``SnapshotManager`` trusts it (the hinted snapshot exists and the
        next one does not; else the snapshot directory is listed). None when the table has no
        snapshot or does not exist. What a poller compares with the id it last saw."""
        return SnapshotManager(self.fileio, TablePaths(self.table_path(identifier))).latest_id()

    def latest_snapshot_ids(self, identifiers: Sequence[str], *, concurrency: int = 8) -> LatestSnapshotIds:
        """:meth:`latest_snapshot_id` of many tables, asked for in the order of ``identifiers``
        (``.get(identifier)``; use it as a context manager). On an object store up to
        ``2 x concurrency`` of the next hints are read ahead on ``concurrency`` threads, so a poller
        that stops early (a tick budget) wastes at most that many reads; on local disk each is read
        when asked (threads would only add overhead to a read of microseconds)."""
        check_concurrency(concurrency)  # on any storage: a mistake should not wait for S3 to show
        workers = concurrency if self.fileio.reads_are_remote else 1
        return LatestSnapshotIds(self.latest_snapshot_id, identifiers, concurrency=workers)

    def drop_table(self, identifier: str, ignore_if_not_exists: bool = False) -> None:
        self._refuse_system_table(identifier, "drop_table")
        if not self.table_exists(identifier):
            if ignore_if_not_exists:
                return
            raise TableNotFoundError(f"table {identifier} does not exist in {self.warehouse}")
        self.fileio.delete_dir(self.table_path(identifier))


def validate_options(
    options: Mapping[str, Any],
    *,
    schema: pa.Schema,
    primary_keys: Sequence[str] = (),
    partition_keys: Sequence[str] = (),
    table: str = "table",
) -> CoreOptions:
    """Check a table definition's options exactly as ``create_table`` would, touching no storage.

    Raises the same :class:`InvalidOptionError` / :class:`UnsupportedOptionError` /
    :class:`SchemaError` naming ``table``, the option and the value; returns the typed options.
    """
    return CoreOptions(define_table(table, schema, primary_keys, partition_keys, options, None).options)
