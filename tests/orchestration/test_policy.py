"""The policy evaluator, table-driven: health figures + policy → request or skip, with the reason."""

from __future__ import annotations

import re

import pytest

from lake_core.maintenance.health import BucketHealth, PartitionSkew, TableHealth
from orchestration.config import MaintenancePolicy
from orchestration.defs.policy import check_figures, evaluate_policy


def bucket(partition="dt=2024-01-02", b=0, runs=1, small=0, lag=None, rows=100):
    return BucketHealth(partition, b, max(runs, small, 1), runs, (("L0", runs),), small, rows, 1000, lag)


def health(buckets=(bucket(),), snapshots=5, age=60.0, manifests=3, ttl_field=None, skew=()):
    return TableHealth(
        "db.t",
        snapshots or None,
        snapshots,
        1 if snapshots else None,
        age,
        manifests,
        16 << 20,
        tuple(buckets),
        tuple(skew),
        ttl_field,
        3600 if ttl_field else None,
        0,
    )


def policy(**sections):
    return MaintenancePolicy.model_validate(sections)


CASES = [
    # (id, health, policy sections, operation, request, reason)
    (
        "runs over",
        health([bucket(runs=3), bucket("dt=2024-01-02", 3, runs=7)]),
        {},
        "compaction",
        True,
        "compaction: dt=2024-01-02/bucket-3 has 7 sorted runs > 5",
    ),
    (
        "runs over in several",
        health([bucket(runs=6), bucket(b=1, runs=9), bucket("dt=2024-01-03", 2, runs=8)]),
        {},
        "compaction",
        True,
        "compaction: dt=2024-01-02/bucket-1 has 9 sorted runs > 5 (and 2 more buckets)",
    ),
    (
        "runs at the limit",
        health([bucket(runs=5), bucket(b=1, runs=3)]),
        {},
        "compaction",
        False,
        "compaction: max 5 sorted runs <= 5 (dt=2024-01-02/bucket-0), max 0 small files <= 20",
    ),
    (
        "custom limit",
        health([bucket(runs=3)]),
        {"compaction": {"max_sorted_runs": 2}},
        "compaction",
        True,
        "compaction: dt=2024-01-02/bucket-0 has 3 sorted runs > 2",
    ),
    (
        "small files",
        health([bucket(runs=2, small=25)]),
        {},
        "compaction",
        True,
        "compaction: dt=2024-01-02/bucket-0 has 25 small files (< 16 MB) > 20",
    ),
    (
        "unpartitioned",
        health([bucket("", 1, runs=6)]),
        {},
        "compaction",
        True,
        "compaction: bucket-1 has 6 sorted runs > 5",
    ),
    (
        "compaction disabled",
        health([bucket(runs=50)]),
        {"compaction": {"enabled": False}},
        "compaction",
        False,
        "compaction: disabled in the policy",
    ),
    ("no data", health([], snapshots=0), {}, "compaction", False, "compaction: the table has no data files"),
    ("manifests over", health(manifests=31), {}, "manifest_compaction", True, "manifest_compaction: 31 manifests > 30"),
    (
        "manifests within",
        health(manifests=30),
        {},
        "manifest_compaction",
        False,
        "manifest_compaction: 30 manifests <= 30",
    ),
    ("no ttl rule", health(), {}, "record_expiry", False, "record_expiry: no record_expiry rule in the policy"),
    (
        "ttl lag over",
        health([bucket(lag=10), bucket(b=2, lag=3 * 3600)], ttl_field="ts"),
        {"record_expiry": {"field": "ts", "retention": "1 d"}},
        "record_expiry",
        True,
        "record_expiry: dt=2024-01-02/bucket-2 holds records (ts older than 1 d) 3.0 h past their expiry > "
        "max_ttl_lag 1 h",
    ),
    (
        "ttl lag within",
        health([bucket(lag=600)], ttl_field="ts"),
        {"record_expiry": {"field": "ts", "retention": "1 d"}},
        "record_expiry",
        False,
        "record_expiry: TTL lag 10 min <= max_ttl_lag 1 h (ts older than 1 d)",
    ),
    (
        "too many snapshots",
        health(snapshots=101),
        {},
        "snapshot_expiry",
        True,
        "snapshot_expiry: 101 snapshots > retain_max 100",
    ),
    (
        "old snapshots",
        health(snapshots=12, age=3 * 3600),
        {},
        "snapshot_expiry",
        True,
        "snapshot_expiry: oldest snapshot is 3.0 h old > time_retained 1 h (12 snapshots > retain_min 10)",
    ),
    (
        "old but few",
        health(snapshots=10, age=3 * 3600),
        {},
        "snapshot_expiry",
        False,
        "snapshot_expiry: 10 snapshots, oldest 3.0 h old: within retain_min 10 / time_retained 1 h / retain_max 100",
    ),
    (
        "partition expiry unset",
        health(),
        {},
        "partition_expiry",
        False,
        "partition_expiry: no expiration_time in the policy",
    ),
    (
        "partition expiry set",
        health(skew=[PartitionSkew("dt=2024-01-02", 2, 60, 50.0, 0)]),
        {"partition_expiry": {"expiration_time": "30 d"}},
        "partition_expiry",
        True,
        "partition_expiry: drop partitions older than 30 d (1 partitions now)",
    ),
    ("orphans", health(), {}, "orphan_cleanup", True, "orphan_cleanup: remove files unreferenced for more than 1 d"),
    (
        "orphans off",
        health(),
        {"orphan_cleanup": {"enabled": False}},
        "orphan_cleanup",
        False,
        "orphan_cleanup: disabled in the policy",
    ),
    ("tags unset", health(), {}, "tags", False, "tags: no tags.name_format in the policy"),
    (
        "tags set",
        health(),
        {"tags": {"name_format": "daily-%Y-%m-%d"}},
        "tags",
        True,
        "tags: tag snapshot 5 as 'daily-%Y-%m-%d'",
    ),
]


