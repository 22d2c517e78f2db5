"""``lake``: the maintenance of a lakehouse warehouse from a shell, named after Paimon's procedures.

Every command takes the table as ``db.table`` and the warehouse from ``--warehouse``,
``$LAKE_WAREHOUSE`` or a ``tables.yaml`` (``--config``); see docs/operations/cli.md.

Exit codes: 0 done (or nothing to do), 1 the operation failed, 2 bad usage or input (unknown table,
bad partition spec, bad option: the table is untouched), 3 nothing was done (only with
``--detailed-exitcode``).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import sys
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from jobs.spark_target import SparkConfigError
from jobs.storage import StorageCredentialsError
from lake_cli.render import dumps, overview_text, progress_for, result_json, rows_text, table_overview
from lake_cli.settings import UsageError, add_location_arguments, resolve_location
from lake_core import Catalog, FileStoreTable, OperationResult, PartitionSelector, SystemTable, parse_duration_ms
from lake_core.errors import (
    CatalogError,
    InvalidOptionError,
    LakeError,
    PathEscapeError,
    PredicateError,
    SnapshotNotFoundError,
    TagNotFoundError,
)

OK, FAILED, USAGE, NOTHING = 0, 1, 2, 3

#: LakeErrors that mean the input was wrong (exit 2): the table, a name, a spec, an option, a snapshot or tag.
INPUT_ERRORS: tuple[type[BaseException], ...] = (
    CatalogError,
    InvalidOptionError,
    PathEscapeError,
    PredicateError,
    SnapshotNotFoundError,
    TagNotFoundError,
    UsageError,
    StorageCredentialsError,
    SparkConfigError,
)


class _ParseError(UsageError):
    def __init__(self, prog: str, message: str):
        super().__init__(f"{prog}: error: {message} (see {prog} --help)")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:
        raise _ParseError(self.prog, message)


# -- argument helpers ------------------------------------------------------------------------------


def _duration(flag: str, text: str) -> _dt.timedelta:
    try:
        return _dt.timedelta(milliseconds=parse_duration_ms(flag, text))
    except InvalidOptionError:
        raise UsageError(f"{flag} {text!r} is not a duration (e.g. '1 h', '30 min', '7 d')") from None


def _age_or_time(flag: str, text: str) -> _dt.timedelta | _dt.datetime:
    """``'2 d'`` (an age) or ``'2024-05-01T00:00'`` (a local time)."""
    try:
        return _dt.datetime.fromisoformat(text)
    except ValueError:
        pass
    try:
        return _dt.timedelta(milliseconds=parse_duration_ms(flag, text))
    except InvalidOptionError:
        raise UsageError(
            f"{flag} {text!r} is neither a duration ('1 h', '7 d') nor a local time ('2024-05-01T00:00')"
        ) from None


def _key_values(flag: str, items: Sequence[str]) -> dict[str, str]:
    out = {}
    for text in items:
        key, sep, value = text.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"{flag} {text!r} must look like key=value")
        out[key.strip()] = value
    return out


def _partitions(table: FileStoreTable, specs: Sequence[str] | None, operation: str) -> list[dict[str, Any]] | None:
    """``['dt=2024-01-01/hr=3']`` → typed ``{column: value}`` dicts (lake_core's ``PartitionSelector``)."""
    if not specs:
        return None
    selector = PartitionSelector.of(table.schema, list(specs), table=table.identifier, operation=operation)
    if selector is None:
        return None
    return [dict(spec) for spec in selector.specs]


# -- the parser --------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    add_location_arguments(common)
    out = common.add_argument_group("output")
    out.add_argument("--json", action="store_true", help="print the result as JSON (stdout) instead of text")
    out.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="a progress bar on stderr (default: on a terminal)",
    )
    out.add_argument(
        "--detailed-exitcode", action="store_true", help="exit 3 when the operation had nothing to do (default 0)"
    )
    maint = argparse.ArgumentParser(add_help=False)
    maint.add_argument("--dry-run", action="store_true", help="report what would be done; change nothing")

    def table_arg(p: argparse.ArgumentParser) -> None:
        p.add_argument("table", metavar="DB.TABLE")

    def partition_arg(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--partition",
            action="append",
            metavar="SPEC",
            help="'dt=2024-01-01' or 'dt=2024-01-01/hr=3' (repeatable; default: every partition)",
        )

    def spark_arg(p: argparse.ArgumentParser) -> None:
        g = p.add_argument_group("spark")
        g.add_argument("--spark", metavar="WHERE", help="run on Spark: local[N], spark://host:port or sc://host:port")
        g.add_argument("--spark-conf", action="append", default=[], metavar="KEY=VALUE", help="a spark.* setting")
        g.add_argument(
            "--shared-filesystem", action="store_true", help="a local warehouse is the same path on every executor"
        )

    parser = _Parser(
        prog="lake",
        description="the maintenance of a lakehouse warehouse from a shell, named after Paimon's procedures",
        epilog="exit codes: 0 ok, 1 failed, 2 bad input, 3 nothing done (--detailed-exitcode)",
    )
    sub: Any = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Parser)

    def add(name: str, help: str, *parents: argparse.ArgumentParser) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=help, description=help, parents=[common, *parents])

    add("tables", "list the tables of the warehouse")
    p = add("show", "a table's schema, options, snapshots, tags, leases and health")
    table_arg(p)

    p = add("compact", "compact a primary-key table (Paimon's compact procedure)", maint)
    table_arg(p)
    partition_arg(p)
    p.add_argument(
        "--bucket",
        type=int,
        action="append",
        metavar="N",
        help="compact only bucket N of the selected partitions (repeatable; default: every bucket)",
    )
    p.add_argument("--full", action="store_true", help="every selected bucket to one file at the top level")
    p.add_argument("--expire-records", action="store_true", help="rewrite only the buckets holding expired records")
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE", help="a dynamic option of this job")
    p.add_argument("--parallelism", type=int, default=2, help="threads (in-process; default 2)")
    spark_arg(p)

    for name, what in (("expire-snapshots", "snapshots"), ("expire-changelogs", "long-lived changelogs")):
        p = add(name, f"expire old {what} (unset: the table's options)", maint)
        table_arg(p)
        p.add_argument("--retain-min", type=int, metavar="N")
        p.add_argument("--retain-max", type=int, metavar="N")
        p.add_argument("--older-than", metavar="AGE|TIME", help="'1 d' (an age) or '2024-05-01T00:00' (local time)")
        p.add_argument("--max-deletes", type=int, metavar="N")

    p = add("expire-partitions", "drop partitions older than an expiration time", maint)
    table_arg(p)
    p.add_argument("--expiration-time", required=True, metavar="DURATION", help="e.g. '7 d'")
    p.add_argument("--timestamp-formatter", help="e.g. yyyy-MM-dd")
    p.add_argument("--timestamp-pattern", help="e.g. '$dt' or '$dt $hr:00:00'")

    p = add("compact-manifest", "fold the manifests of the latest snapshot", maint)
    table_arg(p)
    p.add_argument("--mode", choices=("full", "minor"), default="full")

    p = add("remove-orphans", "delete files nothing references (Paimon's remove_orphan_files)", maint)
    table_arg(p)
    p.add_argument("--older-than", default="1 d", metavar="AGE", help="only files older than this (default '1 d')")
    p.add_argument("--force", action="store_true", help="allow --older-than below one hour (no writer running)")

    p = add("rescale", "change the bucket count and rewrite partitions into it", maint)
    table_arg(p)
    partition_arg(p)
    p.add_argument("--bucket", type=int, required=True, metavar="N")
    spark_arg(p)

    p = add("rollback", "make a snapshot or tag the latest state (stop writers first)", maint)
    table_arg(p)
    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument("--snapshot", type=int, metavar="ID")
    target.add_argument("--tag", metavar="NAME")

    tag = sub.add_parser("tag", help="create, delete or list tags")
    tags: Any = tag.add_subparsers(dest="action", required=True, metavar="ACTION", parser_class=_Parser)
    p = tags.add_parser("list", help="the tags and their snapshots", parents=[common])
    table_arg(p)
    p = tags.add_parser("create", help="tag a snapshot (default: the latest)", parents=[common, maint])
    table_arg(p)
    p.add_argument("name")
    p.add_argument("--snapshot", type=int, metavar="ID")
    p.add_argument("--time-retained", metavar="DURATION", help="the tag expires this long after its creation")
    p = tags.add_parser("delete", help="delete a tag and the files only it held", parents=[common, maint])
    table_arg(p)
    p.add_argument("name")

    lease = sub.add_parser("lease", help="list or release the leases pinning snapshots")
    leases: Any = lease.add_subparsers(dest="action", required=True, metavar="ACTION", parser_class=_Parser)
    p = leases.add_parser("list", help="the leases and consumers of a table", parents=[common])
    table_arg(p)
    p = leases.add_parser(
        "release", help="release a lease by its id (lease-<holder>-<expiry>-<random>)", parents=[common, maint]
    )
    table_arg(p)
    p.add_argument("lease_id", metavar="LEASE_ID")
    return parser


