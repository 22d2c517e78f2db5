"""What a read that lost a file should say: was the table damaged, or did expiry take the
snapshot it was reading?

A reader without a lease can find its snapshot's files gone part-way through (expiry deletes data
files, deletion-vector index files and manifests before the snapshot file). Reported as a raw
``FileNotFoundError`` or a decoding error, that looks like corruption; it is not. The check runs only
on the error path: the snapshot file gone and no tag holding that snapshot, or the expiry lock held
while the snapshot file still exists, means the snapshot was (or is being) expired.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lake_core.errors import CorruptFileError, FormatError, SnapshotExpiredError
from lake_core.format.integrity import read_metadata
from lake_core.snapshot.snapshot import Snapshot

if TYPE_CHECKING:
    from lake_core.store import FileStore

#: The failures a vanished file can surface as.
LOST_FILE_ERRORS = (FileNotFoundError, FormatError)


def _tagged(store: FileStore, snapshot_id: int) -> bool:
    fileio, paths = store.fileio, store.paths
    for name in fileio.list_names(paths.tag_dir):
        if not name.startswith("tag-"):
            continue
        try:
            if read_metadata(fileio, paths.tag(name[4:]), "tag file", Snapshot.from_json).id == snapshot_id:
                return True
        except (FileNotFoundError, FormatError):
            continue
    return False


def expiry_state(store: FileStore, snapshot_id: int) -> str | None:
    """'expired (or rolled back)', 'being expired' or None (the snapshot is live and not under
    expiry)."""
    fileio, paths = store.fileio, store.paths
    if not fileio.exists(paths.snapshot(snapshot_id)):
        return None if _tagged(store, snapshot_id) else "expired (or rolled back)"
    return "being expired" if fileio.exists(paths.expire_lock) else None


def read_failure(store: FileStore, snapshot_id: int | None, error: BaseException) -> BaseException:
    """The error to raise for a read of ``snapshot_id`` that failed with ``error``: a
    :class:`SnapshotExpiredError` when expiry took the snapshot, a :class:`CorruptFileError` naming
    a missing file otherwise, else ``error`` itself."""
    if not isinstance(error, LOST_FILE_ERRORS) or snapshot_id is None:
        return error
    path = getattr(error, "path", None) or getattr(error, "filename", None) or "?"
    state = expiry_state(store, snapshot_id)
    if state is not None:
        return SnapshotExpiredError(
            str(path),
            (
                f"snapshot {snapshot_id} of {store.identifier} was {state} while it was read ({path} is gone); "
                "nothing is wrong with the table: read a newer snapshot, or hold a lease "
                "(table.lease(snapshot_id, holder=...)) on a snapshot a long read needs"
            ),
        )
    if isinstance(error, FileNotFoundError):
        return CorruptFileError(
            str(path),
            f"{path}, a file of snapshot {snapshot_id} of {store.identifier}, does not "
            "exist (deleted outside lake_core); restore it, or roll the table back to "
            "a snapshot that does not use it",
        )
    return error