@pytest.mark.parametrize("h, sections, operation, wanted, reason", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_decision(h, sections, operation, wanted, reason):
    (decision,) = evaluate_policy(h, policy(**sections), (operation,))
    assert (decision.operation, decision.request, decision.reason) == (operation, wanted, reason)


def test_every_operation_decided_once_in_order():
    ops = [d.operation for d in evaluate_policy(health(), policy())]
    assert ops == [
        "compaction",
        "manifest_compaction",
        "record_expiry",
        "snapshot_expiry",
        "partition_expiry",
        "orphan_cleanup",
        "tags",
    ]


@pytest.mark.parametrize(
    "h, failing",
    [
        (health(), set()),
        (health([bucket(runs=6)]), {"sorted_runs"}),
        (health([bucket(small=21)], snapshots=101, manifests=31), {"small_files", "snapshot_count", "manifest_count"}),
        (health([bucket(lag=7200)], ttl_field="ts"), {"ttl_lag"}),
        (health(skew=[PartitionSkew("dt=a", 4, 300, 100.0, 2)]), {"bucket_skew"}),
        (health(skew=[PartitionSkew("dt=a", 4, 200, 100.0, 2)]), set()),
    ],
)
def test_check_figures(h, failing):
    figures = {f.check: f for f in check_figures(h, policy())}
    assert set(figures) == {"sorted_runs", "small_files", "snapshot_count", "manifest_count", "ttl_lag", "bucket_skew"}
    assert {name for name, f in figures.items() if not f.passed} == failing


@pytest.mark.parametrize(
    "section, message",
    [
        (
            {"maintenance": {"health": {"max_ttl_lag": "soon"}}},
            "field 'maintenance.health.max_ttl_lag': 'soon' is not a duration",
        ),
        ({"maintenance": {"health": {"max_bucket_skew": 1}}}, "field 'maintenance.health.max_bucket_skew'"),
        ({"sensor": {"lease_ttl": "forever"}}, "field 'sensor.lease_ttl': 'forever' is not a duration"),
    ],
)
def test_health_fields_are_validated_and_named(section, message):
    from orchestration.config import TablesConfigError, parse_tables_config

    raw = {
        "warehouse": {"uri": "/tmp/wh"},
        "tables": [{"name": "db.t", "schema": {"id": "BIGINT"}, "primary_keys": ["id"], **section}],
    }
    with pytest.raises(TablesConfigError, match="table 'db.t': " + re.escape(message)):
        parse_tables_config(raw)
