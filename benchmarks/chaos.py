"""Chaos run: every kind of job on one table at once, then the table checked against its commit log.

    PYTHONPATH=$PWD .venv/bin/python -m benchmarks.chaos --seed 1 --duration 60 [--s3]

Processes (each its own OS process, each logging what it did to its own file):
- ``--writers`` writers: upserts of deterministic batches (``batch(writer, i)``) into keys only
  that writer owns, each commit with (user ``writer-<w>``, identifier ``i``) so a failed commit is
  retried as the same commit; inline compaction and expiry after commit are on.
- a dedicated compactor (universal picker, every third round a full compaction);
- an expirer (``expire_snapshots`` with a small retention) that also creates tags now and then;
- an orphan remover (``remove_orphan_files(force=True)`` with a tiny age floor);
- ``--readers`` readers: lease the latest snapshot, read it fully, check it is a state some prefix
  of each writer's commits produces (never half of a commit), release;
- a rescaler: ``rescale`` of one partition to another bucket count (retried until it lands), twice.

At the end the table must equal the model built from the writers' logs, every retained snapshot
and tag must read completely and be a prefix state, and no reader may have failed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

import pyarrow as pa

IDENT = "db.chaos"
SCHEMA = pa.schema(
    [pa.field("p", pa.string(), nullable=False), pa.field("k", pa.int64(), nullable=False), ("v", pa.string())]
)
KEYS_PER_WRITER = 1000
BATCH_ROWS = 40
TABLE_OPTIONS = {
    "bucket": "2",
    "snapshot.num-retained.min": "2",
    "snapshot.num-retained.max": "5",
    "num-sorted-run.compaction-trigger": "3",
}
ORPHAN_FLOOR_S = 10.0  # above the longest write-to-commit time of this run: files in flight survive


# -- the data every writer writes: a pure function of (writer, commit number) ---------------------
COLD = "cold"  # the partition the rescaler rewrites: writer 0 touches it every fifth commit only
COLD_COMMIT = 2  # writer 0's first commit into it (then every fifth)
_MAINTAINERS = ("compactor", "expirer", "orphans", "rescaler")
GRACE_S = 120.0  # how long past the end a role that has not acted yet may still try


def batch_keys(writer: int, i: int) -> list[int]:
    base = writer * KEYS_PER_WRITER
    if writer == 0 and i % 5 == COLD_COMMIT:
        return list(range(base + 500, base + 510))
    rng = random.Random(writer * 1_000_003 + i)
    return sorted(rng.sample(range(base, base + 200), BATCH_ROWS))


def partition_of(k: int) -> str:
    return COLD if k % KEYS_PER_WRITER >= 500 else f"p{k % 2}"  # a function of the key: (p, k) is the key


def batch(writer: int, i: int) -> pa.Table:
    keys = batch_keys(writer, i)
    return pa.table(
        {"p": [partition_of(k) for k in keys], "k": keys, "v": [f"w{writer}-{i}" for _ in keys]}, schema=SCHEMA
    )


def model(commits: dict[int, list[int]]) -> dict[int, str]:
    """key → value after each writer's commits (in its own order: writers own disjoint keys)."""
    out: dict[int, str] = {}
    for w, ids in commits.items():
        for i in ids:
            for k in batch_keys(w, i):
                out[k] = f"w{w}-{i}"
    return out


def as_map(t: pa.Table) -> dict[int, str]:
    return dict(zip(t.column("k").to_pylist(), t.column("v").to_pylist()))


def half_visible(snapshot_rows: dict[int, str], writers: int) -> list[str]:
    """Writers whose rows in a snapshot are not exactly the state after some prefix of their commits
    (the newest commit visible decides which prefix)."""
    bad = []
    for w in range(writers):
        mine = {k: v for k, v in snapshot_rows.items() if w * KEYS_PER_WRITER <= k < (w + 1) * KEYS_PER_WRITER}
        newest = max((int(v.split("-", 1)[1]) for v in mine.values()), default=0)
        if mine != model({w: list(range(1, newest + 1))}):
            bad.append(f"writer {w} (newest visible commit {newest})")
    return bad