# -- the commands --------------------------------------------------------------------------------------


class Context:
    def __init__(self, args: argparse.Namespace, environ: Mapping[str, str], out: Any):
        self.args, self.environ, self.out = args, environ, out
        self.warehouse, self.storage_options = resolve_location(args, environ)
        self._catalog: Catalog | None = None

    @property
    def catalog(self) -> Catalog:
        if self._catalog is None:
            self._catalog = Catalog(self.warehouse, storage_options=self.storage_options)
        return self._catalog

    def table(self) -> FileStoreTable:
        table = self.catalog.get_table(self.args.table)
        if isinstance(table, SystemTable):  # read-only: only `lake show` reads one
            raise UsageError(
                f"{table.identifier} is a system table (read-only): `lake show {table.identifier}` reads it"
            )
        return table

    def print(self, text: str) -> None:
        print(text, file=self.out)


def _report(ctx: Context, result: OperationResult) -> int:
    if ctx.args.json:
        ctx.print(dumps(result_json(result)))
    else:
        ctx.print(result.describe())
    return NOTHING if ctx.args.detailed_exitcode and not result.did_something() else OK


def cmd_tables(ctx: Context) -> int:
    if ctx.warehouse.startswith("file:") and not ctx.catalog.fileio.directory_exists(ctx.warehouse):
        raise UsageError(f"warehouse {ctx.warehouse} does not exist")
    rows: list[dict[str, Any]] = []
    for db in ctx.catalog.list_databases():
        for name in ctx.catalog.list_tables(db):
            table = ctx.catalog.get_table(f"{db}.{name}")
            assert isinstance(table, FileStoreTable)  # a plain name is never a system table
            snap = table.latest_snapshot()
            rows.append(
                {
                    "table": table.identifier,
                    "snapshot": snap.id if snap else None,
                    "records": snap.total_record_count if snap else 0,
                    "bucket": table.schema.options.get("bucket", "-1"),
                    "partition_keys": list(table.schema.partition_keys),
                }
            )
    if ctx.args.json:
        ctx.print(dumps(rows))
    elif not rows:
        ctx.print(f"no tables in {ctx.warehouse}")
    else:
        width = max(len(r["table"]) for r in rows)
        for r in rows:
            parts = ",".join(r["partition_keys"]) or "-"
            ctx.print(
                f"{r['table']:<{width}}  snapshot {r['snapshot'] if r['snapshot'] is not None else '-':<6} "
                f"records {r['records']:<10} bucket {r['bucket']:<4} partitioned by {parts}"
            )
    return OK


