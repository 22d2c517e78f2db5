"""The `paimon` Spark data source's time travel (``snapshot-id``) reads the snapshot with the schema
it was written under, as Java does: after ``a`` was renamed to ``b``, a new ``a`` added and ``c``
dropped, snapshot 1 is (k, a, c) with ``a``'s old values. Oracle: the plain model of
tests/schema_evolution/time_travel_history.py."""

from __future__ import annotations

import pytest
from schema_evolution.time_travel_history import build, model, rows_of

from jobs.datasource import read_table
from lake_core import Catalog

pytestmark = [pytest.mark.spark]


def test_spark_time_travel_reads_the_snapshot_schema(spark, warehouse):
    build(Catalog(warehouse))
    m = model()
    for sid in (1, 3):
        df = read_table(spark, warehouse, "db.t", snapshot_id=sid)
        assert df.columns == m[sid][0]
        assert rows_of(df.toArrow()) == m[sid], sid
    latest = read_table(spark, warehouse, "db.t")
    assert latest.columns == m[3][0] and rows_of(latest.toArrow()) == m[3]
    # a dropped column is there at the snapshot, projected by Spark
    assert sorted(r["c"] for r in read_table(spark, warehouse, "db.t", snapshot_id=1).select("c").collect()) == sorted(
        c for _a, c in m[1][1].values()
    )
