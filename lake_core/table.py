"""A Paimon table: its schema and options, snapshots, and the write/read builders."""

from __future__ import annotations

import datetime as _dt
import hashlib
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from lake_core.commit.file_store_commit import (
    BATCH_IDENTIFIER,
    FileStoreCommit,
    check_identity_arguments,
    new_commit_identifier,
)
from lake_core.commit.messages import CommitMessage
from lake_core.commit.uncommitted import remove_uncommitted
from lake_core.compaction.bucket_compact import recompact_buckets
from lake_core.compaction.inline import compact_written_bucket
from lake_core.errors import (
    CommitConflictError,
    CommitFailedError,
    InvalidOptionError,
    LakeError,
    PredicateError,
    ReadOnlyTableError,
    SnapshotNotFoundError,
    StalePlanError,
    StaleTableError,
    UnsupportedOptionError,
)
from lake_core.io.fileio import FileIO
from lake_core.kv import rowkind
from lake_core.maintenance import TableMaintenance
from lake_core.maintenance.consumer_resume import resume_position
from lake_core.maintenance.consumers import ConsumerManager, lease
from lake_core.maintenance.post_commit import after_commit
from lake_core.maintenance.tag_deletion import delete_tags
from lake_core.maintenance.tag_time import default_time_retained, tag_json
from lake_core.manifest.metadata import DataFileMeta, FileKind
from lake_core.names import validate_tag_name
from lake_core.options import check_supported
from lake_core.read.columns import check_read_columns
from lake_core.read.incremental import incremental_options, incremental_scan, parse_between, scan_mode_of
from lake_core.read.predicate import Predicate, PredicateBuilder
from lake_core.read.scan import TableScan
from lake_core.read.split_read import SplitRead
from lake_core.read.stream_scan import StreamScan
from lake_core.result import shown
from lake_core.schema.table_schema import TableSchema
from lake_core.snapshot.snapshot import Snapshot
from lake_core.store import FileStore
from lake_core.write.table_write import TableWrite, conform


