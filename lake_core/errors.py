"""Exception hierarchy of lake_core.

Every error raised on bad input is a ``LakeError`` subclass whose message names the
offending table, column, option, value or file, and says what to do about it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


class LakeError(Exception):
    """Root of every error lake_core raises on purpose."""


class CatalogError(LakeError):
    """Problems with databases and tables as catalog objects."""


class DatabaseNotFoundError(CatalogError):
    pass


class DatabaseAlreadyExistsError(CatalogError):
    pass


class TableNotFoundError(CatalogError):
    pass


class TableAlreadyExistsError(CatalogError):
    pass


class ReadOnlyTableError(CatalogError):
    """A write, commit or maintenance operation on a read-only system table (``db.t$ro``)."""


class SchemaError(LakeError):
    """A table definition is invalid (keys not in schema, unsupported type, ...)."""


class SchemaMismatchError(LakeError):
    """Data handed to a write does not match the table schema."""


class InvalidOptionError(LakeError):
    """A table option has an invalid value."""


class UnsupportedOptionError(InvalidOptionError):
    """A Paimon option that lake_core does not support (yet), or an unknown option."""


class InvalidDataError(LakeError):
    """Row-level problems: NULL primary key, invalid row kind, rejected delete."""


class CommitConflictError(LakeError):
    """Paimon's commit conflict checks failed; nothing was committed."""


class CommitIdentityError(CommitConflictError):
    """A commit reuses the (commit user, identifier) of a commit that landed with other files."""


class StalePlanError(CommitConflictError):
    """The commit was planned against a snapshot that is no longer current in a way that
    matters; nothing was committed. Writing the data again against the latest snapshot fixes it
    (``write_arrow`` and ``delete_where`` do so themselves)."""


class SequenceConflictError(StalePlanError):
    """Sequence numbers of the commit overlap those of files another commit added to the same
    bucket since this writer's base snapshot, so the merge order would not be the commit order."""


class RollbackConflictError(StalePlanError):
    """The snapshot a commit was built on was removed (``rollback_to``) while the commit was in
    flight; the snapshot the commit had created on top of it was removed again, nothing was
    committed. Writing the data again against the latest snapshot fixes it (``write_arrow`` and
    ``delete_where`` do so themselves)."""


class StaleTableError(CatalogError):
    """A table handle whose table was dropped, re-created or changed schema since it was opened."""


class PartialCommitError(LakeError):
    """Part of a commit landed (``snapshots``) and part did not; the message says which."""

    def __init__(self, message: str, snapshots: Iterable[Any] = ()):
        super().__init__(message)
        self.snapshots = list(snapshots)


class CommitFailedError(LakeError):
    """A commit could not be completed (retries exhausted); nothing became visible."""


class CommitFilesMissingError(CommitFailedError):
    """Files a commit would add are missing on storage, or have another size than their commit
    message says (removed by ``remove_orphan_files`` before a late commit, deleted by hand).
    Nothing was committed. ``files`` are the paths."""

    def __init__(self, message: str, files: Iterable[str] = ()):
        super().__init__(message)
        self.files = list(files)


class CommitOutcomeUnknownError(LakeError):
    """Whether a commit landed could not be decided (storage kept failing, or another commit built
    on a snapshot this one withdrew). None of its files were removed; the message says what to check."""


class SnapshotNotFoundError(LakeError):
    pass


class TagNotFoundError(LakeError):
    pass


class FormatError(LakeError):
    """A metadata or data file could not be decoded."""


class PredicateError(LakeError):
    """A filter names an unknown column or has an invalid literal."""


class InvalidNameError(CatalogError):
    """A database, table, tag, branch, consumer or file-prefix name breaks the naming rules.

    ``kind`` says which sort of name ("database name", "tag name", ...), ``value`` is the name."""

    def __init__(self, kind: str, value: object, reason: str):
        self.kind = kind
        self.value = value
        super().__init__(f"invalid {kind} {value!r}: {reason}")


class PathEscapeError(LakeError):
    """A path would leave the warehouse or the table it belongs to (refused before any I/O)."""


class CorruptFileError(FormatError):
    """A metadata or data file exists but cannot be decoded, or disagrees with its manifest entry.

    ``path`` is the file."""

    def __init__(self, path: str, message: str):
        self.path = path
        super().__init__(message)


class DataFileMismatchError(CorruptFileError):
    """A data file's size or row count differs from what its manifest entry records."""


class SnapshotExpiredError(CorruptFileError):
    """A read lost a file because the snapshot it reads was expired meanwhile (or is being
    expired). Nothing is wrong with the table: take a lease (``table.lease``) to pin a snapshot
    for a long read, or read a newer snapshot."""


# -- maintenance operations (none leaves a change behind) ---------------------------------------
class MaintenanceArgumentError(InvalidOptionError):
    """An argument of a maintenance operation is invalid (negative retention, a future cut-off...).
    Raised before anything is read or written."""


class PartitionSpecError(InvalidOptionError, InvalidDataError):
    """A partition selector or overwrite spec names a column that is not a partition column, gives
    a value its column's type cannot hold, or is not ``column=value`` text."""


class PartitionNotFoundError(MaintenanceArgumentError):
    """A partition selector matches no partition holding data (a typo, or a partition already
    dropped); nothing was read or changed."""


class MaintenanceAbortedError(LakeError):
    """A destructive operation refused to run because it could not prove its plan is safe (the
    referenced set could not be read completely, or the table changed under the plan)."""


class VerificationUnavailableError(LakeError):
    """A check was asked of an operation that did not compute what the check compares (a compaction
    run without ``verify=True`` has no in-task figures); nothing is passed or failed."""


class CompactionVerificationError(LakeError):
    """A verified compaction (``verify=True``) whose units' in-task figures disagree: what a unit wrote
    (read back) is not what its merge read minus what it dropped by design. Nothing is committed and
    every file the job wrote is deleted; the message names each partition and bucket."""


class LeaseError(LakeError):
    """A lease could not be taken (the snapshot no longer exists, or the holder name is invalid)."""


class ConsumerExpiredError(SnapshotNotFoundError):
    """A stream consumer cannot resume: the snapshot it was to read next has expired, whether its
    consumer file expired first (``consumer.expiration-time``) or not. Resuming anywhere else
    would skip changes (deletions included), so nothing is read; the message says how to restart
    on purpose. ``consumer_id``, ``next_snapshot`` and ``earliest`` (the earliest readable
    snapshot) say where it stands."""

    def __init__(self, message: str, *, consumer_id: str, next_snapshot: int, earliest: int | None):
        super().__init__(message)
        self.consumer_id = consumer_id
        self.next_snapshot = next_snapshot
        self.earliest = earliest
