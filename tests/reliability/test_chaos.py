"""A short chaos run (``benchmarks/chaos.py``): writers, compactor, expirer, orphan remover,
leasing readers and a rescale at once; the table must equal the model of the writers' logs."""

from __future__ import annotations

import pytest

from benchmarks.chaos import run_chaos


def _check(out: dict, min_commits: int = 5) -> None:
    assert out["problems"] == [], out["problems"]
    assert out["lost_rows"] == 0 and out["half_visible_states"] == 0 and out["reader_failures"] == 0
    # the run did what it claims: commits, maintenance and reads all happened
    assert out["commits"] >= min_commits and out["reader_reads"] >= min_commits
    assert out["compactions"] >= 1 and out["expiries"] >= 1
    assert out["orphan_runs"] >= 1 and out["rescales"] >= 1


@pytest.mark.slow
def test_short_chaos_run_local(tmp_path):
    _check(run_chaos(uri=f"file://{tmp_path}/wh", storage={}, seed=7, duration=20, workdir=str(tmp_path)))


@pytest.mark.slow
@pytest.mark.s3
def test_short_chaos_run_s3(tmp_path, s3_server):
    uri = f"s3://{s3_server.create_bucket()}/wh"
    _check(
        run_chaos(
            uri=uri,
            storage=s3_server.storage_options(),
            seed=7,
            duration=15,
            workdir=str(tmp_path),
            writers=2,
            readers=1,
        ),
        min_commits=2,
    )
