"""Filesystem catalog: ``<warehouse>/<db>.db/<table>``, as Paimon's FileSystemCatalog."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import pyarrow as pa

from lake_core.errors import (CatalogError, DatabaseAlreadyExistsError, DatabaseNotFoundError, PathEscapeError, SchemaError,
                     TableAlreadyExistsError, TableNotFoundError)
from lake_core.io.fileio import FileIO
from lake_core.names import DB_SUFFIX, check_not_system_database, split_identifier, validate_database_name
from lake_core.options import CoreOptions, validate_table_options
from lake_core.schema.table_schema import TableSchema
from lake_core.schema.schema_manager import SchemaManager
from lake_core.paths import TablePaths, join
from lake_core.table import FileStoreTable


class Catalog:
    def __init__(self, warehouse: str, storage_options: Mapping[str, Any] | None = None, *,
                 fileio: FileIO | None = None):
        """``fileio``: the FileIO every table of this catalog uses instead of one built from
        ``warehouse`` and ``storage_options`` (e.g. a wrapper that counts or fails operations)."""
        if "://" not in warehouse:
            import os
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
        if self.fileio.is_local:
            return self.fileio.exists(self._db_path(name))
        return name in self.list_databases()

    def create_database(self, name: str, ignore_if_exists: bool = False, properties: dict | None = None) -> None:
        validate_database_name(name)
        check_not_system_database(name)
        if self.database_exists(name):
            if ignore_if_exists:
                return
            raise DatabaseAlreadyExistsError(f"database '{name}' already exists in {self.warehouse}")
        if self.fileio.is_local:
            self.fileio.mkdirs(self._db_path(name))
        else:
            # Object stores have no directories: a zero-byte "dir/" marker makes the database
            # visible to listings, as Hadoop's S3A does.
            fs = self.fileio.fs
            bucket, _, key = self.fileio._p(self._db_path(name)).partition("/")
            fs.call_s3("put_object", Bucket=bucket, Key=key + "/", Body=b"")

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

    def create_table(self, identifier: str, schema: pa.Schema, primary_keys: Sequence[str] = (),
                     partition_keys: Sequence[str] = (), options: Mapping[str, Any] | None = None,
                     comment: str | None = None, ignore_if_exists: bool = False) -> FileStoreTable:
        db, _ = split_identifier(identifier)
        if not self.database_exists(db):
            raise DatabaseNotFoundError(f"database '{db}' does not exist in {self.warehouse}; "
                                        f"create it first with create_database('{db}')")
        if self.table_exists(identifier):
            if ignore_if_exists:
                return self.get_table(identifier)
            raise TableAlreadyExistsError(f"table {identifier} already exists in {self.warehouse}")
        table_schema = _define_table(identifier, schema, primary_keys, partition_keys, options, comment)
        table = FileStoreTable(self.fileio, self.table_path(identifier), identifier, table_schema)
        table.schema_manager.create(table_schema)
        return table

    def get_table(self, identifier: str) -> FileStoreTable:
        db, _ = split_identifier(identifier)
        path = self.table_path(identifier)
        schema = SchemaManager(self.fileio, TablePaths(path)).latest()
        if schema is None:
            if not self.database_exists(db):
                raise DatabaseNotFoundError(f"database '{db}' does not exist in {self.warehouse}")
            raise TableNotFoundError(f"table {identifier} does not exist in {self.warehouse}")
        return FileStoreTable(self.fileio, path, identifier, schema)

    def alter_table(self, identifier: str, changes) -> FileStoreTable:
        """Apply ``SchemaChange``s (one or a list) as the table's next ``schema-N``; returns the
        table with its new schema. Refused changes raise and leave the table unchanged."""
        from lake_core.schema.change import SchemaChange, commit_schema_changes
        changes = [changes] if isinstance(changes, SchemaChange) else list(changes)
        new = commit_schema_changes(self.get_table(identifier), changes)
        return FileStoreTable(self.fileio, self.table_path(identifier), identifier, new)

    def drop_table(self, identifier: str, ignore_if_not_exists: bool = False) -> None:
        if not self.table_exists(identifier):
            if ignore_if_not_exists:
                return
            raise TableNotFoundError(f"table {identifier} does not exist in {self.warehouse}")
        self.fileio.delete_dir(self.table_path(identifier))


def validate_options(options: Mapping[str, Any], *, schema: pa.Schema, primary_keys: Sequence[str] = (),
                     partition_keys: Sequence[str] = (), table: str = "table") -> CoreOptions:
    """Check a table definition's options exactly as ``create_table`` would, touching no storage.

    Raises the same :class:`InvalidOptionError` / :class:`UnsupportedOptionError` /
    :class:`SchemaError` naming ``table``, the option and the value; returns the typed options.
    """
    return CoreOptions(_define_table(table, schema, primary_keys, partition_keys, options, None).options)


def _define_table(identifier: str, schema: pa.Schema, primary_keys: Sequence[str], partition_keys: Sequence[str],
                  options: Mapping[str, Any] | None, comment: str | None) -> TableSchema:
    """Every check of a new table's definition (options, keys, merge engine), before anything is written."""
    if not isinstance(schema, pa.Schema):
        raise SchemaError(f"create_table({identifier!r}) expects a pyarrow.Schema, got {type(schema).__name__}")
    opts = {str(k): str(v).lower() if isinstance(v, bool) else str(v) for k, v in (options or {}).items()}
    core = validate_table_options(opts, has_primary_key=bool(primary_keys))
    table_schema = TableSchema.create(schema, partition_keys=tuple(partition_keys),
                                      primary_keys=tuple(primary_keys), options=opts, comment=comment)
    _validate_table_definition(identifier, table_schema, core)
    from lake_core.merge import create_merge_engine
    create_merge_engine(table_schema, core)  # engine checks: aggregate types, sequence groups, ...
    return table_schema