class FileStoreTable:
    #: Reads return only the top level without merge (the ``$ro`` system table).
    read_optimized = False

    def __init__(self, fileio: FileIO, root: str, identifier: str, schema: TableSchema):
        # Checked on every open, not only at creation: the table may come from another engine.
        check_supported(schema.options, table=identifier)
        # The stages below the table get this value, not the table (Java KeyValueFileStore).
        self.store = store = FileStore.open(fileio, root, identifier, schema)
        self.fileio = fileio
        self.identifier = identifier
        self.paths = store.paths
        self._schema = schema
        self.options = store.options
        self.snapshot_manager = store.snapshot_manager
        self.changelog_manager = store.changelog_manager
        self.schema_manager = store.schema_manager
        self.manifest_store = store.manifest_store

    # -- pickling (Spark tasks carry tables) ------------------------------------------------------
    def __reduce__(self):
        return (type(self), (self.fileio, self.paths.root, self.identifier, self._schema))

    def with_schema(self, schema: TableSchema) -> FileStoreTable:
        """This table seen with ``schema`` (a committed later schema, or per-job options on top)."""
        return FileStoreTable(self.fileio, self.paths.root, self.identifier, schema)

    def at_snapshot(self, snapshot: Snapshot) -> FileStoreTable:
        """This table seen with the schema ``snapshot`` was written under: its columns, keys and
        options, what a time-travel read of it uses (Java's ``TimeTravelUtil``). Read-only in
        effect: a write through it fails as a stale handle once the table's schema moved on."""
        schema = self.store.schema_of(snapshot)
        return self if schema == self._schema else self.with_schema(schema)

    # -- lake_core.commit.hooks.TableHooks: what commit and write call back. They sit below
    #    compaction and maintenance, so the table hands them these (as Java's table gives its
    #    TableCommitImpl the expire maintainers) ----------------------------------------------------
    def after_commit(self) -> None:
        """Expiry and tags after a successful commit, unless ``write-only`` (Java ``TableCommitImpl``)."""
        after_commit(self)

    def compact_written_bucket(
        self, partition: bytes, bucket: int, total_buckets: int, live, new_files, namer, *, dictionary=None, latest=None
    ) -> CommitMessage | None:
        """A writer's inline compaction of one bucket after it wrote ``new_files``."""
        return compact_written_bucket(
            self.store, partition, bucket, total_buckets, live, new_files, namer, dictionary=dictionary, latest=latest
        )

    def recompact_buckets(self, snapshot: Snapshot | None, buckets) -> list[CommitMessage]:
        """Full compactions of ``buckets`` at ``snapshot`` (a first-row commit whose compaction lost)."""
        return recompact_buckets(self.store, snapshot, buckets)

    # -- metadata ----------------------------------------------------------------------------------
    @property
    def schema(self) -> TableSchema:
        return self._schema

    @property
    def maintenance(self) -> TableMaintenance:
        """Every maintenance operation of this table (compact, expire_snapshots, ...)."""
        return TableMaintenance(self)

    @property
    def key_types(self) -> list[pa.DataType]:
        return self.store.key_types

    def arrow_schema(self) -> pa.Schema:
        return self._schema.arrow_schema()

    def merge_engine(self):
        return self.store.merge_engine()

    @property
    def level0_hidden(self) -> bool:
        return self.store.level0_hidden

    @property
    def force_up_level0(self) -> bool:
        return self.store.force_up_level0

    @property
    def bucket_mode(self) -> str:
        return self.store.bucket_mode

    def require_fixed_bucket(self, operation: str = "this operation") -> None:
        """Raise unless the table has a fixed bucket count (for callers that compute buckets
        themselves, e.g. distributed writers)."""
        if self.options.bucket >= 1 or not self._schema.primary_keys:
            return
        raise UnsupportedOptionError(
            f"table {self.identifier} is a primary-key table in {self.bucket_mode} bucket mode ('bucket' = "
            f"{str(self.options.bucket)!r}); {operation} needs a fixed bucket count — write it with a single "
            "TableWrite, or create the table with a positive 'bucket'"
        )

    def lease(self, snapshot_id: int | None = None, *, holder: str, ttl=None):
        """``with table.lease(7, holder="job-a") as snap:`` pins snapshot 7 against expiry while the
        block runs (a consumer file that also Java honours); ``ttl`` (default 1 h) bounds how long a
        crashed holder can pin it."""
        return lease(self, snapshot_id, holder=holder, **({} if ttl is None else {"ttl": ttl}))

    def check_identity(self) -> None:
        """Raise ``StaleTableError`` unless the table on storage is still the one this handle
        opened (:meth:`FileStore.check_identity`)."""
        self.store.check_identity()

    def latest_snapshot(self) -> Snapshot | None:
        return self.snapshot_manager.latest()

    def snapshot(self, snapshot_id: int) -> Snapshot:
        return self.snapshot_manager.get(snapshot_id)

    def snapshots(self) -> list[Snapshot]:
        return list(self.snapshot_manager.snapshots())

    def has_snapshot(self, snapshot_id: int) -> bool:
        """Whether snapshot ``snapshot_id`` is still there to read (not expired, not yet written)."""
        return self.snapshot_manager.exists(snapshot_id)

    def find_commit(self, *, commit_user: str, identifier: int | None = None) -> Snapshot | None:
        """The newest live snapshot committed by ``commit_user`` (with ``identifier`` if given),
        or None: how a retried writer learns that its commit already landed. The committer
        makes the same lookup before committing, so a retry never commits twice."""
        return self.snapshot_manager.find_commit(commit_user=commit_user, identifier=identifier)

    def added_files(self, snapshot: Snapshot) -> list[DataFileMeta]:
        """The data files ``snapshot`` added (its delta manifests' ADD entries)."""
        return [e.file for e in self.manifest_store.delta_entries(snapshot) if e.kind == FileKind.ADD]

    # -- tags (time travel by name) ------------------------------------------------------------------
    def create_tag(self, name: str, snapshot_id: int | None = None, *, time_retained=None) -> None:
        """Tag a snapshot (the latest by default). ``time_retained`` (a timedelta; default the
        option ``tag.default-time-retained``): the tag expires that long after its creation."""
        validate_tag_name(name)
        if time_retained is not None and (
            not isinstance(time_retained, _dt.timedelta) or time_retained <= _dt.timedelta(0)
        ):
            raise InvalidOptionError(
                f"time_retained = {shown(time_retained)} for tag '{name}' on {self.identifier} must be a positive timedelta"
            )
        snap = self.snapshot_manager.get(snapshot_id) if snapshot_id is not None else self.latest_snapshot()
        if snap is None:
            raise SnapshotNotFoundError(f"cannot tag {self.identifier}: it has no snapshots yet")
        text = tag_json(snap, time_retained if time_retained is not None else default_time_retained(self))
        if not self.fileio.try_create(self.paths.tag(name), text.encode("utf-8")):
            raise InvalidOptionError(f"tag '{name}' already exists on {self.identifier}")
        if not self.fileio.exists(self.paths.snapshot(snap.id)):  # expired meanwhile: its files may be going
            self.fileio.delete(self.paths.tag(name))
            raise SnapshotNotFoundError(f"cannot tag snapshot {snap.id} of {self.identifier}: it was just expired")

    def tag(self, name: str) -> Snapshot:
        return self.store.tag(name)

    def list_tags(self) -> list[str]:
        return sorted(n[4:] for n in self.fileio.list_names(self.paths.tag_dir) if n.startswith("tag-"))

    def delete_tag(self, name: str, *, dry_run: bool = False):
        """Delete tag ``name``, then the files only it held (Java ``TagManager.deleteTag``); a
        ``DeleteTagResult`` lists them. ``dry_run``: the plan, nothing deleted."""
        return delete_tags(self, [name], dry_run=dry_run)

    def resolve_snapshot(
        self, snapshot_id: int | None = None, tag: str | None = None, timestamp_millis: int | None = None
    ) -> Snapshot | None:
        given = [x is not None for x in (snapshot_id, tag, timestamp_millis)]
        if sum(given) > 1:
            raise InvalidOptionError("time travel takes one of snapshot_id, tag or timestamp_millis, not several")
        if snapshot_id is not None:
            return self.snapshot_manager.get(snapshot_id)
        if tag is not None:
            return self.tag(tag)
        if timestamp_millis is not None:
            return self.snapshot_manager.at_or_before_time(timestamp_millis)
        return self.latest_snapshot()

    # -- builders (pypaimon names) ------------------------------------------------------------------
    def new_batch_write_builder(self) -> BatchWriteBuilder:
        return BatchWriteBuilder(self)

    def new_read_builder(self) -> ReadBuilder:
        return ReadBuilder(self)

    def predicate_builder(
        self, *, snapshot_id: int | None = None, tag: str | None = None, timestamp_millis: int | None = None
    ) -> PredicateBuilder:
        """A builder of filters over the current columns, or with time travel over the columns of
        that snapshot's schema (what a time-travel read's filter names)."""
        schema = self._schema
        travel = any(x is not None for x in (snapshot_id, tag, timestamp_millis))
        # time travel resolves to its snapshot or raises
        snap = self.resolve_snapshot(snapshot_id, tag, timestamp_millis) if travel else None
        if snap is not None:
            schema = self.store.schema_of(snap)
            where = f" at snapshot {snap.id} (schema {schema.id})"
        else:
            where = ""
        return PredicateBuilder(
            [f.name for f in schema.fields], {f.name: f.type for f in schema.fields}, table=f"{self.identifier}{where}"
        )

    # -- one-call conveniences -------------------------------------------------------------------------
    def write_arrow(
        self,
        data: Any,
        overwrite: bool | dict = False,
        commit_user: str | None = None,
        commit_identifier: int | None = None,
    ) -> Snapshot | None:
        """Write ``data`` in one commit and return the new snapshot (None if nothing to commit).

        Each call is a new commit, even with a reused ``commit_user``. Pass ``commit_identifier``
        to make a retry of the same logical commit idempotent: if (user, identifier) landed with
        the same rows, that snapshot is returned; with other rows, ``CommitIdentityError``.
        A commit that lost a race against a concurrent writer of the same bucket is written again
        against the latest snapshot (up to 'commit.max-retries' times), so the last commit wins.
        ``overwrite=True`` replaces the whole table with ``data``; ``overwrite={"dt": "2024-01-01"}``
        replaces that partition only. As in Paimon (``INSERT OVERWRITE``), an **empty** ``data`` with
        ``overwrite`` still commits: it truncates the table (or empties the named partition)."""
        rows = conform(self.store, data)

        def attempt(wb: BatchWriteBuilder) -> list[CommitMessage]:
            w = wb.new_write()
            w.write_arrow(rows)
            return w.prepare_commit()

        # A caller-chosen identity is recognised by its content (a retry writes new files).
        digest = content_digest(rows, overwrite) if commit_identifier is not None else None
        return self._commit_replanned(attempt, overwrite, commit_user, commit_identifier, digest)

    def _commit_replanned(
        self, prepare, overwrite, commit_user: str | None, commit_identifier: int | None, digest: str | None = None
    ):
        """Prepare and commit; a ``StalePlanError`` (nothing landed) prepares again against the
        latest snapshot, bounded by 'commit.max-retries'. Files of an attempt that certainly did
        not land are removed."""
        identifier = commit_identifier if commit_identifier is not None else new_commit_identifier()
        check_identity_arguments(self.store, "-" if commit_user is None else commit_user, identifier)  # before any file
        retries = self.options.commit_max_retries
        for attempt in range(retries + 1):
            wb = self.new_batch_write_builder()
            if commit_user is not None:
                wb = wb.with_commit_user(commit_user)
            if overwrite:
                wb = wb.overwrite(overwrite if isinstance(overwrite, dict) else None)
            messages = prepare(wb)
            # the commit itself, not BatchTableCommit: only this caller knows the identity is new
            committer = FileStoreCommit(self.store, hooks=self, commit_user=commit_user)
            try:
                snaps = committer.commit(
                    messages,
                    identifier=identifier,
                    overwrite=wb.overwrite_spec,
                    new_identity=commit_identifier is None,
                    digest=digest,
                )
            except (CommitConflictError, CommitFailedError, StaleTableError) as e:
                self.remove_uncommitted(messages)  # these errors mean nothing landed
                if attempt == retries or not isinstance(e, StalePlanError):
                    raise
                continue
            return snaps[0] if snaps else None

    def bucket_dir(self, partition: bytes, bucket: int) -> str:
        """The directory of the files of ``bucket`` of the serialized ``partition``."""
        return self.store.bucket_dir(partition, bucket)

    def remove_uncommitted(self, messages: Sequence[CommitMessage]) -> None:
        """Delete the data files of ``messages`` whose commit certainly did not land (a
        ``CommitConflictError``): nothing references them."""
        remove_uncommitted(self.store, messages)

    def to_arrow(
        self,
        snapshot_id: int | None = None,
        tag: str | None = None,
        timestamp_millis: int | None = None,
        columns: Sequence[str] | None = None,
        filter: Predicate | None = None,
        *,
        incremental_between: Any = None,
        scan_mode: str | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> pa.Table:
        """The merged rows of a snapshot: the latest in the table's current schema, or the one time
        travel names (``snapshot_id``, ``tag``, ``timestamp_millis``) in the schema it was written
        under: its columns (renamed ones under their old names, dropped ones present), types and
        options (Java 1.0 keeps today's options); ``columns`` and ``filter`` name its columns
        (``predicate_builder(snapshot_id=...)`` checks a filter against them).

        ``incremental_between=(start, end)`` (snapshot ids or tag names; or ``"start,end"``)
        instead returns the changes of the snapshots after ``start`` up to ``end``, each row with
        its kind in ``_ROW_KIND`` (``+I``, ``-U``, ``+U``, ``-D``); ``scan_mode`` is ``auto``,
        ``delta`` or ``changelog`` (Paimon's ``incremental-between-scan-mode``). ``options`` takes
        the same as Paimon read options (``incremental-between``, ``incremental-between-scan-mode``)."""
        read, splits, row_kind = self._read_plan(
            snapshot_id, tag, timestamp_millis, columns, filter, incremental_between, scan_mode, options
        )
        return read.to_arrow(splits, row_kind=row_kind)

    def to_arrow_batch_reader(
        self,
        snapshot_id: int | None = None,
        tag: str | None = None,
        timestamp_millis: int | None = None,
        columns: Sequence[str] | None = None,
        filter: Predicate | None = None,
        *,
        incremental_between: Any = None,
        scan_mode: str | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> pa.RecordBatchReader:
        """The rows of :meth:`to_arrow` as record batches, merged as they are read: memory is bounded
        by ``read.batch-size`` rows per file of a bucket's overlapping files, not by the table."""
        read, splits, row_kind = self._read_plan(
            snapshot_id, tag, timestamp_millis, columns, filter, incremental_between, scan_mode, options
        )
        return read.to_arrow_batch_reader(splits, row_kind=row_kind)

    def _read_plan(
        self, snapshot_id, tag, timestamp_millis, columns, filter, incremental_between, scan_mode, options
    ) -> tuple[SplitRead, list, bool | None]:
        rb = self.new_read_builder()
        if columns is not None:
            rb = rb.with_projection(list(columns))
        if filter is not None:
            rb = rb.with_filter(filter)
        if options:
            rb = rb.with_options(options)
        if incremental_between is not None or scan_mode is not None:
            rb = rb.with_incremental_between(incremental_between, scan_mode=scan_mode)
        if rb.incremental is not None:
            if any(x is not None for x in (snapshot_id, tag, timestamp_millis)):
                raise InvalidOptionError(
                    f"a read of {self.identifier} takes either time travel (snapshot_id, tag, "
                    "timestamp_millis) or incremental_between, not both"
                )
            return rb.new_read(), rb.new_scan().plan().splits(), True
        if all(x is None for x in (snapshot_id, tag, timestamp_millis)):
            return rb.new_read(), rb.new_scan().plan().splits(), None  # the latest, in the current schema
        splits = rb.new_scan(snapshot=self.resolve_snapshot(snapshot_id, tag, timestamp_millis)).plan().splits()
        return rb.new_read(), splits, None  # read in the snapshot's schema, which the splits name

    def delete_where(self, predicate: Predicate) -> Snapshot | None:
        """One commit of -D records for every live row matching ``predicate`` (PK tables)."""
        if not isinstance(predicate, Predicate):  # None would read every row: a whole-table delete by accident
            raise PredicateError(
                f"delete_where on {self.identifier} needs a Predicate (from "
                f"table.predicate_builder()), got {predicate!r}; to empty the table write an "
                "empty table with overwrite=True"
            )
        if not self._schema.primary_keys:
            raise LakeError(f"delete_where needs a primary-key table; {self.identifier} is an append table")

        def attempt(wb: BatchWriteBuilder) -> list[CommitMessage]:
            self.check_identity()  # a stale handle would read another table's files
            # again on every attempt: the latest rows, every committed one (a row still at a hidden
            # level 0 is committed and would show after the next compaction)
            scan = TableScan(self.store, self.latest_snapshot(), predicate, all_levels=True)
            rows = SplitRead(self.store, predicate=predicate).to_arrow(scan.splits())
            w = wb.new_write()
            if rows.num_rows:
                w.write_rows_with_kind(rows, rowkind.DELETE)
            return w.prepare_commit()

        return self._commit_replanned(attempt, False, None, None)


def content_digest(rows: pa.Table, overwrite) -> str:
    """SHA-256 of the rows (Arrow IPC stream) and the overwrite spec: what identifies a
    ``write_arrow`` commit across retries, whose data files get new names every time."""
    h = hashlib.sha256(repr(overwrite).encode())

    class _Sink:
        closed = False

        def write(self, b) -> int:
            h.update(b)
            return len(b)

        def flush(self) -> None:
            pass

    with pa.ipc.new_stream(_Sink(), rows.schema) as writer:
        writer.write_table(rows)
    return h.hexdigest()


class BatchWriteBuilder:
    def __init__(self, table: FileStoreTable):
        self.table = table
        self._overwrite: dict | None = None
        self._is_overwrite = False
        self.commit_user = str(uuid.uuid4())
        self._explicit_user = False

    def overwrite(self, static_partition: dict | None = None) -> BatchWriteBuilder:
        self._is_overwrite = True
        self._overwrite = dict(static_partition or {})
        return self

    def with_commit_user(self, commit_user: str) -> BatchWriteBuilder:
        self.commit_user = commit_user
        self._explicit_user = True
        return self

    @property
    def overwrite_spec(self) -> dict | bool | None:
        """What the commit overwrites: None (append), True (everything) or a partition spec."""
        return (self._overwrite or True) if self._is_overwrite else None

    def new_write(self) -> BatchTableWrite:
        return BatchTableWrite(
            self.table.store, hooks=self.table, static_partition=self._overwrite if self._is_overwrite else None
        )

    def new_commit(self) -> BatchTableCommit:
        return BatchTableCommit(
            self.table,
            self.commit_user if self._explicit_user else None,
            self._overwrite if self._is_overwrite else None,
            self._is_overwrite,
        )


class BatchTableWrite(TableWrite):
    """pypaimon's name for the writer a batch write builder hands out."""


class BatchTableCommit:
    def __init__(self, table: FileStoreTable, commit_user: str | None, static_partition: dict | None, overwrite: bool):
        self.table = table
        self._commit = FileStoreCommit(table.store, hooks=table, commit_user=commit_user)
        self._overwrite = (static_partition or True) if overwrite else None

    @property
    def commit_user(self) -> str:
        return self._commit.commit_user

    def commit(
        self,
        messages: Sequence[CommitMessage],
        identifier: int = BATCH_IDENTIFIER,
        properties: dict[str, str] | None = None,
    ) -> list[Snapshot]:
        """Commit once; ``properties`` are stored in the snapshot (e.g. a source offset)."""
        return self._commit.commit(
            list(messages), identifier=identifier, overwrite=self._overwrite, properties=properties
        )

    def close(self) -> None:
        pass


class ReadBuilder:
    def __init__(self, table: FileStoreTable):
        self.table = table
        self._projection: list[str] | None = None
        self._predicate: Predicate | None = None
        self.incremental: tuple[Any, str | None] | None = None  # (between, scan mode)
        # the table as of the snapshot the last time-travel new_scan named, and its id: new_read
        # reads in that schema even when the plan is empty (no split to name it)
        self._travelled: tuple[FileStoreTable, int] | None = None

    def with_projection(self, columns: Sequence[str]) -> ReadBuilder:
        self._projection = list(columns)
        return self

    def with_filter(self, predicate: Predicate | None) -> ReadBuilder:
        self._predicate = predicate
        return self

    def with_incremental_between(self, between: Any, *, scan_mode: str | None = None) -> ReadBuilder:
        """Scan the changes of snapshots (start, end] instead of a snapshot: ``between`` is
        ``(start, end)`` or ``"start,end"`` (snapshot ids or tag names), ``scan_mode`` ``auto``
        (default), ``delta`` or ``changelog``. Rows read carry ``_ROW_KIND``."""
        if between is None:
            raise InvalidOptionError(
                f"a read of {self.table.identifier} with incremental-between-scan-mode = "
                f"{scan_mode!r} needs incremental-between"
            )
        self._refuse_on_read_optimized("an incremental read")
        parse_between(self.table.store, between)
        scan_mode_of(self.table.store, scan_mode)  # checked now, not at the first plan
        self.incremental = (between, scan_mode)
        return self

    def with_options(self, options: Mapping[str, Any]) -> ReadBuilder:
        """Paimon read options: ``incremental-between`` and ``incremental-between-scan-mode``."""
        parsed = incremental_options(self.table.store, options)
        if parsed is not None:
            self.with_incremental_between(parsed[0], scan_mode=parsed[1])
        return self

    def new_predicate_builder(self) -> PredicateBuilder:
        return self.table.predicate_builder()

    def new_scan(self, snapshot: Snapshot | None = None, snapshot_id: int | None = None) -> TableScan:
        """The latest snapshot in the table's current schema; or, time travel, ``snapshot`` (or
        ``snapshot_id``) in the schema it was written under (Java's ``TimeTravelUtil``): the
        projection and filter name that schema's columns, checked here, and the splits carry its
        id, so whichever reader gets them reads them in it."""
        if self.incremental is not None:
            if snapshot is not None or snapshot_id is not None:
                raise InvalidOptionError(
                    f"a scan of {self.table.identifier} takes either a snapshot or incremental-between, not both"
                )
            return incremental_scan(self.table.store, self.incremental[0], self.incremental[1], self._predicate)
        if snapshot is None:
            if snapshot_id is None:
                self._travelled = None
                return TableScan(
                    self.table.store,
                    self.table.latest_snapshot(),
                    self._predicate,
                    top_level_only=self.table.read_optimized,
                )
            snapshot = self.table.snapshot(snapshot_id)
        table = self.table.at_snapshot(snapshot)
        check_read_columns(table.identifier, table.schema, self._projection, self._predicate, snapshot_id=snapshot.id)
        self._travelled = (table, snapshot.id)
        return TableScan(table.store, snapshot, self._predicate, top_level_only=table.read_optimized)

    def new_stream_scan(self, *, consumer_id: str | None = None, ignore_progress: bool = False) -> StreamScan:
        """A scan a consumer polls: the first ``plan()`` is the latest snapshot in full (+I rows),
        then each plan the next snapshot's changes. ``consumer_id``: start where that consumer's
        ``consumer-<id>`` file says, and record it at ``notify_checkpoint_complete`` (expiry keeps
        what it has yet to read). A consumer whose position expired (its consumer file expired, or
        its next snapshot did) raises ``ConsumerExpiredError`` rather than starting over;
        ``ignore_progress=True`` (Paimon's ``consumer.ignore-progress``) starts over on purpose,
        from the latest snapshot in full."""
        self._refuse_on_read_optimized("a stream scan")
        if not isinstance(ignore_progress, bool):
            raise InvalidOptionError(
                f"ignore_progress = {ignore_progress!r} for a stream scan of "
                f"{self.table.identifier} must be True or False"
            )
        if consumer_id is None:
            if ignore_progress:
                raise InvalidOptionError(
                    f"ignore_progress for a stream scan of {self.table.identifier} needs a "
                    "consumer_id (whose recorded progress it ignores)"
                )
            return StreamScan(self.table.store, self._predicate)
        consumers = ConsumerManager(self.table)
        start = resume_position(self.table, consumer_id, ignore_progress=ignore_progress)
        scan = StreamScan(
            self.table.store, self._predicate, on_checkpoint_complete=lambda n: consumers.reset(consumer_id, n)
        )
        scan.restore(start)
        return scan

    def new_read(self) -> SplitRead:
        """The reader of splits, each in the schema it was planned in (``Split.schema_id``: a
        time-travel scan's snapshot's, else the table's); with no split, in the schema of this
        builder's last scan (make the reader after a time-travel scan whose plan may be empty)."""
        if self._travelled is not None:
            table, snapshot_id = self._travelled
            return SplitRead(table.store, self._projection, self._predicate, snapshot_id=snapshot_id)
        return SplitRead(self.table.store, self._projection, self._predicate)

    def _refuse_on_read_optimized(self, what: str) -> None:
        if self.table.read_optimized:
            raise ReadOnlyTableError(
                f"{what} of the read-optimized table {self.table.identifier} is not supported "
                "(it reads only the top level of one snapshot, as Java's ReadOptimizedTable)"
            )


class ReadOptimizedTable(FileStoreTable):
    """``db.t$ro`` (Java ``ReadOptimizedTable``): reads of a primary-key table return only the files
    of its highest level (what full compaction wrote), read without merge, so they are fast and
    may lag behind the latest writes until the next full compaction. Append tables, and tables
    whose batch reads already need no merge (deletion vectors, first-row: every level above 0),
    read as usual (Java's ``DataTableBatchScan`` level filter).
    Writes, commits and maintenance are refused with ``ReadOnlyTableError``."""

    read_optimized = True
    SUFFIX = "$ro"

    def __init__(self, fileio: FileIO, root: str, identifier: str, schema: TableSchema):
        super().__init__(fileio, root, identifier, schema)
        if not identifier.endswith(self.SUFFIX):
            self.identifier = identifier + self.SUFFIX

    def with_schema(self, schema: TableSchema) -> ReadOptimizedTable:
        return ReadOptimizedTable(self.fileio, self.paths.root, self.identifier, schema)

    def _refuse(self, what: str):
        raise ReadOnlyTableError(
            f"{self.identifier} is a read-only system table: {what} is refused; write to "
            f"{self.identifier[: -len(self.SUFFIX)]} instead"
        )

    def write_arrow(self, *args, **kwargs):
        self._refuse("write_arrow")

    def delete_where(self, *args, **kwargs):
        self._refuse("delete_where")

    def new_batch_write_builder(self):
        self._refuse("a write builder")

    def create_tag(self, *args, **kwargs):
        self._refuse("create_tag")

    def delete_tag(self, *args, **kwargs):
        self._refuse("delete_tag")

    def lease(self, *args, **kwargs):
        self._refuse("a lease")

    @property
    def maintenance(self):
        self._refuse("maintenance")
