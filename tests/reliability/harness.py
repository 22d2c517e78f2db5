"""Fault exploration: every operation of ``OPERATIONS`` × every step of each kind × every fault mode.

For one operation: build its starting table once (a template), run the operation once on a copy
to count its storage operations of each kind and to record the state after it, then for each
chosen step N of each kind and each mode run it again on a fresh copy with that one fault and
check, from storage, with a new process state:

1. the table reads, and its state equals the state before or the state after the operation;
2. every retained snapshot and tag reads completely;
3. re-running the operation completes it (the state after);
4. ``remove_orphan_files(force=True, older_than=0)`` then leaves no file that no retained
   snapshot or tag mentions, and every retained snapshot and tag still reads completely.

Adding an operation is one ``Operation`` entry in ``OPERATIONS``.
"""

from __future__ import annotations

import datetime as dt
import shutil
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from lake_core import Catalog
from lake_core.io.fileio import FileIO

from .faultio import KINDS, MODES, Fault, FaultyFileIO, InjectedCrash

IDENT = "db.t"
SCHEMA = pa.schema(
    [pa.field("dt", pa.string(), nullable=False), pa.field("k", pa.int64(), nullable=False), ("v", pa.string())]
)
OLD, NEW = "2020-01-01", "2099-01-01"  # partition values: expire_partitions drops OLD only
BASE_OPTIONS = {"bucket": "2", "snapshot.num-retained.min": "10"}


def rows(keys, tag: str, part: str = NEW) -> pa.Table:
    keys = list(keys)
    return pa.table({"dt": [part] * len(keys), "k": keys, "v": [f"{tag}{k}" for k in keys]}, schema=SCHEMA)


def content(table, snapshot_id: int | None = None, tag: str | None = None) -> list[tuple]:
    """A table's rows (of the latest snapshot, or of one snapshot or tag), in key order."""
    t = table.to_arrow(snapshot_id=snapshot_id, tag=tag) if (snapshot_id or tag) else table.to_arrow()
    return sorted(zip(t.column("dt").to_pylist(), t.column("k").to_pylist(), t.column("v").to_pylist()))


def state_rows(table) -> Any:
    return content(table)


def state_rows_and_latest(table) -> Any:
    return content(table), table.snapshot_manager.latest_id()


def state_rows_and_tags(table) -> Any:
    return content(table), table.list_tags()


def state_rows_and_bucket(table) -> Any:
    return content(table), table.options.bucket


def default_setup(table) -> None:
    """Three commits over two partitions (several level-0 files per bucket), a tag on snapshot 2,
    and the files of a write that never committed (litter for orphan removal)."""
    table.write_arrow(pa.concat_tables([rows(range(0, 40), "a", OLD), rows(range(0, 40), "a")]))
    table.write_arrow(pa.concat_tables([rows(range(20, 60), "b", OLD), rows(range(20, 60), "b")]))
    table.create_tag("t2", 2)
    table.write_arrow(rows(range(50, 70), "c"))
    w = table.new_batch_write_builder().new_write()
    w.write_arrow(rows(range(100, 110), "never-committed"))
    w.prepare_commit()  # files written, commit abandoned


@dataclass(frozen=True)
class Operation:
    """One operation under test. ``run`` must be safe to re-run after a failure (the retry)."""

    name: str
    run: Callable[[Any], Any]
    options: dict = field(default_factory=dict)
    state: Callable[[Any], Any] = state_rows
    setup: Callable[[Any], None] = default_setup
    keeps_rows: bool = False  # a layout change (compaction, rescale): the committed rows stay exactly the same
    changes_rows: bool = False  # the operation must change the state (it would be a silent no-op otherwise)


def _history_with_long_lived_changelogs(table) -> None:
    """The default history, then snapshot expiry: the expired snapshots' changelogs outlive them."""
    default_setup(table)
    table.write_arrow(rows(range(0, 10), "d"))
    table.maintenance.expire_snapshots(retain_min=1, retain_max=1)


def _lease_and_read(table):
    with table.lease(holder="reader") as snap:
        got = table.to_arrow(snapshot_id=snap.id)
    assert got.num_rows > 0


DV_WRITE_ONLY = {"deletion-vectors.enabled": "true", "write-only": "true"}


def committed(table) -> list[tuple]:
    """Every committed row, level 0 included where batch reads hide it (deletion vectors)."""
    from lake_core.read.scan import TableScan
    from lake_core.read.split_read import SplitRead

    t = SplitRead(table.store).to_arrow(TableScan(table.store, table.latest_snapshot(), all_levels=True).splits())
    return sorted(zip(t.column("dt").to_pylist(), t.column("k").to_pylist(), t.column("v").to_pylist()))


