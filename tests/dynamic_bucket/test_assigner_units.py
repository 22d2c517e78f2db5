"""HASH index files and the vectorized bucket assignment, against Java's sequential rules."""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest

from lake_core.bucket.assign import hash_rows
from lake_core.bucket.dynamic import MAX_DYNAMIC_BUCKETS, BucketFiller, DynamicBucketOptions, assigner_of
from lake_core.bucket.hash_index import decode_hashes, encode_hashes
from lake_core.errors import FormatError, LakeError


def test_hash_index_bytes_match_format_md_example():
    # Java HashIndexFile: bucket 0 = keys 3, 2, 1 -> d206e547 4fe4bbf0 5759f99e
    hashes = hash_rows([pa.array([3, 2, 1], pa.int64())], [pa.int64()])
    data = encode_hashes(hashes)
    assert data.hex() == "d206e5474fe4bbf05759f99e"
    assert sorted(decode_hashes(data).tolist()) == sorted(hashes.tolist())
    with pytest.raises(FormatError):
        decode_hashes(data[:-1])


def java_assign(counts: dict[int, int], hashes, target, max_buckets, n_assigners=1, part_hash=0):
    """Java PartitionIndex.assign, one key at a time (the reference for the vectorized filler);
    step 4 picks by hash like lake_core instead of at random."""
    per_assigner = {}
    out = []
    for h in hashes:
        g = int(assigner_of(part_hash, np.array([h], np.int32), n_assigners)[0])
        st = per_assigner.get(g)
        if st is None:
            own = {b: c for b, c in counts.items() if b % n_assigners == g}
            st = per_assigner[g] = {"non_full": dict(sorted(own.items())), "total": sorted(own)}
        bucket = None
        for b in list(st["non_full"]):
            if st["non_full"][b] < target:
                st["non_full"][b] += 1
                bucket = b
                break
            del st["non_full"][b]
        if bucket is None:
            max_id = (MAX_DYNAMIC_BUCKETS if max_buckets == -1 else max_buckets) - 1
            all_used = set(counts) | {b for s in per_assigner.values() for b in s["total"]}
            for i in range(max_id + 1):
                if i % n_assigners == g and i not in all_used:
                    st["non_full"][i] = 1
                    st["non_full"] = dict(sorted(st["non_full"].items()))
                    st["total"].append(i)
                    bucket = i
                    break
        if bucket is None:
            pool = sorted(st["total"])
            bucket = pool[abs(int(np.fmod(h, len(pool))))]
        out.append(bucket)
    return out


@pytest.mark.parametrize("seed", range(12))
def test_vectorized_filler_matches_sequential_java_rules(seed):
    rnd = random.Random(seed)
    target = rnd.choice([1, 2, 3, 5, 8])
    n_assigners = rnd.choice([1, 1, 2, 3])
    max_buckets = rnd.choice([-1, -1, 4, 7])
    if max_buckets != -1 and n_assigners > max_buckets:
        n_assigners = 1
    existing = {b: rnd.randint(0, target + 1) for b in rnd.sample(range(6), rnd.randint(0, 4))}
    if max_buckets != -1:
        existing = {b: c for b, c in existing.items() if b < max_buckets}
    hashes = np.array(rnd.sample(range(-(2**31), 2**31 - 1), rnd.randint(0, 60)), np.int32)
    opts = DynamicBucketOptions(target, max_buckets, n_assigners)
    filler = BucketFiller(dict(existing), opts)
    groups = assigner_of(12345, hashes, n_assigners)
    got = filler.assign(hashes, groups).tolist()
    assert got == java_assign(existing, hashes.tolist(), target, max_buckets, n_assigners, 12345)
    # a second batch continues from the updated counts
    more = np.array(rnd.sample(range(-(2**31), 2**31 - 1), 7), np.int32)
    before = {b: int(c) for b, c in enumerate(filler.counts) if filler.exists[b]}
    got2 = filler.assign(more, assigner_of(12345, more, n_assigners)).tolist()
    assert got2 == java_assign(before, more.tolist(), target, max_buckets, n_assigners, 12345)


def test_target_row_num_three_gives_four_buckets_for_ten_keys():
    # pypaimon with target-row-num=3, 10 keys -> buckets 0..3
    f = BucketFiller({}, DynamicBucketOptions(3, -1, 1))
    got = f.assign(np.arange(10, dtype=np.int32), np.zeros(10, np.int64))
    assert got.tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2, 3]


def test_initial_buckets_spread_a_new_partition_over_n_buckets():
    f = BucketFiller({}, DynamicBucketOptions(1000, -1, 4))
    hashes = hash_rows([pa.array(range(400), pa.int64())], [pa.int64()])
    got = f.assign(hashes, assigner_of(0, hashes, 4))
    assert sorted(set(got.tolist())) == [0, 1, 2, 3]
    assert ((got % 4) == assigner_of(0, hashes, 4)).all()


def test_unbounded_buckets_refuse_beyond_java_short_range():
    f = BucketFiller({}, DynamicBucketOptions(1, -1, 1))
    f.assign(np.arange(MAX_DYNAMIC_BUCKETS, dtype=np.int32), np.zeros(MAX_DYNAMIC_BUCKETS, np.int64))
    with pytest.raises(LakeError, match="target-row-num"):
        f.assign(np.array([-1], np.int32), np.zeros(1, np.int64))


def test_max_buckets_caps_and_routes_overflow_to_existing_buckets():
    f = BucketFiller({}, DynamicBucketOptions(2, 3, 1))
    got = f.assign(np.arange(20, dtype=np.int32), np.zeros(20, np.int64))
    assert set(got.tolist()) == {0, 1, 2}
    assert got[:6].tolist() == [0, 0, 1, 1, 2, 2]
