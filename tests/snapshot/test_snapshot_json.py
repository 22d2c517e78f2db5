"""Snapshot JSON (lake_core.snapshot.snapshot): Java's field order and Jackson pretty printing."""

from __future__ import annotations

import dataclasses
import json
import pickle
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lake_core.errors import FormatError
from lake_core.snapshot.snapshot import BATCH_COMMIT_IDENTIFIER, CommitKind, Snapshot

DATA = Path(__file__).resolve().parents[1] / "data" / "manifest_io"

# Verbatim snapshot-1 written by pypaimon 2.1.0.
FORMAT_EXAMPLE = """{
  "version": 3,
  "id": 1,
  "schemaId": 0,
  "baseManifestList": "manifest-list-37c8f39d-e2a2-45d6-b6cb-20b691b405b8-0",
  "deltaManifestList": "manifest-list-37c8f39d-e2a2-45d6-b6cb-20b691b405b8-1",
  "totalRecordCount": 15,
  "deltaRecordCount": 15,
  "commitUser": "8833ce8f-156f-4660-a68f-283674b53219",
  "commitIdentifier": 9223372036854775807,
  "commitKind": "APPEND",
  "timeMillis": 1795308974892,
  "baseManifestListSize": 1234,
  "deltaManifestListSize": 1362,
  "uuid": "42c01e0e-d8e9-4cd8-8236-9abd7871ba78",
  "writerVersion": "python-2.1.0-3a5ffe7870697e2c2605e63413fb5ac5800aae7e"
}"""

# The same snapshot as Java's Jackson writes it: fields in Snapshot.java's declaration order
# (each *Size right after its list), "key" : value, two-space indentation, no trailing newline.
FORMAT_EXAMPLE_JAVA = """{
  "version" : 3,
  "id" : 1,
  "schemaId" : 0,
  "baseManifestList" : "manifest-list-37c8f39d-e2a2-45d6-b6cb-20b691b405b8-0",
  "baseManifestListSize" : 1234,
  "deltaManifestList" : "manifest-list-37c8f39d-e2a2-45d6-b6cb-20b691b405b8-1",
  "deltaManifestListSize" : 1362,
  "commitUser" : "8833ce8f-156f-4660-a68f-283674b53219",
  "commitIdentifier" : 9223372036854775807,
  "commitKind" : "APPEND",
  "timeMillis" : 1795308974892,
  "totalRecordCount" : 15,
  "deltaRecordCount" : 15,
  "uuid" : "42c01e0e-d8e9-4cd8-8236-9abd7871ba78",
  "writerVersion" : "python-2.1.0-3a5ffe7870697e2c2605e63413fb5ac5800aae7e"
}"""

JAVA_ORDER = [
    "version",
    "id",
    "schemaId",
    "baseManifestList",
    "baseManifestListSize",
    "deltaManifestList",
    "deltaManifestListSize",
    "changelogManifestList",
    "changelogManifestListSize",
    "indexManifest",
    "commitUser",
    "commitIdentifier",
    "commitKind",
    "timeMillis",
    "totalRecordCount",
    "deltaRecordCount",
    "changelogRecordCount",
    "watermark",
    "statistics",
    "properties",
    "nextRowId",
    "operation",
    "uuid",
    "writerVersion",
]


def test_format_example_parses():
    s = Snapshot.from_json(FORMAT_EXAMPLE)
    assert s == Snapshot(
        id=1,
        schema_id=0,
        base_manifest_list="manifest-list-37c8f39d-e2a2-45d6-b6cb-20b691b405b8-0",
        delta_manifest_list="manifest-list-37c8f39d-e2a2-45d6-b6cb-20b691b405b8-1",
        commit_user="8833ce8f-156f-4660-a68f-283674b53219",
        commit_identifier=BATCH_COMMIT_IDENTIFIER,
        commit_kind=CommitKind.APPEND,
        time_millis=1795308974892,
        total_record_count=15,
        delta_record_count=15,
        base_manifest_list_size=1234,
        delta_manifest_list_size=1362,
        uuid="42c01e0e-d8e9-4cd8-8236-9abd7871ba78",
        writer_version="python-2.1.0-3a5ffe7870697e2c2605e63413fb5ac5800aae7e",
    )
    assert s.version == 3 and s.commit_kind is CommitKind.APPEND


