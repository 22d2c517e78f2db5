"""The one module that names files: every path in a warehouse or table comes from here.

Readers never parse file names (Paimon's names are opaque); only writers build them. Every
component joined onto a root goes through :func:`join`, which refuses anything that would leave the
root (``..``, ``.``, separators, NUL, empty): the second line of defence behind
:mod:`lake_core.names`, so a name that slipped past validation still cannot reach another table's
files or anything outside the warehouse.
"""

from __future__ import annotations

import datetime as _dt
import decimal
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lake_core.errors import InvalidDataError, PathEscapeError

MAX_COMPONENT_BYTES = 255  # NAME_MAX of common file systems

_ESCAPE = set("\"#%'*/:=?\\{}[]^")


def escape_path_name(value: str) -> str:
    out = []
    for ch in value:
        o = ord(ch)
        if ch in _ESCAPE or o < 0x20 or o == 0x7F:
            out.append("%%%02X" % o)
        else:
            out.append(ch)
    return "".join(out)


def check_component(component: str, what: str = "path component") -> str:
    """``component`` must be exactly one non-empty path component that stays where it is joined."""
    if (
        not isinstance(component, str)
        or component in ("", ".", "..")
        or "/" in component
        or "\\" in component
        or "\x00" in component
    ):
        raise PathEscapeError(
            f"refusing {what} {component!r}: it is not a single path component, so the path would leave its directory"
        )
    return component


def join(root: str, *components: str, what: str = "path component") -> str:
    """``root/c1/c2...`` where each component is checked by :func:`check_component`."""
    for c in components:
        check_component(c, what)
    return "/".join((root, *components))


def join_relative(root: str, relative: str, what: str = "path") -> str:
    """``root/relative`` for a ``/``-separated relative path (e.g. ``p=1/bucket-0``), checked per component."""
    return join(root, *relative.split("/"), what=what) if relative else root


