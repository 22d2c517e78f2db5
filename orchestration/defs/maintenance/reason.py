"""Why a maintenance run happened, in one line: the ledger's ``reason`` column, the ``reason``
metadata and the ``(requested: ...)`` of every maintenance log line."""

from __future__ import annotations

from collections.abc import Mapping

from orchestration.defs.naming import REASON_TAG

# Dagster's run tags naming what launched a run, most specific first: a sensor or schedule may
# launch a backfill, and then it is the one that decided.
_LAUNCHERS = (
    ("dagster/schedule_name", "schedule"),
    ("dagster/sensor_name", "sensor"),
    ("dagster/backfill", "backfill"),
)


def run_reason(tags: Mapping[str, str], *, scope: str | None = None) -> str:
    """The requester's ``lake/reason`` tag when it set one (the health sensor does: "compaction:
    dt=2024-01-02/bucket-3 has 7 sorted runs > 5"); else who launched the run, and for ``scope``
    when the asset covers part of the table ("backfill kvlhhtcl for 2 partition(s): dt=...")."""
    if tags.get(REASON_TAG):
        return tags[REASON_TAG]
    launcher = next((f"{who} {tags[tag]}" for tag, who in _LAUNCHERS if tags.get(tag)), None)
    if launcher is None:
        launcher = "launched from the UI" if tags.get("dagster/from_ui") else "launched by hand"
    return launcher if scope is None else f"{launcher} for {scope}"