def test_format_example_re_emitted_in_java_layout():
    """Parse then re-emit: same keys and values; the layout and order are Java's (pypaimon's
    example uses its own order and ``"key": value``, which Java and pypaimon both accept)."""
    text = Snapshot.from_json(FORMAT_EXAMPLE).to_json()
    assert json.loads(text) == json.loads(FORMAT_EXAMPLE)
    assert text == FORMAT_EXAMPLE_JAVA
    keys = list(json.loads(text))
    assert keys == [k for k in JAVA_ORDER if k in keys]
    # Java-written text is a fixed point
    assert Snapshot.from_json(FORMAT_EXAMPLE_JAVA).to_json() == FORMAT_EXAMPLE_JAVA


def test_all_fields_text():
    s = Snapshot(
        id=7,
        schema_id=2,
        base_manifest_list="b",
        delta_manifest_list="d",
        commit_user="u",
        commit_identifier=5,
        commit_kind="COMPACT",
        time_millis=123,
        total_record_count=10,
        delta_record_count=-3,
        changelog_manifest_list="c",
        index_manifest="i",
        changelog_record_count=4,
        watermark=-(2**63),
        statistics="stat-1",
        properties={"a": "1", 'b\n"q"': "\x01é"},
        next_row_id=99,
        base_manifest_list_size=11,
        delta_manifest_list_size=12,
        changelog_manifest_list_size=13,
        operation="MERGE",
        uuid="x",
        writer_version="w",
    )
    assert s.commit_kind is CommitKind.COMPACT
    assert s.to_json() == (
        "{\n"
        '  "version" : 3,\n'
        '  "id" : 7,\n'
        '  "schemaId" : 2,\n'
        '  "baseManifestList" : "b",\n'
        '  "baseManifestListSize" : 11,\n'
        '  "deltaManifestList" : "d",\n'
        '  "deltaManifestListSize" : 12,\n'
        '  "changelogManifestList" : "c",\n'
        '  "changelogManifestListSize" : 13,\n'
        '  "indexManifest" : "i",\n'
        '  "commitUser" : "u",\n'
        '  "commitIdentifier" : 5,\n'
        '  "commitKind" : "COMPACT",\n'
        '  "timeMillis" : 123,\n'
        '  "totalRecordCount" : 10,\n'
        '  "deltaRecordCount" : -3,\n'
        '  "changelogRecordCount" : 4,\n'
        '  "watermark" : -9223372036854775808,\n'
        '  "statistics" : "stat-1",\n'
        '  "properties" : {\n'
        '    "a" : "1",\n'
        '    "b\\n\\"q\\"" : "\\u0001é"\n'
        "  },\n"
        '  "nextRowId" : 99,\n'
        '  "operation" : "MERGE",\n'
        '  "uuid" : "x",\n'
        '  "writerVersion" : "w"\n'
        "}"
    )
    assert Snapshot.from_json(s.to_json()) == s


def test_empty_properties_map():
    s = dataclasses.replace(Snapshot.from_json(FORMAT_EXAMPLE), properties={})
    assert '  "properties" : { },\n' in s.to_json()
    assert Snapshot.from_json(s.to_json()).properties == {}


def test_pypaimon_written_snapshot_with_index_manifest():
    s = Snapshot.from_json((DATA / "pypaimon_snapshot-2").read_bytes())
    assert s.id == 2 and s.index_manifest.startswith("index-manifest-")
    assert s.total_record_count == 10 and s.delta_record_count == 5
    assert json.loads(s.to_json()) == json.loads((DATA / "pypaimon_snapshot-2").read_text())


