"""Ingest the next batch of a change source into its lake table through the Spark write.

Source progress lives in the table itself, the way Paimon's streaming sinks resume: every ingest
commit is made by the commit user ``ingest:<run>`` with the source batch number as its commit
identifier. The next batch is one past the highest identifier committed by any ingest run, and a
retried run (same run key) finds its own snapshot and is recognised as already committed instead
of ingesting the next batch.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import pyarrow as pa

from jobs.tables import TableSpec, ensure_table
from jobs.write import WriteResult, committed_result, distributed_write
from lake_core import Catalog

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from lake_core import FileStoreTable

INGEST_USER_PREFIX = "ingest:"


class ChangeSource(Protocol):
    """What tables.yaml's ``source: module:callable`` must return."""

    schema: pa.Schema

    def batch(self, b: int) -> pa.Table: ...


@dataclass(frozen=True)
class IngestResult:
    batch: int
    write: WriteResult


def ingest_commit_user(run_key: str) -> str:
    return f"{INGEST_USER_PREFIX}{run_key}"


def next_batch(table: FileStoreTable) -> int:
    ids = [s.commit_identifier for s in table.snapshots() if s.commit_user.startswith(INGEST_USER_PREFIX)]
    return max(ids) + 1 if ids else 0


def ingest(
    spark: SparkSession,
    warehouse: str,
    spec: TableSpec,
    source: ChangeSource,
    *,
    run_key: str,
    storage_options: Mapping[str, Any] | None = None,
    batch: int | None = None,
) -> IngestResult:
    """Create the table if needed, then write one source batch as one commit (idempotent per run)."""
    options = dict(storage_options or {})
    table = ensure_table(Catalog(warehouse, storage_options=options), spec)
    user = ingest_commit_user(run_key)
    done = table.find_commit(commit_user=user)
    if done is not None:  # a retry of a run whose commit landed: report it, write nothing
        result = committed_result(table, user, done.commit_identifier)
        assert result is not None
        return IngestResult(batch=done.commit_identifier, write=result)
    b = batch if batch is not None else next_batch(table)
    df = spark.createDataFrame(source.batch(b))
    result = distributed_write(df, warehouse, spec.name, commit_user=user, identifier=b, storage_options=options)
    return IngestResult(batch=b, write=result)
