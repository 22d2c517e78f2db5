"""The reason a compaction asset gives for doing nothing, in the operation's own terms."""

from __future__ import annotations

import pyarrow as pa
import pytest
from maintenance.helpers import make_table

from orchestration.defs.maintenance.compaction import COMPACTION, RECORD_EXPIRY, empty_plan_reason

pytestmark = pytest.mark.dagster

TTL = {"record-level.time-field": "v", "record-level.expire-time": "100000 d"}


def test_a_record_expiry_with_nothing_expired_says_nothing_to_expire(warehouse):
    t = make_table(warehouse, **{"write-only": "false"})
    assert empty_plan_reason(t.maintenance.plan_compaction(expire_records=True, options=TTL), RECORD_EXPIRY) == (
        "nothing to expire: the table has no snapshot yet; Spark was not started"
    )
    t.write_arrow(pa.table({"dt": ["d1"], "id": [1], "v": [1], "op": ["+I"]}))
    plan = t.maintenance.plan_compaction(expire_records=True, options=TTL)
    assert not plan.units
    assert empty_plan_reason(plan, RECORD_EXPIRY).startswith(
        "nothing to expire: none holds records past the TTL among the 1 selected bucket(s) at snapshot 1"
    )
    assert empty_plan_reason(t.maintenance.plan_compaction(), COMPACTION).startswith("nothing to compact: ")
    # the result of the empty job says the same in its summary
    result = t.maintenance.compact(expire_records=True, options=TTL)
    assert result.summary().startswith("record expiry of db.t: nothing done — nothing to expire")
