"""The ``lake`` command on real tables: its texts, its JSON (equal to the Python API's result),
``--dry-run`` changing nothing, bad input exiting 2 with the table untouched."""

from __future__ import annotations

import datetime as dt
import hashlib
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from maintenance.helpers import make_table

from lake_cli.main import main
from lake_core import Catalog

ROOT = Path(__file__).resolve().parents[2]


def _fill(table, commits: int = 8) -> None:
    for i in range(commits):
        rows = {"dt": [f"2024-01-0{i % 3 + 1}"] * 3, "id": [i, i + 1, i + 2], "v": [i] * 3, "op": ["+I"] * 3}
        table.write_arrow(pa.table(rows))


@pytest.fixture
def table(warehouse):
    t = make_table(warehouse, **{"write-only": "false"})
    _fill(t)
    return t


def run(warehouse: str, *argv: str, environ: dict | None = None, capsys=None) -> tuple[int, str, str]:
    out = io.StringIO()
    if capsys is not None:
        capsys.readouterr()
    code = main([*argv, "--warehouse", warehouse], environ=environ or {}, out=out)
    err = capsys.readouterr().err if capsys is not None else ""
    return code, out.getvalue(), err


def listing(root: Path) -> dict[str, str]:
    """Every file of the warehouse and a digest of its content."""
    return {
        str(p.relative_to(root)): hashlib.sha1(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _comparable(obj, root: str):
    """A result's JSON without what differs between two runs (time) or two warehouses (the root)."""
    if isinstance(obj, dict):
        return {k: _comparable(v, root) for k, v in obj.items() if k not in ("duration_s", "summary")}
    if isinstance(obj, list):
        return [_comparable(v, root) for v in obj]
    if isinstance(obj, str):
        return obj.replace(root, "<root>")
    return obj


def test_tables_and_show(warehouse, table, capsys):
    code, out, _ = run(warehouse, "tables", capsys=capsys)
    assert code == 0 and out.startswith("db.t  snapshot 8 ") and "partitioned by dt" in out
    code, out, _ = run(warehouse, "tables", "--json", capsys=capsys)
    assert json.loads(out) == [{"table": "db.t", "snapshot": 8, "records": 24, "bucket": "2", "partition_keys": ["dt"]}]
    code, out, _ = run(warehouse, "show", "db.t", capsys=capsys)
    lines = out.splitlines()
    assert code == 0 and lines[0] == "table db.t (schema 0)"
    assert "    dt                       string  (primary key, partition)" in lines
    assert "  snapshots: 8 (the last 8):" in lines and any(line.startswith("  health: ") for line in lines)
    shown = json.loads(run(warehouse, "show", "db.t", "--json", capsys=capsys)[1])
    health = table.maintenance.health()
    assert shown["health"]["files"] == health.files == 15 and [s["id"] for s in shown["snapshots"]] == list(range(1, 9))


def test_show_reads_a_system_table_and_maintenance_refuses_one(warehouse, table, capsys):
    """`lake show db.t$snapshots` prints the system table's rows (its JSON equals `to_arrow()`); a
    maintenance command on a system table exits 2 and names it, the table untouched."""
    code, out, _ = run(warehouse, "show", "db.t$snapshots", capsys=capsys)
    lines = out.splitlines()
    assert code == 0 and lines[0].split()[:3] == ["snapshot_id", "schema_id", "commit_user"]
    assert [line.split()[0] for line in lines[1:]] == [str(i) for i in range(1, 9)]
    code, out, _ = run(warehouse, "show", "db.t$options", "--json", capsys=capsys)
    expected = Catalog(warehouse).get_table("db.t$options").to_arrow().to_pylist()
    assert code == 0 and json.loads(out) == expected and {"key": "bucket", "value": "2"} in expected
    before = listing(Path(warehouse.removeprefix("file://")))
    code, _, err = run(warehouse, "compact", "db.t$files", "--full", capsys=capsys)
    assert code == 2 and "db.t$files is a system table (read-only)" in err
    assert listing(Path(warehouse.removeprefix("file://"))) == before


# (command line, the same call on the Python API); each is run as a dry run and for real
CASES = {
    "compact": (["compact", "db.t", "--full"], lambda t, d: t.maintenance.compact(full=True, dry_run=d)),
    "compact-partition": (
        ["compact", "db.t", "--full", "--partition", "dt=2024-01-02"],
        lambda t, d: t.maintenance.compact(full=True, partitions=[{"dt": "2024-01-02"}], dry_run=d),
    ),
    "compact-bucket": (
        ["compact", "db.t", "--full", "--bucket", "0", "--bucket", "1"],
        lambda t, d: t.maintenance.compact(full=True, buckets=[0, 1], dry_run=d),
    ),
    "expire-snapshots": (
        ["expire-snapshots", "db.t", "--retain-min", "3", "--older-than", "0 s"],
        lambda t, d: t.maintenance.expire_snapshots(retain_min=3, older_than=dt.timedelta(0), dry_run=d),
    ),
    "expire-changelogs": (
        ["expire-changelogs", "db.t", "--older-than", "0 s"],
        lambda t, d: t.maintenance.expire_changelogs(older_than=dt.timedelta(0), dry_run=d),
    ),
    "expire-partitions": (
        ["expire-partitions", "db.t", "--expiration-time", "1 d"],
        lambda t, d: t.maintenance.expire_partitions(expiration_time=dt.timedelta(days=1), dry_run=d),
    ),
    "compact-manifest": (["compact-manifest", "db.t"], lambda t, d: t.maintenance.compact_manifest(dry_run=d)),
    "remove-orphans": (
        ["remove-orphans", "db.t", "--older-than", "0 s", "--force"],
        lambda t, d: t.maintenance.remove_orphan_files(older_than=dt.timedelta(0), force=True, dry_run=d),
    ),
    "rescale": (
        ["rescale", "db.t", "--bucket", "3", "--partition", "dt=2024-01-01"],
        lambda t, d: t.maintenance.rescale(bucket=3, partitions=[{"dt": "2024-01-01"}], dry_run=d),
    ),
    "tag-delete": (["tag", "delete", "db.t", "t1"], lambda t, d: t.maintenance.delete_tag(name="t1", dry_run=d)),
}


def _twin_tables(tmp_path: Path):
    """Two warehouses holding the same table (same rows, same commits), an orphan and a tag each."""
    out = []
    for name in ("a", "b"):
        root = tmp_path / name
        root.mkdir()
        t = make_table(root.as_uri(), **{"write-only": "false"})
        _fill(t)
        t.create_tag("t1", 4)
        orphan = root / "db.db" / "t" / "dt=2024-01-01" / "bucket-0" / "data-orphan-0.parquet"
        orphan.write_bytes(b"x" * 100)
        os.utime(orphan, (0, 0))
        out.append((root, t))
    return out


@pytest.mark.parametrize("case", list(CASES))
def test_each_command_dry_run_changes_nothing_and_equals_the_api(tmp_path, case, capsys):
    argv, api = CASES[case]
    (root, table), _ = _twin_tables(tmp_path)
    before = listing(root)
    code, out, err = run(root.as_uri(), *argv, "--dry-run", "--json", capsys=capsys)
    assert (code, err) == (0, "")
    assert listing(root) == before  # --dry-run changed nothing
    got = json.loads(out)
    expected = api(table, True)  # the same dry run through the API, on the same table
    assert listing(root) == before
    assert got["dry_run"] is True and " took " in got["summary"]
    assert _comparable(got, "") == _comparable(json.loads(json.dumps(_as_json(expected))), "")
    # and the text: the result's describe(), a screen at most
    code, out, _ = run(root.as_uri(), *argv, "--dry-run", capsys=capsys)
    assert code == 0 and listing(root) == before
    assert out.splitlines()[0].split(" (")[0] == expected.summary().split(" (")[0] and len(out.splitlines()) <= 20


@pytest.mark.parametrize("case", list(CASES))
def test_each_command_for_real_equals_the_api(tmp_path, case, capsys):
    argv, api = CASES[case]
    (root, table), (other_root, other) = _twin_tables(tmp_path)
    code, out, err = run(root.as_uri(), *argv, "--json", capsys=capsys)
    assert (code, err) == (0, "")
    got = json.loads(out)
    expected = api(other, False)
    assert got["dry_run"] is False and got["did_something"] is expected.did_something()
    assert _strip_files(_comparable(got, root.as_uri())) == _strip_files(
        _comparable(json.loads(json.dumps(_as_json(expected))), other_root.as_uri())
    )
    assert table.snapshot_manager.latest_id() == other.snapshot_manager.latest_id()
    assert (
        Catalog(root.as_uri()).get_table("db.t").to_arrow().sort_by("id").equals(other.to_arrow().sort_by("id"))
        or case == "expire-partitions"
    )


def _as_json(result):
    from lake_cli.render import result_json

    return result_json(result)


def _strip_files(obj):
    """File names hold random ids (new data files, manifests; so metadata sizes vary by a few
    bytes between twin tables): compare everything else."""
    if isinstance(obj, dict):
        return {
            k: _strip_files(v)
            for k, v in obj.items()
            if k not in ("files", "checksum", "checksum_after", "figures", "skipped") and "bytes" not in k
        }
    if isinstance(obj, list):
        return [_strip_files(v) for v in obj]
    return obj


def test_texts_a_person_reads(warehouse, table, capsys):
    code, out, _ = run(warehouse, "compact", "db.t", "--full", capsys=capsys)
    first = out.splitlines()[0]
    assert code == 0 and first.startswith("full compaction of db.t: snapshot produced 9; units planned 6; units run 6;")
    assert re.search(r"; files read 15 \(\d+\.\d KiB\); files written 6 \(\d+\.\d KiB\); took [\d.]+ m?s$", first), (
        first
    )
    assert re.search(r"\n  bytes read \d+\.\d KiB\n", out)
    code, out, _ = run(warehouse, "compact", "db.t", "--full", capsys=capsys)
    assert code == 0 and out.startswith(
        "full compaction of db.t: nothing done — nothing to compact: every bucket is already one file at the top level"
    )
    # nothing done is 3 with --detailed-exitcode
    assert run(warehouse, "compact", "db.t", "--full", "--detailed-exitcode", capsys=capsys)[0] == 3
    options = ["--option", "record-level.time-field=v", "--option", "record-level.expire-time=100000 d"]
    code, out, _ = run(warehouse, "compact", "db.t", "--expire-records", *options, capsys=capsys)
    assert out.startswith(
        "record expiry of db.t: nothing done — nothing to expire: no bucket holds records past the TTL"
    )
    code, out, _ = run(
        warehouse, "expire-snapshots", "db.t", "--retain-min", "20", "--older-than", "0 s", capsys=capsys
    )
    assert "retain_min = 20 keeps all 9 snapshots (1..9)" in out and "-" not in out.split("keeps")[1].split("(")[0]
    code, out, _ = run(warehouse, "expire-snapshots", "db.t", "--retain-min", "1", "--older-than", "0 s", capsys=capsys)
    lines = out.splitlines()
    assert lines[0].startswith("expire_snapshots on db.t: expired snapshots 1..8 (8); earliest snapshot now 9;")
    assert len(lines) <= 20 and lines[-1].startswith("    … and ") and lines[-1].endswith(" more")


def test_compact_dry_run_counts_what_the_run_will_read_and_upgrade(warehouse, table, capsys):
    """A dry run reports the files the compaction will rewrite (read) apart from those it will only
    move up a level (upgraded, not read): the real run's figures, on the same table."""
    # a partition of one write: each of its buckets holds one small file, which is upgraded, not read
    table.write_arrow(pa.table({"dt": ["2024-02-01"] * 2, "id": [1, 2], "v": [0, 0], "op": ["+I"] * 2}))
    code, out, _ = run(warehouse, "compact", "db.t", "--full", "--dry-run", "--json", capsys=capsys)
    dry = json.loads(out)
    code, out, _ = run(warehouse, "compact", "db.t", "--full", "--dry-run", capsys=capsys)
    said = out.splitlines()[0]  # the summary a person reads says both
    code, out, _ = run(warehouse, "compact", "db.t", "--full", "--json", capsys=capsys)
    done = json.loads(out)
    assert code == 0 and done["snapshot_id"] is not None and dry["snapshot_id"] is None
    figures = ("files_read", "bytes_read", "files_upgraded", "rows_in")
    assert {k: dry[k] for k in figures} == {k: done[k] for k in figures}
    assert dry["files_upgraded"] >= 1 and dry["files_read"] >= 1
    assert f"; files read {done['files_read']} (" in said and f"; files upgraded {done['files_upgraded']}" in said


def test_rollback_tag_and_lease(warehouse, table, capsys):
    root = Path(warehouse.removeprefix("file://"))
    before = listing(root)
    code, out, _ = run(warehouse, "rollback", "db.t", "--snapshot", "6", "--dry-run", capsys=capsys)
    assert code == 0 and listing(root) == before
    assert (
        out.strip()
        == "rollback_to on db.t (dry run): latest snapshot would be 6; would remove snapshots 7, 8; tags none"
    )
    code, out, _ = run(warehouse, "tag", "create", "db.t", "daily", "--snapshot", "5", capsys=capsys)
    assert (code, out.strip()) == (0, "tagged snapshot 5 of db.t as 'daily'") and table.tag("daily").id == 5
    assert json.loads(run(warehouse, "tag", "list", "db.t", "--json", capsys=capsys)[1]) == {"daily": 5}
    code, out, _ = run(warehouse, "rollback", "db.t", "--snapshot", "4", "--json", capsys=capsys)
    got = json.loads(out)
    assert code == 0 and got["removed_snapshots"] == [5, 6, 7, 8] and got["removed_tags"] == ["daily"]
    assert table.snapshot_manager.latest_id() == 4 and table.list_tags() == []

    lease = table.maintenance.acquire_lease(holder="ops", ttl=dt.timedelta(hours=1))
    code, out, _ = run(warehouse, "lease", "list", "db.t", capsys=capsys)
    assert code == 0 and out.startswith(f"{lease.consumer_id}  snapshot 4  lease until ")
    before = listing(root)
    code, out, _ = run(warehouse, "lease", "release", "db.t", lease.consumer_id, "--dry-run", capsys=capsys)
    assert out.strip() == f"would release {lease.consumer_id} on snapshot 4" and listing(root) == before
    code, out, _ = run(warehouse, "lease", "release", "db.t", lease.consumer_id, capsys=capsys)
    assert (code, out.strip()) == (0, f"released {lease.consumer_id} on snapshot 4")  # not "lease lease-..."
    code, out, _ = run(warehouse, "lease", "release", "db.t", lease.consumer_id, "--detailed-exitcode", capsys=capsys)
    assert code == 3 and "already gone" in out


BAD = {
    "unknown table": (["compact", "db.nope"], "table db.nope does not exist"),
    "unknown database": (["show", "nodb.t"], "nodb"),
    "bad partition column": (["compact", "db.t", "--partition", "hr=3"], "'hr', which is not a partition column"),
    "no such partition": (["rescale", "db.t", "--bucket", "4", "--partition", "dt=1999-01-01"], "matches no partition"),
    "partition spec without =": (["compact", "db.t", "--partition", "2024-01-01"], "2024-01-01"),
    "bad option": (["compact", "db.t", "--option", "nonsense"], "--option 'nonsense' must look like key=value"),
    "negative bucket": (["compact", "db.t", "--bucket", "-1"], "not a bucket: -1"),
    "bad retain": (["expire-snapshots", "db.t", "--retain-min", "0"], "retain_min = 0"),
    "bad duration": (["remove-orphans", "db.t", "--older-than", "soon"], "--older-than 'soon' is not a duration"),
    "orphans too young": (["remove-orphans", "db.t", "--older-than", "5 min"], "older_than = 5m"),
    "bad storage option": (
        ["tables", "--storage-option", "novalue"],
        "storage option 'novalue' must look like key=value",
    ),
    "unknown tag": (["tag", "delete", "db.t", "nope"], "nope"),
    "unknown snapshot": (["rollback", "db.t", "--snapshot", "99"], "99"),
    "not a lease": (["lease", "release", "db.t", "consumer-x"], "is not a lease"),
    "unknown flag": (["compact", "db.t", "--fulll"], "unrecognized arguments: --fulll"),
    "missing bucket": (["rescale", "db.t"], "--bucket"),
    "bad spark": (["compact", "db.t", "--full", "--spark", "nowhere"], "'nowhere' is not a Spark master URL"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_exits_2_naming_the_problem_and_leaves_the_table_untouched(warehouse, table, case, capsys):
    argv, message = BAD[case]
    root = Path(warehouse.removeprefix("file://"))
    before = listing(root)
    code, out, err = run(warehouse, *argv, capsys=capsys)
    assert code == 2, err
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert err.startswith("lake") and out == ""
    assert listing(root) == before


def test_a_failed_operation_exits_1_with_one_line(warehouse, table, capsys):
    root = Path(warehouse.removeprefix("file://"))
    (root / "db.db" / "t" / "snapshot" / "snapshot-8").write_text("{ not json")
    code, out, err = run(warehouse, "compact", "db.t", "--full", capsys=capsys)
    assert code == 1 and err.startswith("lake compact: failed: ") and len(err.strip().splitlines()) == 1


def test_no_warehouse_is_usage_error(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # no ./tables.yaml
    code = main(["tables"], environ={})
    err = capsys.readouterr().err
    assert code == 2 and "no warehouse: give --warehouse URI, set $LAKE_WAREHOUSE" in err
    missing = tmp_path / "missing"
    assert main(["tables", "--warehouse", str(missing)], environ={}) == 2
    assert capsys.readouterr().err.strip() == f"lake tables: error: warehouse {missing.as_uri()} does not exist"


def test_warehouse_from_the_environment_and_tables_yaml(tmp_path, table, warehouse, capsys, monkeypatch):
    out = io.StringIO()
    assert main(["tables"], environ={"LAKE_WAREHOUSE": warehouse}, out=out) == 0 and out.getvalue().startswith("db.t")
    # tables.yaml: a path relative to the file; the flag and the environment come first
    cfg = tmp_path / "conf" / "tables.yaml"
    cfg.parent.mkdir()
    rel = os.path.relpath(warehouse.removeprefix("file://"), cfg.parent)
    cfg.write_text(f"warehouse:\n  uri: {rel}\ntables: []\n")
    out = io.StringIO()
    assert main(["tables", "--config", str(cfg)], environ={}, out=out) == 0 and out.getvalue().startswith("db.t")
    out = io.StringIO()
    assert main(["tables"], environ={"LAKE_TABLES_CONFIG": str(cfg)}, out=out) == 0 and out.getvalue().startswith(
        "db.t"
    )
    empty = tmp_path / "empty"
    empty.mkdir()
    out = io.StringIO()
    code = main(["tables", "--config", str(cfg)], environ={"LAKE_WAREHOUSE": empty.as_uri()}, out=out)
    assert code == 0 and out.getvalue().strip() == f"no tables in {empty.as_uri()}"
    capsys.readouterr()
    assert main(["tables", "--config", str(tmp_path / "missing.yaml")], environ={}) == 2
    assert "cannot read config" in capsys.readouterr().err


def test_progress_bar_on_stderr(warehouse, table, capsys):
    code, out, err = run(warehouse, "compact", "db.t", "--full", "--progress", capsys=capsys)
    assert code == 0 and "[" + "#" * 30 + "] 6/6 units" in err and "0/6 units" in err
    assert out.startswith("full compaction of db.t: snapshot produced 9")


def test_python_dash_m_is_the_command(warehouse, table):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "LAKE_WAREHOUSE": warehouse}
    done = subprocess.run(
        [sys.executable, "-m", "lake_cli", "expire-snapshots", "db.t", "--retain-min", "2", "--older-than", "0 s"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 0 and done.stdout.startswith("expire_snapshots on db.t: expired snapshots 1..6 (6)")
    done = subprocess.run(
        [sys.executable, "-m", "lake_cli", "show", "db.missing"], capture_output=True, text=True, env=env, cwd=ROOT
    )
    assert done.returncode == 2 and done.stdout == "" and "Traceback" not in done.stderr
    assert done.stderr.strip() == f"lake show: error: table db.missing does not exist in {warehouse}"


def test_importing_the_cli_loads_neither_dagster_nor_pyspark():
    code = "import sys, lake_cli.main; print(sorted(m for m in ('dagster', 'pyspark', 'orchestration') if m in sys.modules))"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}
    )
    assert done.stdout.strip() == "[]", done.stderr


@pytest.mark.s3
def test_on_s3(s3_warehouse, capsys):
    t = make_table(s3_warehouse.uri, storage_options=s3_warehouse.storage_options, **{"write-only": "false"})
    _fill(t, 4)
    env = {
        "LAKE_S3_ENDPOINT": s3_warehouse.storage_options["endpoint_url"],
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
    }
    argv = [
        "compact",
        "db.t",
        "--full",
        "--json",
        "--warehouse",
        s3_warehouse.uri,
        "--s3-endpoint-env",
        "LAKE_S3_ENDPOINT",
    ]
    out = io.StringIO()
    assert main([*argv, "--dry-run"], environ=env, out=out) == 0
    dry = json.loads(out.getvalue())
    assert dry["units_planned"] > 0 and dry["snapshot_id"] is None and t.snapshot_manager.latest_id() == 4
    out = io.StringIO()
    assert main(argv, environ=env, out=out) == 0
    got = json.loads(out.getvalue())
    assert (
        got["snapshot_id"] == 5
        and (got["files_read"], got["files_upgraded"]) == (dry["files_read"], dry["files_upgraded"])
        and t.snapshot_manager.latest_id() == 5
    )
    # no credentials: exit 2 naming the variables looked at, before anything is read
    capsys.readouterr()
    assert main(argv, environ={"LAKE_S3_ENDPOINT": env["LAKE_S3_ENDPOINT"]}) == 2
    assert "no access key and no secret key" in capsys.readouterr().err


@pytest.mark.spark
@pytest.mark.slow
def test_compact_on_spark_equals_in_process(tmp_path):
    """``--spark local[1]`` (its own process: one SparkContext per process) commits what the
    in-process compaction of the twin table commits."""
    (root, table), (other_root, other) = _twin_tables(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = ["compact", "db.t", "--full", "--json", "--warehouse", root.as_uri(), "--spark", "local[1]"]
    done = subprocess.run(
        [sys.executable, "-m", "lake_cli", *argv], capture_output=True, text=True, env=env, cwd=ROOT, timeout=300
    )
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    expected = other.maintenance.compact(full=True)
    assert _strip_files(_comparable(got, root.as_uri())) == _strip_files(
        _comparable(json.loads(json.dumps(_as_json(expected))), other_root.as_uri())
    )
    assert table.to_arrow().sort_by("id").equals(other.to_arrow().sort_by("id"))
