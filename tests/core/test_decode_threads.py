"""Who decodes Parquet batches: Arrow's threads for a lone reader, the reading thread itself for one
of several workers side by side (compaction units two at a time, a rescale's routes and read-backs),
where Arrow's pool only adds hand-offs. The setting is per thread and restored on exit; the rows
read are the same either way."""

from __future__ import annotations

import threading

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lake_core import Catalog
from lake_core.decode_threads import arrow_decode_threads, one_of_several_workers


def test_the_setting_is_per_thread_and_restored():
    assert arrow_decode_threads()
    with one_of_several_workers():
        assert not arrow_decode_threads()
        seen = []
        other = threading.Thread(target=lambda: seen.append(arrow_decode_threads()))
        other.start()
        other.join()
        assert seen == [True]  # another thread is not a worker because this one is
        with one_of_several_workers(False):  # a nested lone step keeps the outer setting
            assert not arrow_decode_threads()
        assert not arrow_decode_threads()
    assert arrow_decode_threads()
    with one_of_several_workers(False):
        assert arrow_decode_threads()
    with pytest.raises(RuntimeError), one_of_several_workers():
        raise RuntimeError("a failing worker")
    assert arrow_decode_threads()


@pytest.fixture
def decodes(monkeypatch):
    """``use_threads`` of every Parquet batch read and whole-file read."""
    calls: list[bool] = []
    iter_batches, read = pq.ParquetFile.iter_batches, pq.ParquetFile.read

    def recorded_iter(self, *args, **kwargs):
        calls.append(kwargs.get("use_threads", True))
        return iter_batches(self, *args, **kwargs)

    def recorded_read(self, *args, **kwargs):
        calls.append(kwargs.get("use_threads", True))
        return read(self, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "iter_batches", recorded_iter)
    monkeypatch.setattr(pq.ParquetFile, "read", recorded_read)
    return calls


def _table(tmp_path, bucket: int):
    cat = Catalog(f"file://{tmp_path}")
    cat.create_database("db")
    schema = pa.schema([("id", pa.int64()), ("name", pa.string()), ("v", pa.float64())])
    t = cat.create_table("db.t", schema=schema, primary_keys=["id"], options={"bucket": str(bucket)})
    rng = np.random.default_rng(3)
    model: dict[int, tuple] = {}
    for ids in (np.arange(20_000), rng.choice(20_000, 4_000, replace=False)):
        rows = pa.table({"id": ids, "name": [f"n{i % 50}" for i in ids], "v": rng.random(len(ids))}, schema=schema)
        t.write_arrow(rows)
        model.update((r["id"], (r["name"], r["v"])) for r in rows.to_pylist())
    return t, {i: model[i] for i in sorted(model)}


def _rows(t) -> dict[int, tuple]:
    return {r["id"]: (r["name"], r["v"]) for r in t.to_arrow().sort_by("id").to_pylist()}


def test_units_side_by_side_decode_in_their_own_threads(tmp_path, decodes):
    t, model = _table(tmp_path, bucket=4)
    decodes.clear()
    assert _rows(t) == model
    assert decodes and all(decodes)  # a lone read: Arrow's threads

    decodes.clear()
    t.maintenance.compact(full=True)  # four buckets, two at a time
    assert decodes and not any(decodes)
    assert _rows(t) == model

    decodes.clear()
    t.maintenance.rescale(bucket=8)  # two routes side by side, each read back
    assert decodes and not any(decodes)
    assert _rows(t) == model


def test_a_lone_unit_keeps_arrows_threads(tmp_path, decodes):
    t, model = _table(tmp_path, bucket=1)
    decodes.clear()
    t.maintenance.compact(full=True)  # one bucket: nothing beside it
    assert decodes and all(decodes)
    assert _rows(t) == model