def state_visible_and_committed(table) -> Any:
    return content(table), committed(table)


def state_committed_and_bucket(table) -> Any:
    """A rescale commits partition by partition and shows the hidden rows of each one it rewrote:
    what must hold at every step is the committed content (and the bucket option)."""
    return committed(table), table.options.bucket


def _dv_history_with_level0(table) -> None:
    """The default history fully compacted (vectors apply above level 0), then upserts and new
    keys left at level 0, which batch reads do not show yet."""
    default_setup(table)
    table.maintenance.compact(full=True)
    table.write_arrow(pa.concat_tables([rows(range(30, 45), "l0", OLD), rows(range(60, 80), "l0")]))


def _history_then_ttl_turned_on(table) -> None:
    """The default history, a time column added (alter), rows ten days old and fresh ones, then
    record-level expiry turned on by another alter: every file is on an older schema."""
    from lake_core import SchemaChange
    from lake_core.definition import commit_schema_changes

    default_setup(table)
    table = table.with_schema(commit_schema_changes(table, [SchemaChange.add_column("ts", pa.int64())]))
    now = int(time.time())
    batch = rows(range(200, 220), "ttl")
    table.write_arrow(batch.append_column("ts", pa.array([now - 10 * 86400] * 10 + [now] * 10, pa.int64())))
    commit_schema_changes(
        table,
        [
            SchemaChange.set_option("record-level.expire-time", "1 d"),
            SchemaChange.set_option("record-level.time-field", "ts"),
        ],
    )


def _history_then_renamed(table) -> None:
    """The default history, then ``v`` renamed to ``v_old`` and a new ``v`` added: snapshot 2 (and
    tag t2) hold the old ``v``, which the latest schema calls ``v_old``."""
    from lake_core import SchemaChange
    from lake_core.definition import commit_schema_changes

    default_setup(table)
    table = table.with_schema(commit_schema_changes(table, [SchemaChange.rename_column("v", "v_old")]))
    table = table.with_schema(commit_schema_changes(table, [SchemaChange.add_column("v", pa.string())]))
    table.write_arrow(rows(range(0, 10), "new").append_column("v_old", pa.array(["x"] * 10)))


def _time_travel_across_schemas(table):
    """Snapshot 2 and tag t2 read with the schema they were written under: ``v`` holds old values."""
    for got in (table.to_arrow(snapshot_id=2), table.to_arrow(tag="t2")):
        assert got.column_names == ["dt", "k", "v"], got.column_names
        assert got.column("v").null_count == 0 and got.num_rows == 120  # keys 0-59 in both partitions


OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "commit APPEND", lambda t: t.write_arrow(rows(range(60, 90), "n"), commit_user="job", commit_identifier=7)
    ),
    Operation(
        "commit OVERWRITE",
        lambda t: t.write_arrow(rows(range(0, 5), "o"), overwrite={"dt": NEW}, commit_user="job", commit_identifier=7),
    ),
    Operation(
        "commit COMPACT (full compaction)", lambda t: t.maintenance.compact(full=True, parallelism=1), keeps_rows=True
    ),
    Operation(
        "dedicated compaction (picker)",
        lambda t: t.maintenance.compact(parallelism=1),
        options={"num-sorted-run.compaction-trigger": "2", "write-only": "true"},
        keeps_rows=True,
    ),
    Operation(
        "inline compaction",
        lambda t: t.write_arrow(rows(range(65, 75), "i"), commit_user="job", commit_identifier=7),
        options={"num-sorted-run.compaction-trigger": "2"},
    ),
    Operation("manifest compaction", lambda t: t.maintenance.compact_manifest(), keeps_rows=True),
    Operation("snapshot expiry", lambda t: t.maintenance.expire_snapshots(retain_min=1, retain_max=1)),
    Operation(
        "changelog expiry",
        lambda t: t.maintenance.expire_changelogs(retain_min=1, retain_max=1),
        options={"changelog-producer": "input", "changelog.num-retained.min": "10", "changelog.num-retained.max": "20"},
        setup=_history_with_long_lived_changelogs,
    ),
    Operation(
        "tag expiry",
        lambda t: t.maintenance.expire_tags(older_than=dt.datetime.now() + dt.timedelta(1)),
        options={"tag.default-time-retained": "1 d"},
        state=state_rows_and_tags,
    ),
    Operation("partition expiry", lambda t: t.maintenance.expire_partitions(expiration_time=dt.timedelta(days=1))),
    Operation("orphan removal", lambda t: t.maintenance.remove_orphan_files(force=True, older_than=dt.timedelta(0))),
    Operation("rollback", lambda t: t.maintenance.rollback_to(snapshot_id=2), state=state_rows_and_latest),
    Operation("rescale", lambda t: t.maintenance.rescale(bucket=3), state=state_rows_and_bucket, keeps_rows=True),
    Operation("lease take/release", _lease_and_read),
    Operation(
        "rescale (deletion vectors, rows at level 0)",
        lambda t: t.maintenance.rescale(bucket=3),
        options=DV_WRITE_ONLY,
        setup=_dv_history_with_level0,
        state=state_committed_and_bucket,
        keeps_rows=True,
    ),
    Operation(
        "delete_where (deletion vectors, rows at level 0)",
        lambda t: t.delete_where(t.predicate_builder().between("k", 35, 65)),
        options=DV_WRITE_ONLY,
        setup=_dv_history_with_level0,
        state=state_visible_and_committed,
    ),
    Operation(
        "record expiry after an alter",
        lambda t: t.maintenance.compact(expire_records=True, parallelism=1),
        setup=_history_then_ttl_turned_on,
        changes_rows=True,
    ),
    Operation("time travel across schemas", _time_travel_across_schemas, setup=_history_then_renamed),
)


