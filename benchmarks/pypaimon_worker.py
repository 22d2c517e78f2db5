"""Benchmark worker for pypaimon 2.1.0 (pure Python or its native Rust engine).

Runs inside .venv-pypaimon; prints one JSON line with per-phase seconds and peak RSS.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import workload  # noqa: E402
from pypaimon import CatalogFactory, Schema  # noqa: E402

NATIVE = {
    "write.native.enabled": "true",
    "read.native.enabled": "true",
    "commit.native.enabled": "true",
    "scan.native-plan.enabled": "true",
}


def write_commit(table, data) -> None:
    """One batch write and commit of ``data`` through pypaimon's builder API."""
    wb = table.new_batch_write_builder()
    w = wb.new_write()
    w.write_arrow(data)
    c = wb.new_commit()
    c.commit(w.prepare_commit())
    w.close()
    c.close()


def one_run(base: str, rows, upd, native: bool, i: int) -> dict:
    wh = os.path.join(base, f"wh{i}")
    catalog = CatalogFactory.create({"warehouse": f"file://{wh}"})
    catalog.create_database("db", True)
    opts = {"bucket": "4", **(NATIVE if native else {})}
    catalog.create_table("db.t", Schema.from_pyarrow_schema(workload.SCHEMA, primary_keys=["id"], options=opts), False)
    table = catalog.get_table("db.t")
    out = {}
    for phase, data in (("write", rows), ("update", upd)):
        t0 = time.perf_counter()
        write_commit(table, data)
        out[phase] = time.perf_counter() - t0
    t0 = time.perf_counter()
    rb = table.new_read_builder()
    result = rb.new_read().to_arrow(rb.new_scan().plan().splits())
    out["read"] = time.perf_counter() - t0
    out["read_rows"] = result.num_rows
    shutil.rmtree(wh, ignore_errors=True)
    return out


def main():
    mode, rows_n, upd_n, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    rows, upd = workload.initial(rows_n), workload.updates(rows_n, upd_n)
    base = tempfile.mkdtemp(prefix="bench-pypaimon-")
    results = [one_run(base, rows, upd, mode == "native", i) for i in range(runs + 1)][1:]  # first is warm-up
    shutil.rmtree(base, ignore_errors=True)
    print(json.dumps({"runs": results, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


if __name__ == "__main__":
    main()
