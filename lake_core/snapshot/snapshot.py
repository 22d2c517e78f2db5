"""Paimon snapshot files (``snapshot/snapshot-N``): Java ``org.apache.paimon.Snapshot``, version 3.

:meth:`Snapshot.to_json` writes what Java's ``JsonSerdeUtil.toJson`` (Jackson's default pretty
printer) writes: properties in Java's declaration order, ``"key" : value`` with two-space
indentation, optional (``@JsonInclude(NON_NULL)``) fields left out when None, no trailing
newline. :meth:`Snapshot.from_json` accepts any key order, ignores unknown keys (Java has
``@JsonIgnoreProperties(ignoreUnknown = true)``) and defaults missing optional ones, so
snapshots written by pypaimon (different key order, ``"key": value``) and by older Java
versions (explicit nulls, ``logOffsets``) read fine (Java ``Snapshot``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from lake_core.errors import FormatError

__all__ = [
    "CommitKind",
    "Snapshot",
    "CURRENT_VERSION",
    "FIRST_SNAPSHOT_ID",
    "BATCH_COMMIT_IDENTIFIER",
    "RESCALE_PROPERTY",
]

CURRENT_VERSION = 3
FIRST_SNAPSHOT_ID = 1
#: ``commitIdentifier`` of batch commits (Java ``BatchWriteBuilder.COMMIT_IDENTIFIER``).
BATCH_COMMIT_IDENTIFIER = 2**63 - 1
#: Snapshot property a bucket rescale's OVERWRITE carries (the partitions it rewrote).
RESCALE_PROPERTY = "rescale.partition"


class CommitKind(str, Enum):
    """Java ``Snapshot.CommitKind``."""

    APPEND = "APPEND"
    COMPACT = "COMPACT"
    OVERWRITE = "OVERWRITE"
    ANALYZE = "ANALYZE"


@dataclass(frozen=True)
class Snapshot:
    """One committed table version. Fields are Java ``Snapshot``'s, in snake case.

    ``total_record_count``/``delta_record_count`` count *file rows* (adds minus deletes of data
    files), not live keys. ``commit_kind`` may be given as a string; it is stored as
    :class:`CommitKind`. ``properties`` does not take part in hashing.
    """

    id: int
    schema_id: int
    base_manifest_list: str
    delta_manifest_list: str
    commit_user: str
    commit_identifier: int
    commit_kind: CommitKind
    time_millis: int
    total_record_count: int
    delta_record_count: int
    changelog_manifest_list: str | None = None
    index_manifest: str | None = None
    changelog_record_count: int | None = None
    watermark: int | None = None
    statistics: str | None = None
    properties: dict[str, str | None] | None = field(default=None, hash=False)
    next_row_id: int | None = None
    base_manifest_list_size: int | None = None
    delta_manifest_list_size: int | None = None
    changelog_manifest_list_size: int | None = None
    operation: str | None = None
    uuid: str | None = None
    writer_version: str | None = None
    version: int = CURRENT_VERSION

    def __post_init__(self) -> None:
        if not isinstance(self.commit_kind, CommitKind):
            try:
                kind = CommitKind(self.commit_kind)
            except ValueError:
                raise FormatError(
                    f"snapshot {self.id}: unknown commitKind {self.commit_kind!r}; expected one "
                    f"of {[k.value for k in CommitKind]}"
                ) from None
            object.__setattr__(self, "commit_kind", kind)

    # ---- JSON ----------------------------------------------------------------------------

    @property
    def changes_data(self) -> bool:
        """Whether this snapshot can change the table's rows, by Paimon's streaming-read rules (what
        a downstream that derives from the table must process): COMPACT never (files reorganized;
        record-level expiry there is retention, not a change, as in Paimon), ANALYZE never, and an
        OVERWRITE a bucket rescale committed never (the same rows in new buckets); APPEND and every
        other OVERWRITE (user overwrites, partition expiry) do."""
        if self.commit_kind in (CommitKind.COMPACT, CommitKind.ANALYZE):
            return False
        return not (self.commit_kind == CommitKind.OVERWRITE and RESCALE_PROPERTY in (self.properties or {}))

    def to_dict(self) -> dict[str, Any]:
        """The JSON object Java would write, keys in Java's order, null optionals left out."""
        out: dict[str, Any] = {}
        for attr, key, required in _FIELDS:
            value = getattr(self, attr)
            if value is None and not required:
                continue
            if attr == "commit_kind":
                value = value.value
            out[key] = value
        return out

    def to_json(self) -> str:
        """Pretty JSON exactly as Java's Jackson writes a snapshot file (no trailing newline)."""
        return _jackson_pretty(self.to_dict())

    @staticmethod
    def from_json(text: str | bytes) -> Snapshot:
        """Parse a snapshot file written by Java, pypaimon or lake_core."""
        if isinstance(text, (bytes, bytearray)):
            text = bytes(text).decode("utf-8")
        try:
            obj = json.loads(text)
        except ValueError as e:
            raise FormatError(f"snapshot file is not valid JSON: {e}") from e
        if not isinstance(obj, dict):
            raise FormatError(f"snapshot file must hold a JSON object, got {type(obj).__name__}")
        return Snapshot.from_dict(obj)

    @staticmethod
    def from_dict(obj: dict[str, Any]) -> Snapshot:
        kwargs: dict[str, Any] = {}
        sid = obj.get("id")
        for attr, key, required in _FIELDS:
            value = obj.get(key)
            if value is None:
                if attr in _ZERO_IF_MISSING:
                    value = 0  # Java primitive long: Jackson leaves missing/null as 0
                elif attr == "version":
                    value = 1  # snapshots of Paimon <= 0.2 had no version field
                elif required:
                    raise FormatError(
                        f"snapshot {sid if sid is not None else '?'} lacks the required field "
                        f"{key!r}; the file is corrupt or not a Paimon snapshot"
                    )
                else:
                    kwargs[attr] = None
                    continue
            kind = _TYPES[attr]
            if kind is int:
                if isinstance(value, bool) or not isinstance(value, int):
                    raise FormatError(f"snapshot {sid}: field {key!r} must be an integer, got {value!r}")
            elif kind is str:
                if not isinstance(value, str):
                    raise FormatError(f"snapshot {sid}: field {key!r} must be a string, got {value!r}")
            elif kind is dict:
                if not isinstance(value, dict) or not all(isinstance(v, str) or v is None for v in value.values()):
                    raise FormatError(f"snapshot {sid}: field {key!r} must be an object of strings, got {value!r}")
                value = dict(value)
            kwargs[attr] = value
        return Snapshot(**kwargs)