def cmd_show(ctx: Context) -> int:
    if "$" in ctx.args.table:  # a system table ('db.t$snapshots'): its rows
        rows = ctx.catalog.get_table(ctx.args.table).to_arrow()
        ctx.print(dumps(rows.to_pylist()) if ctx.args.json else rows_text(rows))
        return OK
    overview = table_overview(ctx.table())
    ctx.print(dumps(overview) if ctx.args.json else overview_text(overview))
    return OK


def _spark_session(ctx: Context, app_name: str) -> Any:
    """The Spark session of ``--spark`` (pyspark imported only here)."""
    from jobs.spark_target import SparkTarget, check_warehouse_reachable  # noqa: PLC0415 - Spark only with --spark

    where = ctx.args.spark
    target = SparkTarget(remote=where) if where.startswith("sc://") else SparkTarget(master=where)
    check_warehouse_reachable(ctx.warehouse, target, shared_filesystem=ctx.args.shared_filesystem)
    conf = _key_values("--spark-conf", ctx.args.spark_conf)
    from jobs.spark import spark_session  # noqa: PLC0415 - pyspark loads only when --spark is given

    return spark_session(remote=target.remote, master=target.master, app_name=app_name, conf=conf)


def cmd_compact(ctx: Context) -> int:
    a = ctx.args
    table = ctx.table()
    partitions = _partitions(table, a.partition, "compact")
    options = _key_values("--option", a.option)
    if a.parallelism < 1:
        raise UsageError(f"--parallelism {a.parallelism} must be at least 1")
    if a.spark and not a.dry_run:
        from jobs.compact import run_compaction  # noqa: PLC0415 - jobs.compact's Spark path only with --spark

        # planned here, once: no Spark starts for a table with nothing to compact
        job = table.maintenance.compaction_job(
            full=a.full,
            partitions=partitions,
            buckets=a.bucket,
            expire_records=a.expire_records,
            options=options or None,
        )
        spark = _spark_session(ctx, "lake-compact") if job.units else None
        return _report(ctx, run_compaction(spark, job))
    bar = progress_for("units", a)
    result = table.maintenance.compact(
        full=a.full,
        partitions=partitions,
        buckets=a.bucket,
        expire_records=a.expire_records,
        options=options or None,
        dry_run=a.dry_run,
        parallelism=a.parallelism,
        progress=bar,
    )
    return _report(ctx, result)


