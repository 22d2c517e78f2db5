"""Every operation × every step of each kind of storage operation × fail / lost reply / crash.

See ``harness.py`` for the invariants checked after each fault. The default run samples a few
steps of each kind (always the first and the last); ``-m reliability`` runs a denser sample;
``python -m benchmarks.reliability`` runs every step and prints the figures of docs/reliability/figures.md.
"""

from __future__ import annotations

import pytest

from .harness import OPERATIONS, LocalStore, S3Store, explore

_IDS = [op.name.replace(" ", "-") for op in OPERATIONS]
S3_SUBSET = ("commit APPEND", "snapshot expiry")  # every fault costs ~10 s of S3 round trips: a subset


def _check(report) -> None:
    assert report.total > 0, f"{report.operation}: no fault was injected (counts {report.counts})"
    assert not report.failures, "\n".join(report.failures[:10])
    assert report.half_visible == 0 and report.lost_rows == 0
    assert report.rows_verified > 0


@pytest.mark.parametrize("op", OPERATIONS, ids=_IDS)
def test_faults_leave_the_state_before_or_after(tmp_path, op):
    _check(explore(LocalStore(str(tmp_path)), op, cap=2))


@pytest.mark.reliability
@pytest.mark.parametrize("op", OPERATIONS, ids=_IDS)
def test_faults_dense_sample(tmp_path, op):
    _check(explore(LocalStore(str(tmp_path)), op, cap=5))


@pytest.mark.s3
@pytest.mark.slow
@pytest.mark.parametrize(
    "op",
    [o for o in OPERATIONS if o.name in S3_SUBSET],
    ids=[i for o, i in zip(OPERATIONS, _IDS) if o.name in S3_SUBSET],
)
def test_faults_on_s3(s3_server, op):
    _check(explore(S3Store(s3_server), op, cap=1, modes=("crash",), kinds=("write", "create", "delete")))
