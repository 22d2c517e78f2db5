"""Reading and creating ``schema/schema-N`` files."""

from __future__ import annotations

import re

from lake_core.errors import SchemaError, TableAlreadyExistsError
from lake_core.format.integrity import read_metadata
from lake_core.io.fileio import FileIO
from lake_core.paths import TablePaths
from lake_core.schema.table_schema import TableSchema

_SCHEMA_NAME = re.compile(r"^schema-(\d+)$")


class SchemaManager:
    def __init__(self, fileio: FileIO, paths: TablePaths):
        self.fileio = fileio
        self.paths = paths
        self._cache: dict[int, TableSchema] = {}

    def list_ids(self) -> list[int]:
        ids = [int(m.group(1)) for n in self.fileio.list_names(self.paths.schema_dir) if (m := _SCHEMA_NAME.match(n))]
        return sorted(ids)

    def latest(self) -> TableSchema | None:
        ids = self.list_ids()
        return self.schema(ids[-1]) if ids else None

    def schema(self, schema_id: int) -> TableSchema:
        s = self._cache.get(schema_id)
        if s is None:
            try:
                s = read_metadata(self.fileio, self.paths.schema(schema_id), "schema file", TableSchema.from_json)
            except FileNotFoundError:
                raise SchemaError(f"schema {schema_id} of table {self.paths.root} does not exist") from None
            self._cache[schema_id] = s
        return s

    def try_commit(self, schema: TableSchema) -> bool:
        """Create ``schema-<id>`` exclusively; False if another writer created it first."""
        if not self.fileio.try_create(self.paths.schema(schema.id), schema.to_json().encode("utf-8")):
            return False
        self._cache[schema.id] = schema
        return True

    def create(self, schema: TableSchema) -> TableSchema:
        if not self.fileio.try_create(self.paths.schema(schema.id), schema.to_json().encode("utf-8")):
            raise TableAlreadyExistsError(f"table at {self.paths.root} already exists (schema-{schema.id} is present)")
        self._cache[schema.id] = schema
        return schema
