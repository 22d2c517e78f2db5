"""The timed write → update → merged-read loop shared by the lake_core benchmarks."""

from __future__ import annotations

import resource
import shutil
import tempfile
import time
from collections.abc import Callable

import pyarrow as pa

from lake_core import Catalog


def timed_runs(
    rows: pa.Table,
    upd: pa.Table,
    runs: int,
    create: Callable[[Catalog], object],
    extra: Callable[[object], dict] | None = None,
) -> dict:
    """``runs`` warm runs (plus one dropped warm-up) on fresh tables made by ``create(catalog)``.
    Returns per-run phase seconds and the process's peak RSS."""
    base = tempfile.mkdtemp(prefix="bench-lake-")
    results = []
    try:
        for i in range(runs + 1):
            cat = Catalog(f"file://{base}/wh{i}")
            cat.create_database("db")
            table = create(cat)
            out = {}
            for phase, data in (("write", rows), ("update", upd)):
                t0 = time.perf_counter()
                table.write_arrow(data)
                out[phase] = time.perf_counter() - t0
            t0 = time.perf_counter()
            out["read_rows"] = table.to_arrow().num_rows
            out["read"] = time.perf_counter() - t0
            if extra:
                out.update(extra(table))
            results.append(out)
            shutil.rmtree(f"{base}/wh{i}", ignore_errors=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return {"runs": results[1:], "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
