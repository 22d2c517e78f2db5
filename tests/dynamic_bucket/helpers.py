"""Inspection helpers for dynamic-bucket tables: where every live key is, and whether the HASH
index agrees with the data."""

from __future__ import annotations

from collections import Counter, defaultdict

import numpy as np

from lake_core.bucket.assign import hash_rows
from lake_core.bucket.hash_index import HASH_INDEX, read_hash_index
from lake_core.read.split_read import SplitRead


def key_locations(table) -> dict[tuple, list[tuple]]:
    """Key -> [(partition values, bucket), ...] of every live (merged) row. The key is the trimmed
    primary key in cross-partition mode (one location per table), else partition + trimmed key."""
    per_partition = table.bucket_mode != "cross-partition"
    keys = list(table.schema.trimmed_primary_keys)
    out: dict[tuple, list[tuple]] = defaultdict(list)
    snap = table.latest_snapshot()
    if snap is None:
        return {}
    read = SplitRead(table.store, keys)
    for split in table.new_read_builder().new_scan().plan().splits():
        t = read.read_split(split)
        for row in zip(*(t[k].to_pylist() for k in keys)):
            key = (tuple(split.partition_values) + row) if per_partition else row
            out[key].append((split.partition_values, split.bucket))
    return dict(out)


def assert_each_key_once(table) -> dict[tuple, tuple]:
    locs = key_locations(table)
    dup = {k: v for k, v in locs.items() if len(v) != 1}
    assert not dup, f"keys live in several (partition, bucket)s: {dict(list(dup.items())[:5])}"
    return {k: v[0] for k, v in locs.items()}


def assert_hash_index_consistent(table, target: int | None = None) -> None:
    """Every data bucket has one HASH file; every live key's hash is in its bucket's file; no hash
    is in two buckets of a partition; _ROW_COUNT is right; buckets hold at most ``target`` keys."""
    snap = table.latest_snapshot()
    store = table.manifest_store
    files = defaultdict(dict)
    for e in store.index_entries(snap):
        assert e.index_type == HASH_INDEX
        part = store.partition_values(e.partition)
        assert e.bucket not in files[part], f"two HASH files for {part} bucket {e.bucket}"
        hashes = read_hash_index(table, e)
        assert len(hashes) == e.row_count == len(set(hashes.tolist()))
        if target is not None:
            assert len(hashes) <= target
        files[part][e.bucket] = set(hashes.tolist())
    for part, buckets in files.items():
        seen = Counter(h for hs in buckets.values() for h in hs)
        assert all(c == 1 for c in seen.values()), f"a hash is in two buckets of partition {part}"
    keys = list(table.schema.trimmed_primary_keys)
    types = [table.schema.field(k).type for k in keys]
    data_buckets = {(store.partition_values(e.partition), e.bucket) for e in store.live_entries(snap)}
    for part, bucket in data_buckets:
        assert bucket in files[part], f"data bucket {bucket} of {part} has no HASH index"
    read = SplitRead(table.store, keys)
    for split in table.new_read_builder().new_scan().plan().splits():
        t = read.read_split(split)
        if t.num_rows == 0:
            continue
        h = hash_rows([t[k] for k in keys], types)
        missing = set(np.asarray(h).tolist()) - files[split.partition_values][split.bucket]
        assert not missing, f"{len(missing)} live key(s) of {split.partition_values}/{split.bucket} not indexed"


def rows_by_key(table, key_cols) -> dict:
    return {tuple(r[k] for k in key_cols): r for r in table.to_arrow().to_pylist()}
