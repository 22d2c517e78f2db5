"""Runs pypaimon on behalf of the test suite, inside pypaimon's own virtualenv.

pypaimon 2.1.0 pins pyarrow < 20, pandas < 3 and fsspec < 2026, which conflict with the
project's pins, so it cannot be imported by the tests directly. The tests start this script
with the pypaimon venv's interpreter (see ``tests/fixtures/pypaimon_env.py``) and talk to it:

``python pypaimon_driver.py --serve``
    A worker loop. Each request is one JSON line on stdin; each response is one JSON line
    on the real stdout (anything pypaimon prints goes to stderr). Tables travel as Arrow
    IPC *files* (``pa.ipc.new_file`` with default options) whose paths are in the JSON.

``python pypaimon_driver.py --request REQ.json``
    One request, response JSON on stdout. Handy for debugging by hand.

Request: ``{"op": NAME, "args": {...}, "id": ANY}``. Response: ``{"ok": true, "result": ...}``
or ``{"ok": false, "error_type": ..., "message": ..., "traceback": ...}``, with the request's
``id`` echoed in server mode.

Every op builds a fresh catalog (``CatalogFactory.create``) so nothing is cached between
requests: the tests' own writer changes the table between calls.

This file must stay importable with pypaimon's dependencies only (no lake_core, no pytest).
"""

from __future__ import annotations

import json
import os
import sys
import traceback

PROTOCOL_VERSION = 1


def _catalog(args):
    from pypaimon import CatalogFactory

    options = dict(args.get("catalog_options") or {})
    options["warehouse"] = args["warehouse"]
    return CatalogFactory.create(options)


def _read_ipc(path):
    import pyarrow as pa

    with pa.memory_map(path, "r") as source:
        return pa.ipc.open_file(source).read_all()


def _write_ipc(table, path):
    import pyarrow as pa

    with pa.OSFile(path, "wb") as sink:
        with pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)


def _database_of(identifier):
    if "." not in identifier:
        raise ValueError(f"table identifier {identifier!r} must be 'database.table'")
    return identifier.split(".", 1)[0]


def _get_table(args):
    catalog = _catalog(args)
    table = catalog.get_table(args["identifier"])
    snapshot_id = args.get("snapshot_id")
    if snapshot_id is not None:
        table = table.copy({"scan.snapshot-id": str(int(snapshot_id))})
    return table


def op_ping(args):
    import pyarrow
    import pypaimon

    return {
        "protocol": PROTOCOL_VERSION,
        "python": sys.version.split()[0],
        "pyarrow": pyarrow.__version__,
        "pypaimon": getattr(pypaimon, "__version__", None) or _dist_version("pypaimon"),
    }


def _dist_version(name):
    try:
        from importlib.metadata import version

        return version(name)
    except Exception:  # pragma: no cover - diagnostics only
        return None


def op_create_table(args):
    from pypaimon import Schema

    catalog = _catalog(args)
    identifier = args["identifier"]
    catalog.create_database(_database_of(identifier), True)
    arrow_schema = _read_ipc(args["schema_path"]).schema
    schema = Schema.from_pyarrow_schema(
        arrow_schema,
        partition_keys=list(args.get("partition_keys") or []) or None,
        primary_keys=list(args.get("primary_keys") or []) or None,
        options={str(k): str(v) for k, v in (args.get("options") or {}).items()},
        comment=args.get("comment"),
    )
    catalog.create_table(identifier, schema, bool(args.get("ignore_if_exists", False)))
    return None


def op_write(args):
    table = _get_table(args)
    data = _read_ipc(args["data_path"])
    builder = table.new_batch_write_builder()
    overwrite = args.get("overwrite", False)
    if overwrite is True:
        builder.overwrite()
    elif isinstance(overwrite, dict):
        builder.overwrite(overwrite)
    elif overwrite not in (False, None):
        raise ValueError(f"overwrite must be a bool or a partition dict, got {overwrite!r}")
    write = builder.new_write()
    commit = builder.new_commit()
    try:
        write.write_arrow(data)
        messages = write.prepare_commit()
        commit.commit(messages)
    finally:
        write.close()
        commit.close()
    latest = table.snapshot_manager().get_latest_snapshot()
    return None if latest is None else latest.id


def op_read(args):
    table = _get_table(args)
    builder = table.new_read_builder()
    projection = args.get("projection")
    if projection is not None:
        builder = builder.with_projection(list(projection))
    splits = builder.new_scan().plan().splits()
    result = builder.new_read().to_arrow(splits)
    if result is None:
        raise RuntimeError("pypaimon returned no table for the read")
    _write_ipc(result, args["out_path"])
    return {"num_rows": result.num_rows, "num_splits": len(splits)}


def op_snapshot_ids(args):
    table = _catalog(args).get_table(args["identifier"])
    return [s.id for s in table.snapshot_manager().list_snapshots()]


def op_latest_snapshot_id(args):
    table = _catalog(args).get_table(args["identifier"])
    latest = table.snapshot_manager().get_latest_snapshot()
    return None if latest is None else latest.id


OPS = {name[len("op_") :]: fn for name, fn in globals().items() if name.startswith("op_") and callable(fn)}


def handle(request):
    try:
        op = request.get("op")
        if op not in OPS:
            raise ValueError(f"unknown op {op!r}; known: {sorted(OPS)}")
        return {"ok": True, "result": OPS[op](request.get("args") or {})}
    except BaseException as exc:  # report everything, including SystemExit from libraries
        if isinstance(exc, KeyboardInterrupt):
            raise
        return {
            "ok": False,
            "error_type": type(exc).__name__,
            "message": str(exc),
            "traceback": traceback.format_exc(),
        }


def serve():
    # Keep the protocol channel clean: whatever pypaimon prints goes to stderr.
    out = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1, encoding="utf-8")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    out.write(json.dumps({"ok": True, "result": op_ping({})}) + "\n")
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            request = json.loads(line)
        except ValueError as exc:
            response = {"ok": False, "error_type": "ProtocolError", "message": str(exc), "traceback": ""}
        else:
            if request.get("op") == "exit":
                break
            response = handle(request)
            response["id"] = request.get("id")
        out.write(json.dumps(response, default=str) + "\n")
        out.flush()


def main(argv):
    if len(argv) >= 1 and argv[0] == "--serve":
        serve()
        return 0
    if len(argv) == 2 and argv[0] == "--request":
        with open(argv[1], encoding="utf-8") as f:
            response = handle(json.load(f))
        print(json.dumps(response, default=str))
        return 0 if response["ok"] else 1
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
