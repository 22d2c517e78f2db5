"""Distributed write of a Spark DataFrame into a lake table.

    DataFrame ─ mapInArrow: bucket of each row (lake_core.assign_buckets, in executors)
              ─ repartition by (partition keys, bucket) so each (partition, bucket) has one writer
              ─ sortWithinPartitions(input order) so -U still precedes its +U after the shuffle
              ─ mapInArrow: lake_core TableWrite per task → pickled CommitMessages
    driver    ─ one commit with (commit_user, identifier): a retry of the same identity is
                recognised as already committed, so a re-run never double-commits (its newly
                written files are removed). Identifiers must increase per commit user.

Spark's JVM only shuffles rows; every file is read and written by lake_core in Python workers,
through lake_core's FileIO (so s3:// works without any Hadoop connector).
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from lake_core import Catalog, CommitMessage, Snapshot, assign_buckets
from lake_core.errors import CommitConflictError, CommitIdentityError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from lake_core import FileStoreTable

BUCKET_COL = "__lake_bucket"
ORDER_COL = "__lake_order"
_MESSAGES_SCHEMA = "message binary, rows long"
# Snapshot property holding the commit's input (change) row count, so a retry that finds its commit
# already made reports the rows it wrote instead of 0. Paimon keeps unknown snapshot properties.
CHANGE_ROWS_PROPERTY = "lake.change-rows"


@dataclass(frozen=True)
class WriteResult:
    table: str
    snapshot_id: int | None  # None: the DataFrame was empty, nothing committed
    commit_user: str
    identifier: int
    rows: int  # input rows (change records) written by this commit
    files: int  # data files added
    bytes: int  # bytes of the data files added
    already_committed: bool  # True: this identity had landed before; nothing was written again

    def as_metadata(self) -> dict[str, Any]:
        return {
            "table": self.table,
            "snapshot_id": self.snapshot_id,
            "change_rows": self.rows,
            "files": self.files,
            "bytes": self.bytes,
            "commit_user": self.commit_user,
            "commit_identifier": self.identifier,
            "already_committed": self.already_committed,
        }


def committed_result(table: FileStoreTable, commit_user: str, identifier: int) -> WriteResult | None:
    """The result of an earlier commit with this identity, or None if it has not landed."""
    done = table.find_commit(commit_user=commit_user, identifier=identifier)
    return None if done is None else _landed_result(table, done)


def _landed_result(table: FileStoreTable, done: Snapshot) -> WriteResult:
    files, size = _snapshot_stats(table, done)
    rows = int((done.properties or {}).get(CHANGE_ROWS_PROPERTY) or done.delta_record_count)
    return WriteResult(
        table.identifier, done.id, done.commit_user, done.commit_identifier, rows, files, size, already_committed=True
    )


def _snapshot_stats(table: FileStoreTable, snap: Snapshot) -> tuple[int, int]:
    """(files, bytes) added by a snapshot: for an already-committed retry."""
    added = table.added_files(snap)
    return len(added), sum(f.file_size for f in added)


def _bucket_udf(table: FileStoreTable):
    """Executor side: append the bucket of every row, with exactly lake_core's bucket function."""

    keys = list(table.schema.bucket_keys())
    types = [table.schema.field(k).type for k in keys]
    num_buckets = table.options.bucket
    function = table.options.bucket_function

    def add_bucket(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            buckets = assign_buckets([batch.column(k) for k in keys], types, num_buckets, function)
            yield batch.append_column(BUCKET_COL, pa.array(buckets, pa.int32()))

    return add_bucket


def _writer_udf(table: FileStoreTable, commit_user: str):
    """Executor side: write this task's rows (whole (partition, bucket) groups) via lake_core."""
    drop = {BUCKET_COL, ORDER_COL}

    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        writer = table.new_batch_write_builder().with_commit_user(commit_user).new_write()
        rows = 0
        for batch in batches:
            if batch.num_rows:
                keep = [i for i, n in enumerate(batch.schema.names) if n not in drop]
                writer.write_arrow(batch.select(keep))
                rows += batch.num_rows
        messages = writer.prepare_commit()
        writer.close()
        payload: list[bytes | None] = [pickle.dumps(m, protocol=pickle.HIGHEST_PROTOCOL) for m in messages]
        # One extra row (no message) carries the task's input row count, so the driver reports
        # rows without a second Spark job.
        yield pa.RecordBatch.from_pydict(
            {"message": [*payload, None], "rows": [0] * len(payload) + [rows]},
            schema=pa.schema([("message", pa.binary()), ("rows", pa.int64())]),
        )

    return write


def distributed_write(
    df: DataFrame,
    warehouse: str,
    table_name: str,
    *,
    commit_user: str,
    identifier: int,
    storage_options: Mapping[str, Any] | None = None,
    order_by: list[str] | None = None,
    num_tasks: int | None = None,
) -> WriteResult:
    """Write ``df`` into ``table_name`` as one commit identified by (commit_user, identifier).

    Row order decides which change of a key wins (as in a single-process write): by default the
    DataFrame's own order; pass ``order_by`` (e.g. a CDC log offset) when it is not meaningful.
    ``identifier`` should increase per commit user (Paimon's convention for resumable writers).
    """
    from pyspark.sql import functions as F  # noqa: PLC0415 - jobs.write loads with the definitions; pyspark only when a write runs
    from pyspark.sql.types import IntegerType, StructField, StructType  # noqa: PLC0415 - as above

    table = Catalog(warehouse, storage_options=dict(storage_options or {})).get_table(table_name)
    # Fast path for a retried run: the identity already landed, so skip all the work.
    done = committed_result(table, commit_user, identifier)
    if done is not None:
        return done

    # Executors compute buckets themselves, which needs a fixed bucket count: dynamic-bucket tables
    # keep a key -> bucket index that only a single writer may maintain (Paimon's rule too).
    table.require_fixed_bucket("a distributed Spark write")
    table.new_batch_write_builder().new_write()  # validates the table before any Spark work
    ordered = df.withColumn(ORDER_COL, F.monotonically_increasing_id()) if not order_by else df
    with_bucket_schema = StructType([*ordered.schema.fields, StructField(BUCKET_COL, IntegerType(), False)])
    bucketed = ordered.mapInArrow(_bucket_udf(table), with_bucket_schema)
    partition_cols = [F.col(c) for c in table.schema.partition_keys] + [F.col(BUCKET_COL)]
    n = num_tasks or int(df.sparkSession.conf.get("spark.sql.shuffle.partitions", "2"))
    shuffled = bucketed.repartition(n, *partition_cols).sortWithinPartitions(*(order_by or [ORDER_COL]))
    collected = shuffled.mapInArrow(_writer_udf(table, commit_user), _MESSAGES_SCHEMA).collect()

    messages: list[CommitMessage] = [pickle.loads(r["message"]) for r in collected if r["message"] is not None]
    rows = sum(r["rows"] for r in collected)
    files = [f for m in messages for f in m.new_files]
    if not any(not m.is_empty() for m in messages):
        return WriteResult(table_name, None, commit_user, identifier, rows, 0, 0, already_committed=False)

    builder = table.new_batch_write_builder().with_commit_user(commit_user)
    try:
        snapshots = builder.new_commit().commit(
            messages, identifier=identifier, properties={CHANGE_ROWS_PROPERTY: str(rows)}
        )
    except CommitConflictError as e:
        table.remove_uncommitted(messages)  # nothing landed: the files this run wrote are orphans
        if isinstance(e, CommitIdentityError):
            # Another run of this identity landed before this commit (after the fast-path check,
            # or the check was skipped): this run is a retry of it.
            done = table.find_commit(commit_user=commit_user, identifier=identifier)
            if done is not None:
                return _landed_result(table, done)
        raise
    snap_id = snapshots[0].id if snapshots else None
    return WriteResult(
        table_name,
        snap_id,
        commit_user,
        identifier,
        rows,
        len(files),
        sum(f.file_size for f in files),
        already_committed=False,
    )
