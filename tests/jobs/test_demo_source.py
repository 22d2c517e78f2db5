"""The demo change source: deterministic, realistic row kinds, and a merged state that a real
lake_core primary-key table reproduces."""

from __future__ import annotations

import collections

import pyarrow as pa

from lake_core import Catalog
from orchestration.demo.source import ORDERS_SCHEMA, OrdersSource, expected_orders, orders


def _replay(source: OrdersSource, batches: int) -> dict[tuple, dict]:
    """A plain-Python reference merge: last change per key wins, -D removes, -U only retracts."""
    state: dict[tuple, dict] = {}
    for b in range(batches):
        for row in source.batch(b).to_pylist():
            key = (row["dt"], row["order_id"])
            if row["op"] in ("+I", "+U"):
                state[key] = row
            elif row["op"] == "-D":
                assert key in state, f"batch {b} deletes {key}, which does not exist"
                del state[key]
            else:
                assert state.get(key) == {**row, "op": state[key]["op"]}, f"-U of {key} must carry the old row"
    return state


def test_batches_are_deterministic_and_have_every_row_kind():
    a, b = orders(), orders()
    assert a.batch(3).equals(b.batch(3))
    assert not a.batch(3).equals(orders(seed=8).batch(3))
    kinds = collections.Counter(a.batch(3).column("op").to_pylist())
    assert set(kinds) == {"+I", "-U", "+U", "-D"}
    assert kinds["-U"] == kinds["+U"] and kinds["+I"] == a.orders_per_batch
    assert a.batch(0).schema == ORDERS_SCHEMA


def test_retraction_precedes_its_update_within_a_batch():
    rows = orders().batch(2).to_pylist()
    seen_before: set[int] = set()
    for row in rows:
        if row["op"] == "-U":
            seen_before.add(row["order_id"])
        elif row["op"] == "+U":
            assert row["order_id"] in seen_before


def test_expected_state_matches_a_reference_replay():
    source = orders(orders_per_batch=50)
    for batches in (1, 2, 5):
        replayed = _replay(source, batches)
        expected = source.expected(batches)
        assert expected.num_rows == len(replayed)
        by_key = {(r["dt"], r["order_id"]): r for r in expected.to_pylist()}
        assert by_key == replayed


def test_a_lake_table_merges_the_changes_to_the_expected_state(warehouse):
    catalog = Catalog(warehouse)
    catalog.create_database("demo", ignore_if_exists=True)
    table = catalog.create_table(
        "demo.orders",
        schema=ORDERS_SCHEMA,
        primary_keys=["dt", "order_id"],
        partition_keys=["dt"],
        options={"bucket": "2", "rowkind.field": "op"},
    )
    source = orders()
    for b in range(4):
        table.write_arrow(source.batch(b))
    got = table.to_arrow().sort_by("order_id")
    assert got.equals(expected_orders(4).sort_by("order_id"))
    statuses = set(got.column("status").to_pylist())
    assert statuses == {"created", "paid", "shipped", "delivered", "cancelled"}
    assert pa.types.is_decimal(got.schema.field("amount").type)
