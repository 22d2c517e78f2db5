"""The maintenance policy, evaluated: a table's health + its ``maintenance:`` policy → one decision
per operation, each with the human reason a user reads in the UI.

Pure: no I/O, no Dagster. The health sensor (:mod:`.health_sensor`) requests the ``HEALTH_OPERATIONS``
that are due; the ``SCHEDULED_OPERATIONS`` run on the policy's cron (:mod:`.automation`); the
asset checks compare the same figures against the same thresholds (:func:`check_figures`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from orchestration.config import duration_seconds

if TYPE_CHECKING:
    from lake_core import TableHealth
    from orchestration.config import MaintenancePolicy

HEALTH_OPERATIONS = ("compaction", "manifest_compaction", "record_expiry")  # driven by figures
SCHEDULED_OPERATIONS = ("snapshot_expiry", "partition_expiry", "orphan_cleanup", "tags")  # driven by time
MIB = 1024 * 1024


@dataclass(frozen=True)
class Decision:
    operation: str  # the maintenance asset's name (naming.maintenance_asset_key)
    request: bool  # True: the policy calls for a run now
    reason: str  # "compaction: dt=2024-01-02/bucket-3 has 7 sorted runs > 5"


def _age(seconds: float) -> str:
    """A short human age: '45 s', '12 min', '3.2 h', '2.0 d'."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} d"


def _say(operation: str, request: bool, text: str) -> Decision:
    """A decision whose reason starts with the operation's name, as the UI shows it."""
    return Decision(operation, request, f"{operation}: {text}")


def _and_more(n: int) -> str:
    return f" (and {n} more bucket{'s' if n > 1 else ''})" if n > 0 else ""


def small_file_bytes(policy: MaintenancePolicy) -> int:
    return policy.compaction.small_file_mb * MIB


def health_arguments(policy: MaintenancePolicy) -> dict:
    """Keyword arguments of ``table.maintenance.health()`` that this policy implies."""
    expiry = policy.record_expiry
    return {"small_file_bytes": small_file_bytes(policy), "ttl_field": expiry.field, "ttl": expiry.retention}


def _compaction(h: TableHealth, policy: MaintenancePolicy) -> Decision:
    c = policy.compaction
    if not h.buckets:
        return _say("compaction", False, "the table has no data files")
    max_small = policy.health.max_small_files
    reasons = []
    runs = sorted(
        (b for b in h.buckets if b.sorted_runs > c.max_sorted_runs),
        key=lambda b: (-b.sorted_runs, b.partition, b.bucket),
    )
    if runs:
        reasons.append(
            f"{runs[0].location} has {runs[0].sorted_runs} sorted runs > {c.max_sorted_runs}" + _and_more(len(runs) - 1)
        )
    small = sorted(
        (b for b in h.buckets if b.small_files > max_small), key=lambda b: (-b.small_files, b.partition, b.bucket)
    )
    if small:
        reasons.append(
            f"{small[0].location} has {small[0].small_files} small files (< {c.small_file_mb} MB) "
            f"> {max_small}" + _and_more(len(small) - 1)
        )
    if reasons:
        return _say("compaction", True, "; ".join(reasons))
    worst_runs, worst_small = h.worst("sorted_runs"), h.worst("small_files")
    return _say(
        "compaction",
        False,
        f"max {worst_runs.sorted_runs} sorted runs <= {c.max_sorted_runs} "
        f"({worst_runs.location}), max {worst_small.small_files} small files <= {max_small}",
    )


def _manifest_compaction(h: TableHealth, policy: MaintenancePolicy) -> Decision:
    m = policy.manifest_compaction
    if h.manifest_count > m.max_manifests:
        return _say("manifest_compaction", True, f"{h.manifest_count} manifests > {m.max_manifests}")
    return _say("manifest_compaction", False, f"{h.manifest_count} manifests <= {m.max_manifests}")


def _record_expiry(h: TableHealth, policy: MaintenancePolicy) -> Decision:
    if policy.record_expiry.field is None:
        return _say("record_expiry", False, "no record_expiry rule in the policy")
    lag, limit = h.ttl_lag_s or 0, duration_seconds(policy.health.max_ttl_lag)
    rule = f"{policy.record_expiry.field} older than {policy.record_expiry.retention}"
    if lag > limit:
        worst = h.worst("ttl_lag_s")
        return _say(
            "record_expiry",
            True,
            f"{worst.location} holds records ({rule}) {_age(lag)} past their "
            f"expiry > max_ttl_lag {policy.health.max_ttl_lag}",
        )
    return _say("record_expiry", False, f"TTL lag {_age(lag)} <= max_ttl_lag {policy.health.max_ttl_lag} ({rule})")


def _snapshot_expiry(h: TableHealth, policy: MaintenancePolicy) -> Decision:
    s = policy.snapshot_expiry
    if h.snapshot_count > s.retain_max:
        return _say("snapshot_expiry", True, f"{h.snapshot_count} snapshots > retain_max {s.retain_max}")
    age = h.oldest_snapshot_age_s or 0.0
    if h.snapshot_count > s.retain_min and age > duration_seconds(s.time_retained):
        return _say(
            "snapshot_expiry",
            True,
            f"oldest snapshot is {_age(age)} old > time_retained {s.time_retained} "
            f"({h.snapshot_count} snapshots > retain_min {s.retain_min})",
        )
    return _say(
        "snapshot_expiry",
        False,
        f"{h.snapshot_count} snapshots, oldest {_age(age)} old: within retain_min "
        f"{s.retain_min} / time_retained {s.time_retained} / retain_max {s.retain_max}",
    )


