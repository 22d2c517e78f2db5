"""The texts of every maintenance result: ``summary()`` one line, ``describe()`` a screen at most,
bytes and durations as a person writes them, lists cut, and the reason of a no-op."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest

import lake_core
from lake_core import OperationResult
from lake_core.result import human_bytes, human_duration, shown

RESULTS = sorted(
    (
        obj
        for obj in vars(lake_core).values()
        if isinstance(obj, type) and issubclass(obj, OperationResult) and obj is not OperationResult
    ),
    key=lambda c: c.__name__,
)


def _empty(cls, **kw):
    required = {
        f.name: 0
        for f in dataclasses.fields(cls)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING and f.name not in kw
    }
    return cls(**{"operation": "op", "table": "db.t", **required, **kw})


def test_every_result_is_found():
    assert {c.__name__ for c in RESULTS} >= {
        "CompactionResult",
        "ExpireSnapshotsResult",
        "ExpireChangelogsResult",
        "ExpirePartitionsResult",
        "ExpireTagsResult",
        "CompactManifestResult",
        "RemoveOrphanFilesResult",
        "RescaleResult",
        "RollbackResult",
        "DeleteTagResult",
        "TagSnapshotResult",
    }


@pytest.mark.parametrize("cls", RESULTS, ids=lambda c: c.__name__)
def test_an_empty_result_says_nothing_was_done_and_why(cls):
    r = (
        _empty(cls, skipped="the table has no snapshots")
        if "skipped" in {f.name for f in dataclasses.fields(cls)} and cls.__name__ != "CompactionResult"
        else _empty(cls)
    )
    assert "\n" not in r.summary() and not r.did_something()
    assert " nothing done — " in r.summary() and len(r.describe().splitlines()) <= 20
    assert str(r) == r.summary()


def test_human_units():
    assert human_bytes(512) == "512 B" and human_bytes(1536) == "1.5 KiB" and human_bytes(5 * 1024**3) == "5.0 GiB"
    assert human_duration(0.25) == "250 ms" and human_duration(2.5) == "2.5 s" and human_duration(42) == "42 s"
    assert human_duration(93784) == "1d 2h 3m 4s" and human_duration(-3600) == "-1h"
    # the text a user found in an error: timedelta(days=-1, seconds=82800)
    assert shown(dt.timedelta(days=-1, seconds=82800)) == "-1h" and shown("x") == "'x'"


def test_long_lists_are_cut_and_ranges_read_as_ranges():
    r = lake_core.ExpireSnapshotsResult(
        operation="expire_snapshots",
        table="db.t",
        duration_s=1.25,
        expired_snapshots=tuple(range(3, 71)),
        earliest_snapshot=71,
        deleted_data_files=40,
        deleted_metadata_files=28,
        bytes_reclaimed=3 * 1024 * 1024,
        files=tuple(
            f"file:///wh/db.db/t/bucket-0/data-{i:04d}-0123456789-0123456789-0123456789.parquet" for i in range(68)
        ),
    )
    assert r.summary() == (
        "expire_snapshots on db.t: expired snapshots 3..70 (68); earliest snapshot now 71; data files 40; "
        "metadata files 28; reclaimed 3.0 MiB; took 1.2 s"
    )
    lines = r.describe().splitlines()
    assert len(lines) <= 20 and "  files deleted (68):" in lines and lines[-1] == "    … and 63 more"
    assert sum(1 for line in lines if line.startswith("    file:///")) == 5
    # a dry run says so in its first words
    dry = dataclasses.replace(r, dry_run=True)
    assert dry.summary().startswith("expire_snapshots on db.t (dry run): expired snapshots 3..70 (68)")


def test_record_expiry_that_found_nothing_says_it_in_its_own_terms():
    r = lake_core.CompactionResult(table="db.t", expire_records=True, base_snapshot_id=4, units_planned=0)
    assert r.summary().startswith("record expiry of db.t: nothing done — nothing to expire: no bucket holds records")
    assert "compact" not in r.summary()


def test_rescale_lists_its_partitions():
    parts = tuple(
        lake_core.PartitionRescaleResult(
            partition=f"dt=2024-01-{d:02d}",
            old_buckets=2,
            new_buckets=4,
            rows=100,
            files_in=3,
            files_out=4,
            bytes_in=4096,
            bytes_out=5000,
            checksum="x",
            snapshot_read=1,
            snapshot_committed=2,
        )
        for d in range(1, 9)
    )
    r = lake_core.RescaleResult(
        operation="rescale",
        table="db.t",
        bucket=4,
        previous_bucket=2,
        schema_id=1,
        partitions_rescaled=8,
        partitions_skipped=0,
        rows=800,
        files_in=24,
        files_out=32,
        bytes_in=8 * 4096,
        bytes_out=8 * 5000,
        snapshot_id=9,
        partitions=parts,
    )
    assert r.summary().startswith("rescale of db.t from 2 to 4 buckets: partitions rescaled 8; rows 800;")
    lines = r.describe().splitlines()
    assert "    dt=2024-01-01: 2 → 4 buckets, 100 rows, 3 → 4 files (4.0 KiB → 4.9 KiB)" in lines
    assert lines[-1] == "    … and 3 more" and len(lines) <= 20
