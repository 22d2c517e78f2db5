"""Plain-Python dictionary models of Paimon's merge engines (the oracle of the merge tests), and a
small driver that runs the real engines the way the table writer and reader do.

The models follow Java's merge functions row by row (``PartialUpdateMergeFunction``,
``AggregateMergeFunction``, ``FirstRowMergeFunction``, ``DeduplicateMergeFunction`` behind
``ReducerMergeFunctionWrapper``: a key with a single row is passed through unmerged), with the
semantics lake_core chose where Java has known defects (see the engine modules): a whole-row delete
resets the aggregate state too, ``count`` counts contributions (``prepare``), the output
``_SEQUENCE_NUMBER`` is the group's largest.

Rows are dicts of column values plus ``_kind`` (0 +I, 1 -U, 2 +U, 3 -D) and ``_seq``.
"""

from __future__ import annotations

import decimal
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from lake_core.merge import create_merge_engine
from lake_core.merge.base import KIND, SEQ
from lake_core.schema.table_schema import TableSchema

INSERT, UPDATE_BEFORE, UPDATE_AFTER, DELETE = 0, 1, 2, 3
KIND_NAMES = {"+I": 0, "-U": 1, "+U": 2, "-D": 3}


class ModelError(Exception):
    """The model refuses the input (the engine must raise a LakeError for it too)."""


def is_retract(kind: int) -> bool:
    return kind in (UPDATE_BEFORE, DELETE)


# ------------------------------------------------------------------------------------------------
# Scalar aggregate functions (written from Java's FieldAggregator classes)
# ------------------------------------------------------------------------------------------------

_BLANK = re.compile(r"^[\t\n\x0b\f\r\x1c-\x1f \u1680\u2000-\u2006\u2008-\u200a\u2028\u2029\u205f\u3000]*$")


def _wrap(v: int, bits: int) -> int:
    m = 1 << bits
    v &= m - 1
    return v - m if v >= m >> 1 else v


def _as_map(v):
    return dict(v) if isinstance(v, list) else v


class MAgg:
    retract_ok = False

    def __init__(self, name: str, t: pa.DataType, opts: dict, col: str):
        self.name, self.t, self.opts, self.col = name, t, opts, col
        self.bits = {pa.int8(): 8, pa.int16(): 16, pa.int32(): 32, pa.int64(): 64}.get(t)
        self.init = False
        self.ignore_retract = opts.get(f"fields.{col}.ignore-retract", "false") == "true"

    def reset(self):
        self.init = False

    def num(self, v):
        if self.bits:
            return _wrap(v, self.bits)
        if pa.types.is_float32(self.t):
            return float(np.float32(v))
        return v

    def agg(self, a, v):
        n = self.name
        if n in ("sum", "product", "max", "min", "bool_and", "bool_or"):
            if a is None or v is None:
                return v if a is None else a
            if n == "sum":
                return self.num(a + v)
            if n == "product":
                return self.num(a * v)
            if n == "max":
                return v if a < v else a
            if n == "min":
                return v if a > v else a
            if n == "bool_and":
                return a and v
            return a or v
        if n == "count":
            v = 0 if v is None else v
            return v if a is None else self.num(a + v)
        if n == "last_value":
            return v
        if n == "last_non_null_value":
            return a if v is None else v
        if n == "first_value":
            if not self.init:
                self.init = True
                return v
            return a
        if n == "first_non_null_value":
            if not self.init and v is not None:
                self.init = True
                return v
            return a
        if n == "listagg":
            d = self.opts.get(f"fields.{self.col}.list-agg-delimiter", ",")
            distinct = self.opts.get(f"fields.{self.col}.distinct", "false") == "true"
            if v is None or _BLANK.match(v):
                return a
            if a is None or _BLANK.match(a):
                return v
            if distinct:
                seen = set(a.split(d))
                out = a
                for tok in v.split(d):
                    if _BLANK.match(tok) or tok in seen:
                        continue
                    seen.add(tok)
                    out += d + tok
                return out
            return a + d + v
        if n == "collect":
            distinct = self.opts.get(f"fields.{self.col}.distinct", "false") == "true"
            if a is None and v is None:
                return None
            if (a is None or v is None) and not distinct:
                return v if a is None else a
            items = (a or []) + (v or [])
            if distinct:
                out = []
                for e in items:
                    if e not in out:
                        out.append(e)
                return out
            return items
        if n == "merge_map":
            a, v = _as_map(a), _as_map(v)
            if a is None or v is None:
                return v if a is None else a
            m = dict(a)
            m.update(v)
            return m
        raise NotImplementedError(n)

    def agg_reversed(self, a, v):
        if self.name == "collect":
            return self.agg(a, v)
        return self.agg(v, a)

    def retract(self, a, v):
        if self.ignore_retract:
            return a
        n = self.name
        if n == "sum":
            if a is None or v is None:
                return (None if v is None else self.num(-v)) if a is None else a
            return self.num(a - v)
        if n == "count":
            v = 0 if v is None else v
            return self.num(-v) if a is None else self.num(a - v)
        if n == "product":
            if a is None or v is None:
                return v if a is None else a
            if self.bits:
                if v == 0:
                    raise ModelError("division by zero")
                q = abs(a) // abs(v)
                return _wrap(q if (a >= 0) == (v >= 0) else -q, self.bits)
            return a / v
        if n == "last_value":
            return None
        if n == "last_non_null_value":
            return None if v is not None else a
        if n == "collect":
            if a is None:
                return None
            if v is None:
                return a
            pending = list(v)
            out = []
            for e in a:
                if e in pending:
                    pending.remove(e)
                else:
                    out.append(e)
            return out
        if n == "merge_map":
            a, v = _as_map(a), _as_map(v)
            if a is None:
                return None
            if v is None:
                return a
            return {k: x for k, x in a.items() if k not in v}
        raise ModelError(f"{n} does not support retraction")

    def supports_retract(self) -> bool:
        return self.ignore_retract or self.name in (
            "sum",
            "count",
            "product",
            "last_value",
            "last_non_null_value",
            "collect",
            "merge_map",
            "nested_update",
        )


