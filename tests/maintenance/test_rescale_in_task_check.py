"""The in-task check of a rescale (``check_rescale``): each partition's figures, computed by the task
that read and rewrote it, match an oracle (the partition read before and after, checksummed); an
outcome whose new files lost a row fails the check naming the partition; the check reads no table
file, so it still passes once the snapshot the rescale read has been expired, which the deep check
(``verify_rescale``) cannot."""

from __future__ import annotations

import dataclasses
import random

import pyarrow as pa
import pyarrow.compute as pc

from lake_core import PreparedRescale, RescaleVerification, check_rescale, run_locally
from lake_core.format.checksum import table_checksum
from maintenance.rescale_helpers import PARTS, filled_table


def _partition(t: pa.Table, dt: str) -> pa.Table:
    return t.filter(pc.equal(t["dt"], dt))


def test_figures_match_the_partitions_read_before_and_after(warehouse):
    catalog, table, _model = filled_table(warehouse, seed=3)
    before = table.to_arrow()
    result = run_locally(table.maintenance.rescale_job(bucket=5, partitions=[{"dt": p} for p in PARTS[:2]]))
    after = catalog.get_table("db.t").to_arrow()
    check = check_rescale(result, bucket=5)
    assert isinstance(check, RescaleVerification) and check.passed, check.problems
    assert [p.partition for p in check.partitions] == [f"dt={p}" for p in PARTS[:2]]
    assert check.compared.startswith("in-task")
    for p, dt in zip(result.partitions, PARTS[:2]):
        oracle_before, oracle_after = table_checksum(_partition(before, dt)), table_checksum(_partition(after, dt))
        assert (p.rows, p.checksum) == (oracle_before.rows, oracle_before.digest)
        assert (p.rows_after, p.checksum_after) == (oracle_after.rows, oracle_after.digest)
    # a check against another bucket count fails, naming the partition
    wrong = check_rescale(result, bucket=4)
    assert not wrong.passed and wrong.problems[0] == f"dt={PARTS[0]}: rewritten into 5 buckets, expected 4"


def test_an_outcome_whose_files_lost_a_row_fails_the_check(warehouse):
    """A partition's outcome that came back reporting fewer rows read back than read (injected
    here, between the task and the commit) fails the check, naming the partition."""
    catalog, table, _model = filled_table(warehouse, seed=4)
    job = table.maintenance.rescale_job(bucket=3)
    outcomes = [job.run_unit(u) for u in job.units]
    p = outcomes[1]
    assert isinstance(p, PreparedRescale) and p.checksum_after == p.checksum
    lost = table_checksum(_partition(table.to_arrow(), PARTS[1]).slice(0, 1))
    outcomes[1] = dataclasses.replace(p, checksum_after=p.checksum_after - lost)
    result = job.commit(outcomes)
    check = check_rescale(result, bucket=3)
    assert not check.passed
    [problem] = check.problems
    assert (
        problem.startswith(f"dt={PARTS[1]}: read {p.checksum.rows} rows") and f"{p.checksum.rows - 1} rows" in problem
    )


def test_the_check_reads_no_table_file(warehouse):
    catalog, table, model = filled_table(warehouse, seed=5)
    result = run_locally(table.maintenance.rescale_job(bucket=4))
    table = catalog.get_table("db.t")
    table.write_arrow(model.batch(random.Random(1), 5, deletes=False))
    table.maintenance.expire_snapshots(retain_min=2, retain_max=2)  # keeps the one it committed
    read = result.partitions[0].snapshot_read
    assert table.store.snapshot_manager.earliest_id() > read
    deep = table.maintenance.verify_rescale(
        partitions={p.partition: p.snapshot_read for p in result.partitions}, snapshot_id=result.snapshot_id, bucket=4
    )
    assert not deep.passed and "no longer exists" in deep.problems[0]
    check = check_rescale(result, bucket=4)
    assert check.passed and len(check.partitions) == len(PARTS)
