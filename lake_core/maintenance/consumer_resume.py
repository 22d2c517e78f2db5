"""Where a stream consumer with a consumer id resumes (``new_stream_scan(consumer_id=...)``).

- Its consumer file exists: at its ``nextSnapshot``, if that snapshot's changes can still be read.
- Its consumer file was removed by ``consumer.expiration-time`` (the expiry left
  ``consumer/.expired-<id>``): at the recorded ``nextSnapshot`` while its changes can still be
  read; the consumer file is written back first and the position checked after, as a lease does,
  so snapshot expiry honours the consumer again before anything is read.
- Either position expired: :class:`ConsumerExpiredError`, nothing read or changed. Java (and
  lake_core before) restarted such a consumer silently, from a full copy of the latest snapshot
  (a consumer file gone) or from the earliest snapshot (a position expired), so a downstream
  applying the changes kept every key deleted in the snapshots it never saw.
- Neither file (a new consumer, or one deleted on purpose): None, the latest snapshot in full.
- ``ignore_progress`` (Paimon's ``consumer.ignore-progress``): None whatever is recorded, the
  restart a caller asks for; the consumer file moves at its first checkpoint.
"""

from __future__ import annotations

import datetime as _dt
import logging
from typing import TYPE_CHECKING

from lake_core.errors import ConsumerExpiredError
from lake_core.maintenance.consumers import ConsumerManager, ExpiredConsumer
from lake_core.names import validate_consumer_id

if TYPE_CHECKING:
    from lake_core.table import FileStoreTable

log = logging.getLogger(__name__)


def _when(ms: int | None) -> str:
    if ms is None:
        return "an unknown time"
    return _dt.datetime.fromtimestamp(ms / 1000, _dt.UTC).isoformat(timespec="seconds")


def _restart_how(consumer_id: str) -> str:
    return (
        f"To restart on purpose, clear what the consumer built and pass ignore_progress=True (Paimon's "
        f"consumer.ignore-progress) to new_stream_scan(consumer_id={consumer_id!r}, ...), which reads the latest "
        f"snapshot in full; or delete the consumer (table.maintenance.consumers.delete({consumer_id!r})). "
        "Nothing was read or changed."
    )


def _check(table: FileStoreTable, consumer_id: str, next_snapshot: int, gone: ExpiredConsumer | None) -> None:
    """Raise unless the changes from ``next_snapshot`` on can all be read."""
    earliest = table.changelog_manager.earliest_id()
    if earliest is None or next_snapshot >= earliest:
        return
    lost = (
        f"snapshot {next_snapshot}, the next it was to read, has expired (the earliest readable snapshot is "
        f"{earliest}), so the changes of snapshots {next_snapshot}..{earliest - 1}, deletions included, are lost "
        "to it: resuming from a full copy of the latest snapshot would keep every key deleted meanwhile. "
    )
    if gone is not None:
        why = (
            f"its consumer file consumer/consumer-{consumer_id} was removed at {_when(gone.expired_ms)} after no "
            f"update since {_when(gone.modified_ms)} (consumer.expiration-time = {gone.expiration_time}), "
            "and then "
        )
        avoid = " To keep this from recurring, set consumer.expiration-time above the consumer's longest pause."
    else:
        why = (
            f"its consumer file names snapshot {next_snapshot}, but it was moved below the earliest snapshot or "
            "the snapshots were expired by a job that ignores consumer files; "
        )
        avoid = ""
    raise ConsumerExpiredError(
        f"stream consumer {consumer_id!r} of {table.identifier} cannot resume: {why}{lost}"
        f"{_restart_how(consumer_id)}{avoid}",
        consumer_id=consumer_id,
        next_snapshot=next_snapshot,
        earliest=earliest,
    )


def resume_position(table: FileStoreTable, consumer_id: str, *, ignore_progress: bool = False) -> int | None:
    """The next snapshot the consumer reads, or None for a full read of the latest snapshot."""
    validate_consumer_id(consumer_id)
    manager = ConsumerManager(table)
    if ignore_progress:
        return None
    recorded = manager.get(consumer_id)
    if recorded is not None:
        _check(table, consumer_id, recorded, None)
        return recorded
    gone = manager.expired(consumer_id)
    if gone is None:
        return None  # a new consumer
    _check(table, consumer_id, gone.next_snapshot, gone)
    manager.reset(consumer_id, gone.next_snapshot)  # pin first, then check: an expiry either sees it or we see it
    try:
        _check(table, consumer_id, gone.next_snapshot, gone)
    except BaseException:
        table.fileio.delete(table.paths.consumer(consumer_id))  # as it was: the record stays
        raise
    log.warning(
        "stream consumer %r of %s: its consumer file had expired (consumer.expiration-time); snapshot %d "
        "is still readable, so it resumes there and its consumer file is back",
        consumer_id,
        table.identifier,
        gone.next_snapshot,
    )
    return gone.next_snapshot
