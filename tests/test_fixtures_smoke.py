"""The behaviours of the test fixtures that the rest of the suite builds on.

- the S3 endpoint honours exclusive create (``If-None-Match: *``), which is how a snapshot
  commit stays atomic on S3;
- each test gets a fresh bucket;
- pypaimon, run from its own venv, round-trips a primary-key table, and the Arrow IPC files
  written by our pyarrow are readable by its older pyarrow and vice versa.
"""
from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from urllib.parse import urlparse

import pyarrow as pa
import pytest


def _is_exclusive_create_conflict(exc: BaseException) -> bool:
    """How an S3 ``PreconditionFailed`` surfaces through s3fs: a ``FileExistsError``, or on
    some servers an ``OSError`` whose cause is a 412 ``PreconditionFailed``."""
    if isinstance(exc, FileExistsError):
        return True
    cause = exc.__cause__ or exc.__context__
    text = f"{exc} {cause!r}"
    return isinstance(exc, OSError) and ("PreconditionFailed" in text or "412" in text)


# --- local warehouse -------------------------------------------------------------------


def test_warehouse_is_an_empty_absolute_file_uri(warehouse, warehouse_path):
    parsed = urlparse(warehouse)
    assert parsed.scheme == "file"
    assert Path(parsed.path) == warehouse_path
    assert warehouse_path.is_absolute() and warehouse_path.is_dir()
    assert list(warehouse_path.iterdir()) == []


# --- S3 --------------------------------------------------------------------------------


@pytest.mark.s3
def test_s3_exclusive_create_refuses_to_overwrite(s3_warehouse):
    fs = s3_warehouse.filesystem()
    path = f"{s3_warehouse.uri}/db.db/t/snapshot/snapshot-1"

    fs.pipe_file(path, b'{"id": 1}', mode="create")
    assert fs.cat_file(path) == b'{"id": 1}'

    with pytest.raises(OSError) as info:
        fs.pipe_file(path, b'{"id": 1, "loser": true}', mode="create")
    assert _is_exclusive_create_conflict(info.value), repr(info.value)
    # The first writer's object is untouched.
    assert fs.cat_file(path) == b'{"id": 1}'

    # A plain put still overwrites (hints such as LATEST rely on that).
    fs.pipe_file(path, b"replaced")
    assert fs.cat_file(path) == b"replaced"


@pytest.mark.s3
def test_s3_exclusive_create_has_exactly_one_winner_under_a_race(s3_warehouse):
    from concurrent.futures import ThreadPoolExecutor

    contenders = 6
    clients = [s3_warehouse.filesystem() for _ in range(contenders)]  # like separate processes

    def attempt(path: str, i: int):
        try:
            clients[i].pipe_file(path, f"writer-{i}".encode(), mode="create")
            return i
        except OSError as exc:
            assert _is_exclusive_create_conflict(exc), repr(exc)
            return None

    with ThreadPoolExecutor(max_workers=contenders) as pool:
        for round_ in range(5):
            path = f"{s3_warehouse.uri}/race/snapshot-{round_}"
            results = list(pool.map(attempt, [path] * contenders, range(contenders)))
            winners = [r for r in results if r is not None]
            assert len(winners) == 1, results
            assert clients[0].cat_file(path) == f"writer-{winners[0]}".encode()


@pytest.mark.s3
def test_s3_warehouse_is_a_fresh_bucket_per_test(s3_warehouse, s3_server):
    # The bucket exists and is empty.
    bucket = s3_warehouse.bucket
    assert s3_warehouse.uri == f"s3://{bucket}/wh"
    client = s3_server.boto3_client()
    assert client.list_objects_v2(Bucket=bucket).get("KeyCount", 0) == 0
    # Storage options carry an explicit endpoint, credentials, region and path-style.
    opts = s3_warehouse.storage_options
    assert opts["endpoint_url"] == s3_server.endpoint_url.rstrip("/")
    assert opts["endpoint_url"].startswith("http://127.0.0.1:")
    assert opts["key"] and opts["secret"]
    assert opts["config_kwargs"]["s3"]["addressing_style"] == "path"
    # A second warehouse gets another bucket.
    from fixtures.s3 import new_s3_warehouse

    other = new_s3_warehouse(s3_server)
    assert other.bucket != bucket
    s3_warehouse.filesystem().pipe_file(f"{s3_warehouse.uri}/x", b"1")
    assert not other.filesystem().exists(f"{other.uri}/x")


# --- pypaimon --------------------------------------------------------------------------


ORDERS = pa.schema([
    pa.field("order_id", pa.int64(), nullable=False),
    pa.field("dt", pa.string(), nullable=False),
    pa.field("amount", pa.float64()),
    pa.field("note", pa.string()),
])


def _sorted(table: pa.Table, *keys: str) -> pa.Table:
    return table.sort_by([(k, "ascending") for k in keys])


