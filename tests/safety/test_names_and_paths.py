"""Names never reach the file system unchecked (issue 8, items 1-4).

Each hostile name is refused with an error naming the kind of name and the value, and the whole
tree around the warehouse (a sentinel file outside it included) is byte-for-byte unchanged. The
``bypass`` tests switch the name validation off and show that the path builder still refuses.
"""

from __future__ import annotations

import re

import pyarrow as pa
import pytest

from lake_core import errors
from lake_core import paths as lake_paths

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.string())])
ROWS = pa.table({"k": [1, 2, 3], "v": ["a", "b", "c"]}, schema=SCHEMA)

HOSTILE = [
    "/../../snapshot/snapshot-1",
    "/../../schema/schema-0",
    "/../../../../../outside/precious.txt",
    "../../../../outside/evil",
    "../x",
    "..",
    ".",
    "",
    " ",
    "a/b",
    "a\\b",
    "a\x00b",
    "tab\there",
    " x",
    "x" * 300,
]


def _orders(store):
    """A warehouse with db.orders (two snapshots) and a sentinel file outside the warehouse."""
    cat = store.catalog()
    cat.create_database("db")
    t = cat.create_table("db.orders", SCHEMA, primary_keys=["k"], options={"bucket": "1"})
    t.write_arrow(ROWS)
    t.write_arrow(pa.table({"k": [4], "v": ["d"]}, schema=SCHEMA))
    store.put(f"{store.outside}/precious.txt", b"keep me")
    return cat, t


def _rows(table) -> list:
    return sorted(table.to_arrow().to_pylist(), key=lambda r: r["k"])


EXPECTED = sorted(ROWS.to_pylist() + [{"k": 4, "v": "d"}], key=lambda r: r["k"])


def _assert_refused(store, before, call, error=None):
    with pytest.raises(error or errors.InvalidNameError) as info:
        call()
    assert store.tree() == before, "a refused call changed files"
    return info.value


# -- 1. tags ---------------------------------------------------------------------------------------
def test_hostile_tag_names_are_refused_and_touch_nothing(store):
    cat, t = _orders(store)
    t.create_tag("kept")
    before = store.tree()
    for name in HOSTILE:
        for call in (
            lambda: t.delete_tag(name),
            lambda: t.create_tag(name),
            lambda: t.tag(name),
            lambda: t.to_arrow(tag=name),
        ):
            err = _assert_refused(store, before, call)
            assert err.kind == "tag name" and err.value == name and repr(name) in str(err)
    again = cat.get_table("db.orders")
    assert _rows(again) == EXPECTED and len(again.snapshots()) == 2 and again.list_tags() == ["kept"]


def test_tag_bypassing_name_validation_is_refused_by_the_path_builder(store, monkeypatch):
    cat, t = _orders(store)
    monkeypatch.setattr("lake_core.table.validate_tag_name", lambda name: name)
    monkeypatch.setattr("lake_core.store.validate_tag_name", lambda name: name)
    monkeypatch.setattr("lake_core.maintenance.tag_deletion.validate_tag_name", lambda name: name)
    before = store.tree()
    for name in ("/../../snapshot/snapshot-1", "/../../../../../outside/precious.txt", "x/../../../../outside/e"):
        _assert_refused(store, before, lambda: t.delete_tag(name), errors.PathEscapeError)
        _assert_refused(store, before, lambda: t.create_tag(name), errors.PathEscapeError)
    assert _rows(cat.get_table("db.orders")) == EXPECTED


def test_ordinary_tag_names_still_work(store):
    _cat, t = _orders(store)
    for name in ("daily-2024-01-01", "v1.2", "nightly_1", "étiquette", "123"):
        t.create_tag(name, snapshot_id=1)
        assert t.tag(name).id == 1
    assert t.to_arrow(tag="v1.2").num_rows == 3
    t.delete_tag("v1.2")
    assert "v1.2" not in t.list_tags()


# -- 2. databases ------------------------------------------------------------------------------------
def test_hostile_database_names_are_refused_and_touch_nothing(store):
    cat, _t = _orders(store)
    store.put(f"{store.outside}/../x.db/precious.txt", b"a directory next to the warehouse")
    before = store.tree()
    for name in ["../x", "", ".", "..", " ", "a/b", "a.b", "x\x00y", "\n", " db", "d" * 253]:
        for call in (
            lambda: cat.create_database(name),
            lambda: cat.drop_database(name, cascade=True),
            lambda: cat.drop_database(name, ignore_if_not_exists=True, cascade=True),
            lambda: cat.create_database(name, ignore_if_exists=True),
            lambda: cat.database_exists(name),
            lambda: cat.list_tables(name),
            lambda: cat.create_table(f"{name}.t", SCHEMA),
        ):
            err = _assert_refused(store, before, call)
            assert err.kind in ("database name", "table identifier") and repr(name)[1:-1] in str(err)
    for call in (lambda: cat.create_database("sys"), lambda: cat.drop_database("sys", cascade=True)):
        assert "system database" in str(_assert_refused(store, before, call))
    assert cat.list_databases() == ["db"] and _rows(cat.get_table("db.orders")) == EXPECTED


