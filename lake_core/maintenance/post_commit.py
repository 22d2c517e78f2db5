"""What Paimon runs after every successful commit unless ``write-only`` is set (Java
``TableCommitImpl`` → ``expireMaintainers``): consumer expiry, then snapshot expiry with the table's
options, then (decoupled lifecycle) changelog expiry; then partition expiry, automatic tags and tag
time expiry. A failure here never fails the commit that already landed; it is logged and the next
commit (or a maintenance job) tries again.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from lake_core.maintenance.consumers import ConsumerManager
from lake_core.maintenance.expire_changelogs import expire_changelogs
from lake_core.maintenance.expire_snapshots import expire_snapshots, resolve_config
from lake_core.maintenance.partitions import expire_partitions
from lake_core.maintenance.tag_time import expire_tags
from lake_core.maintenance.tags import auto_create_tag
from lake_core.options.table_options import PARTITION_EXPIRATION_TIME

if TYPE_CHECKING:
    from lake_core.table import FileStoreTable

log = logging.getLogger(__name__)

# Last partition-expiry check per table root in this process ('partition.expiration-check-interval').
_last_partition_check: dict[str, float] = {}


def after_commit(table: FileStoreTable) -> None:
    if table.options.write_only:
        return
    try:
        if table.options.consumer_expiration_time_ms is not None:
            ConsumerManager(table).expire()
        expire_snapshots(table, finish_journals=False)  # journals: left to maintenance runs
        if resolve_config(table).changelog_decoupled:  # Java: snapshot expiry, then changelog expiry
            expire_changelogs(table)
        _maybe_expire_partitions(table)
        auto_create_tag(table)
        expire_tags(table)  # Java TagAutoManager: creation, then TagTimeExpire
    except Exception as e:  # noqa: BLE001 - the commit itself succeeded; maintenance retries later
        log.warning("maintenance after commit on %s failed (the commit itself succeeded): %s", table.identifier, e)


def _maybe_expire_partitions(table: FileStoreTable) -> None:
    opts = table.options
    if opts.partition_expiration_time_ms is None:
        return
    interval_s = opts.partition_expiration_check_interval_ms / 1000
    now = time.monotonic()
    last = _last_partition_check.get(table.paths.root)
    if last is not None and now - last < interval_s:
        return
    _last_partition_check[table.paths.root] = now  # set first: the drop commit runs this hook again
    expire_partitions(
        table,
        expiration_time=opts.text(PARTITION_EXPIRATION_TIME),
        timestamp_formatter=opts.partition_timestamp_formatter,
        timestamp_pattern=opts.partition_timestamp_pattern,
    )
