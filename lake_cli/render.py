"""What the commands print: a result's text or JSON, a table's description, a progress bar."""

from __future__ import annotations

import dataclasses
import datetime as _dt
import enum
import json
import sys
import time
from collections.abc import Callable
from typing import IO, Any

import pyarrow as pa

from lake_core import FileStoreTable, OperationResult, human_duration


def jsonable(value: Any) -> Any:
    """A result (any frozen dataclass) as plain JSON values: tuples become lists, bytes hex."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value) if f.repr}
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in value]
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, enum.Enum):
        return value.value if isinstance(value.value, (str, int)) else value.name
    if isinstance(value, (_dt.datetime, _dt.date)):
        return value.isoformat()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def result_json(result: OperationResult) -> dict[str, Any]:
    """Every field of the result, plus its one-line ``summary`` and ``did_something``."""
    return jsonable(result) | {"summary": result.summary(), "did_something": result.did_something()}


def dumps(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=False, default=str)


class ProgressBar:
    """``[#####-----] 3/6 units  12 s`` on one line of ``stream`` (stderr), redrawn in place;
    nothing when ``enabled`` is false (not a terminal, ``--json`` or ``--no-progress``)."""

    def __init__(self, what: str, *, stream: IO[str] | None = None, enabled: bool = True, width: int = 30):
        self.what, self.stream, self.enabled, self.width = what, stream or sys.stderr, enabled, width
        self.started = time.monotonic()
        self.drawn = False

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled or total <= 0:
            return
        filled = self.width * done // total
        bar = "#" * filled + "-" * (self.width - filled)
        took = time.monotonic() - self.started
        self.stream.write(f"\r[{bar}] {done}/{total} {self.what}  {took:.0f} s")
        self.stream.flush()
        self.drawn = True
        if done >= total:
            self.close()

    def close(self) -> None:
        if self.drawn:
            self.stream.write("\n")
            self.stream.flush()
            self.drawn = False


def progress_for(what: str, args: Any) -> Callable[[int, int], None]:
    enabled = args.progress if args.progress is not None else (sys.stderr.isatty() and not args.json)
    return ProgressBar(what, enabled=bool(enabled))


def _age(ms: int, now_ms: int) -> str:
    s = max(0, (now_ms - ms) // 1000)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if s >= size:
            return f"{s // size}{unit} ago"
    return f"{s}s ago"


def table_overview(table: FileStoreTable) -> dict[str, Any]:
    """What ``lake show`` prints: schema, keys, options, recent snapshots, tags, leases, health."""
    schema = table.schema
    now_ms = int(time.time() * 1000)
    snaps = table.snapshots()
    health = table.maintenance.health()
    return {
        "table": table.identifier,
        "schema_id": schema.id,
        "fields": [{"name": f.name, "type": str(f.type)} for f in schema.fields],
        "primary_keys": list(schema.primary_keys),
        "partition_keys": list(schema.partition_keys),
        "options": dict(schema.options),
        "snapshots": [
            {
                "id": s.id,
                "kind": jsonable(s.commit_kind),
                "time_ms": s.time_millis,
                "age": _age(s.time_millis, now_ms),
                "total_records": s.total_record_count,
            }
            for s in snaps[-10:]
        ],
        "snapshot_count": len(snaps),
        "tags": {name: table.tag(name).id for name in table.list_tags()},
        "consumers": [
            {"id": c.consumer_id, "next_snapshot": c.next_snapshot, "lease_expires_ms": c.lease_expires_ms}
            for c in table.maintenance.consumers.consumers()
        ],
        "health": health.as_metadata(),
    }


def overview_text(o: dict[str, Any]) -> str:
    pk, parts = set(o["primary_keys"]), set(o["partition_keys"])
    lines = [f"table {o['table']} (schema {o['schema_id']})", "  fields:"]
    for f in o["fields"]:
        marks = [m for m, on in (("primary key", f["name"] in pk), ("partition", f["name"] in parts)) if on]
        lines.append(f"    {f['name']:<24} {f['type']}" + (f"  ({', '.join(marks)})" if marks else ""))
    if o["options"]:
        lines.append("  options: " + ", ".join(f"{k}={v}" for k, v in sorted(o["options"].items())))
    shown = o["snapshots"]
    lines.append(f"  snapshots: {o['snapshot_count']}" + (f" (the last {len(shown)}):" if shown else ""))
    for s in reversed(shown):
        lines.append(f"    {s['id']:>6}  {s['kind']:<10} {s['age']:>10}  {s['total_records']} records")
    if o["tags"]:
        lines.append("  tags: " + ", ".join(f"{n} → {sid}" for n, sid in o["tags"].items()))
    if o["consumers"]:
        lines.append(
            "  consumers and leases: " + ", ".join(f"{c['id']} → {c['next_snapshot']}" for c in o["consumers"])
        )
    h = o["health"]
    lines.append(
        "  health: "
        + ", ".join(
            f"{k.replace('_', ' ')} {v}"
            for k, v in h.items()
            if k in ("files", "small_files", "max_sorted_runs", "manifest_count", "buckets", "max_bucket_skew")
        )
    )
    if "oldest_snapshot_age_s" in h:
        lines.append(f"  oldest snapshot: {human_duration(h['oldest_snapshot_age_s'])} old")
    if "ttl_lag_s" in h:
        lines.append(f"  record TTL lag: {human_duration(h['ttl_lag_s'])}")
    return "\n".join(lines)


def rows_text(rows: pa.Table, *, limit: int = 50) -> str:
    """A system table's rows as aligned columns (the first ``limit``, then how many more)."""
    shown = [[_cell(v) for v in row.values()] for row in rows.slice(0, limit).to_pylist()]
    names = rows.column_names
    widths = [max([len(n)] + [len(r[i]) for r in shown]) for i, n in enumerate(names)]
    lines = ["  ".join(n.ljust(w) for n, w in zip(names, widths, strict=True)).rstrip()]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in shown]
    if rows.num_rows > limit:
        lines.append(f"... and {rows.num_rows - limit} more row(s) (--json prints all)")
    elif not rows.num_rows:
        lines.append("(no rows)")
    return "\n".join(lines)


def _cell(value: Any) -> str:
    text = "-" if value is None else str(value)
    return text if len(text) <= 60 else text[:57] + "..."
