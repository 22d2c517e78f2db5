"""Errors of maintenance operations. All are ``LakeError`` subclasses; none leaves a change behind."""
from __future__ import annotations

from lake_core.errors import InvalidOptionError, LakeError


class MaintenanceArgumentError(InvalidOptionError):
    """An argument of a maintenance operation is invalid (negative retention, a future cut-off...).
    Raised before anything is read or written."""


class MaintenanceAbortedError(LakeError):
    """A destructive operation refused to run because it could not prove its plan is safe (the
    referenced set could not be read completely, or the table changed under the plan)."""


class LeaseError(LakeError):
    """A lease could not be taken (the snapshot no longer exists, or the holder name is invalid)."""
