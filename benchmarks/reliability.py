"""The reliability figures (docs/reliability/figures.md): fault injection at every step of every operation,
SIGKILLed processes, and a chaos run, with the invariants of tests/reliability checked throughout.

    PYTHONPATH=$PWD .venv/bin/python -m benchmarks.reliability --seed 1 --kills 12 --chaos-duration 60 [--s3]

``--cap N`` samples N steps of each kind per operation instead of every step (faster). Exits
non-zero if any invariant failed. Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time

from benchmarks.chaos import run_chaos
from tests.reliability.faultio import KINDS, MODES
from tests.reliability.harness import OPERATIONS, LocalStore, S3Store, explore
from tests.reliability.kills import run_kills


def fault_table(store, cap, modes=MODES) -> tuple[list[str], dict]:
    lines = [
        "| operation | storage ops (write/create/rename/delete/list/read) | faults injected "
        f"({'/'.join(modes)}) | state seen after the fault (before/after) | rows verified | half-visible | "
        "lost rows |",
        "|---|---|---|---|---|---|---|",
    ]
    totals = {"injected": 0, "rows": 0, "half": 0, "lost": 0, "failures": []}
    for op in OPERATIONS:
        t0 = time.monotonic()
        r = explore(store, op, cap=cap, modes=modes, raise_first=False)
        counts = "/".join(str(r.counts[k]) for k in KINDS)
        injected = "/".join(str(r.injected[m]) for m in modes)
        seen = "same rows before and after" if r.neutral else f"{r.outcomes['before']}/{r.outcomes['after']}"
        lines.append(
            f"| {op.name} | {counts} | {r.total} ({injected}) | {seen} | {r.rows_verified} | "
            f"{r.half_visible} | {r.lost_rows} |"
        )
        totals["injected"] += r.total
        totals["rows"] += r.rows_verified
        totals["half"] += r.half_visible
        totals["lost"] += r.lost_rows
        totals["failures"] += r.failures
        print(
            f"  {op.name}: {r.total} faults, {len(r.failures)} failures, {time.monotonic() - t0:.0f} s",
            file=sys.stderr,
            flush=True,
        )
    return lines, totals


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--cap", type=int, default=None, help="steps sampled per kind (default: every step)")
    ap.add_argument("--kills", type=int, default=12)
    ap.add_argument("--chaos-duration", type=float, default=60.0)
    ap.add_argument("--s3", action="store_true", help="also on the moto S3 server (faults: a sample, crash mode)")
    a = ap.parse_args(argv)
    ok = True
    out = []
    with tempfile.TemporaryDirectory() as base:
        lines, totals = fault_table(LocalStore(base), a.cap)
        out += ["Local disk, every operation × every step × every fault mode:", ""] + lines + [""]
        ok &= not totals["failures"]
        summary = [("faults injected (local)", totals["injected"])]
        if a.s3:
            from tests.fixtures.s3 import start_s3_server

            server = start_s3_server()
            try:
                s3_lines, s3_totals = fault_table(S3Store(server), a.cap or 1, modes=("crash",))
                out += ["S3 (moto), every operation, the last step of each kind, crash mode:", ""] + s3_lines + [""]
                ok &= not s3_totals["failures"]
                summary.append(("faults injected (S3)", s3_totals["injected"]))
                chaos_s3 = run_chaos(
                    uri=f"s3://{server.create_bucket()}/wh",
                    storage=server.storage_options(),
                    seed=a.seed,
                    duration=a.chaos_duration,
                    workdir=tempfile.mkdtemp(prefix="chaos-"),
                )
            finally:
                server.stop()
        kills = run_kills(f"file://{base}/kills/wh", tempfile.mkdtemp(prefix="kills-"), seed=a.seed, kills=a.kills)
        chaos = run_chaos(
            uri=f"file://{base}/chaos/wh",
            storage={},
            seed=a.seed,
            duration=a.chaos_duration,
            workdir=tempfile.mkdtemp(prefix="chaos-"),
        )
    runs = [("local", chaos)] + ([("S3", chaos_s3)] if a.s3 else [])
    out += ["| run | figure |", "|---|---|"]
    out += [f"| {k} | {v} |" for k, v in summary]
    out += [
        f"| SIGKILLs (writer / compactor / expirer) | {kills['kills']}; {kills['commits']} commits, "
        f"{kills['interrupted_commits_completed']} interrupted commits completed by a re-run, "
        f"{kills['rows_verified']} rows verified |"
    ]
    for name, c in runs:
        out += [
            f"| chaos {name} ({c['processes']} processes, seed {c['seed']}) | {c['duration_s']} s, "
            f"{c['commits']} commits, {c['compactions']} compactions, {c['expiries']} expiries, "
            f"{c['orphan_runs']} orphan removals, {c['rescales']} rescales, {c['reader_reads']} leased reads, "
            f"{c['rows_verified']} rows verified, lost rows {c['lost_rows']}, half-visible states "
            f"{c['half_visible_states']}, reader failures {c['reader_failures']} |"
        ]
        ok &= not c["problems"]
    print("\n".join(out))
    print(
        json.dumps(
            {"faults": totals["injected"], "failures": totals["failures"][:20], "kills": kills, "chaos": dict(runs)}
        ),
        file=sys.stderr,
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