# -- where the warehouse lives ----------------------------------------------------------------------
class LocalStore:
    kind = "local"

    def __init__(self, base: str):
        self.base = base

    def new_uri(self) -> str:
        return f"file://{self.base}/{uuid.uuid4().hex[:10]}"

    def copy(self, src: str, dst: str) -> None:
        shutil.copytree(src[len("file://") :], dst[len("file://") :])

    def drop(self, uri: str) -> None:
        shutil.rmtree(uri[len("file://") :], ignore_errors=True)

    storage_options: dict = {}


class S3Store:
    kind = "s3"

    def __init__(self, server):
        self.client = server.boto3_client()
        self.bucket = server.create_bucket()
        self.storage_options = server.storage_options()

    def new_uri(self) -> str:
        return f"s3://{self.bucket}/{uuid.uuid4().hex[:10]}"

    def _keys(self, uri: str):
        prefix = uri.split("/", 3)[3] + "/"
        for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix):
            for obj in page.get("Contents", []):
                yield obj["Key"]

    def copy(self, src: str, dst: str) -> None:
        sp, dp = src.split("/", 3)[3], dst.split("/", 3)[3]
        for key in self._keys(src):
            self.client.copy_object(
                Bucket=self.bucket, Key=dp + key[len(sp) :], CopySource={"Bucket": self.bucket, "Key": key}
            )

    def drop(self, uri: str) -> None:
        for key in list(self._keys(uri)):
            self.client.delete_object(Bucket=self.bucket, Key=key)


def open_table(store, uri: str, fileio: FileIO | None = None):
    return Catalog(uri, store.storage_options, fileio=fileio).get_table(IDENT)


def build_template(store, op: Operation) -> str:
    uri = store.new_uri()
    cat = Catalog(uri, store.storage_options)
    cat.create_database("db")
    table = cat.create_table(
        IDENT, schema=SCHEMA, primary_keys=["dt", "k"], partition_keys=["dt"], options={**BASE_OPTIONS, **op.options}
    )
    op.setup(table)
    time.sleep(0.01)  # every file of the template is older than any orphan-removal floor taken later
    return uri


# -- invariants -------------------------------------------------------------------------------------
class InvariantError(AssertionError):
    pass


def read_everything(table) -> int:
    """Read every retained snapshot and tag completely; the number of rows read."""
    n = 0
    for sid in table.snapshot_manager.list_ids():
        n += len(content(table, snapshot_id=sid))
    for tag in table.list_tags():
        n += len(content(table, tag=tag))
    return n


_METADATA_DIRS = ("schema", "snapshot", "tag", "consumer", "branch", "changelog")


