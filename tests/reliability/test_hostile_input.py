"""Public entry points × hostile input: each answered by a specific ``LakeError`` subclass whose
message names the argument, value or file, with every byte under the warehouse's parent directory
(the warehouse and its surroundings) unchanged.

tests/safety covers names, option values, overwrite specs, NaN keys and reads of corrupted
files; this table adds the maintenance operations, commit identities, leases, tags, time travel
and writes, and corrupted files met by each maintenance operation.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil

import pyarrow as pa
import pytest

from lake_core import Catalog, errors
from lake_core.errors import LeaseError, MaintenanceAbortedError, MaintenanceArgumentError

from .harness import IDENT, NEW, SCHEMA, content, default_setup, rows

D = dt.timedelta


def _tree(base: str) -> dict[str, bytes]:
    """Every file under ``base`` with its bytes, and every directory outside the warehouse (an
    empty directory inside it, e.g. ``consumer/`` after a refused lease, is not a change: object
    stores have none)."""
    out = {}
    for root, dirs, files in os.walk(base):
        for d in dirs:
            if not os.path.join(root, d).startswith(os.path.join(base, "wh")):
                out[os.path.join(root, d) + "/"] = b"<dir>"
        for f in files:
            p = os.path.join(root, f)
            with open(p, "rb") as fh:
                out[p] = fh.read()
    return out


def _lease(t, *args, **kw):
    with t.lease(*args, **kw):
        pass


# (case, call, error class, text the message must contain)
ARGUMENTS = [
    (
        "expire retain_min=0",
        lambda t: t.maintenance.expire_snapshots(retain_min=0),
        MaintenanceArgumentError,
        "retain_min = 0",
    ),
    (
        "expire retain_min=str",
        lambda t: t.maintenance.expire_snapshots(retain_min="3"),
        MaintenanceArgumentError,
        "retain_min = '3'",
    ),
    (
        "expire retain_min=bool",
        lambda t: t.maintenance.expire_snapshots(retain_min=True),
        MaintenanceArgumentError,
        "retain_min = True",
    ),
    (
        "expire min>max",
        lambda t: t.maintenance.expire_snapshots(retain_min=5, retain_max=2),
        MaintenanceArgumentError,
        "retain_min (5) must not exceed retain_max (2)",
    ),
    (
        "expire older_than=str",
        lambda t: t.maintenance.expire_snapshots(older_than="yesterday"),
        MaintenanceArgumentError,
        "'yesterday'",
    ),
    (
        "expire max_deletes=-1",
        lambda t: t.maintenance.expire_snapshots(max_deletes=-1),
        MaintenanceArgumentError,
        "max_deletes = -1",
    ),
    (
        "orphans negative floor",
        lambda t: t.maintenance.remove_orphan_files(older_than=D(-1)),
        MaintenanceArgumentError,
        "must not be negative",
    ),
    (
        "orphans floor=int",
        lambda t: t.maintenance.remove_orphan_files(older_than=60),
        MaintenanceArgumentError,
        "older_than = 60",
    ),
    (
        "orphans small floor unforced",
        lambda t: t.maintenance.remove_orphan_files(older_than=D(minutes=5)),
        MaintenanceArgumentError,
        "below one hour",
    ),
    (
        "orphans force=str",
        lambda t: t.maintenance.remove_orphan_files(older_than=D(0), force="yes"),
        MaintenanceArgumentError,
        "force = 'yes'",
    ),
    (
        "compact unknown partition column",
        lambda t: t.maintenance.compact(partitions={"zz": "1"}),
        errors.InvalidOptionError,
        "'zz'",
    ),
    (
        "compact partitions=int",
        lambda t: t.maintenance.compact(partitions=7),
        errors.InvalidOptionError,
        "'partitions' must be a dict",
    ),
    (
        "compact partitions text without '='",
        lambda t: t.maintenance.compact(partitions="dt"),
        errors.InvalidOptionError,
        "'column=value' pairs",
    ),
    (
        "compact partition matching nothing",
        lambda t: t.maintenance.compact(partitions="dt=1"),
        errors.PartitionNotFoundError,
        "partition {'dt': '1'} matches no partition with data files",
    ),
    (
        "compact one of two selectors matching nothing",
        lambda t: t.maintenance.compact(full=True, partitions=[{"dt": "2020-01-01"}, {"dt": "2020-01-02"}]),
        errors.PartitionNotFoundError,
        "{'dt': '2020-01-02'} matches no partition",
    ),
    (
        "compact parallelism=0",
        lambda t: t.maintenance.compact(parallelism=0),
        MaintenanceArgumentError,
        "parallelism = 0",
    ),
    ("compact full=str", lambda t: t.maintenance.compact(full="yes"), MaintenanceArgumentError, "full = 'yes'"),
    (
        "compact expire_records without options",
        lambda t: t.maintenance.compact(expire_records=True),
        errors.InvalidOptionError,
        "record-level.expire-time",
    ),
    (
        "compact_manifest dry_run=str",
        lambda t: t.maintenance.compact_manifest(dry_run="no"),
        MaintenanceArgumentError,
        "dry_run = 'no'",
    ),
    (
        "expire_partitions duration=str",
        lambda t: t.maintenance.expire_partitions(expiration_time="soon"),
        errors.InvalidOptionError,
        "'soon'",
    ),
    (
        "expire_partitions duration=0",
        lambda t: t.maintenance.expire_partitions(expiration_time=D(0)),
        MaintenanceArgumentError,
        "must be positive",
    ),
    (
        "expire_partitions formatter",
        lambda t: t.maintenance.expire_partitions(expiration_time=D(1), timestamp_formatter="%Q"),
        MaintenanceArgumentError,
        "'%Q'",
    ),
    (
        "expire_partitions pattern",
        lambda t: t.maintenance.expire_partitions(expiration_time=D(1), timestamp_pattern="$nope"),
        MaintenanceArgumentError,
        "unknown: nope",
    ),
    (
        "rollback missing snapshot",
        lambda t: t.maintenance.rollback_to(snapshot_id=99),
        errors.SnapshotNotFoundError,
        "snapshot 99",
    ),
    (
        "rollback snapshot 0",
        lambda t: t.maintenance.rollback_to(snapshot_id=0),
        MaintenanceArgumentError,
        "snapshot_id = 0",
    ),
    (
        "rollback snapshot=str",
        lambda t: t.maintenance.rollback_to(snapshot_id="2"),
        MaintenanceArgumentError,
        "snapshot_id = '2'",
    ),
    ("rollback missing tag", lambda t: t.maintenance.rollback_to(tag="nope"), errors.TagNotFoundError, "'nope'"),
    ("rollback tag ../x", lambda t: t.maintenance.rollback_to(tag="../x"), errors.InvalidNameError, "'../x'"),
    (
        "rollback both",
        lambda t: t.maintenance.rollback_to(snapshot_id=2, tag="t2"),
        MaintenanceArgumentError,
        "exactly one of snapshot_id or tag",
    ),
    ("rescale bucket=0", lambda t: t.maintenance.rescale(bucket=0), errors.InvalidOptionError, "got 0"),
    ("rescale bucket=str", lambda t: t.maintenance.rescale(bucket="4"), errors.InvalidOptionError, "got '4'"),
    ("rescale bucket=bool", lambda t: t.maintenance.rescale(bucket=True), errors.InvalidOptionError, "got True"),
    (
        "rescale bucket too large",
        lambda t: t.maintenance.rescale(bucket=2**40),
        errors.InvalidOptionError,
        "out of range",
    ),
    (
        "rescale unknown partition column",
        lambda t: t.maintenance.rescale(bucket=3, partitions=[{"zz": 1}]),
        errors.InvalidOptionError,
        "'zz', which is not a partition column",
    ),
    (
        "rescale partitions=str without '='",
        lambda t: t.maintenance.rescale(bucket=3, partitions="dt"),
        errors.InvalidOptionError,
        "'column=value' pairs",
    ),
    (
        "rescale partition matching nothing (no schema change either)",
        lambda t: t.maintenance.rescale(bucket=64, partitions=[{"dt": "2099-01-02"}]),
        errors.PartitionNotFoundError,
        "{'dt': '2099-01-02'} matches no partition with data files",
    ),
    (
        "rescale_partition of a column of the wrong type",
        lambda t: t.maintenance.rescale_partition(partition={"dt": [1]}, bucket=3),
        errors.InvalidOptionError,
        "not a value of that type",
    ),
    ("lease ttl nan", lambda t: _lease(t, holder="r", ttl=float("nan")), MaintenanceArgumentError, "got nan"),
    ("lease ttl inf", lambda t: _lease(t, holder="r", ttl=float("inf")), MaintenanceArgumentError, "got inf"),
    (
        "lease ttl of a century",
        lambda t: _lease(t, holder="r", ttl=D(days=36500)),
        MaintenanceArgumentError,
        "at most 3650 days",
    ),
    ("lease snapshot 0", lambda t: _lease(t, 0, holder="r"), MaintenanceArgumentError, "snapshot id 0"),
    ("lease missing snapshot", lambda t: _lease(t, 99, holder="r"), LeaseError, "snapshot 99"),
    ("lease holder ../x", lambda t: _lease(t, holder="../x"), errors.InvalidNameError, "'../x'"),
    ("lease holder empty", lambda t: _lease(t, holder=""), errors.InvalidNameError, "consumer id ''"),
    ("lease negative ttl", lambda t: _lease(t, holder="r", ttl=D(-1)), MaintenanceArgumentError, "ttl"),
    ("tag ../x", lambda t: t.create_tag("../x"), errors.InvalidNameError, "'../x'"),
    ("tag empty", lambda t: t.create_tag(""), errors.InvalidNameError, "tag name ''"),
    ("tag exists", lambda t: t.create_tag("t2"), errors.InvalidOptionError, "'t2' already exists"),
    ("tag missing snapshot", lambda t: t.create_tag("x", 99), errors.SnapshotNotFoundError, "snapshot 99"),
    ("delete missing tag", lambda t: t.delete_tag("nope"), errors.TagNotFoundError, "'nope'"),
    ("read missing snapshot", lambda t: t.to_arrow(snapshot_id=99), errors.SnapshotNotFoundError, "snapshot 99"),
    ("read snapshot -1", lambda t: t.to_arrow(snapshot_id=-1), errors.SnapshotNotFoundError, "snapshot -1"),
    ("read tag a/b", lambda t: t.to_arrow(tag="a/b"), errors.InvalidNameError, "'a/b'"),
    (
        "write wrong types",
        lambda t: t.write_arrow(pa.table({"dt": [1], "k": ["a"], "v": [1]})),
        errors.SchemaMismatchError,
        "column 'dt'",
    ),
    (
        "write missing column",
        lambda t: t.write_arrow(pa.table({"dt": ["x"], "k": [1]})),
        errors.SchemaMismatchError,
        "['v']",
    ),
    (
        "write unknown column",
        lambda t: t.write_arrow(pa.table({"dt": ["x"], "k": [1], "v": ["a"], "zz": [1]})),
        errors.SchemaMismatchError,
        "['zz']",
    ),
    (
        "write NULL key",
        lambda t: t.write_arrow(pa.table({"dt": ["x"], "k": pa.array([None], pa.int64()), "v": ["a"]})),
        errors.InvalidDataError,
        "column 'k'",
    ),
    (
        "write NULL partition of the key",
        lambda t: t.write_arrow(pa.table({"dt": pa.array([None], pa.string()), "k": [1], "v": ["a"]})),
        errors.InvalidDataError,
        "column 'dt'",
    ),
    (
        "write a list of dicts",
        lambda t: t.write_arrow([{"dt": "x", "k": 1, "v": "a"}]),
        errors.SchemaMismatchError,
        "got list",
    ),
    ("delete_where(None)", lambda t: t.delete_where(None), errors.PredicateError, "needs a Predicate"),
    (
        "commit identifier=str",
        lambda t: t.write_arrow(rows([1], "x"), commit_user="u", commit_identifier="7"),
        errors.InvalidOptionError,
        "commit identifier '7'",
    ),
    (
        "commit identifier beyond long",
        lambda t: t.write_arrow(rows([1], "x"), commit_user="u", commit_identifier=2**63),
        errors.InvalidOptionError,
        "Java's long range",
    ),
    (
        "commit user empty",
        lambda t: t.write_arrow(rows([1], "x"), commit_user="", commit_identifier=7),
        errors.InvalidOptionError,
        "commit user ''",
    ),
    (
        "commit user not a string",
        lambda t: t.write_arrow(rows([1], "x"), commit_user=5, commit_identifier=7),
        errors.InvalidOptionError,
        "commit user 5",
    ),
]


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    """One table for every argument case (each must leave it byte for byte as it was)."""
    base = str(tmp_path_factory.mktemp("hostile"))
    os.makedirs(f"{base}/outside")
    with open(f"{base}/outside/keep", "wb") as f:
        f.write(b"not lake_core's")
    cat = Catalog(f"file://{base}/wh")
    cat.create_database("db")
    t = cat.create_table(IDENT, schema=SCHEMA, primary_keys=["dt", "k"], partition_keys=["dt"], options={"bucket": "2"})
    default_setup(t)
    return base, cat


@pytest.mark.parametrize("case,call,error,needle", ARGUMENTS, ids=[a[0] for a in ARGUMENTS])
def test_hostile_arguments_are_refused_by_name_and_change_nothing(shared, case, call, error, needle):
    base, cat = shared
    table = cat.get_table(IDENT)
    before, rows_before = _tree(base), content(table)
    with pytest.raises(error) as info:
        call(table)
    assert needle in str(info.value)
    assert isinstance(info.value, errors.LakeError)
    assert _tree(base) == before, f"{case} changed files"
    assert content(cat.get_table(IDENT)) == rows_before


# -- corrupted or missing files met by each operation --------------------------------------------------------------
def _target(t, kind: str) -> str:
    s = t.latest_snapshot()
    store = t.manifest_store
    if kind == "snapshot":
        return t.paths.snapshot(s.id)
    if kind == "manifest list":
        return t.paths.manifest(s.base_manifest_list)
    if kind == "manifest":
        return t.paths.manifest(store.read_manifest_list(s.base_manifest_list)[0].file_name)
    if kind == "index manifest":
        return t.paths.manifest(s.index_manifest)
    from lake_core.maintenance.references import data_file_paths

    live = [e for e in store.live_entries(s) if store.partition_values(e.partition)[0] == NEW]
    return data_file_paths(t, live[0])[0][0]


def _damage(path: str, how: str) -> None:
    with open(path, "rb") as f:
        data = f.read()
    if how == "missing":
        os.unlink(path)
        return
    with open(path, "wb") as f:
        f.write(data[: len(data) // 2] if how == "truncated" else b"\xff\x00garbage" * 5)


OPS = {
    "compact": lambda t: t.maintenance.compact(full=True),
    "compact_manifest": lambda t: t.maintenance.compact_manifest(),
    "expire_snapshots": lambda t: t.maintenance.expire_snapshots(retain_min=1, retain_max=1),
    "remove_orphan_files": lambda t: t.maintenance.remove_orphan_files(force=True, older_than=D(0)),
    "rescale_partition": lambda t: t.maintenance.rescale_partition(partition={"dt": NEW}, bucket=3),
    "expire_partitions": lambda t: t.maintenance.expire_partitions(expiration_time=D(days=1)),
    "rollback_to": lambda t: t.maintenance.rollback_to(snapshot_id=2),
    "write": lambda t: t.write_arrow(rows([1000], "x")),
    "read": lambda t: t.to_arrow(),
}
# (damaged file, how) → the operations that must stop on it; an operation absent here may not
# need that file (expiry never reads the manifests of retained snapshots, for instance)
MUST_STOP = {
    ("snapshot", "garbage"): list(OPS),
    ("manifest list", "garbage"): list(OPS),
    ("manifest", "truncated"): [o for o in OPS if o != "expire_snapshots"],  # (retained snapshots' only)
    ("data file", "truncated"): ["compact", "rescale_partition", "read"],
    ("data file", "garbage"): ["compact", "rescale_partition", "read"],
    ("data file", "missing"): ["compact", "rescale_partition", "read"],
}
CORRUPT_CASES = [(kind, how, op) for (kind, how), ops in MUST_STOP.items() for op in dict.fromkeys(ops)]


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    base = str(tmp_path_factory.mktemp("corrupt-template"))
    cat = Catalog(f"file://{base}/wh")
    cat.create_database("db")
    t = cat.create_table(IDENT, schema=SCHEMA, primary_keys=["dt", "k"], partition_keys=["dt"], options={"bucket": "2"})
    default_setup(t)
    return f"{base}/wh"


@pytest.mark.parametrize("kind,how,op", CORRUPT_CASES, ids=[f"{k}-{h}-{o}" for k, h, o in CORRUPT_CASES])
def test_damaged_file_stops_the_operation_naming_it(tmp_path, template, kind, how, op):
    shutil.copytree(template, tmp_path / "wh")
    uri = f"file://{tmp_path}/wh"
    path = _target(Catalog(uri).get_table(IDENT), kind)
    _damage(path[len("file://") :], how)
    before = _tree(str(tmp_path))
    with pytest.raises((errors.FormatError, MaintenanceAbortedError)) as info:
        OPS[op](Catalog(uri).get_table(IDENT))
    assert path.rsplit("/", 1)[-1] in str(info.value), str(info.value)
    assert _tree(str(tmp_path)) == before, f"{op} changed files after meeting a damaged {kind}"


def test_hostile_partition_values_round_trip_through_every_partition_operation(tmp_path):
    """Values that are path syntax elsewhere are data here: escaped on disk, inside the table,
    and compaction, rescale and overwrite select exactly that partition."""
    schema = pa.schema([pa.field("p", pa.string(), nullable=False), ("k", pa.int64()), ("v", pa.string())])
    values = [
        "a=b",
        "50%",
        "%2F",
        "ü/ñ",
        "",
        " ",
        "a b",
        "__DEFAULT_PARTITION__",
        "日本",
        "a\nb",
        "a:b",
        "*?",
        "..",
        "../../outside",
    ]
    cat = Catalog(f"file://{tmp_path}/wh")
    cat.create_database("db")
    t = cat.create_table("db.p", schema=schema, primary_keys=["p", "k"], partition_keys=["p"], options={"bucket": "1"})
    for i in range(2):
        t.write_arrow(pa.table({"p": values, "k": [i] * len(values), "v": ["a"] * len(values)}, schema=schema))
    model = {(v, i): "a" for v in values for i in range(2)}
    for n, v in enumerate(values):
        assert t.maintenance.compact(full=True, partitions={"p": v}).units_planned == 1
        t.write_arrow(pa.table({"p": [v], "k": [9], "v": [f"o{n}"]}, schema=schema), overwrite={"p": v})
        model = {key: x for key, x in model.items() if key[0] != v}
        model[(v, 9)] = f"o{n}"
        got = {(r["p"], r["k"]): r["v"] for r in t.to_arrow().to_pylist()}
        assert got == model, v
    t.maintenance.rescale(bucket=2, partitions=[{"p": v} for v in values[:3]])
    assert {(r["p"], r["k"]): r["v"] for r in cat.get_table("db.p").to_arrow().to_pylist()} == model
    table_dir = f"{tmp_path}/wh/db.db/p/"
    assert all(
        p.startswith(table_dir) for p in _tree(str(tmp_path)) if p not in (f"{tmp_path}/wh/", f"{tmp_path}/wh/db.db/")
    )