def _expire_kwargs(a: argparse.Namespace) -> dict[str, Any]:
    return {
        "retain_min": a.retain_min,
        "retain_max": a.retain_max,
        "older_than": None if a.older_than is None else _age_or_time("--older-than", a.older_than),
        "max_deletes": a.max_deletes,
        "dry_run": a.dry_run,
    }


def cmd_expire_snapshots(ctx: Context) -> int:
    return _report(ctx, ctx.table().maintenance.expire_snapshots(**_expire_kwargs(ctx.args)))


def cmd_expire_changelogs(ctx: Context) -> int:
    return _report(ctx, ctx.table().maintenance.expire_changelogs(**_expire_kwargs(ctx.args)))


def cmd_expire_partitions(ctx: Context) -> int:
    a = ctx.args
    result = ctx.table().maintenance.expire_partitions(
        expiration_time=_duration("--expiration-time", a.expiration_time),
        timestamp_formatter=a.timestamp_formatter,
        timestamp_pattern=a.timestamp_pattern,
        dry_run=a.dry_run,
    )
    return _report(ctx, result)


def cmd_compact_manifest(ctx: Context) -> int:
    return _report(ctx, ctx.table().maintenance.compact_manifest(mode=ctx.args.mode, dry_run=ctx.args.dry_run))


def cmd_remove_orphans(ctx: Context) -> int:
    a = ctx.args
    result = ctx.table().maintenance.remove_orphan_files(
        older_than=_duration("--older-than", a.older_than), dry_run=a.dry_run, force=a.force
    )
    return _report(ctx, result)


def cmd_rescale(ctx: Context) -> int:
    a = ctx.args
    table = ctx.table()
    partitions = _partitions(table, a.partition, "rescale")
    if a.bucket < 1:
        raise UsageError(f"--bucket {a.bucket} must be a positive number of buckets")
    if a.spark and not a.dry_run:
        from jobs.rescale import rescale_partitions  # noqa: PLC0415 - the Spark path only with --spark

        plan = table.maintenance.plan_rescale(bucket=a.bucket, partitions=partitions)
        specs = [dict(u.spec) for u in plan.units]
        spark = _spark_session(ctx, "lake-rescale") if specs else None
        result = rescale_partitions(
            spark,
            ctx.warehouse,
            table.identifier,
            bucket=a.bucket,
            partitions=specs,
            commit_user=f"lake-cli-{uuid.uuid4()}",
            storage_options=ctx.storage_options,
        )
        return _report(ctx, result)
    bar = progress_for("partitions", a)
    result = table.maintenance.rescale(bucket=a.bucket, partitions=partitions, dry_run=a.dry_run, progress=bar)
    return _report(ctx, result)


def cmd_rollback(ctx: Context) -> int:
    a = ctx.args
    table = ctx.table()
    if not a.dry_run:
        return _report(ctx, table.maintenance.rollback_to(snapshot_id=a.snapshot, tag=a.tag))
    target = table.tag(a.tag).id if a.tag is not None else table.snapshot(a.snapshot).id
    newer = [s.id for s in table.snapshots() if s.id > target]
    newer_tags = [n for n in table.list_tags() if table.tag(n).id > target]
    plan: dict[str, Any] = {
        "table": table.identifier,
        "dry_run": True,
        "snapshot_id": target,
        "removed_snapshots": newer,
        "removed_tags": newer_tags,
    }
    if a.json:
        ctx.print(dumps(plan))
    else:
        what = f"snapshots {', '.join(map(str, newer)) or 'none'}; tags {', '.join(newer_tags) or 'none'}"
        ctx.print(
            f"rollback_to on {table.identifier} (dry run): latest snapshot would be {target}; would remove {what}"
        )
    return NOTHING if a.detailed_exitcode and not newer and not newer_tags else OK