def unreferenced_files(table) -> list[str]:
    """Files under the table that no retained snapshot, tag or long-lived changelog mentions, and
    temp files anywhere."""
    from lake_core.maintenance.references import ReferencedNames, long_lived_changelogs, tagged_snapshots

    refs = ReferencedNames(table)
    for sid in table.snapshot_manager.list_ids():
        refs.add_snapshot(table.snapshot_manager.get(sid))
    for snap in tagged_snapshots(table):
        refs.add_snapshot(snap)
    for changelog in long_lived_changelogs(table):
        refs.add_changelog(changelog)
    root_key = table.paths.root.split("://", 1)[-1].rstrip("/") + "/"
    out = []
    for full, _size, _mtime in table.fileio.list_files_recursive(table.paths.root):
        rel = full.split("://", 1)[-1][len(root_key) :]
        name = rel.rsplit("/", 1)[-1]
        if name.startswith(".") and name.endswith(".tmp"):
            out.append(rel)
        elif rel.split("/", 1)[0] not in _METADATA_DIRS and name not in refs.names:
            out.append(rel)
    return out


@dataclass
class OpReport:
    operation: str
    store: str
    counts: dict = field(default_factory=dict)
    injected: Counter = field(default_factory=Counter)  # by mode
    outcomes: Counter = field(default_factory=Counter)  # "before" / "after" seen right after the fault
    rows_verified: int = 0
    half_visible: int = 0
    lost_rows: int = 0
    neutral: bool = False  # the operation leaves the rows (state) as they were: before == after
    failures: list = field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(self.injected.values())


def sample_steps(count: int, cap: int | None) -> list[int]:
    """Every step 1..count, or ``cap`` of them spread evenly (always the first and the last)."""
    if cap is None or count <= cap:
        return list(range(1, count + 1))
    if cap == 1:
        return [count]
    return sorted({round(1 + i * (count - 1) / (cap - 1)) for i in range(cap)})


def check_after_fault(store, uri: str, op: Operation, before, after, report: OpReport, fault: Fault) -> None:
    table = open_table(store, uri)  # a new process state: only what is on storage counts
    now = op.state(table)
    if now == before:
        report.outcomes["before"] += 1
    elif now == after:
        report.outcomes["after"] += 1
    else:
        report.half_visible += 1
        raise InvariantError(f"{op.name} {fault}: the table shows neither the state before nor after")
    report.rows_verified += read_everything(table)
    op.run(table)  # the retry
    table = open_table(store, uri)
    if op.state(table) != after:
        raise InvariantError(f"{op.name} {fault}: re-running did not reach the state after the operation")
    final = content(table)
    table.maintenance.remove_orphan_files(force=True, older_than=dt.timedelta(0))
    table = open_table(store, uri)
    if content(table) != final:
        report.lost_rows += abs(len(final) - len(content(table))) or 1
        raise InvariantError(f"{op.name} {fault}: orphan removal changed the table")
    report.rows_verified += read_everything(table)
    left = unreferenced_files(table)
    if left:
        raise InvariantError(f"{op.name} {fault}: orphan removal left unreferenced files {left[:5]}")


def explore(store, op: Operation, *, cap: int | None, modes=MODES, kinds=KINDS, raise_first: bool = True) -> OpReport:
    report = OpReport(op.name, store.kind)
    template = build_template(store, op)
    try:
        before = op.state(open_table(store, template))
        probe = store.new_uri()
        store.copy(template, probe)
        counter = FaultyFileIO(FileIO(probe, store.storage_options))
        op.run(open_table(store, probe, counter))
        after = op.state(open_table(store, probe))
        report.neutral = before == after
        if op.changes_rows and report.neutral:
            raise InvariantError(f"{op.name}: left the table as it was although it must change it")
        if op.keeps_rows:
            kept, now = committed(open_table(store, template)), committed(open_table(store, probe))
            if kept != now:
                raise InvariantError(
                    f"{op.name}: changed the committed rows ({len(kept)} before, {len(now)} after, "
                    f"{len(set(kept) - set(now))} lost) although it must keep them"
                )
        store.drop(probe)
        report.counts = {k: counter.counts[k] for k in KINDS}
        for kind in kinds:
            for n in sample_steps(report.counts[kind], cap):
                for mode in modes:
                    fault = Fault(kind, n, mode)
                    uri = store.new_uri()
                    store.copy(template, uri)
                    fio = FaultyFileIO(FileIO(uri, store.storage_options), fault)
                    try:
                        op.run(open_table(store, uri, fio))
                    except (InjectedCrash, Exception):
                        pass  # the operation may fail: only what storage holds afterwards matters
                    report.injected[mode] += int(fio.fired)
                    try:
                        check_after_fault(store, uri, op, before, after, report, fault)
                    except Exception as e:
                        report.failures.append(f"{fault}: {type(e).__name__}: {e}")
                        if raise_first:
                            raise
                    finally:
                        store.drop(uri)
    finally:
        store.drop(template)
    return report
