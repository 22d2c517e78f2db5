"""``spark.read.format("paimon")``: a Spark 4 Python Data Source over lake_core.

    spark.read.format("paimon")
        .option("warehouse", "s3://bucket/wh")            # or file:///abs/path
        .option("table", "db.t")
        .option("snapshot-id", "5")                        # optional: time travel (in snapshot 5's schema)
        .option("incremental-between", "5,9")              # optional: the changes of snapshots 6..9
        .option("incremental-between-scan-mode", "auto")   # auto | delta | changelog
        .option("storage-options", json.dumps({...}))      # fsspec/s3fs options (an s3:// warehouse: key, secret)
        .load()

The credentials are explicit: ``storage-options`` is a JSON object of fsspec/s3fs options, resolved
where the reader is built and carried to the executors inside the reader, so no executor reads its
own environment. :func:`read_table` builds it from the environment variables *named* by the caller
(the ``lake`` resource's and the job flags' convention, :mod:`jobs.storage`), in the calling process.
An ``s3://`` warehouse without a key and secret fails when the scan is planned, in the driver, with a
:class:`jobs.storage.StorageCredentialsError` naming the bucket, the endpoint and the variables,
instead of botocore failing in every task (and Spark retrying each one).

The driver plans the scan once, pinned to one snapshot, and makes one Spark input partition per
lake_core split (one (partition, bucket)); each Python worker merges its split with lake_core and
yields Arrow record batches. The JVM never touches the files.

With ``snapshot-id`` the DataFrame has the columns of the schema that snapshot was written under
(renamed columns under their old names, dropped ones present, later ones absent), as Java's time
travel; without it, the table's current columns.

With ``incremental-between`` (snapshot ids or tag names, Paimon's option) the DataFrame is the
changes instead of a snapshot: one row per change with its kind in a ``_ROW_KIND`` column
(``+I``, ``-U``, ``+U``, ``-D``), one input partition per (snapshot, partition, bucket).

A system table (``.option("table", "db.t$snapshots")``, ``$files``, ``$audit_log``, ...; see
docs/reference/system-tables.md) reads the table's latest metadata, one input partition (or, for
``$audit_log``, one per split of the table); ``snapshot-id`` and ``incremental-between`` are refused
for it when the scan is planned.
"""

from __future__ import annotations

import json
import os
import pickle
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.pandas.types import from_arrow_schema

from jobs.storage import (
    DEFAULT_KEY_ENV,
    DEFAULT_REGION,
    DEFAULT_SECRET_ENV,
    StorageCredentialsError,
    require_credentials,
    s3_options_from_env,
)
from lake_core import ROW_KIND, Catalog, SystemTable

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import SparkSession
    from pyspark.sql.types import StructType

    from lake_core import FileStoreTable

FORMAT_NAME = "paimon"


class _SplitPartition(InputPartition):
    """One lake_core split, pickled on the driver (Split is a frozen dataclass)."""

    def __init__(self, payload: bytes) -> None:
        super().__init__(payload)


def _need(options: Mapping[str, str], key: str) -> str:
    value = options.get(key)
    if not value:
        raise ValueError(f"the paimon data source needs .option({key!r}, ...)")
    return value


def storage_options_of(options: Mapping[str, str]) -> dict[str, Any]:
    """The ``storage-options`` JSON as fsspec options; for an ``s3://`` warehouse, a key and a secret
    are required (:func:`jobs.storage.require_credentials`), so a missing one fails here, on the
    driver, and not in each task."""
    warehouse = _need(options, "warehouse")
    raw = options.get("storage-options") or "{}"
    try:
        storage = json.loads(raw)
    except ValueError as e:
        raise StorageCredentialsError(f"option 'storage-options' is not JSON ({e}): give a JSON object") from None
    if not isinstance(storage, dict):
        raise StorageCredentialsError(
            f"option 'storage-options' must be a JSON object of fsspec options, got {type(storage).__name__}"
        )
    require_credentials(
        warehouse,
        storage,
        looked_at={},
        remedy="Give key and secret in .option('storage-options', json.dumps({...})), or read through "
        "jobs.datasource.read_table, which takes them from the environment variables it is given "
        "(access_key_env=, secret_key_env=, endpoint_url_env=) in the calling process",
    )
    return storage


def _open_table(options: Mapping[str, str], storage: Mapping[str, Any]) -> FileStoreTable | SystemTable:
    return Catalog(_need(options, "warehouse"), storage_options=dict(storage)).get_table(_need(options, "table"))


def _snapshot_id(options: dict[str, str]) -> int | None:
    raw = options.get("snapshot-id")
    if raw in (None, ""):
        return None
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"option 'snapshot-id' must be an integer, got {raw!r}") from None


def _incremental(options: dict[str, str]) -> bool:
    return bool(options.get("incremental-between"))


class PaimonDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return FORMAT_NAME

    def __init__(self, options: dict[str, str]) -> None:
        super().__init__(options)
        # Spark passes a case-insensitive map; keep plain lower-case keys.
        self.options = {str(k).lower(): str(v) for k, v in dict(options).items()}
        # Checked and parsed here, on the driver; the reader carries them to the executors.
        self.storage = storage_options_of(self.options)

    def schema(self) -> StructType:
        table = _open_table(self.options, self.storage)
        if isinstance(table, SystemTable):  # the latest metadata: time travel is refused at planning
            return from_arrow_schema(table.arrow_schema(), prefer_timestamp_ntz=True)
        snapshot_id = None if _incremental(self.options) else _snapshot_id(self.options)
        if snapshot_id is not None:  # time travel: the snapshot's own columns
            table = table.at_snapshot(table.snapshot(snapshot_id))
        schema = table.arrow_schema()
        if _incremental(self.options):
            schema = schema.append(pa.field(ROW_KIND, pa.string(), nullable=False))
        # prefer_timestamp_ntz: Paimon TIMESTAMP (no zone) stays TimestampNTZ, LTZ stays Timestamp.
        return from_arrow_schema(schema, prefer_timestamp_ntz=True)

    def reader(self, schema: StructType) -> PaimonReader:
        return PaimonReader(self.options, schema, storage=self.storage)


class PaimonReader(DataSourceReader):
    def __init__(self, options: dict[str, str], schema: StructType, *, storage: Mapping[str, Any]) -> None:
        self.options = options
        self.storage = dict(storage)
        self.columns = [f.name for f in schema.fields]

    def partitions(self) -> list[InputPartition]:
        """Driver side: plan once at a pinned snapshot (or range); one input partition per split."""
        table = _open_table(self.options, self.storage)
        # Paimon read options: the incremental ones are applied, others that would change the answer refused
        builder = table.new_read_builder().with_options(self.options)
        if _incremental(self.options):
            if _snapshot_id(self.options) is not None:
                raise ValueError("the paimon data source takes either 'snapshot-id' or 'incremental-between', not both")
            splits = builder.new_scan().plan().splits()
            return [_SplitPartition(pickle.dumps(s, protocol=pickle.HIGHEST_PROTOCOL)) for s in splits]
        snapshot_id = _snapshot_id(self.options)
        # the latest in the current schema (an empty table: no splits), or the snapshot in its own
        scan = builder.new_scan() if snapshot_id is None else builder.new_scan(snapshot_id=snapshot_id)
        splits = scan.plan().splits()
        return [_SplitPartition(pickle.dumps(s, protocol=pickle.HIGHEST_PROTOCOL)) for s in splits]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Worker side: merge one split with lake_core and stream it as Arrow batches."""
        if partition.value is None:  # Spark turns an empty partition list into one None partition
            return
        table = _open_table(self.options, self.storage)
        split = pickle.loads(partition.value)
        # every column of the schema the split was planned in (a time-travel split: its snapshot's,
        # which the DataFrame has); the kind comes with a change split's rows
        data = table.new_read_builder().new_read().to_arrow([split])
        if isinstance(table, SystemTable):
            data = _microsecond_timestamps(data)  # Spark's TimestampNTZ; the system tables' are TIMESTAMP(3)
        yield from data.select(self.columns).to_batches(max_chunksize=65_536)


def _microsecond_timestamps(data: pa.Table) -> pa.Table:
    """``data`` with its millisecond timestamps as microseconds, the unit Spark expects back."""
    fields = [
        pa.field(f.name, pa.timestamp("us", f.type.tz), f.nullable) if pa.types.is_timestamp(f.type) else f
        for f in data.schema
    ]
    return data.cast(pa.schema(fields))


def register(spark: SparkSession) -> None:
    """Make ``spark.read.format("paimon")`` available in this session (idempotent)."""
    spark.dataSource.register(PaimonDataSource)


def read_table(
    spark: SparkSession,
    warehouse: str,
    table: str,
    *,
    snapshot_id: int | None = None,
    storage_options: Mapping[str, Any] | None = None,
    endpoint_url_env: str | None = None,
    access_key_env: str | None = DEFAULT_KEY_ENV,
    secret_key_env: str | None = DEFAULT_SECRET_ENV,
    region: str = DEFAULT_REGION,
    path_style: bool = True,
    incremental_between: tuple[Any, Any] | None = None,
    scan_mode: str | None = None,
):
    """Convenience wrapper: the DataFrame of ``table`` at ``snapshot_id`` (default latest), or
    with ``incremental_between=(start, end)`` the changes of snapshots (start, end] with
    ``_ROW_KIND`` (``scan_mode``: auto, delta, changelog).

    For an ``s3://`` warehouse the credentials come from ``storage_options`` or, for what those
    lack, from the environment variables named here (read in this process, as the ``lake`` resource
    and the jobs' ``--s3-*-env`` flags do); a missing key or secret raises
    :class:`jobs.storage.StorageCredentialsError` before Spark is asked anything."""
    register(spark)
    storage_options = s3_options_from_env(
        warehouse,
        environ=os.environ,
        endpoint_env=endpoint_url_env,
        key_env=access_key_env,
        secret_env=secret_key_env,
        region=region,
        path_style=path_style,
        extra=storage_options,
    )
    reader = spark.read.format(FORMAT_NAME).option("warehouse", warehouse).option("table", table)
    if snapshot_id is not None:
        reader = reader.option("snapshot-id", str(snapshot_id))
    if incremental_between is not None:
        reader = reader.option("incremental-between", ",".join(str(x) for x in incremental_between))
    if scan_mode is not None:
        reader = reader.option("incremental-between-scan-mode", scan_mode)
    if storage_options:
        reader = reader.option("storage-options", json.dumps(storage_options))
    return reader.load()