# ------------------------------------------------------------------------------------------------
# Table description and the models
# ------------------------------------------------------------------------------------------------


@dataclass
class Spec:
    schema: pa.Schema
    pk: tuple[str, ...]
    options: dict = field(default_factory=dict)

    @property
    def names(self) -> list[str]:
        return self.schema.names

    def opt(self, k, d=None):
        return self.options.get(k, d)

    def flag(self, k) -> bool:
        return str(self.options.get(k, "false")).lower() == "true"

    @property
    def engine(self) -> str:
        return self.options.get("merge-engine", "deduplicate")

    @property
    def ignore_delete(self) -> bool:
        return any(
            self.flag(k)
            for k in (
                "ignore-delete",
                "first-row.ignore-delete",
                "partial-update.ignore-delete",
                "deduplicate.ignore-delete",
            )
        )

    @property
    def seq_fields(self) -> list[str]:
        v = self.opt("sequence.field")
        return [s for s in v.split(",")] if v else []

    def groups(self) -> list[tuple[tuple[str, ...], tuple[str, ...]]]:
        out = []
        for k in sorted(self.options):
            if k.startswith("fields.") and k.endswith(".sequence-group"):
                seq = tuple(k[len("fields.") : -len(".sequence-group")].split(","))
                out.append((seq, tuple(self.options[k].split(","))))
        return out


def _seq_key(v):
    return (0,) if v is None else (1, v)


