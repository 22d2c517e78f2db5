"""Bugs the reliability suite found, each pinned by the smallest reproduction."""
from __future__ import annotations

import pytest

from lake_core import Catalog
from lake_core.errors import CorruptFileError, StalePlanError
from lake_core.fileio import FileIO

from .faultio import FaultyFileIO
from .harness import IDENT, SCHEMA, content, rows


def _table(uri: str):
    cat = Catalog(uri)
    cat.create_database("db")
    t = cat.create_table(IDENT, schema=SCHEMA, primary_keys=["dt", "k"], partition_keys=["dt"],
                         options={"bucket": "1", "write-only": "true"})
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
    t = _table(warehouse)

    def delete_a_live_file(other):
        path = next(p for p in _data_files(other))
        other.fileio.delete(path)

    with pytest.raises(CorruptFileError, match=r"does not exist \(deleted outside lake_core\)"):
        _compact_while(warehouse, delete_a_live_file)


def _data_files(table):
    root = table.paths.root
    return [f for f, _s, _m in table.fileio.list_files_recursive(root) if "/bucket-" in f
            and f.rsplit("/", 1)[-1].startswith("data-")]