# -- workers ------------------------------------------------------------------------------------------
class Log:
    def __init__(self, path: str):
        self.f = open(path, "a", buffering=1)

    def __call__(self, *parts) -> None:
        self.f.write(" ".join(str(p) for p in parts) + "\n")
        self.f.flush()
        os.fsync(self.f.fileno())  # a SIGKILL must not lose what was logged


def _catalog(uri: str, storage: dict):
    from lake_core import Catalog

    return Catalog(uri, storage)


def _quiet() -> None:
    import logging

    logging.disable(logging.WARNING)  # concurrent jobs losing races is expected here


def worker(
    role: str, uri: str, storage: dict, log_path: str, seed: int, until: float, index: int, start: int = 1
) -> None:
    from lake_core.errors import LakeError

    _quiet()
    log = Log(log_path)
    rng = random.Random(seed * 7919 + index)
    cat = _catalog(uri, storage)
    log("ready")
    n = start
    # a maintenance role acts at least once, however slowly a loaded machine started it; writer 0
    # writes the cold partition at least once (the rescaler has nothing to rewrite before that)
    must_act = role in _MAINTAINERS or (role == "writer" and index == 0)
    acted = False
    while time.time() < until or (must_act and not acted and time.time() < until + GRACE_S):
        try:
            table = cat.get_table(IDENT)  # fresh each round: a rescale changes the schema
            if role == "writer":
                log("begin", n)
                snap = _commit_with_retries(cat, index, n, log)
                if snap is None:
                    log("gaveup", n)
                    return
                log("done", n, snap)
                acted = n >= COLD_COMMIT
                n += 1
            elif role == "compactor":
                r = table.maintenance.compact(full=n % 3 == 0, parallelism=1)
                log("compact", n, getattr(r, "snapshot_id", None))
                n += 1
                acted = True
            elif role == "expirer":
                r = table.maintenance.expire_snapshots(retain_min=1, retain_max=3)
                log("expire", n, getattr(r, "deleted_snapshots", None))
                if n % 4 == 0:
                    table.create_tag(f"tag-{index}-{n}")
                    log("tag", f"tag-{index}-{n}")
                n += 1
                acted = True
            elif role == "orphans":
                r = table.maintenance.remove_orphan_files(force=True, older_than=dt.timedelta(seconds=ORPHAN_FLOOR_S))
                log("orphans", r.deleted_files)
                acted = True
            elif role == "reader":
                if table.snapshot_manager.latest_id() is None:  # the writers have not committed yet
                    time.sleep(0.1)
                    continue
                with table.lease(holder=f"reader-{index}") as snap:
                    got = as_map(table.to_arrow(snapshot_id=snap.id))
                bad = half_visible(got, int(os.environ.get("CHAOS_WRITERS", "3")))
                log("read", snap.id, len(got), *(["HALF"] + bad if bad else []))
            elif role == "rescaler":
                if n == 1:
                    time.sleep(rng.uniform(1.0, 3.0))
                target = 3 if n % 2 else 2
                r = table.maintenance.rescale(bucket=target, partitions=[{"p": COLD}])
                if r.partitions_rescaled or r.partitions_skipped:
                    log("rescale", COLD, "->", target, r.partitions_rescaled)
                    n += 1
                    acted = True
                if n > 2:
                    return
            else:
                raise SystemExit(f"unknown role {role}")
        except LakeError as e:  # a lost race or a conflict: expected under chaos, logged
            if role == "reader":
                log("fail", type(e).__name__, str(e).replace("\n", " ")[:300])
            else:
                log("error", type(e).__name__, str(e).replace("\n", " ")[:300])
        time.sleep(rng.uniform(0.0, 0.2))


def _commit_with_retries(cat, writer: int, i: int, log, attempts: int = 30):
    """The same commit (user, identifier, rows) until it lands; its snapshot id, or None."""
    from lake_core.errors import LakeError

    for _ in range(attempts):
        try:
            snap = cat.get_table(IDENT).write_arrow(
                batch(writer, i), commit_user=f"writer-{writer}", commit_identifier=i
            )
            return snap.id
        except LakeError as e:
            log("retry", i, type(e).__name__)
            time.sleep(0.05)
    return None