def _partition_expiry(h: TableHealth, policy: MaintenancePolicy) -> Decision:
    p = policy.partition_expiry
    if p.expiration_time is None:
        return _say("partition_expiry", False, "no expiration_time in the policy")
    if not h.buckets:
        return _say("partition_expiry", False, "the table has no partitions")
    return _say(
        "partition_expiry", True, f"drop partitions older than {p.expiration_time} ({len(h.skew)} partitions now)"
    )


def _orphan_cleanup(h: TableHealth, policy: MaintenancePolicy) -> Decision:
    o = policy.orphan_cleanup
    if h.snapshot_id is None:
        return _say("orphan_cleanup", False, "the table has no snapshot yet")
    return _say("orphan_cleanup", True, f"remove files unreferenced for more than {o.older_than}")


def _tags(h: TableHealth, policy: MaintenancePolicy) -> Decision:
    t = policy.tags
    if t.name_format is None:
        return _say("tags", False, "no tags.name_format in the policy")
    if h.snapshot_id is None:
        return _say("tags", False, "the table has no snapshot yet")
    return _say("tags", True, f"tag snapshot {h.snapshot_id} as {t.name_format!r}")


_RULES = {
    "compaction": _compaction,
    "manifest_compaction": _manifest_compaction,
    "record_expiry": _record_expiry,
    "snapshot_expiry": _snapshot_expiry,
    "partition_expiry": _partition_expiry,
    "orphan_cleanup": _orphan_cleanup,
    "tags": _tags,
}


def evaluate_policy(
    health: TableHealth,
    policy: MaintenancePolicy,
    operations: tuple[str, ...] = HEALTH_OPERATIONS + SCHEDULED_OPERATIONS,
) -> list[Decision]:
    """One decision per operation in ``operations`` (in that order)."""
    return [
        _say(op, False, "disabled in the policy")
        if not getattr(getattr(policy, op), "enabled", True)
        else _RULES[op](health, policy)
        for op in operations
    ]


# -- asset checks: the same figures against the same thresholds --------------------------------
@dataclass(frozen=True)
class Figure:
    check: str  # the asset check's name
    value: float | None  # None: not measured (e.g. no TTL rule)
    threshold: float
    passed: bool
    description: str
    where: str = ""  # the worst bucket or partition


def check_figures(h: TableHealth, policy: MaintenancePolicy) -> list[Figure]:
    """The health checks of a table: each figure, its threshold and whether it is within it."""
    c, hp = policy.compaction, policy.health
    runs, small = h.worst("sorted_runs"), h.worst("small_files")
    out = [
        Figure(
            "sorted_runs",
            h.max_sorted_runs,
            c.max_sorted_runs,
            h.max_sorted_runs <= c.max_sorted_runs,
            f"max sorted runs per bucket {h.max_sorted_runs} vs max_sorted_runs {c.max_sorted_runs}",
            runs.location if runs else "",
        ),
        Figure(
            "small_files",
            small.small_files if small else 0,
            hp.max_small_files,
            (small.small_files if small else 0) <= hp.max_small_files,
            f"max files below {c.small_file_mb} MB per bucket {small.small_files if small else 0} vs "
            f"max_small_files {hp.max_small_files}",
            small.location if small else "",
        ),
        Figure(
            "snapshot_count",
            h.snapshot_count,
            policy.snapshot_expiry.retain_max,
            h.snapshot_count <= policy.snapshot_expiry.retain_max,
            f"{h.snapshot_count} snapshots vs retain_max {policy.snapshot_expiry.retain_max}",
        ),
        Figure(
            "manifest_count",
            h.manifest_count,
            policy.manifest_compaction.max_manifests,
            h.manifest_count <= policy.manifest_compaction.max_manifests,
            f"{h.manifest_count} manifests vs max_manifests {policy.manifest_compaction.max_manifests}",
        ),
    ]
    limit = duration_seconds(hp.max_ttl_lag)
    lag = h.ttl_lag_s
    out.append(
        Figure(
            "ttl_lag",
            lag,
            limit,
            lag is None or lag <= limit,
            "no record_expiry rule in the policy or table options"
            if lag is None
            else f"TTL lag {_age(lag)} vs max_ttl_lag {hp.max_ttl_lag}",
            (h.worst("ttl_lag_s").location if lag else ""),
        )
    )
    worst = h.max_skew
    skew = round(worst.skew, 3) if worst else 1.0
    out.append(
        Figure(
            "bucket_skew",
            skew,
            hp.max_bucket_skew,
            skew <= hp.max_bucket_skew,
            f"largest bucket holds {skew}x its partition's mean rows per bucket vs max_bucket_skew "
            f"{hp.max_bucket_skew}" + (f" (bucket-{worst.largest_bucket}, {worst.max_rows} rows)" if worst else ""),
            worst.partition if worst else "",
        )
    )
    return out