def cmd_tag(ctx: Context) -> int:
    a = ctx.args
    table = ctx.table()
    if a.action == "list":
        tags = {name: table.tag(name).id for name in table.list_tags()}
        if a.json:
            ctx.print(dumps(tags))
        else:
            ctx.print("\n".join(f"{n}  snapshot {sid}" for n, sid in tags.items()) or f"{table.identifier} has no tags")
        return OK
    if a.action == "create":
        retained = None if a.time_retained is None else _duration("--time-retained", a.time_retained)
        snap = table.snapshot(a.snapshot) if a.snapshot is not None else table.latest_snapshot()
        if snap is None:
            raise UsageError(f"cannot tag {table.identifier}: it has no snapshots yet")
        if a.name in table.list_tags():
            raise UsageError(f"tag '{a.name}' already exists on {table.identifier} (snapshot {table.tag(a.name).id})")
        if not a.dry_run:
            table.create_tag(a.name, snap.id, time_retained=retained)
        out = {"table": table.identifier, "tag": a.name, "snapshot_id": snap.id, "dry_run": a.dry_run}
        verb = "would tag" if a.dry_run else "tagged"
        ctx.print(dumps(out) if a.json else f"{verb} snapshot {snap.id} of {table.identifier} as '{a.name}'")
        return OK
    table.tag(a.name)  # TagNotFoundError names the tag
    return _report(ctx, table.maintenance.delete_tag(name=a.name, dry_run=a.dry_run))


def cmd_lease(ctx: Context) -> int:
    a = ctx.args
    table = ctx.table()
    consumers = table.maintenance.consumers.consumers()
    if a.action == "list":
        rows = [
            {
                "id": c.consumer_id,
                "lease": c.lease_expires_ms is not None,
                "snapshot": c.next_snapshot,
                "expires": None
                if c.lease_expires_ms is None
                else _dt.datetime.fromtimestamp(c.lease_expires_ms / 1000, _dt.UTC).isoformat(timespec="seconds"),
            }
            for c in consumers
        ]
        if a.json:
            ctx.print(dumps(rows))
        elif not rows:
            ctx.print(f"{table.identifier} has no leases or consumers")
        else:
            for r in rows:
                kind = f"lease until {r['expires']}" if r["lease"] else "consumer"
                ctx.print(f"{r['id']}  snapshot {r['snapshot']}  {kind}")
        return OK
    held = next((c for c in consumers if c.consumer_id == a.lease_id), None)
    if a.dry_run:
        released = held is not None
    else:
        released = table.maintenance.release_lease(consumer_id=a.lease_id)
    out = {"table": table.identifier, "lease": a.lease_id, "released": released, "dry_run": a.dry_run}
    if a.json:
        ctx.print(dumps(out))
    elif released:
        ctx.print(
            f"{'would release' if a.dry_run else 'released'} {a.lease_id} on snapshot {held.next_snapshot if held else '?'}"
        )
    else:
        ctx.print(f"{a.lease_id} of {table.identifier} is already gone (released or expired); nothing to release")
    return NOTHING if a.detailed_exitcode and not released else OK


COMMANDS: dict[str, Callable[[Context], int]] = {
    "tables": cmd_tables,
    "show": cmd_show,
    "compact": cmd_compact,
    "expire-snapshots": cmd_expire_snapshots,
    "expire-changelogs": cmd_expire_changelogs,
    "expire-partitions": cmd_expire_partitions,
    "compact-manifest": cmd_compact_manifest,
    "remove-orphans": cmd_remove_orphans,
    "rescale": cmd_rescale,
    "rollback": cmd_rollback,
    "tag": cmd_tag,
    "lease": cmd_lease,
}


def main(argv: Sequence[str] | None = None, *, environ: Mapping[str, str] | None = None, out: Any = None) -> int:
    """Run one command; returns the exit code (see the module). Errors print one line to stderr."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except UsageError as e:
        print(e, file=sys.stderr)
        return USAGE
    except SystemExit as e:  # --help
        return int(e.code or 0)
    try:
        ctx = Context(args, os.environ if environ is None else environ, out or sys.stdout)
        return COMMANDS[args.command](ctx)
    except INPUT_ERRORS as e:
        print(f"lake {args.command}: error: {e}", file=sys.stderr)
        return USAGE
    except LakeError as e:
        print(f"lake {args.command}: failed: {e}", file=sys.stderr)
        return FAILED
    except KeyboardInterrupt:
        print(f"lake {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader left (`lake show ... | head`): not an error of the command
        sys.stderr.close()
        return OK
    except Exception as e:  # an unexpected error: one line, the type names it
        print(f"lake {args.command}: failed: {type(e).__name__}: {e}", file=sys.stderr)
        return FAILED


if __name__ == "__main__":
    raise SystemExit(main())