def test_database_bypassing_name_validation_is_refused_by_the_path_builder(store, monkeypatch):
    cat, _t = _orders(store)
    store.put(f"{store.outside}/../x.db/precious.txt", b"a directory next to the warehouse")
    monkeypatch.setattr("lake_core.catalog.validate_database_name", lambda name: name)
    monkeypatch.setattr("lake_core.catalog.check_not_system_database", lambda name: None)
    monkeypatch.setattr("lake_core.names.validate_database_name", lambda name: name)
    before = store.tree()
    monkeypatch.setattr(cat, "database_exists", lambda name: True)  # S3 answers this by listing, not by path
    _assert_refused(store, before, lambda: cat.drop_database("../x", cascade=True), errors.PathEscapeError)
    monkeypatch.setattr(cat, "database_exists", lambda name: False)
    _assert_refused(store, before, lambda: cat.create_database("../y"), errors.PathEscapeError)


# -- 3. tables -----------------------------------------------------------------------------------------
def test_hostile_table_names_are_refused_and_touch_nothing(store):
    cat, _t = _orders(store)
    before = store.tree()
    for identifier in [
        "db.orders/snapshot",
        "db.orders/../orders",
        "db..",
        "db.",
        ".orders",
        "db.orders.x",
        "db.orders$nosuch",
        "db.a\x00b",
        "db. ",
        "orders",
        "db." + "t" * 256,
    ]:
        for call in (
            lambda: cat.create_table(identifier, SCHEMA),
            lambda: cat.drop_table(identifier),
            lambda: cat.drop_table(identifier, ignore_if_not_exists=True),
            lambda: cat.get_table(identifier),
            lambda: cat.table_exists(identifier),
        ):
            try:
                err = _assert_refused(store, before, call)
            except errors.TableNotFoundError as e:  # '$name' reads as a system table: one we do not have
                assert "$" in identifier and "system table 'nosuch'" in str(e) and "supported: $ro" in str(e), e
                assert store.tree() == before
                continue
            assert err.kind in ("table name", "database name", "table identifier")
    # a system table that exists is read-only: dropping or altering it names the table to use instead
    for call in (lambda: cat.drop_table("db.orders$snapshots"), lambda: cat.alter_table("db.orders$files", [])):
        with pytest.raises(errors.ReadOnlyTableError, match=r"read-only system table: .* db\.orders instead"):
            call()
        assert store.tree() == before
    again = cat.get_table("db.orders")
    assert _rows(again) == EXPECTED and [s.id for s in again.snapshots()] == [1, 2]


def test_table_bypassing_name_validation_is_refused_by_the_path_builder(store, monkeypatch):
    cat, _t = _orders(store)
    monkeypatch.setattr("lake_core.catalog.split_identifier", lambda ident: tuple(ident.split(".", 1)))
    before = store.tree()
    _assert_refused(store, before, lambda: cat.create_table("db.orders/snapshot", SCHEMA), errors.PathEscapeError)
    _assert_refused(store, before, lambda: cat.drop_table("db.orders/snapshot"), errors.PathEscapeError)
    assert [s.id for s in cat.get_table("db.orders").snapshots()] == [1, 2]


# -- 4. file prefixes -------------------------------------------------------------------------------------
def test_file_prefixes_that_leave_the_table_are_refused(store):
    cat, _t = _orders(store)
    before = store.tree()
    for option in ("data-file.prefix", "changelog-file.prefix"):
        for prefix in ["../../../../outside/evil-", "../", "a/b-", ".hidden-", "x\x00-", "p" * 250]:
            err = _assert_refused(
                store,
                before,
                lambda: cat.create_table(
                    "db.p",
                    SCHEMA,
                    primary_keys=["k"],
                    options={"bucket": "1", option: prefix, "changelog-producer": "input"},
                ),
                errors.InvalidOptionError,
            )
            assert f"'{option}'" in str(err) and repr(prefix) in str(err)
            assert not cat.table_exists("db.p")


@pytest.mark.parametrize("option", ["data-file.prefix", "changelog-file.prefix"])
def test_prefix_bypassing_option_validation_is_refused_by_the_path_builder(store, option, monkeypatch):
    cat, _t = _orders(store)
    monkeypatch.setattr("lake_core.options.option_types.FilePrefix.check", lambda self, key, text: None)
    t = cat.create_table(
        "db.p",
        SCHEMA,
        primary_keys=["k"],
        options={"bucket": "1", option: "../../../../outside/evil-", "changelog-producer": "input"},
    )
    outside_table = lambda: {p: v for p, v in store.tree().items() if "db.db/p/" not in p}
    before = outside_table()
    with pytest.raises(errors.PathEscapeError):
        t.write_arrow(ROWS)
    assert outside_table() == before  # a refused write may leave an orphan inside its table, never outside
    assert t.latest_snapshot() is None


