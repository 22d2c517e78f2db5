"""The shared benchmark workload (the same for lake_core and its peers).

Imported by the lake_core worker and, as a plain file, by the pypaimon worker (which runs in
its own virtualenv with pyarrow < 20), so it depends on NumPy and pyarrow only.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

SCHEMA = pa.schema(
    [("id", pa.int64()), ("qty", pa.int32()), ("price", pa.float64()), ("name", pa.string()), ("ts", pa.int64())]
)


def make_rows(ids: np.ndarray, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    n = len(ids)
    names = np.array([f"customer-{i:05d}" for i in range(5000)], dtype=object)
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "qty": pa.array(rng.integers(0, 1000, n, dtype=np.int32)),
            "price": pa.array(rng.random(n) * 100),
            "name": pa.array(names[rng.integers(0, len(names), n)], pa.string()),
            "ts": pa.array(rng.integers(1_700_000_000_000, 1_800_000_000_000, n, dtype=np.int64)),
        },
        schema=SCHEMA,
    )


def initial(rows: int) -> pa.Table:
    return make_rows(np.random.default_rng(1).permutation(rows).astype(np.int64), seed=2)


def updates(rows: int, count: int) -> pa.Table:
    return make_rows(np.random.default_rng(3).choice(rows, size=count, replace=False).astype(np.int64), seed=4)
