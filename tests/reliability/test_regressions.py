"""Bugs the reliability suite found, each pinned by the smallest reproduction."""

from __future__ import annotations

import pytest

from lake_core import Catalog
from lake_core.errors import CorruptFileError, StalePlanError
from lake_core.io.fileio import FileIO

from .faultio import FaultyFileIO
from .harness import IDENT, SCHEMA, content, rows


def _table(uri: str):
    cat = Catalog(uri)
    cat.create_database("db")
    t = cat.create_table(
        IDENT,
        schema=SCHEMA,
        primary_keys=["dt", "k"],
        partition_keys=["dt"],
        options={"bucket": "1", "write-only": "true"},
    )
    for i in range(3):
        t.write_arrow(rows(range(i * 5, i * 5 + 10), f"r{i}"))
    return t


def _compact_while(uri: str, other_job):
    """A full compaction of ``uri`` that lets ``other_job`` run just before it reads its first input."""
    ran = []

    def before(kind, path):
        if kind == "read" and "/bucket-" in path and not ran:
            ran.append(path)
            other_job(Catalog(uri).get_table(IDENT))

    fio = FaultyFileIO(FileIO(uri), before=before)
    return Catalog(uri, fileio=fio).get_table(IDENT).maintenance.compact(full=True, parallelism=1)


def test_compaction_whose_inputs_another_job_compacted_and_expired_is_a_stale_plan(warehouse):
    # Found by the chaos run: the compactor died of a bare FileNotFoundError.
    t = _table(warehouse)
    want = content(t)

    def compact_and_expire(other):
        other.maintenance.compact(full=True, parallelism=1)
        other.maintenance.expire_snapshots(retain_min=1, retain_max=1)

    with pytest.raises(StalePlanError, match=r"input file .*data-.*compacted by another job"):
        _compact_while(warehouse, compact_and_expire)
    t = Catalog(warehouse).get_table(IDENT)
    assert content(t) == want
    t.maintenance.compact(full=True, parallelism=1)  # a re-run works
    assert content(Catalog(warehouse).get_table(IDENT)) == want


def test_compaction_input_deleted_outside_lake_core_is_named_as_missing(warehouse):
    _table(warehouse)

    def delete_a_live_file(other):
        path = next(p for p in _data_files(other))
        other.fileio.delete(path)

    with pytest.raises(CorruptFileError, match=r"does not exist \(deleted outside lake_core\)"):
        _compact_while(warehouse, delete_a_live_file)


def _data_files(table):
    root = table.paths.root
    return [
        f
        for f, _s, _m in table.fileio.list_files_recursive(root)
        if "/bucket-" in f and f.rsplit("/", 1)[-1].startswith("data-")
    ]


def test_changelog_expiry_keeps_the_changelog_list_a_tag_names(warehouse):
    # Found by the fault harness: after expire_changelogs, remove_orphan_files refused forever
    # ("tag of snapshot 2 could not be read completely"): the tag's changelog list was deleted.
    import datetime as dt

    from .harness import BASE_OPTIONS, _history_with_long_lived_changelogs

    cat = Catalog(warehouse)
    cat.create_database("db")
    t = cat.create_table(
        IDENT,
        schema=SCHEMA,
        primary_keys=["dt", "k"],
        partition_keys=["dt"],
        options={
            **BASE_OPTIONS,
            "changelog-producer": "input",
            "changelog.num-retained.min": "10",
            "changelog.num-retained.max": "20",
        },
    )
    _history_with_long_lived_changelogs(t)  # tag t2 on snapshot 2; snapshots 1-3 expired, changelogs kept
    tagged_rows = content(t, tag="t2")
    r = t.maintenance.expire_changelogs(retain_min=1, retain_max=1)
    assert r.expired_changelogs == (1, 2)
    t = Catalog(warehouse).get_table(IDENT)
    tag = t.tag("t2")
    assert t.fileio.exists(t.paths.manifest(tag.changelog_manifest_list))
    assert content(t, tag="t2") == tagged_rows
    t.maintenance.remove_orphan_files(force=True, older_than=dt.timedelta(0))  # used to refuse
    assert content(Catalog(warehouse).get_table(IDENT), tag="t2") == tagged_rows
