"""One timed step of ``benchmarks.bench_speed``, run in a fresh process: by the lake_core of the
tree it runs in (this checkout, or a temporary worktree of an older commit), by pypaimon in
``.venv-pypaimon``, or by pyarrow alone. Prints one JSON line.

Kept to APIs every compared tree has (``Catalog``, ``create_table``, ``write_arrow``, ``to_arrow``,
``maintenance.rescale``) and to NumPy and pyarrow otherwise, and loads the workload from its own
directory as a plain file, so the same file drives every system.

    python speed_worker.py <system> <step> <warehouse> [rows] [updates]
      system: lake_core | pypaimon-native | pyarrow
      step:   build (write + update, timed each) | read (a cold merged read) | rescale-build | rescale
"""

from __future__ import annotations

import importlib.util
import json
import os
import resource
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


class _Step:
    """Times one step: its wall seconds under ``name``, the process's CPU seconds (user + system,
    every thread) under ``cpu_<name>`` and the user part alone under ``user_<name>`` (the system
    part is mostly the kernel's zeroing of fresh memory, which swings with the machine)."""

    def __init__(self, out: dict, name: str):
        self.out, self.name = out, name

    def __enter__(self):
        self.cpu, self.wall = _cpu(), time.perf_counter()

    def __exit__(self, *exc):
        self.out[self.name] = time.perf_counter() - self.wall
        user, system = (b - a for a, b in zip(self.cpu, _cpu()))
        self.out["cpu_" + self.name] = user + system
        self.out["user_" + self.name] = user


def _cpu() -> tuple[float, float]:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime, r.ru_stime


def _workload():
    spec = importlib.util.spec_from_file_location("speed_workload", os.path.join(HERE, "workload.py"))
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def lake_core(step: str, wh: str, rows: int, updates: int) -> dict:
    import pyarrow as pa  # noqa: F401 - imported before the clock (its first array imports pandas)

    from lake_core import Catalog

    if step == "build":
        w = _workload()
        data, upd = w.initial(rows), w.updates(rows, updates)
        cat = Catalog(f"file://{wh}")
        cat.create_database("db")
        t = cat.create_table("db.t", schema=w.SCHEMA, primary_keys=["id"], options={"bucket": "4"})
        out: dict = {}
        with _Step(out, "write"):
            t.write_arrow(data)
        with _Step(out, "update"):
            t.write_arrow(upd)
        return out
    if step == "read":
        out = {}
        with _Step(out, "read"):
            out["read_rows"] = Catalog(f"file://{wh}").get_table("db.t").to_arrow().num_rows
        return out
    if step == "rescale-build":
        import numpy as np

        schema = pa.schema(
            [("dt", pa.string()), ("id", pa.int64()), ("name", pa.string()), ("v", pa.int64()), ("d", pa.float64())]
        )
        cat = Catalog(f"file://{wh}")
        cat.create_database("db")
        t = cat.create_table("db.t", schema, primary_keys=["dt", "id"], partition_keys=["dt"], options={"bucket": "2"})
        rng = np.random.default_rng(7)

        def batch(ids):
            n = len(ids)
            return pa.table(
                {
                    "dt": pa.array(["2024-01-01"] * n),
                    "id": pa.array(ids),
                    "name": pa.array([f"name-{i % 1000}" for i in range(n)]),
                    "v": pa.array(rng.integers(0, 10**9, n)),
                    "d": pa.array(rng.random(n)),
                },
                schema=schema,
            )

        t.write_arrow(batch(np.arange(rows, dtype=np.int64)))
        t.write_arrow(batch(rng.choice(rows, rows // 10, replace=False).astype(np.int64)))
        return {}
    if step == "rescale":
        import polars  # noqa: F401 - before the clock: the rescale's checksums need it (~0.3 s to import)

        t = Catalog(f"file://{wh}").get_table("db.t")
        out = {}
        with _Step(out, "rescale"):
            out["rescale_rows"] = t.maintenance.rescale(bucket=8).rows
        return out
    raise SystemExit(f"unknown step {step}")


def pypaimon(step: str, wh: str, rows: int, updates: int) -> dict:
    import pypaimon_rust  # noqa: F401 - the native engine must be there: without it pypaimon silently runs pure Python
    from pypaimon import CatalogFactory, Schema
    from pypaimon_worker import NATIVE, write_commit  # the worker beside this file, in the same venv

    cat = CatalogFactory.create({"warehouse": f"file://{wh}"})
    if step == "build":
        w = _workload()
        data, upd = w.initial(rows), w.updates(rows, updates)
        cat.create_database("db", True)
        opts = {"bucket": "4", **NATIVE}
        cat.create_table("db.t", Schema.from_pyarrow_schema(w.SCHEMA, primary_keys=["id"], options=opts), False)
        t = cat.get_table("db.t")
        out = {}
        for phase, batch in (("write", data), ("update", upd)):
            with _Step(out, phase):
                write_commit(t, batch)
        return out
    if step == "read":
        out = {}
        with _Step(out, "read"):
            rb = cat.get_table("db.t").new_read_builder()
            out["read_rows"] = rb.new_read().to_arrow(rb.new_scan().plan().splits()).num_rows
        return out
    return {}  # no rescale in pypaimon


def pyarrow_alone(step: str, wh: str, rows: int, updates: int) -> dict:
    """The ceiling: the same 1M rows as 4 zstd Parquet files (one per bucket, as lake_core writes
    them: sorted by key), written and read by pyarrow on two threads, as lake_core uses two; and,
    in the same process after them, the 200k updates as 4 more such files (the update's ceiling:
    it writes those rows and reads nothing)."""
    from concurrent.futures import ThreadPoolExecutor

    import pyarrow as pa
    import pyarrow.parquet as pq

    paths = [os.path.join(wh, f"part-{i}.parquet") for i in range(4)]
    if step == "build":
        os.makedirs(wh, exist_ok=True)
        w = _workload()
        out: dict = {}
        for phase, data in (("write", w.initial(rows)), ("update", w.updates(rows, updates))):
            ids = data["id"].to_numpy()
            parts = [data.filter(pa.array(ids % 4 == i)).sort_by("id") for i in range(4)]
            targets = paths if phase == "write" else [p.replace("part-", "update-") for p in paths]

            def write(i: int, parts=parts, targets=targets) -> None:
                pq.write_table(parts[i], targets[i], compression="zstd", compression_level=1)

            with _Step(out, phase), ThreadPoolExecutor(2) as pool:
                list(pool.map(write, range(4)))
        return out
    if step == "read":
        pa.array([0])  # before the clock, as in the lake_core worker: pyarrow's first array imports pandas
        out = {}
        with _Step(out, "read"), ThreadPoolExecutor(2) as pool:
            out["read_rows"] = sum(t.num_rows for t in pool.map(pq.read_table, paths))
        return out
    return {}


def main() -> None:
    system, step, wh = sys.argv[1], sys.argv[2], sys.argv[3]
    rows = int(sys.argv[4]) if len(sys.argv) > 4 else 1_000_000
    updates = int(sys.argv[5]) if len(sys.argv) > 5 else 200_000
    run = {"lake_core": lake_core, "pypaimon-native": pypaimon, "pyarrow": pyarrow_alone}[system]
    print(json.dumps(run(step, wh, rows, updates)))


if __name__ == "__main__":
    main()
