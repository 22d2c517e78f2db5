"""Real SIGKILLs (test_kills.py, benchmarks/reliability.py): a writer, the dedicated compactor or
the expirer killed at a random moment (seeded, bounded), then the table checked from storage: it
reads, equals the model of the writer's log (its in-flight commit either wholly in or wholly
out), every snapshot and tag reads completely, the interrupted commit completes when re-run, and
orphan removal then leaves no unreferenced file and breaks nothing."""

from __future__ import annotations

import datetime as dt
import os
import random
import signal
import time

from benchmarks import chaos
from lake_core import Catalog

from .harness import unreferenced_files

ROLES = ("writer", "compactor", "expirer")


def _wait_ready(log_path: str, proc, timeout: float = 60.0) -> None:
    end = time.time() + timeout
    while time.time() < end:
        if os.path.exists(log_path) and "ready" in open(log_path).read():
            return
        assert proc.poll() is None, f"worker exited early with {proc.returncode}"
        time.sleep(0.02)
    raise AssertionError(f"worker never became ready ({log_path})")


def _check(uri: str, storage: dict, writer_log: str) -> tuple[int, int]:
    """(rows verified, commits completed after a kill)."""
    wl = chaos.read_writer_log(writer_log)
    table = Catalog(uri, storage).get_table(chaos.IDENT)
    v = chaos.verify(table, 1, {0: wl})
    assert not v.problems and v.lost_rows == 0 and v.half_visible == 0, v.problems
    rows = v.rows_verified
    completed = 0
    for i in wl.uncertain:  # the commit the kill interrupted: re-run it as the same commit
        assert chaos._commit_with_retries(Catalog(uri, storage), 0, i, lambda *a: None) is not None
        chaos.Log(writer_log)("done", i, "re-run")
        completed += 1
    wl = chaos.read_writer_log(writer_log)
    assert not wl.uncertain
    table = Catalog(uri, storage).get_table(chaos.IDENT)
    table.maintenance.remove_orphan_files(force=True, older_than=dt.timedelta(0))
    table = Catalog(uri, storage).get_table(chaos.IDENT)
    v = chaos.verify(table, 1, {0: wl})
    assert not v.problems and v.lost_rows == 0 and v.half_visible == 0, v.problems
    assert unreferenced_files(table) == []
    return rows + v.rows_verified, completed


def run_kills(uri: str, workdir: str, *, seed: int, kills: int, storage: dict | None = None) -> dict:
    storage = storage or {}
    rng = random.Random(seed)
    chaos.create_table(uri, storage)
    writer_log = os.path.join(workdir, "writer-0.log")
    log = chaos.Log(writer_log)
    for i in range(1, 6):  # some data first, so compaction and expiry have work
        log("begin", i)
        log("done", i, chaos._commit_with_retries(Catalog(uri, storage), 0, i, log))
    rows = completed = 0
    for round_ in range(kills):
        role = ROLES[round_ % len(ROLES)]
        wl = chaos.read_writer_log(writer_log)
        log_path = writer_log if role == "writer" else os.path.join(workdir, f"{role}-{round_}.log")
        proc = chaos.spawn(
            role, uri, storage, log_path, seed + round_, time.time() + 600, 0, 1, start=max(wl.done, default=0) + 1
        )
        _wait_ready(log_path, proc)
        time.sleep(rng.uniform(0.05, 3.0 if role == "writer" else 1.5))  # a writer commit takes ~1 s
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        r, c = _check(uri, storage, writer_log)
        rows += r
        completed += c
    return {
        "kills": kills,
        "rows_verified": rows,
        "commits": len(chaos.read_writer_log(writer_log).done),
        "interrupted_commits_completed": completed,
    }
