"""First-row commit benchmark: milliseconds per commit of ``--commit`` rows into one bucket already
holding 100k .. ``--rows`` keys, keys new and old at random or arriving in ascending order (ids,
times). Each commit compacts its level-0 file up and drops the keys other levels hold (Paimon's
lookup compaction), reading the key columns of the files and row groups its keys fall in.

    .venv/bin/python -m benchmarks.bench_first_row [--rows 2000000] [--commit 1000] [--runs 8]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time


def _table(path: str, rows: int):
    import numpy as np

    from benchmarks import workload
    from lake_core import Catalog

    cat = Catalog(f"file://{path}")
    cat.create_database("db")
    t = cat.create_table(
        "db.t", schema=workload.SCHEMA, primary_keys=["id"], options={"bucket": "1", "merge-engine": "first-row"}
    )
    step = 1_000_000
    for start in range(0, rows, step):
        t.write_arrow(workload.make_rows(np.arange(start, min(start + step, rows), dtype=np.int64) * 2, seed=start))
    return t


def _commit_ms(t, rows: int, commit: int, runs: int, ascending: bool) -> float:
    import numpy as np

    from benchmarks import workload

    rng = np.random.default_rng(3)
    times = []
    nxt = 2 * rows
    for r in range(runs):
        if ascending:
            ids = np.arange(nxt, nxt + commit, dtype=np.int64)
            nxt += commit
        else:  # about half of them keys the bucket holds
            ids = rng.integers(0, 4 * rows, commit).astype(np.int64)
        data = workload.make_rows(ids, seed=r)
        start = time.perf_counter()
        t.write_arrow(data)
        times.append(time.perf_counter() - start)
    return round(statistics.median(times) * 1000, 1)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--commit", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=8)
    args = ap.parse_args()
    out = {}
    for rows in sorted({100_000, args.rows}):
        for ascending in (False, True):
            with tempfile.TemporaryDirectory() as d:
                t = _table(d, rows)
                name = f"{rows} keys, {'ascending' if ascending else 'random'} keys"
                out[name] = {
                    "commit_rows": args.commit,
                    "ms_per_commit": _commit_ms(t, rows, args.commit, args.runs, ascending),
                }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
