"""Tables with a known history for the maintenance tests: every snapshot's content is in a dict model."""

from __future__ import annotations

import os
import random

import pyarrow as pa
from reliability.faultio import FaultyFileIO, InjectedIOError

from lake_core import Catalog
from lake_core.compaction.bucket_compact import compact_bucket
from lake_core.io.fileio import FileIO

SCHEMA = pa.schema([("dt", pa.string()), ("id", pa.int64()), ("v", pa.int64()), ("op", pa.string())])
BASE_OPTIONS = {"bucket": "2", "rowkind.field": "op", "write-only": "true"}


def make_table(warehouse: str, name: str = "db.t", storage_options=None, **options):
    cat = Catalog(warehouse, storage_options) if storage_options else Catalog(warehouse)
    cat.create_database("db", ignore_if_exists=True)
    opts = dict(BASE_OPTIONS)
    opts.update({k.replace("_", "-") if "." not in k else k: v for k, v in options.items()})
    return cat.create_table(name, schema=SCHEMA, primary_keys=["dt", "id"], partition_keys=["dt"], options=opts)


def killed_while_deleting(warehouse: str, planned, deleted: int, name: str = "db.t"):
    """Table ``name`` through a FileIO whose delete of the ``deleted + 1``-th path of ``planned``
    raises, as a process killed at that point: an operation deleting those files stops after
    ``deleted`` of them."""
    planned, done = set(planned), []

    def before(kind: str, path: str) -> None:
        if kind == "delete" and path in planned:
            if len(done) == deleted:
                raise InjectedIOError(f"killed before deleting {path}")
            done.append(path)

    return Catalog(warehouse, fileio=FaultyFileIO(FileIO(warehouse), before=before)).get_table(name)


def state(table, **at) -> dict:
    t = table.to_arrow(**at)
    return {(r["dt"], r["id"]): r["v"] for r in t.to_pylist()}


def compact_all(table):
    by_bucket: dict = {}
    for e in table.manifest_store.live_entries(table.latest_snapshot()):
        by_bucket.setdefault((e.partition, e.bucket, e.total_buckets), []).append(e.file)
    msgs = [compact_bucket(table.store, p, b, tb, files) for (p, b, tb), files in by_bucket.items()]
    return table.new_batch_write_builder().new_commit().commit(msgs)


class Workload:
    """Random upserts, deletes, partition overwrites and full compactions; ``models[snapshot id]``
    is the expected content of every snapshot."""

    def __init__(self, table, seed: int = 0):
        self.t = table
        self.rng = random.Random(seed)
        self.model: dict = {}
        self.models: dict[int, dict] = {}

    def _record(self, snaps):
        for s in snaps:
            self.models[s.id] = dict(self.model)
        # A write may also commit an inline COMPACT snapshot after the one it returns: same content.
        latest = self.t.latest_snapshot()
        if snaps and latest is not None:
            for sid in range(max(s.id for s in snaps) + 1, latest.id + 1):
                self.models.setdefault(sid, dict(self.model))

    def upsert(self):
        rows = {}
        for _ in range(self.rng.randint(3, 12)):
            key = (self.rng.choice("abc"), self.rng.randint(0, 40))
            rows[key] = self.rng.randint(0, 1000)
        dels = [k for k in list(self.model) if self.rng.random() < 0.05]
        data = {"dt": [], "id": [], "v": [], "op": []}
        for (dt, i), v in rows.items():
            data["dt"].append(dt)
            data["id"].append(i)
            data["v"].append(v)
            data["op"].append("+I")
            self.model[(dt, i)] = v
        for k in dels:
            if k in rows:
                continue
            data["dt"].append(k[0])
            data["id"].append(k[1])
            data["v"].append(0)
            data["op"].append("-D")
            self.model.pop(k, None)
        s = self.t.write_arrow(pa.table(data, schema=SCHEMA))
        self._record([s] if s else [])

    def overwrite(self):
        dt = self.rng.choice("abc")
        self.model = {k: v for k, v in self.model.items() if k[0] != dt}
        data = {"dt": [dt, dt], "id": [900, 901], "v": [1, 2], "op": ["+I", "+I"]}
        self.model[(dt, 900)], self.model[(dt, 901)] = 1, 2
        s = self.t.write_arrow(pa.table(data, schema=SCHEMA), overwrite={"dt": dt})
        self._record([s])

    def compact(self):
        self._record(compact_all(self.t))

    def run(self, n: int):
        for _ in range(n):
            r = self.rng.random()
            if r < 0.15:
                self.compact()
            elif r < 0.22:
                self.overwrite()
            else:
                self.upsert()
        return self


def listing(table) -> dict[str, int]:
    """Relative path -> size of every file under the table (temp files excluded)."""
    out = {}
    root = table.paths.root
    for full, size, _ in table.fileio.list_files_recursive(root):
        rel = (
            full[len(root) :].lstrip("/")
            if full.startswith(root)
            else full.split(root.split("://")[-1], 1)[-1].lstrip("/")
        )
        if os.path.basename(rel).endswith(".tmp"):
            continue
        out[rel] = size
    return out


def referenced_files(table) -> set[str]:
    """Relative paths of every file a retained snapshot or tag references (the model of a fully
    expired table: after expiry nothing else may remain, and all of these must exist)."""
    from lake_core.maintenance.references import data_file_paths, index_path

    store = table.manifest_store
    root = table.paths.root
    snaps = table.snapshots() + [table.tag(n) for n in table.list_tags()]
    out = set()
    rel = lambda p: p[len(root) :].lstrip("/")
    for s in snaps:
        for lst in (s.base_manifest_list, s.delta_manifest_list, s.changelog_manifest_list):
            if lst:
                out.add(f"manifest/{lst}")
                for m in store.read_manifest_list(lst):
                    out.add(f"manifest/{m.file_name}")
        for e in store.live_entries(s):
            out.update(rel(p) for p, _ in data_file_paths(table, e))
        for e in store.changelog_entries(s):
            out.update(rel(p) for p, _ in data_file_paths(table, e))
        if s.index_manifest:
            out.add(f"manifest/{s.index_manifest}")
            out.update(rel(index_path(table, e)) for e in store.index_entries(s))
    return out
