"""Core benchmark: write 1M rows (id BIGINT + 4 value columns, bucket=4) in one commit, write
200k updates, read the merged table — lake_core beside pypaimon (pure and native), each in its
own process so peak memory is comparable. Prints medians of >= 5 warm runs.

    .venv/bin/python -m benchmarks.bench_core [--rows 1000000] [--updates 200000] [--runs 5]
                                              [--systems lake_core,pypaimon-native,pypaimon]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PYPAIMON_PY = ROOT / ".venv-pypaimon" / "bin" / "python"


def lake_core_worker(rows_n: int, upd_n: int, runs: int) -> dict:
    from benchmarks import workload
    from benchmarks.lake_runs import timed_runs

    return timed_runs(
        workload.initial(rows_n),
        workload.updates(rows_n, upd_n),
        runs,
        lambda cat: cat.create_table("db.t", schema=workload.SCHEMA, primary_keys=["id"], options={"bucket": "4"}),
    )


def ensure_pypaimon(native: bool) -> Path | None:
    if not PYPAIMON_PY.exists():
        sys.path.insert(0, str(ROOT / "tests"))
        from fixtures.pypaimon_env import ensure_pypaimon_python

        ensure_pypaimon_python()
    if native:
        ok = subprocess.run([str(PYPAIMON_PY), "-c", "import pypaimon_rust"], capture_output=True).returncode == 0
        if not ok:
            print("installing pypaimon-rust 0.4.0 into .venv-pypaimon ...", flush=True)
            subprocess.run([str(PYPAIMON_PY), "-m", "pip", "install", "-q", "pypaimon-rust==0.4.0"], check=True)
    return PYPAIMON_PY


def run_system(name: str, rows: int, upd: int, runs: int) -> dict:
    if name == "lake_core":
        cmd = [
            sys.executable,
            "-m",
            "benchmarks.bench_core",
            "--worker",
            "--rows",
            str(rows),
            "--updates",
            str(upd),
            "--runs",
            str(runs),
        ]
    else:
        py = ensure_pypaimon(native=name == "pypaimon-native")
        mode = "native" if name == "pypaimon-native" else "pure"
        cmd = [str(py), str(HERE / "pypaimon_worker.py"), mode, str(rows), str(upd), str(runs)]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if proc.returncode != 0:
        raise SystemExit(f"{name} benchmark failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def summarize(name: str, res: dict, rows: int, upd: int) -> dict:
    med = {p: statistics.median(r[p] for r in res["runs"]) for p in ("write", "update", "read")}
    return {
        "system": name,
        "write_rows_s": rows / med["write"],
        "update_rows_s": upd / med["update"],
        "read_rows_s": res["runs"][0]["read_rows"] / med["read"],
        "read_rows": res["runs"][0]["read_rows"],
        "peak_rss_mb": res["peak_rss_mb"],
        "runs": len(res["runs"]),
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--updates", type=int, default=200_000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--systems", default="lake_core,pypaimon-native,pypaimon")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        print(json.dumps(lake_core_worker(args.rows, args.updates, args.runs)))
        return
    table = []
    for name in args.systems.split(","):
        print(f"running {name}: {args.runs} warm runs of {args.rows:,} rows + {args.updates:,} updates ...", flush=True)
        table.append(summarize(name, run_system(name, args.rows, args.updates, args.runs), args.rows, args.updates))
    print()
    print(f"{'system':<18}{'write rows/s':>14}{'update rows/s':>15}{'merged read rows/s':>20}{'peak RSS MB':>13}")
    for r in table:
        print(
            f"{r['system']:<18}{r['write_rows_s']:>14,.0f}{r['update_rows_s']:>15,.0f}{r['read_rows_s']:>20,.0f}"
            f"{r['peak_rss_mb']:>13,.0f}"
        )
    base = {r["system"]: r for r in table}
    if "lake_core" in base:
        lc = base["lake_core"]
        for peer in ("pypaimon-native", "pypaimon"):
            if peer in base:
                p = base[peer]
                print(
                    f"lake_core vs {peer}: write x{lc['write_rows_s'] / p['write_rows_s']:.1f}, "
                    f"merged read x{lc['read_rows_s'] / p['read_rows_s']:.1f}"
                )
        print("targets: write >= 2,000,000 rows/s, merged read >= 5,000,000 rows/s")


if __name__ == "__main__":
    main()
