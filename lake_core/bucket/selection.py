"""A selection of buckets (``compact(buckets=[...])``, ``lake compact --bucket N``): which buckets of
each selected partition an operation plans, so a job can work on a few buckets of a large table
without decoding the others' manifest entries."""

from __future__ import annotations

from collections.abc import Iterable

from lake_core.errors import MaintenanceArgumentError


def bucket_selection(buckets: Iterable[int] | None, *, table: str, operation: str) -> frozenset[int] | None:
    """``buckets`` as a set of bucket ids (None: every bucket). Refuses what cannot name a bucket: a
    lone number (``buckets=[3]`` was meant), an empty selection (it would select nothing, which is
    a mistake rather than a no-op), anything but whole numbers >= 0."""
    if buckets is None:
        return None
    if isinstance(buckets, (int, str, bytes)) or not isinstance(buckets, Iterable):
        raise MaintenanceArgumentError(
            f"{operation} of {table}: buckets={buckets!r} must be a list of bucket numbers, e.g. buckets=[{buckets!r}]"
        )
    chosen = list(buckets)
    bad = [b for b in chosen if isinstance(b, bool) or not isinstance(b, int) or b < 0]
    if bad or not chosen:
        raise MaintenanceArgumentError(
            f"{operation} of {table}: buckets={chosen!r}: expected one or more bucket numbers (whole numbers >= 0)"
            + (f"; not a bucket: {', '.join(map(repr, bad))}" if bad else "")
        )
    return frozenset(chosen)
