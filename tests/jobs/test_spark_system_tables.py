"""The `paimon` Spark data source reads the system tables: ``.option("table", "db.t$snapshots")``
gives the rows and columns ``catalog.get_table("db.t$snapshots").to_arrow()`` gives (Paimon 1.0's,
TIMESTAMP(3) as Spark's TimestampNTZ); ``$audit_log`` is read split by split on the executors."""

from __future__ import annotations

import pyarrow as pa
import pytest
from system_tables.history import IDENT, build

from jobs.datasource import read_table
from lake_core import Catalog

pytestmark = [pytest.mark.spark]


def test_spark_reads_the_snapshots_system_table(spark, warehouse):
    catalog = Catalog(warehouse)
    build(catalog)
    ours = catalog.get_table(f"{IDENT}$snapshots").to_arrow()
    df = read_table(spark, warehouse, f"{IDENT}$snapshots")
    assert df.columns == ours.column_names
    assert dict(df.dtypes)["commit_time"] == "timestamp_ntz" and dict(df.dtypes)["snapshot_id"] == "bigint"
    got = df.toArrow().cast(ours.schema)
    assert got.sort_by("snapshot_id").to_pylist() == ours.to_pylist()
    assert [r["commit_kind"] for r in df.orderBy("snapshot_id").select("commit_kind").collect()][3] == "COMPACT"
    # the audit log: one input partition per split of the table, each row with its kind
    audit = read_table(spark, warehouse, f"{IDENT}$audit_log").toArrow()
    assert audit.column_names[0] == "rowkind"
    assert sorted(audit["rowkind"].to_pylist()) == sorted(
        catalog.get_table(f"{IDENT}$audit_log").to_arrow()["rowkind"].to_pylist()
    )
    # time travel is refused for a system table when the scan is planned
    with pytest.raises(Exception, match="latest metadata"):
        read_table(spark, warehouse, f"{IDENT}$files", snapshot_id=1).collect()
    assert pa.types.is_timestamp(got.schema.field("commit_time").type)
