"""A deterministic, realistic change stream of shop orders for the embedded demo.

Batch ``b`` is one "day" of activity: ``orders_per_batch`` new orders are placed (``+I``), orders
placed in the three days before move through their lifecycle (``-U`` old row then ``+U`` new row:
created → paid | cancelled → shipped → delivered), and a few test orders are removed (``-D`` with the
row as it was). The row kind is a string column (``op``) named by the table option
``rowkind.field``, exactly as a CDC feed delivers it.

Every value is a pure function of (seed, order id, batch) computed with a vectorized integer hash,
so any batch can be produced on its own, in any process, and :func:`expected_orders` gives the
merged table after batches ``0 .. n-1`` for tests to compare against. No per-row Python loops.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

__all__ = ["ORDERS_SCHEMA", "OrdersSource", "orders", "expected_orders"]

ORDERS_SCHEMA = pa.schema(
    [
        pa.field("dt", pa.string(), nullable=False),  # day the order was placed, 'YYYY-MM-DD'
        pa.field("order_id", pa.int64(), nullable=False),
        pa.field("customer_id", pa.int64()),
        pa.field("status", pa.string()),
        pa.field("quantity", pa.int32()),
        pa.field("amount", pa.decimal128(12, 2)),
        pa.field("updated_at", pa.timestamp("us")),
        pa.field("op", pa.string()),  # +I / -U / +U / -D (table option rowkind.field)
    ]
)

_STATUS = np.array(["created", "paid", "shipped", "delivered", "cancelled"], dtype=object)
_MASK64 = np.uint64(0xFFFFFFFFFFFFFFFF)


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser: a fast, well-spread, vectorized integer hash."""
    with np.errstate(over="ignore"):
        z = x.astype(np.uint64)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return (z ^ (z >> np.uint64(31))) & _MASK64


def _uniform(seed: int, ids: np.ndarray, salt: int) -> np.ndarray:
    """A uniform [0, 1) number per order id, independent per (seed, salt)."""
    with np.errstate(over="ignore"):
        base = ids.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(
            (seed * 1_000_003 + salt * 7919) & 0xFFFFFFFFFFFFFFFF
        )
    return (_mix(base) >> np.uint64(11)).astype(np.float64) / float(1 << 53)


def _cents_to_decimal(cents: np.ndarray) -> pa.Array:
    """Exact DECIMAL(12, 2) from integer cents, vectorized: a decimal128 value is its unscaled
    integer as 16 little-endian bytes (cents are >= 0, so the high word is zero)."""
    words = np.zeros((len(cents), 2), dtype=np.int64)
    words[:, 0] = cents
    return pa.Array.from_buffers(pa.decimal128(12, 2), len(cents), [None, pa.py_buffer(words.tobytes())])