# (attribute, JSON key, always written) in Java's declaration order, which is the order Jackson
# writes them (Snapshot.java, paimon-api). operation/uuid/writerVersion come after nextRowId.
_FIELDS: tuple[tuple[str, str, bool], ...] = (
    ("version", "version", True),
    ("id", "id", True),
    ("schema_id", "schemaId", True),
    ("base_manifest_list", "baseManifestList", True),
    ("base_manifest_list_size", "baseManifestListSize", False),
    ("delta_manifest_list", "deltaManifestList", True),
    ("delta_manifest_list_size", "deltaManifestListSize", False),
    ("changelog_manifest_list", "changelogManifestList", False),
    ("changelog_manifest_list_size", "changelogManifestListSize", False),
    ("index_manifest", "indexManifest", False),
    ("commit_user", "commitUser", True),
    ("commit_identifier", "commitIdentifier", True),
    ("commit_kind", "commitKind", True),
    ("time_millis", "timeMillis", True),
    ("total_record_count", "totalRecordCount", True),
    ("delta_record_count", "deltaRecordCount", True),
    ("changelog_record_count", "changelogRecordCount", False),
    ("watermark", "watermark", False),
    ("statistics", "statistics", False),
    ("properties", "properties", False),
    ("next_row_id", "nextRowId", False),
    ("operation", "operation", False),
    ("uuid", "uuid", False),
    ("writer_version", "writerVersion", False),
)

_ZERO_IF_MISSING = frozenset({"total_record_count", "delta_record_count"})

_TYPES: dict[str, type] = {
    "version": int,
    "id": int,
    "schema_id": int,
    "base_manifest_list": str,
    "base_manifest_list_size": int,
    "delta_manifest_list": str,
    "delta_manifest_list_size": int,
    "changelog_manifest_list": str,
    "changelog_manifest_list_size": int,
    "index_manifest": str,
    "commit_user": str,
    "commit_identifier": int,
    "commit_kind": str,
    "time_millis": int,
    "total_record_count": int,
    "delta_record_count": int,
    "changelog_record_count": int,
    "watermark": int,
    "statistics": str,
    "properties": dict,
    "next_row_id": int,
    "operation": str,
    "uuid": str,
    "writer_version": str,
}

# ---- Jackson DefaultPrettyPrinter emulation ---------------------------------------------------

_ESCAPE_RE = re.compile(r'[\x00-\x1f"\\]')
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def _escape_char(m: re.Match[str]) -> str:
    c = m.group(0)
    return _ESCAPES.get(c) or "\\u%04X" % ord(c)


def _jackson_string(s: str) -> str:
    return '"' + _ESCAPE_RE.sub(_escape_char, s) + '"'


def _jackson_value(v: Any, indent: str) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return _jackson_string(v)
    if isinstance(v, dict):
        return _jackson_object(v, indent)
    raise TypeError(f"cannot write {type(v).__name__} into a snapshot file")  # pragma: no cover


def _jackson_object(obj: dict[str, Any], indent: str = "") -> str:
    if not obj:
        return "{ }"
    inner = indent + "  "
    items = [f"{inner}{_jackson_string(str(k))} : {_jackson_value(v, inner)}" for k, v in obj.items()]
    return "{\n" + ",\n".join(items) + "\n" + indent + "}"


def _jackson_pretty(obj: dict[str, Any]) -> str:
    return _jackson_object(obj, "")