class Model:
    def __init__(self, spec: Spec):
        self.spec = spec
        self.types = {f.name: f.type for f in spec.schema}

    # -- ordering -------------------------------------------------------------------------------
    def sort_key(self, r):
        sf = self.spec.seq_fields
        key = tuple(r[k] for k in self.spec.pk)
        s = tuple(_seq_key(r[f]) for f in sf)
        pad = "row-kind-flag" in (self.spec.opt("sequence.auto-padding") or "")
        flag = (0 if is_retract(r["_kind"]) else 1,) if pad and sf else ()
        return key, s, flag, r["_seq"]

    # -- write-time treatment --------------------------------------------------------------------
    def prepare(self, rows: list[dict]) -> list[dict]:
        sp = self.spec
        if sp.ignore_delete:
            rows = [r for r in rows if not is_retract(r["_kind"])]
        eng = sp.engine
        if eng == "first-row" and any(is_retract(r["_kind"]) for r in rows):
            raise ModelError("first-row rejects -U/-D")
        if (
            eng == "partial-update"
            and not sp.groups()
            and not sp.flag("partial-update.remove-record-on-delete")
            and any(is_retract(r["_kind"]) for r in rows)
        ):
            raise ModelError("partial-update rejects -U/-D")
        aggs = self.aggs()
        if eng == "partial-update":
            for seq, fields in sp.groups():
                bad = [f for f in fields if f in aggs and not aggs[f].supports_retract()]
                if bad and any(is_retract(r["_kind"]) and any(r[s] is not None for s in seq) for r in rows):
                    raise ModelError(f"{bad[0]} cannot retract")
        if eng == "aggregation" and any(
            r["_kind"] == UPDATE_BEFORE or (r["_kind"] == DELETE and not sp.flag("aggregation.remove-record-on-delete"))
            for r in rows
        ):
            for a in aggs.values():
                if not a.supports_retract():
                    raise ModelError(f"{a.name} cannot retract")
        out = []
        for r in rows:
            r = dict(r)
            for c, a in aggs.items():
                if a.name == "count":
                    r[c] = 0 if r[c] is None else 1
            out.append(r)
        return out

    def aggs(self) -> dict[str, MAgg]:
        sp = self.spec
        keyl = set(sp.pk)
        out = {}
        if sp.engine == "aggregation":
            for c in sp.names:
                if c in keyl:
                    continue
                name = (
                    "last_value"
                    if c in sp.seq_fields
                    else (
                        sp.opt(f"fields.{c}.aggregate-function")
                        or sp.opt("fields.default-aggregate-function")
                        or "last_non_null_value"
                    )
                )
                out[c] = MAgg(name, self.types[c], sp.options, c)
        elif sp.engine == "partial-update":
            seqcols = {s for g, _ in sp.groups() for s in g}
            for c in sp.names:
                if c in keyl or c in seqcols:
                    continue
                name = sp.opt(f"fields.{c}.aggregate-function") or sp.opt("fields.default-aggregate-function")
                if name:
                    out[c] = MAgg(name, self.types[c], sp.options, c)
        return out

    # -- merging ----------------------------------------------------------------------------------
    def merge(self, rows: list[dict], drop_deletes: bool) -> list[dict]:
        if self.spec.ignore_delete:
            rows = [r for r in rows if not is_retract(r["_kind"])]
        rows = sorted(rows, key=self.sort_key)
        out = []
        i = 0
        while i < len(rows):
            j = i
            key = tuple(rows[i][k] for k in self.spec.pk)
            while j < len(rows) and tuple(rows[j][k] for k in self.spec.pk) == key:
                j += 1
            grp = rows[i:j]
            res = dict(grp[0]) if len(grp) == 1 else self.merge_key(grp)
            if res is not None and not (drop_deletes and is_retract(res["_kind"])):
                out.append(res)
            i = j
        return out

    def merge_key(self, grp: list[dict]) -> dict | None:
        eng = self.spec.engine
        if eng == "deduplicate":
            return dict(grp[-1])
        if eng == "first-row":
            if any(is_retract(r["_kind"]) for r in grp):
                raise ModelError("first-row rejects -U/-D")
            return dict(grp[0])
        if eng == "aggregation":
            return self._aggregate(grp)
        return self._partial_update(grp)

    def _key_only(self, r):
        return {c: (r[c] if c in self.spec.pk else None) for c in self.spec.names}

    def _aggregate(self, grp):
        sp = self.spec
        aggs = self.aggs()
        rod = sp.flag("aggregation.remove-record-on-delete")
        row = {c: None for c in sp.names}
        cur_delete = False
        for kv in grp:
            cur_delete = rod and kv["_kind"] == DELETE
            if cur_delete:
                row = self._key_only(kv)
                for a in aggs.values():
                    a.reset()
                continue
            retract = is_retract(kv["_kind"])
            for c in sp.names:
                if c in aggs:
                    a = aggs[c]
                    row[c] = a.retract(row[c], kv[c]) if retract else a.agg(row[c], kv[c])
                else:
                    row[c] = kv[c]
        row["_kind"] = DELETE if cur_delete else INSERT
        row["_seq"] = max(r["_seq"] for r in grp)
        return row

    def _partial_update(self, grp):
        sp = self.spec
        names = sp.names
        aggs = self.aggs()
        groups = sp.groups()
        field_group = {}
        for g in groups:
            for f in g[1]:
                field_group[f] = g
            for s in g[0]:
                field_group[s] = g
        pd = set((sp.opt("partial-update.remove-record-on-sequence-group") or "").split(",")) - {""}
        rod = sp.flag("partial-update.remove-record-on-delete")
        st = {"row": {c: None for c in names}, "meet": False, "cur_delete": False}

        def cmp(kv, row, seq):
            a = tuple(_seq_key(kv[s]) for s in seq)
            b = tuple(_seq_key(row[s]) for s in seq)
            return (a > b) - (a < b)

        def reset(kv):
            st["row"] = self._key_only(kv)
            st["cur_delete"] = True
            for a in aggs.values():
                a.reset()

        for kv in grp:
            st["cur_delete"] = False
            row = st["row"]
            if is_retract(kv["_kind"]):
                if not groups:
                    if rod:
                        if kv["_kind"] == DELETE:
                            reset(kv)
                        continue
                    raise ModelError("partial-update rejects -U/-D")
                updated, processed = set(), set()
                for f in names:
                    g = field_group.get(f)
                    if g is None or f in processed:
                        continue
                    seq = g[0]
                    if all(kv[s] is None for s in seq):
                        processed |= set(seq)
                        continue
                    a = aggs.get(f)
                    if cmp(kv, row, seq) >= 0:
                        if f in seq:
                            stop = False
                            for s in seq:
                                if s not in updated:
                                    if kv["_kind"] == DELETE and s in pd:
                                        reset(kv)
                                        stop = True
                                        break
                                    row[s] = kv[s]
                                    updated.add(s)
                                processed.add(s)
                            if stop:
                                break
                        else:
                            row[f] = None if a is None else a.retract(row[f], kv[f])
                    elif a is not None:
                        row[f] = a.retract(row[f], kv[f])
                continue
            if not groups:
                for f in names:
                    if kv[f] is not None:
                        row[f] = kv[f]
            else:
                processed = set()
                for f in names:
                    g = field_group.get(f)
                    a = aggs.get(f)
                    if g is not None:
                        if f in processed:
                            continue
                        seq = g[0]
                        if all(kv[s] is None for s in seq):
                            processed |= set(seq)
                            continue
                        if cmp(kv, row, seq) >= 0:
                            if f in seq:
                                for s in seq:
                                    row[s] = kv[s]
                                    processed.add(s)
                                continue
                            row[f] = kv[f] if a is None else a.agg(row[f], kv[f])
                        elif a is not None:
                            row[f] = a.agg_reversed(row[f], kv[f])
                    else:
                        if a is not None:
                            row[f] = a.agg(row[f], kv[f])
                        elif kv[f] is not None:
                            row[f] = kv[f]
            st["meet"] = True
        row = st["row"]
        for k in sp.pk:
            row[k] = grp[-1][k]
        row["_kind"] = DELETE if (st["cur_delete"] or not st["meet"]) else INSERT
        row["_seq"] = max(r["_seq"] for r in grp)
        return row

    # -- the table life cycle ---------------------------------------------------------------------
    def run(self, batches: list[list[dict]]) -> list[dict]:
        """Fold each batch (write path), then merge all folded files (read path)."""
        files = []
        seq = 0
        for b in batches:
            rows = []
            for r in b:
                r = dict(r)
                r.setdefault("_kind", INSERT)
                r["_seq"] = seq
                seq += 1
                rows.append(r)
            rows = self.prepare(rows)
            files.extend(self.merge(rows, False))
        return self.merge(files, True)


