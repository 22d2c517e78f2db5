"""Writers, compactions, tags, expiry, orphan removal and leased readers in separate processes.

Afterwards every retained snapshot and tag reads completely, the table holds exactly the
acknowledged writes, and no leased reader ever failed.
"""

from __future__ import annotations

import json
import multiprocessing as mp

import pytest

from lake_core import Catalog

from . import race_workers as rw
from .helpers import SCHEMA


def _race(tmp_path, wh, so, seconds, floor_s, auto_expire, changelogs=False):
    cat = Catalog(wh, so) if so else Catalog(wh)
    cat.create_database("db", ignore_if_exists=True)
    opts = {
        "bucket": "2",
        "write-only": "false" if auto_expire else "true",
        "snapshot.num-retained.min": "3",
        "snapshot.time-retained": "1 ms",
        "commit.max-retries": "50",
    }
    if changelogs:  # the decoupled lifecycle: changelog/changelog-N outlive their snapshots
        opts.update(
            {"changelog-producer": "input", "changelog.num-retained.min": "8", "changelog.time-retained": "1 ms"}
        )
    cat.create_table("db.t", schema=SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"], options=opts)
    ctx = mp.get_context("spawn")
    jobs = {f"w{i}": (rw.writer, (wh, so, i, "GO")) for i in range(2)}
    jobs["expirer"] = (rw.expirer, (wh, so, "GO", changelogs))
    if changelogs:
        jobs["stream"] = (rw.changelog_reader, (wh, so, "GO"))
    jobs["orphans"] = (rw.orphan_remover, (wh, so, "GO", floor_s))
    jobs["tagger"] = (rw.tagger, (wh, so, "GO"))
    jobs.update({f"r{i}": (rw.lease_reader, (wh, so, i, "GO")) for i in range(2)})
    go = (ctx.Barrier(len(jobs)), seconds)
    jobs = {
        name: (fn, tuple(go if isinstance(a, str) and a == "GO" else a for a in args))
        for name, (fn, args) in jobs.items()
    }
    procs = {}
    for name, (fn, args) in jobs.items():
        out_arg = (str(tmp_path / f"{name}.json"),)
        if fn is rw.expirer:  # (wh, so, go, out, changelogs)
            args, out_arg = args[:3], out_arg + args[3:]
        p = ctx.Process(target=fn, args=args + out_arg)
        p.start()
        procs[name] = p
    for p in procs.values():
        p.join(timeout=seconds + 120)
        assert p.exitcode == 0
    out = {name: json.loads((tmp_path / f"{name}.json").read_text()) for name in jobs}

    t = cat.get_table("db.t")
    assert out["r0"]["failures"] == out["r1"]["failures"] == []
    assert out["r0"]["reads"] + out["r1"]["reads"] > 0
    assert out["expirer"]["errors"] == [] and out["expirer"]["runs"] > 0
    assert t.snapshot_manager.earliest_id() > 1  # expiry did run (the dedicated expirer or after commits)
    for s in t.snapshots():
        assert t.to_arrow(snapshot_id=s.id).num_rows == s.total_record_count
    for name in t.list_tags():
        tag = t.tag(name)
        assert t.to_arrow(tag=name).num_rows == tag.total_record_count
    got = {(r["dt"], r["id"]) for r in t.to_arrow(columns=["dt", "id"]).to_pylist()}
    acked = {tuple(k) for w in ("w0", "w1") for k in out[w]["acked"]}
    attempted = {tuple(k) for w in ("w0", "w1") for k in out[w]["attempted"]}
    assert acked <= got <= attempted
    if changelogs:
        assert out["stream"]["failures"] == [] and out["stream"]["reads"] > 0
        cm = t.changelog_manager
        assert cm.long_lived.list_ids(), "snapshot expiry left no long-lived changelog"
        for n in range(cm.earliest_id(), cm.latest_id() + 1):  # every readable changelog reads completely
            snap = cm.changelog(n)
            assert rw.read_changelog(t, snap) == (snap.changelog_record_count or 0), f"changelog {n}"
    return out


@pytest.mark.slow
def test_race_on_local_disk(tmp_path, warehouse):
    _race(tmp_path, warehouse, None, seconds=12, floor_s=5, auto_expire=True)


@pytest.mark.slow
def test_race_with_decoupled_changelogs(tmp_path, warehouse):
    _race(tmp_path, warehouse, None, seconds=12, floor_s=5, auto_expire=True, changelogs=True)


@pytest.mark.slow
@pytest.mark.s3
def test_race_on_s3(tmp_path, s3_warehouse):
    _race(tmp_path, s3_warehouse.uri, s3_warehouse.storage_options, seconds=25, floor_s=10, auto_expire=False)