# -- reading the logs -----------------------------------------------------------------------------------
@dataclass
class WriterLog:
    done: list[int] = field(default_factory=list)
    uncertain: list[int] = field(default_factory=list)  # begun, never known to have landed


def read_writer_log(path: str) -> WriterLog:
    out, begun = WriterLog(), None
    for line in open(path):
        parts = line.split()
        if parts[0] == "begin":
            begun = int(parts[1])
        elif parts[0] == "done":
            out.done.append(int(parts[1]))
            begun = None
    if begun is not None:
        out.uncertain.append(begun)
    return out


def count_lines(path: str, word: str) -> int:
    return sum(1 for line in open(path) if line.split()[:1] == [word])


# -- checking the table at rest -------------------------------------------------------------------------
@dataclass
class Verdict:
    rows_verified: int = 0
    lost_rows: int = 0
    half_visible: int = 0
    snapshots_read: int = 0
    tags_read: int = 0
    problems: list = field(default_factory=list)


def verify(table, writers: int, logs: dict[int, WriterLog]) -> Verdict:
    """The final table against the model of the logged commits (each uncertain commit either in or
    out, as a whole), then every retained snapshot and tag read completely and prefix-consistent."""
    v = Verdict()
    got = as_map(table.to_arrow())
    v.rows_verified += len(got)
    for w, wl in logs.items():
        mine = {k: x for k, x in got.items() if w * KEYS_PER_WRITER <= k < (w + 1) * KEYS_PER_WRITER}
        candidates = [model({w: wl.done})] + [model({w: wl.done + wl.uncertain})] * bool(wl.uncertain)
        if mine not in candidates:
            want = candidates[0]
            lost = sum(1 for k, x in want.items() if mine.get(k) != x)
            v.lost_rows += lost
            v.problems.append(f"writer {w}: table differs from the model of its log ({lost} rows lost or wrong)")
    retained = [(f"snapshot {sid}", {"snapshot_id": sid}) for sid in table.snapshot_manager.list_ids()]
    tagged = [(f"tag {tag}", {"tag": tag}) for tag in table.list_tags()]
    for what, at in retained + tagged:
        rows = as_map(table.to_arrow(**at))
        v.rows_verified += len(rows)
        if "tag" in at:
            v.tags_read += 1
        else:
            v.snapshots_read += 1
        bad = half_visible(rows, writers)
        v.half_visible += len(bad)
        v.problems += [f"{what}: {b}" for b in bad]
    return v


# -- the coordinator ------------------------------------------------------------------------------------
def create_table(uri: str, storage: dict):
    cat = _catalog(uri, storage)
    cat.create_database("db", ignore_if_exists=True)
    return cat.create_table(IDENT, schema=SCHEMA, primary_keys=["p", "k"], partition_keys=["p"], options=TABLE_OPTIONS)


def spawn(
    role: str, uri: str, storage: dict, log_path: str, seed: int, until: float, index: int, writers: int, start: int = 1
) -> subprocess.Popen:
    env = {**os.environ, "CHAOS_WRITERS": str(writers)}
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    args = [
        sys.executable,
        "-m",
        "benchmarks.chaos",
        "--worker",
        role,
        "--uri",
        uri,
        "--storage",
        json.dumps(storage),
        "--log",
        log_path,
        "--seed",
        str(seed),
        "--until",
        str(until),
        "--index",
        str(index),
        "--start",
        str(start),
    ]
    return subprocess.Popen(args, env=env, cwd=root)