def partition_value_text(value: Any) -> str | None:
    """How Paimon spells a partition value in a directory name (None/'' → default name)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, _dt.datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S") + (
            ("." + f"{value.microsecond:06d}".rstrip("0")) if value.microsecond else ""
        )
    if isinstance(value, _dt.date):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    if isinstance(value, bytes):
        return value.hex()
    text = str(value)
    return text if text != "" else None


def partition_dir(names: Sequence[str], values: Sequence[Any], default_name: str) -> str:
    """Hive-style ``k1=v1/k2=v2`` relative directory ('' for an unpartitioned table)."""
    parts = []
    for n, v in zip(names, values):
        text = partition_value_text(v)
        parts.append(f"{escape_path_name(n)}={escape_path_name(text if text is not None else default_name)}")
    return "/".join(parts)


def check_new_partition_dir(names: Sequence[str], values: Sequence[Any], default_name: str, table: str) -> str:
    """:func:`partition_dir` for a partition about to be written: each directory name must fit in
    ``MAX_COMPONENT_BYTES`` (local disks and HDFS refuse longer ones; refusing on S3 too keeps tables
    portable). Readers never check, so tables written elsewhere stay readable."""
    rel = partition_dir(names, values, default_name)
    for n, v, part in zip(names, values, rel.split("/") if rel else ()):
        size = len(part.encode("utf-8"))
        if size > MAX_COMPONENT_BYTES:
            text = partition_value_text(v) or default_name
            shown = text if len(text) <= 40 else text[:40] + f"... ({len(text)} characters)"
            raise InvalidDataError(
                f"partition value {shown!r} of column '{n}' of {table} makes the directory name '{n}=...' {size} "
                f"bytes long; file systems allow {MAX_COMPONENT_BYTES}: use a shorter value (e.g. a hash) for this "
                "partition column. Nothing was written"
            )
    return rel


def new_uuid() -> str:
    return str(uuid.uuid4())


@dataclass(frozen=True)
class TablePaths:
    """Paths of one table, rooted at ``root`` (a URI or absolute path without trailing slash)."""

    root: str

    # -- metadata --------------------------------------------------------------------------
    @property
    def schema_dir(self) -> str:
        return f"{self.root}/schema"

    def schema(self, schema_id: int) -> str:
        return f"{self.root}/schema/schema-{schema_id}"

    @property
    def snapshot_dir(self) -> str:
        return f"{self.root}/snapshot"

    def snapshot(self, snapshot_id: int) -> str:
        return f"{self.root}/snapshot/snapshot-{snapshot_id}"

    @property
    def latest_hint(self) -> str:
        return f"{self.root}/snapshot/LATEST"

    @property
    def earliest_hint(self) -> str:
        return f"{self.root}/snapshot/EARLIEST"

    @property
    def expire_lock(self) -> str:
        """Hidden lock file of the snapshot expiry in flight."""
        return f"{self.root}/snapshot/.expire-lock"

    @property
    def branch_dir(self) -> str:
        return f"{self.root}/branch"

    @property
    def manifest_dir(self) -> str:
        return f"{self.root}/manifest"

    def manifest(self, name: str) -> str:
        return join(self.manifest_dir, name, what="manifest file name")

    @property
    def index_dir(self) -> str:
        return f"{self.root}/index"

    def index_file(self, name: str) -> str:
        return join(self.index_dir, name, what="index file name")

    @property
    def tag_dir(self) -> str:
        return f"{self.root}/tag"

    def tag(self, name: str) -> str:
        return join(self.tag_dir, f"tag-{name}", what="tag file name")

    @property
    def statistics_dir(self) -> str:
        return f"{self.root}/statistics"

    def statistics(self, name: str) -> str:
        return f"{self.root}/statistics/{name}"

    def expire_journal(self, name: str) -> str:
        """Hidden journal of an expiry in flight (lists what it deletes, so a re-run can finish)."""
        return f"{self.root}/snapshot/.{name}"

    @property
    def changelog_dir(self) -> str:
        """Long-lived changelogs of expired snapshots (``changelog.num-retained.*`` decoupled)."""
        return f"{self.root}/changelog"

    def changelog(self, snapshot_id: int) -> str:
        return f"{self.root}/changelog/changelog-{snapshot_id}"

    @property
    def changelog_latest_hint(self) -> str:
        return f"{self.root}/changelog/LATEST"

    @property
    def changelog_earliest_hint(self) -> str:
        return f"{self.root}/changelog/EARLIEST"

    @property
    def consumer_dir(self) -> str:
        return f"{self.root}/consumer"

    def consumer(self, consumer_id: str) -> str:
        return join(self.consumer_dir, f"consumer-{consumer_id}", what="consumer file name")

    def expired_consumer(self, consumer_id: str) -> str:
        """Where the expiry of ``consumer-<id>`` records what it removed. Java lists consumers by
        the ``consumer-`` prefix, so it never sees this file; ``.expired-`` is as long as that
        prefix, so every valid consumer id fits."""
        return join(self.consumer_dir, f".expired-{consumer_id}", what="expired consumer file name")

    # -- data ------------------------------------------------------------------------------
    def bucket_dir(self, partition_path: str, bucket: int) -> str:
        return join(join_relative(self.root, partition_path, "partition directory"), f"bucket-{int(bucket)}")

    def data_file(self, partition_path: str, bucket: int, file_name: str, external_path: str | None = None) -> str:
        if external_path:
            return external_path
        return data_file_in(self.bucket_dir(partition_path, bucket), file_name)


def data_file_in(bucket_dir: str, file_name: str) -> str:
    """A data file of a bucket directory (names come from manifests, so they are checked too)."""
    return join(bucket_dir, file_name, what="data file name")


def extra_file_beside(data_file: str, name: str) -> str:
    """An extra file of a data file (Java ``DataFilePathFactory.toAlignedPath``: same directory)."""
    return join(data_file.rsplit("/", 1)[0], name, what="extra file name")


class FileNamer:
    """Names for the files one writer or one commit creates: ``<prefix><uuid>-<n>``.

    One uuid per writer plus a counter, as Paimon does, so names never collide across writers.
    """

    def __init__(self) -> None:
        self._uuid = new_uuid()
        self._n = 0

    def _next(self) -> int:
        n = self._n
        self._n += 1
        return n

    def data_file(self, prefix: str, fmt: str) -> str:
        return f"{prefix}{self._uuid}-{self._next()}.{fmt}"

    def manifest(self) -> str:
        return f"manifest-{self._uuid}-{self._next()}"

    def manifest_list(self) -> str:
        return f"manifest-list-{self._uuid}-{self._next()}"

    def index_manifest(self) -> str:
        return f"index-manifest-{self._uuid}-{self._next()}"

    def index_file(self) -> str:
        return f"index-{self._uuid}-{self._next()}"

    def named(self, file_name: str) -> bool:
        """Whether this namer gave ``file_name`` (every name it gives carries its uuid)."""
        return self._uuid in file_name
