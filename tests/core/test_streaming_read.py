"""Large reads stream split by split instead of materialising the whole table."""
from __future__ import annotations

import pyarrow as pa

from lake_core import Catalog


def test_batch_reader_yields_per_bucket(warehouse):
    cat = Catalog(warehouse)
    cat.create_database("db")
    schema = pa.schema([("id", pa.int64()), ("v", pa.int64())])
    t = cat.create_table("db.t", schema=schema, primary_keys=["id"], options={"bucket": "4"})
    t.write_arrow(pa.table({"id": list(range(4000)), "v": [0] * 4000}, schema=schema))
    t.write_arrow(pa.table({"id": list(range(0, 4000, 2)), "v": [1] * 2000}, schema=schema))
    rb = t.new_read_builder()
    splits = rb.new_scan().plan().splits()
    assert len(splits) == 4
    reader = rb.new_read().to_arrow_batch_reader(splits)
    batches = list(reader)
    # one split at a time: no batch holds more than one bucket's rows
    assert max(b.num_rows for b in batches) < 4000 and sum(b.num_rows for b in batches) == 4000
    total = pa.Table.from_batches(batches)
    assert sorted(total["id"].to_pylist()) == list(range(4000))
    assert sum(total["v"].to_pylist()) == 2000
