"""The one module that names files (ARCHITECTURE D7): every path in a table comes from here.

Readers never parse file names (FORMAT.md §3: names are opaque); only writers build them.
"""
from __future__ import annotations

import datetime as _dt
import decimal
import uuid
from dataclasses import dataclass
from typing import Any, Sequence

_ESCAPE = set('"#%\'*/:=?\\{}[]^')


def escape_path_name(value: str) -> str:
    out = []
    for ch in value:
        o = ord(ch)
        if ch in _ESCAPE or o < 0x20 or o == 0x7F:
            out.append("%%%02X" % o)
        else:
            out.append(ch)
    return "".join(out)


def partition_value_text(value: Any) -> str | None:
    """How Paimon spells a partition value in a directory name (None/'' → default name)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, _dt.datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S") + (
            ("." + f"{value.microsecond:06d}".rstrip("0")) if value.microsecond else "")
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
    def manifest_dir(self) -> str:
        return f"{self.root}/manifest"

    def manifest(self, name: str) -> str:
        return f"{self.root}/manifest/{name}"

    @property
    def index_dir(self) -> str:
        return f"{self.root}/index"

    def index_file(self, name: str) -> str:
        return f"{self.root}/index/{name}"

    @property
    def tag_dir(self) -> str:
        return f"{self.root}/tag"

    def tag(self, name: str) -> str:
        return f"{self.root}/tag/tag-{name}"

    @property
    def statistics_dir(self) -> str:
        return f"{self.root}/statistics"

    def statistics(self, name: str) -> str:
        return f"{self.root}/statistics/{name}"

    def expire_journal(self, name: str) -> str:
        """Hidden journal of an expiry in flight (lists what it deletes, so a re-run can finish)."""
        return f"{self.root}/snapshot/.{name}"

    @property
    def consumer_dir(self) -> str:
        return f"{self.root}/consumer"

    def consumer(self, consumer_id: str) -> str:
        return f"{self.root}/consumer/consumer-{consumer_id}"

    # -- data ------------------------------------------------------------------------------
    def bucket_dir(self, partition_path: str, bucket: int) -> str:
        prefix = f"{self.root}/{partition_path}" if partition_path else self.root
        return f"{prefix}/bucket-{bucket}"

    def data_file(self, partition_path: str, bucket: int, file_name: str, external_path: str | None = None) -> str:
        if external_path:
            return external_path
        return f"{self.bucket_dir(partition_path, bucket)}/{file_name}"


class FileNamer:
    """Names for the files one writer or one commit creates: ``<prefix><uuid>-<n>``.

    One uuid per writer plus a counter, as Paimon does, so names never collide across writers.
    """

    def __init__(self):
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