@dataclass(frozen=True)
class OrdersSource:
    """The demo change source. ``batch(b)`` is a pyarrow Table in :data:`ORDERS_SCHEMA`."""

    orders_per_batch: int = 200
    seed: int = 7
    start: _dt.date = _dt.date(2024, 1, 1)
    customers: int = 500
    schema: pa.Schema = field(default=ORDERS_SCHEMA, repr=False)

    # -- the lifecycle as pure functions of (order id, batch) ---------------------------------
    def _created_batch(self, ids: np.ndarray) -> np.ndarray:
        return ids // self.orders_per_batch

    def _stage(self, ids: np.ndarray, batch: int) -> np.ndarray:
        """Index into _STATUS at the end of ``batch`` (-1: not placed yet)."""
        age = batch - self._created_batch(ids)
        cancelled = _uniform(self.seed, ids, 4) < 0.08
        stage = np.minimum(age, 3)  # created(0) → paid(1) → shipped(2) → delivered(3)
        stage = np.where(cancelled & (age >= 1), 4, stage)
        return np.where(age < 0, -1, stage)

    def _deleted_at(self, ids: np.ndarray) -> np.ndarray:
        """Batch in which a test order is removed, or -1 (3% of orders, two days after placing)."""
        test_order = _uniform(self.seed, ids, 5) < 0.03
        return np.where(test_order, self._created_batch(ids) + 2, -1)

    def _rows(self, ids: np.ndarray, batch: int, op: str | np.ndarray) -> pa.Table:
        """The row of each order as it stood at the end of ``batch``."""
        ids = ids.astype(np.int64)
        created = self._created_batch(ids)
        stage = self._stage(ids, batch)
        quantity = (1 + np.floor(_uniform(self.seed, ids, 2) * 5)).astype(np.int32)
        unit_cents = (499 + np.floor(_uniform(self.seed, ids, 3) * 9500)).astype(np.int64)
        cents = quantity.astype(np.int64) * unit_cents
        # The last change happened on day created + stage (cancellation happens on day 1).
        changed_day = created + np.where(stage == 4, 1, stage)
        second = np.floor(_uniform(self.seed, ids, 6) * 86_400).astype(np.int64)
        epoch = np.datetime64(self.start, "us").astype(np.int64)
        updated_us = epoch + (changed_day * 86_400 + second + stage * 97) * 1_000_000
        day0 = np.datetime64(self.start, "D")
        dt = (day0 + created.astype("timedelta64[D]")).astype(str)
        ops = np.full(len(ids), op, dtype=object) if isinstance(op, str) else op
        return pa.Table.from_arrays(
            [
                pa.array(dt, pa.string()),
                pa.array(ids, pa.int64()),
                pa.array(1 + np.floor(_uniform(self.seed, ids, 1) * self.customers).astype(np.int64)),
                pa.array(_STATUS[stage], pa.string()),
                pa.array(quantity, pa.int32()),
                _cents_to_decimal(cents),
                pa.array(updated_us, pa.int64()).cast(pa.timestamp("us")),
                pa.array(ops, pa.string()),
            ],
            schema=self.schema,
        )

    def batch(self, b: int) -> pa.Table:
        """The change rows of batch ``b`` (retractions precede the row that replaces them)."""
        if b < 0:
            raise ValueError(f"batch must be >= 0, got {b}")
        n = self.orders_per_batch
        new_ids = np.arange(b * n, (b + 1) * n, dtype=np.int64)
        parts = [self._rows(new_ids, b, "+I")]
        recent = np.arange(max(0, b - 3) * n, b * n, dtype=np.int64)
        if len(recent):
            deleted_at = self._deleted_at(recent)
            alive_before = (deleted_at < 0) | (deleted_at > b - 1)
            deleting = alive_before & (deleted_at == b)
            changed = alive_before & ~deleting & (self._stage(recent, b) != self._stage(recent, b - 1))
            upd = recent[changed]
            if len(upd):
                # -U (old image) and +U (new image) interleaved per key so -U always comes first.
                before = self._rows(upd, b - 1, "-U")
                after = self._rows(upd, b, "+U")
                order = np.argsort(np.concatenate([np.arange(len(upd)) * 2, np.arange(len(upd)) * 2 + 1]))
                parts.append(pa.concat_tables([before, after]).take(pa.array(order)))
            if deleting.any():
                parts.append(self._rows(recent[deleting], b - 1, "-D"))
        return pa.concat_tables(parts).combine_chunks()

    def expected(self, batches: int) -> pa.Table:
        """The merged table (latest image per key, deletes removed) after batches 0..batches-1.

        ``op`` holds the kind of each key's last change (+I or +U), as a merged Paimon read shows it.
        """
        last = batches - 1
        if last < 0:
            return self.schema.empty_table()
        ids = np.arange(0, batches * self.orders_per_batch, dtype=np.int64)
        deleted_at = self._deleted_at(ids)
        ids = ids[(deleted_at < 0) | (deleted_at > last)]
        created = self._created_batch(ids)
        # Was the order changed (i.e. last written as +U) after the batch that placed it?
        ever_changed = (last > created) & (self._stage(ids, last) != self._stage(ids, created))
        ops = np.where(ever_changed, "+U", "+I").astype(object)
        return self._rows(ids, last, ops)


def orders(orders_per_batch: int = 200, seed: int = 7) -> OrdersSource:
    """Entry point named in ``tables.yaml`` (``source: orchestration.demo.source:orders``)."""
    return OrdersSource(orders_per_batch=orders_per_batch, seed=seed)


def expected_orders(batches: int, orders_per_batch: int = 200, seed: int = 7) -> pa.Table:
    return OrdersSource(orders_per_batch=orders_per_batch, seed=seed).expected(batches)