# ------------------------------------------------------------------------------------------------
# Driving the real engines
# ------------------------------------------------------------------------------------------------


class Driver:
    """Runs a real engine the way the writer (prepare_input + fold) and the reader do."""

    def __init__(self, schema: pa.Schema, pk, options: dict, partition=()):
        self.schema = schema
        self.table_schema = TableSchema.create(schema, tuple(partition), tuple(pk), options)
        self.engine = create_merge_engine(self.table_schema)
        self.files: list[pa.Table] = []
        self.seq = 0

    def to_table(self, rows: list[dict]) -> pa.Table:
        t = pa.Table.from_pylist([{c: r.get(c) for c in self.schema.names} for r in rows], schema=self.schema)
        kinds = [r.get("_kind", 0) for r in rows]
        t = t.append_column(
            pa.field(SEQ, pa.int64(), nullable=False),
            pa.array(np.arange(self.seq, self.seq + len(rows), dtype=np.int64)),
        )
        t = t.append_column(pa.field(KIND, pa.int8(), nullable=False), pa.array(kinds, pa.int8()))
        self.seq += len(rows)
        return t

    def write(self, rows: list[dict]) -> pa.Table:
        t = self.engine.prepare_input(self.to_table(rows))
        folded = self.engine.merge(t, drop_deletes=False) if t.num_rows else t
        if folded.num_rows:
            self.files.append(folded)
        return folded

    def read_table(self) -> pa.Table:
        if not self.files:
            return pa.Table.from_pylist([], schema=self.schema)
        return self.engine.merge(pa.concat_tables(self.files), drop_deletes=True)

    def read(self) -> list[dict]:
        return [{k: v for k, v in r.items() if k not in (SEQ, KIND)} for r in self.read_table().to_pylist()]

    def read_tuples(self) -> list[tuple]:
        return [tuple(r.values()) for r in self.read()]


def rows_of(names, *tuples, kinds=None) -> list[dict]:
    out = []
    for i, t in enumerate(tuples):
        r = dict(zip(names, t))
        if kinds is not None:
            r["_kind"] = KIND_NAMES[kinds[i]] if isinstance(kinds[i], str) else kinds[i]
        out.append(r)
    return out


def strip(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if not k.startswith("_")} for r in rows]


def normalize(v: Any):
    """Comparable form of engine output (maps as dicts, decimals as Decimal)."""
    if isinstance(v, list) and v and isinstance(v[0], tuple) and len(v[0]) == 2:
        return dict(v)
    if isinstance(v, float) and v != v:
        return "NaN"
    if isinstance(v, decimal.Decimal):
        return v
    return v
