"""What Paimon runs after every successful commit unless ``write-only`` is set (Java
``TableCommitImpl`` → ``expireMaintainers``): consumer expiry, then snapshot expiry with the table's
options. A failure here never fails the commit that already landed; it is logged and the next
commit (or a maintenance job) tries again.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..table import FileStoreTable

log = logging.getLogger(__name__)


def after_commit(table: "FileStoreTable") -> None:
    if table.options.get_bool("write-only"):
        return
    from .consumers import ConsumerManager
    from .expire_snapshots import expire_snapshots
    try:
        if table.options.get("consumer.expiration-time"):
            ConsumerManager(table).expire()
        expire_snapshots(table)
    except Exception as e:  # noqa: BLE001 - the commit itself succeeded; maintenance retries later
        log.warning("maintenance after commit on %s failed (the commit itself succeeded): %s", table.identifier, e)
