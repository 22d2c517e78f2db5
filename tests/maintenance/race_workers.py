"""Process bodies of the maintenance race test. Each runs until a deadline and reports in a JSON file."""

from __future__ import annotations

import datetime as dt
import json
import random
import time

import pyarrow as pa

from fixtures.process_end import end_worker
from lake_core import Catalog
from lake_core.errors import LakeError

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.int64()), ("op", pa.string())])


def _table(wh, so):
    return (Catalog(wh, so) if so else Catalog(wh)).get_table("db.t")


def _start(t, go):
    """Wait until every process is up (spawning is slow on a loaded machine), then run for the
    agreed time; returns the deadline."""
    barrier, seconds = go
    t.snapshot_manager.latest_id()  # connect before the clock starts
    barrier.wait(timeout=300)
    return time.time() + seconds


def _report(path, obj):
    """Write the report, then end the process (see :func:`~fixtures.process_end.end_worker`)."""
    with open(path, "w") as f:
        json.dump(obj, f)
    end_worker()


def writer(wh, so, wid, go, out):
    """Inserts unique keys; every few commits a full compaction. Acknowledged keys are reported."""
    from tests.maintenance.helpers import compact_all

    t = _table(wh, so)
    deadline = _start(t, go)
    rng = random.Random(wid)
    acked, attempted, seq, errors = [], [], 0, []
    while time.time() < deadline:
        keys = [[rng.choice("ab"), wid * 1_000_000 + seq + k] for k in range(rng.randint(1, 6))]
        seq += len(keys)
        attempted += keys
        try:
            t.write_arrow(
                pa.table(
                    {
                        "dt": [k[0] for k in keys],
                        "id": [k[1] for k in keys],
                        "v": [1] * len(keys),
                        "op": ["+I"] * len(keys),
                    },
                    schema=SCHEMA,
                )
            )
            acked += keys
            if rng.random() < 0.2:
                compact_all(t)
        except LakeError as e:  # conflicts and exhausted retries: nothing was committed
            errors.append(type(e).__name__)
    _report(out, {"acked": acked, "attempted": attempted, "errors": errors})


def expirer(wh, so, go, out, changelogs=False):
    t = _table(wh, so)
    deadline = _start(t, go)
    runs, expired, errors = 0, 0, []
    while time.time() < deadline:
        try:
            r = t.maintenance.expire_snapshots(retain_min=2, older_than=dt.timedelta(0), max_deletes=1000)
            expired += len(r.expired_snapshots)
            if changelogs:
                expired += len(t.maintenance.expire_changelogs(older_than=dt.timedelta(0)).expired_changelogs)
        except LakeError as e:
            errors.append(f"{type(e).__name__}: {e}")
        runs += 1
        time.sleep(0.05)
    _report(out, {"runs": runs, "expired": expired, "errors": errors})


def orphan_remover(wh, so, go, floor_s, out):
    t = _table(wh, so)
    deadline = _start(t, go)
    runs, deleted, errors = 0, 0, []
    while time.time() < deadline:
        try:
            r = t.maintenance.remove_orphan_files(older_than=dt.timedelta(seconds=floor_s), force=True)
            deleted += r.deleted_files
        except LakeError as e:  # an incomplete view refuses, by design
            errors.append(f"{type(e).__name__}: {e}")
        runs += 1
        time.sleep(0.2)
    _report(out, {"runs": runs, "deleted": deleted, "errors": errors})


def tagger(wh, so, go, out):
    t = _table(wh, so)
    deadline = _start(t, go)
    n, made = 0, []
    while time.time() < deadline:
        try:
            t.create_tag(f"t{n}")
            made.append(f"t{n}")
            if len(made) > 3:
                t.delete_tag(made.pop(0))
        except LakeError:
            pass
        n += 1
        time.sleep(0.3)
    _report(out, {"tags": made})


def lease_reader(wh, so, rid, go, out):
    """Leases the latest snapshot, dawdles, reads it completely; any failure is a lost promise."""
    t = _table(wh, so)
    deadline = _start(t, go)
    rng = random.Random(100 + rid)
    reads, refused, failures = 0, 0, []
    while time.time() < deadline:
        try:
            with t.lease(holder=f"reader{rid}", ttl=dt.timedelta(minutes=5)) as snap:
                time.sleep(rng.uniform(0, 0.5))
                got = t.to_arrow(snapshot_id=snap.id)
                if got.num_rows != snap.total_record_count:
                    failures.append(f"snapshot {snap.id}: {got.num_rows} rows, expected {snap.total_record_count}")
                reads += 1
        except LakeError as e:
            if type(e).__name__ == "LeaseError":
                refused += 1  # the snapshot expired before the lease's re-check: nothing was read
                time.sleep(0.05)
            else:
                failures.append(f"{type(e).__name__}: {e}")
        except OSError as e:
            failures.append(f"{type(e).__name__}: {e}")
    _report(out, {"reads": reads, "refused": refused, "failures": failures})


def read_changelog(t, snap) -> int:
    """Rows of every changelog file of ``snap`` (its changelogManifestList), read completely."""
    import pyarrow.parquet as pq

    from lake_core.maintenance.references import data_file_paths
    from lake_core.manifest.metadata import FileKind
    from lake_core.snapshot.changelog_manager import changelog_manifest_list

    rows = 0
    lst = changelog_manifest_list(snap, t.options.changelog_producer)
    for e in t.manifest_store.read_entries(t.manifest_store.read_manifest_list(lst)) if lst else ():
        if e.kind == FileKind.ADD:
            path = data_file_paths(t, e)[0][0]
            with t.fileio.open_input(path) as f:
                rows += pq.read_table(f).num_rows
    return rows


def changelog_reader(wh, so, go, out):
    """A streaming consumer: pins changelog N with a consumer file, re-checks N is still readable
    (snapshot-N or changelog/changelog-N), reads its changelog files completely, moves on to N+1;
    when expiry overtook it, it restarts at the earliest readable changelog."""
    from lake_core.snapshot.changelog_manager import ChangelogNotFoundError

    t = _table(wh, so)
    deadline = _start(t, go)
    cm, consumers = t.changelog_manager, t.maintenance.consumers
    reads, refused, failures, n = 0, 0, [], None
    while time.time() < deadline:
        first, last = cm.earliest_id(), cm.latest_id()
        if first is None or (n is not None and n > last):
            time.sleep(0.05)  # caught up: wait for the next commit
            continue
        n = first if n is None or n < first else n  # fell behind expiry: restart at the earliest
        consumers.reset("stream", n)
        try:
            snap = cm.changelog(n)  # after the consumer file: expiry either sees it or N is gone
        except ChangelogNotFoundError:
            refused += 1
            n = None
            continue
        try:
            read_changelog(t, snap)
            reads += 1
        except (LakeError, OSError) as e:
            failures.append(f"changelog {n}: {type(e).__name__}: {e}")
        n += 1  # forward, as a streaming consumer
    consumers.delete("stream")
    _report(out, {"reads": reads, "refused": refused, "failures": failures})
