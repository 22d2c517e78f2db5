"""Real SIGKILLs of a writer, the dedicated compactor and the expirer (see ``kills.py``)."""

from __future__ import annotations

import pytest

from .kills import run_kills


@pytest.mark.slow
def test_sigkilled_writer_compactor_and_expirer_leave_a_consistent_table(tmp_path):
    out = run_kills(f"file://{tmp_path}/wh", str(tmp_path), seed=16, kills=9)
    assert out["commits"] > 0 and out["rows_verified"] > 0