def test_ordinary_prefixes_still_work(store):
    cat, _t = _orders(store)
    t = cat.create_table(
        "db.p",
        SCHEMA,
        primary_keys=["k"],
        options={
            "bucket": "1",
            "data-file.prefix": "part-",
            "changelog-file.prefix": "",
            "changelog-producer": "input",
        },
    )
    t.write_arrow(ROWS)
    assert _rows(t) == ROWS.to_pylist()
    names = [f.file_name for e in t.manifest_store.live_entries(t.latest_snapshot()) for f in [e.file]]
    assert names and all(n.startswith("part-") for n in names)


# -- the path builder itself --------------------------------------------------------------------------------
@pytest.mark.parametrize("component", ["..", ".", "", "a/b", "a\\b", "a\x00b", "../x"])
def test_join_refuses_components_that_leave_the_root(component):
    with pytest.raises(errors.PathEscapeError):
        lake_paths.join("s3://bucket/wh", component)


@pytest.mark.parametrize("name", ["../x", "a/../../b", "/etc/passwd", "x\x00"])
def test_table_paths_refuse_names_that_leave_the_table(name):
    paths = lake_paths.TablePaths("file:///wh/db.db/t")
    for build in (
        paths.tag,
        paths.consumer,
        paths.manifest,
        paths.index_file,
        lambda n: paths.data_file("", 0, n),
        lambda n: paths.bucket_dir(n, 0),
    ):
        with pytest.raises(errors.PathEscapeError):
            build(name)


def test_partition_values_cannot_escape_the_table(local_store):
    cat = local_store.catalog()
    cat.create_database("db")
    schema = pa.schema([("p", pa.string()), ("k", pa.int64())])
    t = cat.create_table("db.pt", schema, primary_keys=["p", "k"], partition_keys=["p"], options={"bucket": "1"})
    hostile = ["..", "../../../outside", "/etc", "a/../../b", "\\", "."]
    t.write_arrow(pa.table({"p": hostile, "k": list(range(len(hostile)))}, schema=schema))
    wh_dir = local_store.warehouse[len("file://") :] + "/"
    table_dir = t.paths.root[len("file://") :] + "/"
    tree = local_store.tree()
    assert all(p.startswith(wh_dir) for p in tree), [p for p in tree if not p.startswith(wh_dir)]
    assert all(p.startswith(table_dir) for p in tree if p not in (wh_dir, wh_dir + "db.db/"))
    assert sorted(t.to_arrow().to_pylist(), key=lambda r: r["k"]) == [{"p": v, "k": i} for i, v in enumerate(hostile)]


# -- branches and consumers: no API yet, but their names follow the same rules ----------------------------------
@pytest.mark.parametrize(
    "name,reason",
    [
        ("main", "default branch"),
        ("123", "all digits"),
        ("a$b", "'$'"),
        ("../b", "'/'"),
        (" ", "blank"),
        ("b" * 250, "bytes"),
    ],
)
def test_branch_names_follow_paimons_branch_manager_rules(name, reason):
    from lake_core.names import validate_branch_name

    with pytest.raises(errors.InvalidNameError, match=re.escape(reason)) as info:
        validate_branch_name(name)
    assert info.value.kind == "branch name"
    assert validate_branch_name("dev-1") == "dev-1"


@pytest.mark.parametrize("consumer", ["../c", "c/../../x", "", "..", "c\x00"])
def test_consumer_ids_cannot_leave_the_consumer_directory(consumer):
    from lake_core.names import validate_consumer_id

    with pytest.raises(errors.InvalidNameError):
        validate_consumer_id(consumer)
    assert validate_consumer_id("nightly-job") == "nightly-job"


# -- file names read from manifests ---------------------------------------------------------------------------
def _rename_in_delta(table, snapshot_id: int, kind, new_name: str) -> None:
    """Rewrite the delta manifest of ``snapshot_id`` so its ``kind`` entry names ``new_name``
    (a manifest written by a hostile or broken writer)."""
    import dataclasses

    from lake_core.manifest import manifest_io

    store = table.manifest_store
    for meta in store.read_manifest_list(table.snapshot(snapshot_id).delta_manifest_list):
        path = table.paths.manifest(meta.file_name)
        entries = manifest_io.decode_manifest_entries(table.fileio.read_bytes(path))
        entries = [
            dataclasses.replace(e, file=dataclasses.replace(e.file, file_name=new_name)) if e.kind == kind else e
            for e in entries
        ]
        table.fileio.write_bytes(path, manifest_io.encode_manifest_entries(entries))


@pytest.mark.parametrize("name", ["../../../outside/precious.txt", "../../../../outside/precious.txt"])
def test_expiry_never_deletes_outside_the_table_for_a_file_name_read_from_a_manifest(store, name):
    from lake_core.manifest.metadata import FileKind

    cat, t = _orders(store)
    t.write_arrow(pa.table({"k": [9], "v": ["z"]}, schema=SCHEMA), overwrite=True)  # snapshot 3 DELETEs files
    _rename_in_delta(t, 3, FileKind.DELETE, name)
    before = {p: v for p, v in store.tree().items() if "precious" in p}
    assert before, "the sentinel exists"
    with pytest.raises(errors.PathEscapeError, match=re.escape(repr(name))):
        cat.get_table("db.orders").maintenance.expire_snapshots(retain_max=1, retain_min=1)
    assert {p: v for p, v in store.tree().items() if "precious" in p} == before