def _validate_table_definition(identifier: str, schema: TableSchema, core) -> None:
    from lake_core.errors import InvalidOptionError
    names = [f.name for f in schema.fields]
    bucket = core.bucket
    if schema.primary_keys:
        missing_parts = [p for p in schema.partition_keys if p not in schema.primary_keys]
        if bucket >= 1 and missing_parts:
            raise InvalidOptionError(
                f"table {identifier}: primary key {list(schema.primary_keys)} omits partition column(s) "
                f"{missing_parts}, so one key could live in several partitions, which a fixed 'bucket' cannot "
                f"handle. Either (1) add {missing_parts} to the primary key, so a key is unique per partition and "
                f"the fixed bucket count works; or (2) remove the 'bucket' option (or set it to -1) to use "
                "cross-partition upsert in dynamic bucket mode, where a key lives in one partition and moves when "
                "its partition value changes (slower writes: every write indexes the table's keys)")
        if bucket == -1:
            mode = "cross-partition upsert" if missing_parts else "dynamic bucket"
            if core.get("bucket-key"):
                raise InvalidOptionError(
                    f"table {identifier}: 'bucket-key' cannot be used in {mode} mode ('bucket' = -1, the default "
                    "for primary-key tables); remove 'bucket-key', or set a fixed positive 'bucket'")
            if missing_parts and core.sequence_fields:
                raise InvalidOptionError(
                    f"table {identifier}: 'sequence.field' cannot be used with cross-partition upsert (primary key "
                    f"{list(schema.primary_keys)} omits partition column(s) {missing_parts}), as in Paimon; remove "
                    "it or add the partition columns to the primary key")
            from lake_core.bucket.dynamic import DynamicBucketOptions
            DynamicBucketOptions.of(core)
    else:
        if bucket >= 1 and not core.get("bucket-key"):
            raise InvalidOptionError(
                f"table {identifier}: an append table with fixed 'bucket' = {bucket} needs the option "
                "'bucket-key' (comma-separated columns), or use 'bucket' = '-1'")
    for key in ("bucket-key", "sequence.field"):
        v = core.get(key)
        if v:
            for col in (c.strip() for c in v.split(",")):
                if col not in names:
                    raise InvalidOptionError(f"option '{key}' names column '{col}', which is not in table "
                                             f"{identifier}; columns: {names}")
    if schema.primary_keys and core.get("bucket-key"):
        bad = [c for c in core.get("bucket-key").split(",") if c.strip() not in schema.primary_keys]
        if bad:
            raise InvalidOptionError(f"option 'bucket-key' of {identifier} must be a subset of the primary key "
                                     f"{list(schema.primary_keys)}; {bad} are not key columns")
    from lake_core.compaction.expire import validate_expiry_options
    validate_expiry_options(identifier, schema)
    rk = core.rowkind_field
    if rk:
        if rk not in names:
            raise InvalidOptionError(f"option 'rowkind.field' names column '{rk}', which is not in table {identifier}")
        if not pa.types.is_string(schema.field(rk).type) and not pa.types.is_large_string(schema.field(rk).type):
            raise InvalidOptionError(f"option 'rowkind.field' column '{rk}' of {identifier} must be a STRING column")
    _validate_column_options(identifier, schema, core)


def _validate_column_options(identifier: str, schema: TableSchema, core) -> None:
    """Options that name a column must name one of this table, of a type the option can use."""
    from lake_core.errors import InvalidOptionError
    names = [f.name for f in schema.fields]
    for key in core.raw:
        if key.startswith("fields.") and key.count(".") >= 2:
            col, suffix = key[len("fields."):].rsplit(".", 1)
            # 'fields.g1,g2.sequence-group' names several sequence fields at once
            for c in (col.split(",") if suffix == "sequence-group" else [col]):
                if c not in names:  # a typo would otherwise leave the column silently unconfigured
                    raise InvalidOptionError(f"option '{key}' names column '{c}', which is not in table "
                                             f"{identifier}; columns: {names}")
    tf = core.get("record-level.time-field")
    if tf:
        if tf not in names:
            raise InvalidOptionError(f"option 'record-level.time-field' names column '{tf}', which is not in table "
                                     f"{identifier}; columns: {names}")
        t = schema.field(tf).type
        if not (pa.types.is_int32(t) or pa.types.is_int64(t) or pa.types.is_timestamp(t)):
            # Paimon's SchemaValidation: INT or BIGINT seconds/millis, or TIMESTAMP
            raise InvalidOptionError(f"option 'record-level.time-field' column '{tf}' of {identifier} has type {t}; "
                                     "it must be INT, BIGINT or TIMESTAMP")
