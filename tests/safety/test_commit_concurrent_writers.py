"""Item 13 (and 7 under concurrency): concurrent ``write_arrow`` calls from real processes to one
bucket. The last commit wins (deduplicate); the first commit's row stays (first-row)."""

from __future__ import annotations

import json
import multiprocessing as mp
import os

import pytest

from fixtures.process_end import end_worker
from lake_core import Catalog

from .helpers import kv, new_table

KEYS = 6


def _writer(uri, storage_options, writer_id, commits, out_dir, barrier):
    t = Catalog(uri, storage_options).get_table("db.t")
    log = []
    for i in range(commits):
        # Unique padding rows first shift where the shared keys sit in each writer's batch, so two
        # writers from one base number the same key differently.
        padding = [10_000 * (writer_id + 1) + 100 * i + j for j in range(4 * writer_id)]
        keys = padding + [(i + j) % KEYS + 100 * (j % 2) for j in range(KEYS)]
        value = f"w{writer_id}-{i}"
        barrier.wait(120)  # start every round together: the writers share a base snapshot
        snap = t.write_arrow(kv(keys, [value] * len(keys)))
        log.append({"snapshot": snap.id, "keys": keys, "value": value})
    with open(os.path.join(out_dir, f"{writer_id}.json"), "w") as f:
        json.dump(log, f)
    end_worker()


def _run(uri, storage_options, tmp_path, writers, commits):
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(writers)
    procs = [
        ctx.Process(target=_writer, args=(uri, storage_options, w, commits, str(tmp_path), barrier))
        for w in range(writers)
    ]
    for p in procs:
        p.start()
    for p in procs:
        p.join(600)
        assert p.exitcode == 0
    log = []
    for w in range(writers):
        with open(tmp_path / f"{w}.json") as f:
            log += json.load(f)
    return sorted(log, key=lambda r: r["snapshot"])


def _expected(log, first_wins: bool) -> dict:
    out = {}
    for rec in log:  # in commit order
        for k in rec["keys"]:
            if not (first_wins and k in out):
                out[k] = rec["value"]
    return out


def _check(uri, storage_options, log, first_wins):
    t = Catalog(uri, storage_options).get_table("db.t")
    got = {r["k"]: r["v"] for r in t.to_arrow().to_pylist()}
    assert len({r["snapshot"] for r in log}) == len(log)  # every reported snapshot is a distinct commit
    assert got == _expected(log, first_wins)


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["deduplicate", "first-row"])
def test_concurrent_writers_local(warehouse, tmp_path, engine):
    new_table(warehouse, options={"merge-engine": engine, "commit.max-retries": "200"})
    log = _run(warehouse, {}, tmp_path, writers=3, commits=8)
    _check(warehouse, {}, log, first_wins=engine == "first-row")


@pytest.mark.s3
@pytest.mark.slow
@pytest.mark.parametrize("engine", ["deduplicate", "first-row"])
def test_concurrent_writers_s3(s3_warehouse, tmp_path, engine):
    uri, opts = s3_warehouse.uri, s3_warehouse.storage_options
    new_table(uri, opts, options={"merge-engine": engine, "commit.max-retries": "200"})
    log = _run(uri, opts, tmp_path, writers=2, commits=5)
    _check(uri, opts, log, first_wins=engine == "first-row")