@pytest.mark.interop
def test_arrow_ipc_files_cross_pyarrow_versions(pypaimon, tmp_path):
    from fixtures.pypaimon_env import read_ipc, write_ipc

    versions = pypaimon.ping()
    assert versions["pypaimon"] == "2.1.0"
    assert int(versions["pyarrow"].split(".")[0]) < 20  # the point: a different pyarrow

    table = pa.table({
        "i": pa.array([1, None, 3], pa.int64()),
        "s": pa.array(["a", None, "ccc"], pa.string()),
        "d": pa.array([1.5, 2.5, None], pa.float64()),
        "b": pa.array([b"\x00", b"xy", None], pa.binary()),
        "t": pa.array([0, 1_700_000_000_000_000, None], pa.timestamp("us")),
        "dec": pa.array([Decimal("1.25"), Decimal("-2.00"), None], pa.decimal128(10, 2)),
        "flag": pa.array([True, False, None]),
    })
    ours = tmp_path / "ours.arrow"
    theirs = tmp_path / "theirs.arrow"
    write_ipc(table, ours)
    pypaimon.run(
        "import pyarrow as pa\n"
        f"t = pa.ipc.open_file(pa.OSFile({str(ours)!r}, 'rb')).read_all()\n"
        f"with pa.ipc.new_file(pa.OSFile({str(theirs)!r}, 'wb'), t.schema) as w:\n"
        "    w.write_table(t)\n"
        "print(t.num_rows)\n"
    )
    assert read_ipc(theirs).equals(table)


@pytest.mark.interop
def test_pypaimon_round_trips_a_primary_key_table(pypaimon, warehouse):
    pypaimon.create_table(warehouse, "db.orders", ORDERS, primary_keys=["order_id", "dt"],
                          partition_keys=["dt"], options={"bucket": 2})
    first = pa.table({
        "order_id": [1, 2, 3, 4],
        "dt": ["2024-01-01", "2024-01-01", "2024-01-02", "2024-01-02"],
        "amount": [10.0, 20.0, None, 40.0],
        "note": ["a", None, "c", "d"],
    }, schema=ORDERS)
    assert pypaimon.write(warehouse, "db.orders", first) == 1
    assert _sorted(pypaimon.read(warehouse, "db.orders"), "order_id", "dt").equals(first)

    # A second commit upserts key 2 and adds key 5: the merged read shows the last values.
    second = pa.table({"order_id": [2, 5], "dt": ["2024-01-01", "2024-01-03"],
                       "amount": [21.0, 50.0], "note": ["updated", None]}, schema=ORDERS)
    assert pypaimon.write(warehouse, "db.orders", second) == 2
    expected = pa.table({
        "order_id": [1, 2, 3, 4, 5],
        "dt": ["2024-01-01", "2024-01-01", "2024-01-02", "2024-01-02", "2024-01-03"],
        "amount": [10.0, 21.0, None, 40.0, 50.0],
        "note": ["a", "updated", "c", "d", None],
    }, schema=ORDERS)
    assert _sorted(pypaimon.read(warehouse, "db.orders"), "order_id", "dt").equals(expected)

    # Time travel and projection.
    assert pypaimon.snapshot_ids(warehouse, "db.orders") == [1, 2]
    assert pypaimon.latest_snapshot_id(warehouse, "db.orders") == 2
    assert _sorted(pypaimon.read(warehouse, "db.orders", snapshot_id=1), "order_id", "dt").equals(first)
    notes = pypaimon.read(warehouse, "db.orders", projection=["order_id", "note"])
    assert notes.column_names == ["order_id", "note"]
    assert dict(zip(notes["order_id"].to_pylist(), notes["note"].to_pylist()))[2] == "updated"

    # Overwriting one partition replaces only that partition.
    third = pa.table({"order_id": [9], "dt": ["2024-01-02"], "amount": [9.0], "note": ["o"]},
                     schema=ORDERS)
    assert pypaimon.write(warehouse, "db.orders", third, overwrite={"dt": "2024-01-02"}) == 3
    after = _sorted(pypaimon.read(warehouse, "db.orders"), "order_id", "dt")
    assert after["order_id"].to_pylist() == [1, 2, 5, 9]

    # The files are where Paimon puts them, and the snapshot JSON is readable by us.
    root = Path(urlparse(warehouse).path) / "db.db" / "orders"
    assert (root / "schema" / "schema-0").exists()
    snap = json.loads((root / "snapshot" / "snapshot-3").read_text())
    assert snap["id"] == 3 and snap["commitKind"] == "OVERWRITE"
    assert any(p.name.startswith("bucket-") for p in (root / "dt=2024-01-01").iterdir())


@pytest.mark.interop
def test_pypaimon_errors_surface_with_their_type(pypaimon, warehouse):
    from fixtures.pypaimon_env import PypaimonError

    with pytest.raises(PypaimonError) as info:
        pypaimon.read(warehouse, "db.missing")
    assert info.value.error_type  # e.g. TableNotExistException
    assert "missing" in str(info.value)
    # The worker survives an error...
    assert pypaimon.ping()["pypaimon"] == "2.1.0"
    # ...and a dead worker is replaced on the next call.
    pypaimon._proc.kill()
    pypaimon._proc.wait()
    assert pypaimon.ping()["pypaimon"] == "2.1.0"


@pytest.mark.interop
@pytest.mark.s3
def test_pypaimon_reads_and_writes_an_s3_warehouse(pypaimon, s3_warehouse):
    schema = pa.schema([pa.field("k", pa.int64(), nullable=False), pa.field("v", pa.string())])
    pypaimon.create_table(s3_warehouse, "db.kv", schema, primary_keys=["k"], options={"bucket": 1})
    data = pa.table({"k": [1, 2, 3], "v": ["x", "y", "z"]}, schema=schema)
    assert pypaimon.write(s3_warehouse, "db.kv", data) == 1
    assert _sorted(pypaimon.read(s3_warehouse, "db.kv"), "k").equals(data)
    # It really is in the bucket.
    fs = s3_warehouse.filesystem()
    assert fs.exists(f"{s3_warehouse.uri}/db.db/kv/snapshot/snapshot-1")
