"""Checking a table's options against their declarations, strictly.

Paimon silently ignores options it does not know (Java ``CoreOptions``); we reject them so a typo
never turns into a silently different table. Options Paimon has but lake_core does not implement yet
are named as such, so the user knows the difference between "typo" and "not yet". Values are
checked by their declared type; the rules below are those between options (Java's
``SchemaValidation``).
"""

from __future__ import annotations

from collections.abc import Mapping

from lake_core.errors import InvalidOptionError, UnsupportedOptionError
from lake_core.option_values import parse_bool
from lake_core.options import table_options as o
from lake_core.options.core_options import CoreOptions

_FIELD_SUFFIXES = tuple(f.suffix for f in o.FIELD_OPTIONS)


def validate_option_names(options: Mapping[str, str]) -> None:
    """Reject unknown options and known-but-unsupported ones, naming each."""
    for key in options:
        if key in o.BY_KEY:
            continue
        if key.startswith("fields."):
            suffix = key.rsplit(".", 1)[-1]
            if key.count(".") >= 2 and suffix in _FIELD_SUFFIXES:
                continue
            raise UnsupportedOptionError(
                f"unknown per-field option '{key}'; supported suffixes: "
                + ", ".join(f.pattern for f in o.FIELD_OPTIONS)
            )
        if key.startswith(o.REFUSED_PREFIXES):
            raise UnsupportedOptionError(
                f"option '{key}' is a Paimon option that lake_core does not support yet; remove it"
            )
        raise UnsupportedOptionError(f"unknown table option '{key}' (check the spelling against Paimon's CoreOptions)")


def check_supported(options: Mapping[str, str], *, table: str | None = None) -> None:
    """Refuse options lake_core does not implement, with :class:`UnsupportedOptionError`: unknown
    names, Paimon options not supported yet, and supported names with a value that is not
    (``deletion-vectors.enabled`` with first-row, ``bucket`` = -2). Run when a table is created AND
    whenever one is opened: a table written by another engine with such an option would read
    wrong (deletion vectors: deleted rows come back), so it must not be read or written at all.
    ``table`` names the table in the message."""
    try:
        validate_option_names(options)
        if (
            parse_bool(o.DELETION_VECTORS_ENABLED.key, options.get(o.DELETION_VECTORS_ENABLED.key, "false"))
            and str(options.get(o.MERGE_ENGINE.key, "deduplicate")).lower() == "first-row"
        ):
            # Paimon's SchemaValidation refuses it too: first-row never replaces a stored row
            raise UnsupportedOptionError(
                "option 'deletion-vectors.enabled' = 'true' does not apply to 'merge-engine' = 'first-row': "
                "first-row never deletes an old row, so there is nothing for a deletion vector to mark"
            )
        if str(options.get(o.BUCKET.key, "")).strip() == "-2":
            raise UnsupportedOptionError(
                "option 'bucket' = '-2' (postpone bucket mode) is not supported by lake_core yet"
            )
    except UnsupportedOptionError as e:
        if table is None:
            raise
        raise UnsupportedOptionError(f"table {table}: {e}; lake_core refuses to read or write it") from None


def validate_table_options(options: Mapping[str, str], *, has_primary_key: bool) -> CoreOptions:
    """Validate names, types, ranges and choices of every option lake_core uses; return the typed view.

    Each error names the option, the value and what is allowed."""
    check_supported(options)
    for option in o.OPTIONS:
        for key in option.keys:
            if key in options:
                option.type.check(key, options[key])
    core = CoreOptions(dict(options))
    _check_retention(options, core)
    if core.commit_min_retry_wait_ms > core.commit_max_retry_wait_ms:
        raise InvalidOptionError(
            f"option 'commit.min-retry-wait' = {core.text(o.COMMIT_MIN_RETRY_WAIT)!r} is longer than "
            f"'commit.max-retry-wait' = {core.text(o.COMMIT_MAX_RETRY_WAIT)!r}"
        )
    if not has_primary_key:
        for option in o.OPTIONS:
            if option.primary_key_only and option.key in options:
                raise InvalidOptionError(
                    f"option '{option.key}' only applies to primary-key tables; this table has no primary key"
                )
    return core


def _check_retention(options: Mapping[str, str], core: CoreOptions) -> None:
    """No more to retain at least than at most (SchemaValidation refuses it too)."""
    snapshots = (
        o.SNAPSHOT_NUM_RETAINED_MIN,
        o.SNAPSHOT_NUM_RETAINED_MAX,
        core.snapshot_num_retained_min,
        core.snapshot_num_retained_max,
    )
    changelogs = (
        o.CHANGELOG_NUM_RETAINED_MIN,
        o.CHANGELOG_NUM_RETAINED_MAX,
        # unset, the changelog bounds are the snapshots' (CoreOptions.changelogNumRetainMin/Max)
        _either(core.changelog_num_retained_min, core.snapshot_num_retained_min),
        _either(core.changelog_num_retained_max, core.snapshot_num_retained_max),
    )
    for low, high, lo, hi in (snapshots, changelogs):
        if (low.key in options or high.key in options) and lo > hi:
            raise InvalidOptionError(f"option '{low.key}' = {lo} is larger than '{high.key}' = {hi}")


def _either(value: int | None, fallback: int) -> int:
    return fallback if value is None else value