def run_chaos(
    *, uri: str, storage: dict, seed: int, duration: float, writers: int = 3, readers: int = 2, workdir: str
) -> dict:
    create_table(uri, storage)
    until = time.time() + duration + 3.0  # processes take a moment to start
    roles = (
        [("writer", i) for i in range(writers)]
        + [("reader", i) for i in range(readers)]
        + [("compactor", 0), ("expirer", 0), ("orphans", 0), ("rescaler", 0)]
    )
    procs = []
    for role, i in roles:
        log_path = os.path.join(workdir, f"{role}-{i}.log")
        procs.append((role, i, log_path, spawn(role, uri, storage, log_path, seed, until, i, writers)))
    started = time.monotonic()
    codes = {f"{r}-{i}": p.wait(timeout=duration + 300) for r, i, _l, p in procs}
    elapsed = time.monotonic() - started
    logs = {i: read_writer_log(path) for r, i, path, _p in procs if r == "writer"}
    table = _catalog(uri, storage).get_table(IDENT)
    verdict = verify(table, writers, logs)
    by_role = {}
    for r, _i, path, _p in procs:
        by_role.setdefault(r, []).append(path)
    reader_fails = sum(count_lines(p, "fail") for p in by_role["reader"])
    reads = sum(count_lines(p, "read") for p in by_role["reader"])
    half_reads = sum(1 for p in by_role["reader"] for line in open(p) if "HALF" in line.split())
    if reader_fails:
        verdict.problems.append(f"{reader_fails} reader failures (see {workdir}/reader-*.log)")
    if half_reads:
        verdict.problems.append(f"{half_reads} reads saw half of a commit")
    bad_exits = {k: c for k, c in codes.items() if c != 0}
    if bad_exits:
        verdict.problems.append(f"processes exited with errors: {bad_exits}")
    return {
        "seed": seed,
        "duration_s": round(elapsed, 1),
        "processes": len(procs),
        "commits": sum(len(wl.done) for wl in logs.values()),
        "uncertain_commits": sum(len(wl.uncertain) for wl in logs.values()),
        "compactions": sum(count_lines(p, "compact") for p in by_role["compactor"]),
        "expiries": sum(count_lines(p, "expire") for p in by_role["expirer"]),
        "tags": sum(count_lines(p, "tag") for p in by_role["expirer"]),
        "orphan_runs": sum(count_lines(p, "orphans") for p in by_role["orphans"]),
        "rescales": sum(count_lines(p, "rescale") for p in by_role["rescaler"]),
        "reader_reads": reads,
        "reader_failures": reader_fails,
        "snapshots_read": verdict.snapshots_read,
        "tags_read": verdict.tags_read,
        "rows_verified": verdict.rows_verified,
        "lost_rows": verdict.lost_rows,
        "half_visible_states": verdict.half_visible + half_reads,
        "problems": verdict.problems,
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--duration", type=float, default=60.0)
    ap.add_argument("--s3", action="store_true", help="run on the moto S3 test server instead of local disk")
    ap.add_argument("--writers", type=int, default=3)
    ap.add_argument("--readers", type=int, default=2)
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--uri", help=argparse.SUPPRESS)
    ap.add_argument("--storage", default="{}", help=argparse.SUPPRESS)
    ap.add_argument("--log", help=argparse.SUPPRESS)
    ap.add_argument("--until", type=float, help=argparse.SUPPRESS)
    ap.add_argument("--index", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--start", type=int, default=1, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker:
        worker(a.worker, a.uri, json.loads(a.storage), a.log, a.seed, a.until, a.index, a.start)
        # everything is logged (and fsynced): end at once, as Arrow's thread pools can abort an
        # interpreter's teardown (apache/arrow#34314), an exit code the run counts as a problem
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    workdir = tempfile.mkdtemp(prefix="chaos-")
    server = None
    if a.s3:
        from tests.fixtures.s3 import start_s3_server

        server = start_s3_server()
        uri, storage = f"s3://{server.create_bucket()}/wh", server.storage_options()
    else:
        uri, storage = f"file://{workdir}/wh", {}
    try:
        out = run_chaos(
            uri=uri,
            storage=storage,
            seed=a.seed,
            duration=a.duration,
            writers=a.writers,
            readers=a.readers,
            workdir=workdir,
        )
    finally:
        if server is not None:
            server.stop()
    out["storage"] = "s3" if a.s3 else "local"
    for k, v in out.items():
        if k != "problems":
            print(f"{k:22s} {v}")
    for p in out["problems"]:
        print("PROBLEM", p)
    print(json.dumps(out))
    return 1 if out["problems"] or out["lost_rows"] or out["half_visible_states"] else 0


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.exit(main())