def test_old_java_snapshot_with_nulls_and_unknown_fields():
    old = """{
      "version" : 3,
      "id" : 11,
      "schemaId" : 0,
      "baseManifestList" : "manifest-list-21e785dc-25",
      "deltaManifestList" : "manifest-list-21e785dc-26",
      "changelogManifestList" : null,
      "commitUser" : "5adce4a8",
      "commitIdentifier" : 13,
      "commitKind" : "APPEND",
      "timeMillis" : 1690966977203,
      "logOffsets" : { },
      "totalRecordCount" : 18,
      "deltaRecordCount" : 0,
      "changelogRecordCount" : 0,
      "watermark" : -9223372036854775808,
      "totalFileSize" : 1234,
      "someFutureField" : [1, 2]
    }"""
    s = Snapshot.from_json(old)
    assert s.changelog_manifest_list is None and s.changelog_record_count == 0
    assert s.watermark == -(2**63) and s.base_manifest_list_size is None
    text = s.to_json()
    assert "logOffsets" not in text and "changelogManifestList" not in text
    assert '"changelogRecordCount" : 0' in text


def test_missing_optional_and_record_counts():
    minimal = {
        "id": 1,
        "schemaId": 0,
        "baseManifestList": "b",
        "deltaManifestList": "d",
        "commitUser": "u",
        "commitIdentifier": 1,
        "commitKind": "OVERWRITE",
        "timeMillis": 5,
    }
    s = Snapshot.from_json(json.dumps(minimal))
    assert (s.total_record_count, s.delta_record_count) == (0, 0)
    assert s.version == 1  # no version field: Paimon <= 0.2
    assert s.commit_kind is CommitKind.OVERWRITE


@pytest.mark.parametrize(
    "patch, match",
    [
        ({"commitUser": None}, "commitUser"),
        ({"id": "one"}, "'id'"),
        ({"commitKind": "MERGE"}, "commitKind"),
        ({"properties": {"a": 1}}, "properties"),
        ({"timeMillis": True}, "timeMillis"),
    ],
)
def test_bad_snapshots_are_format_errors(patch, match):
    obj = json.loads(FORMAT_EXAMPLE)
    obj.update(patch)
    with pytest.raises(FormatError, match=match):
        Snapshot.from_json(json.dumps(obj))


def test_not_json_is_format_error():
    with pytest.raises(FormatError):
        Snapshot.from_json("{not json")
    with pytest.raises(FormatError):
        Snapshot.from_json("[1, 2]")


def test_frozen_hashable_picklable():
    s = Snapshot.from_json(FORMAT_EXAMPLE)
    t = dataclasses.replace(s, properties={"k": "v"})
    assert pickle.loads(pickle.dumps(t)) == t
    hash(t)
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.id = 2  # type: ignore[misc]


_i64 = st.integers(-(2**63), 2**63 - 1)
_text = st.text(max_size=20)
_snapshots = st.builds(
    Snapshot,
    id=st.integers(1, 2**63 - 1),
    schema_id=st.integers(0, 2**63 - 1),
    base_manifest_list=_text,
    delta_manifest_list=_text,
    commit_user=_text,
    commit_identifier=_i64,
    commit_kind=st.sampled_from(list(CommitKind)),
    time_millis=_i64,
    total_record_count=_i64,
    delta_record_count=_i64,
    changelog_manifest_list=st.none() | _text,
    index_manifest=st.none() | _text,
    changelog_record_count=st.none() | _i64,
    watermark=st.none() | _i64,
    statistics=st.none() | _text,
    properties=st.none() | st.dictionaries(_text, st.none() | _text, max_size=3),
    next_row_id=st.none() | _i64,
    base_manifest_list_size=st.none() | _i64,
    delta_manifest_list_size=st.none() | _i64,
    changelog_manifest_list_size=st.none() | _i64,
    operation=st.none() | st.sampled_from(["WRITE", "OVERWRITE", "DELETE", "MERGE"]),
    uuid=st.none() | _text,
    writer_version=st.none() | _text,
    version=st.integers(1, 3),
)


@settings(max_examples=200, deadline=None)
@given(_snapshots)
def test_json_round_trip_property(s):
    text = s.to_json()
    assert Snapshot.from_json(text) == s
    obj = json.loads(text)  # valid JSON for any standard parser
    keys = list(obj)
    assert keys == [k for k in JAVA_ORDER if k in keys]
    # exactly the non-null fields are present
    assert all(v is not None for k, v in obj.items() if k != "properties")
    assert ("properties" in obj) == (s.properties is not None)
    assert not text.endswith("\n")
    assert Snapshot.from_json(text.encode("utf-8")).to_json() == text
