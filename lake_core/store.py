"""FileStore: the services a table's internals need, as one frozen value.

Paimon's ``KeyValueFileStore``: the stages below the table (bucket assignment, deletion vectors,
file writers, scans, reads, writes, commits, compaction) need the table's identity, schema,
options, FileIO, paths, snapshot, schema and manifest stores and its merge engine, never the table
itself with its builders and maintenance. They are typed against this value (and call back up
through :class:`lake_core.commit.hooks.TableHooks`), so the table sits above them in the import
graph, annotations included.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property

import pyarrow as pa

from lake_core.errors import SchemaError, StaleTableError, TagNotFoundError
from lake_core.format.binary_row.reader import deserialize_row
from lake_core.format.integrity import read_metadata
from lake_core.io.fileio import FileIO
from lake_core.manifest.store import ManifestStore
from lake_core.merge import MergeEngine, create_merge_engine
from lake_core.names import validate_tag_name
from lake_core.options import CoreOptions
from lake_core.paths import TablePaths, partition_dir
from lake_core.schema.schema_manager import SchemaManager
from lake_core.schema.table_schema import TableSchema
from lake_core.snapshot.changelog_manager import ChangelogManager
from lake_core.snapshot.snapshot import Snapshot
from lake_core.snapshot.snapshot_manager import SnapshotManager


@dataclass(frozen=True)
class FileStore:
    identifier: str
    fileio: FileIO
    paths: TablePaths
    schema: TableSchema
    options: CoreOptions = field(repr=False)
    snapshot_manager: SnapshotManager = field(repr=False)
    changelog_manager: ChangelogManager = field(repr=False)
    schema_manager: SchemaManager = field(repr=False)
    manifest_store: ManifestStore = field(repr=False)

    @classmethod
    def open(cls, fileio: FileIO, root: str, identifier: str, schema: TableSchema) -> FileStore:
        paths = TablePaths(root)
        snapshots = SnapshotManager(fileio, paths)
        return cls(
            identifier=identifier,
            fileio=fileio,
            paths=paths,
            schema=schema,
            options=CoreOptions(schema.options),
            snapshot_manager=snapshots,
            changelog_manager=ChangelogManager(fileio, paths, snapshots),
            schema_manager=SchemaManager(fileio, paths),
            manifest_store=ManifestStore(fileio, paths, [schema.field(n).type for n in schema.partition_keys]),
        )

    def __reduce__(self):  # Spark tasks carry stores; the managers are rebuilt from the same parts
        return (FileStore.open, (self.fileio, self.paths.root, self.identifier, self.schema))

    def with_schema(self, schema: TableSchema) -> FileStore:
        """This table's store seen with another of its schemas (same files and managers; the
        partition columns, hence the manifest store, never change)."""
        if schema == self.schema:
            return self
        return replace(self, schema=schema, options=CoreOptions(schema.options))

    def schema_of(self, snapshot: Snapshot) -> TableSchema:
        """The schema ``snapshot`` was committed under (its ``schemaId``): what a time-travel read
        of it uses, columns, keys and options. Java's time travel takes the columns from it too but
        keeps today's options, which can hide what the snapshot held (deletion vectors switched on
        later) or name columns it lacks (a renamed sequence field)."""
        if snapshot.schema_id == self.schema.id:
            return self.schema
        try:
            return self.schema_manager.schema(snapshot.schema_id)
        except SchemaError:
            raise SchemaError(
                f"cannot read {self.identifier} at snapshot {snapshot.id}: it was written under schema "
                f"{snapshot.schema_id}, whose file schema/schema-{snapshot.schema_id} is missing, so "
                "its columns are unknown (read a later snapshot)"
            ) from None

    @cached_property
    def _merge_engine(self) -> MergeEngine:
        return create_merge_engine(self.schema, self.options)

    def merge_engine(self) -> MergeEngine:
        return self._merge_engine

    @property
    def key_types(self) -> list[pa.DataType]:
        return [self.schema.field(k).type for k in self.schema.trimmed_primary_keys]

    @property
    def level0_hidden(self) -> bool:
        """Batch reads skip level 0 (first-row, or deletion vectors: each file is read raw), so
        writers compact level 0 up at once (Paimon's ``ForceUpLevel0Compaction``)."""
        return bool(self.schema.primary_keys) and (
            self.merge_engine().hides_level0 or self.options.deletion_vectors_enabled
        )

    @property
    def force_up_level0(self) -> bool:
        """Every compaction moves level 0 up (Paimon's ``ForceUpLevel0Compaction``): level 0 is
        hidden from batch reads, or ``changelog-producer`` = ``lookup`` produces the changelog of
        each commit's level-0 files when they are compacted."""
        return self.level0_hidden or (bool(self.schema.primary_keys) and self.options.changelog_producer == "lookup")

    @property
    def bucket_mode(self) -> str:
        """``fixed`` (bucket >= 1), ``dynamic`` (primary key with every partition field, bucket -1),
        ``cross-partition`` (primary key omitting a partition field, bucket -1) or ``unaware``
        (append table, bucket -1), as Java ``BucketMode``."""
        if self.options.bucket >= 1:
            return "fixed"
        if not self.schema.primary_keys:
            return "unaware"
        if any(p not in self.schema.primary_keys for p in self.schema.partition_keys):
            return "cross-partition"
        return "dynamic"

    def partition_path(self, partition: bytes) -> str:
        """The directory (relative to the table) of the serialized ``partition``."""
        names = list(self.schema.partition_keys)
        values = deserialize_row(partition, [self.schema.field(n).type for n in names]) if names else []
        return partition_dir(names, values, self.options.partition_default_name)

    def bucket_dir(self, partition: bytes, bucket: int) -> str:
        """The directory of the files of ``bucket`` of the serialized ``partition``."""
        return self.paths.bucket_dir(self.partition_path(partition), bucket)

    def tag(self, name: str) -> Snapshot:
        """The snapshot tag ``name`` holds."""
        validate_tag_name(name)
        try:
            return read_metadata(self.fileio, self.paths.tag(name), "tag file", Snapshot.from_json)
        except FileNotFoundError:
            raise TagNotFoundError(f"tag '{name}' does not exist on {self.identifier}") from None

    def check_identity(self) -> None:
        """Raise ``StaleTableError`` unless the table on storage is still the one this store was
        opened on: its schema file is unchanged (not dropped, not re-created) and no newer schema
        exists. Two small reads; done before a write's files and at every commit."""
        current = self.schema
        path = self.paths.schema(current.id)
        try:
            on_storage = read_metadata(self.fileio, path, "schema file", TableSchema.from_json)
        except FileNotFoundError:
            raise StaleTableError(
                f"table {self.identifier} was dropped after this handle was opened (schema-{current.id} is gone "
                f"from {self.paths.root}); nothing was written — get the table from the catalog again"
            ) from None
        if on_storage != current:
            raise StaleTableError(
                f"table {self.identifier} was dropped and re-created after this handle was opened (schema-"
                f"{current.id} was replaced); nothing was written — get the table from the catalog again"
            )
        if self.fileio.exists(self.paths.schema(current.id + 1)):
            raise StaleTableError(
                f"the schema of table {self.identifier} changed after this handle was opened (schema-"
                f"{current.id + 1} exists); nothing was written — get the table from the catalog again"
            )
