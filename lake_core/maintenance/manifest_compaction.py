"""Full manifest compaction (Java ``ManifestFileMerger.tryFullCompaction`` and the
``compact_manifest`` procedure).

Inside every commit, once the manifests that "must change" (they carry DELETE entries, or are
smaller than ``manifest.target-file-size``) add up to ``manifest.full-compaction-threshold-size``,
the whole base list is folded: ADD minus DELETE, rewritten into target-size manifests, DELETE
entries gone. Manifests that need no change and hold no deleted file are kept as they are.
``compact_manifest()`` forces the same fold now and commits it as a COMPACT snapshot, so a table
with thousands of commits plans from a handful of manifests, like a fresh one.
``compact_manifest(mode="minor")`` commits what a commit's own merge would do (Java
``tryMinorCompaction``: runs of small manifests merged up to ``manifest.target-file-size``, a
trailing run only once it has ``manifest.merge-min-count`` files; target-size manifests kept).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lake_core.errors import MaintenanceAbortedError, MaintenanceArgumentError, RollbackConflictError
from lake_core.manifest.merger import merge_manifests, try_full_compaction
from lake_core.manifest.metadata import ManifestFileMeta
from lake_core.paths import FileNamer
from lake_core.result import OperationResult, fact
from lake_core.snapshot.publish import publish
from lake_core.snapshot.snapshot import BATCH_COMMIT_IDENTIFIER, CommitKind, Snapshot

if TYPE_CHECKING:
    from lake_core.table import FileStoreTable


@dataclass(frozen=True, kw_only=True)
class CompactManifestResult(OperationResult):
    manifests_before: int = fact(0, summary=True, size="manifest_bytes_before")
    manifests_after: int = fact(0, summary=True, size="manifest_bytes_after")
    manifest_bytes_before: int = 0
    manifest_bytes_after: int = 0
    snapshot_id: int | None = fact(None, summary=True, counts=False, label="snapshot")
    skipped: str | None = None


MODES = ("full", "minor")


def _fold(
    table: FileStoreTable, metas: Sequence[ManifestFileMeta], namer: FileNamer, mode: str
) -> tuple[list[ManifestFileMeta], list[ManifestFileMeta]] | None:
    store = table.manifest_store
    if mode == "full":
        return try_full_compaction(store, metas, table.options, table.schema.id, namer, force=True)
    new_metas, written = merge_manifests(store, metas, table.options, table.schema.id, namer)
    if len(new_metas) < len(metas):
        return new_metas, written
    for m in written:  # merged into as many manifests as before: not worth a snapshot
        table.fileio.delete(table.paths.manifest(m.file_name))
    return None


def compact_manifest(table: FileStoreTable, *, mode: str = "full", dry_run: bool = False) -> CompactManifestResult:
    started = time.monotonic()
    if not isinstance(dry_run, bool):
        raise MaintenanceArgumentError(f"dry_run = {dry_run!r} for table {table.identifier} must be True or False")
    if mode not in MODES:
        raise MaintenanceArgumentError(
            f"mode = {mode!r} for compact_manifest on table {table.identifier} must be "
            + " or ".join(repr(m) for m in MODES)
        )
    sm, store, fio = table.snapshot_manager, table.manifest_store, table.fileio

    def result(**kw) -> CompactManifestResult:
        return CompactManifestResult(
            operation="compact_manifest",
            table=table.identifier,
            dry_run=dry_run,
            duration_s=time.monotonic() - started,
            **kw,
        )

    retries = table.options.commit_max_retries
    for _ in range(retries + 1):
        latest = sm.latest()
        if latest is None:
            return result(skipped="the table has no snapshots")
        metas = store.data_manifests(latest)
        before = (len(metas), sum(m.file_size for m in metas))
        if dry_run:
            n_del = sum(m.num_deleted_files for m in metas)
            return result(
                snapshot_id=latest.id,
                manifests_before=before[0],
                manifest_bytes_before=before[1],
                skipped=None if len(metas) > 1 or n_del else "already compact",
            )
        namer = FileNamer()
        folded = _fold(table, metas, namer, mode)
        if folded is None:
            return result(
                snapshot_id=latest.id,
                manifests_before=before[0],
                manifests_after=before[0],
                manifest_bytes_before=before[1],
                manifest_bytes_after=before[1],
                skipped="already compact",
            )
        new_metas, written = folded
        paths = [table.paths.manifest(m.file_name) for m in written]
        base, base_size = store.write_manifest_list(new_metas, namer)
        delta, delta_size = store.write_manifest_list([], namer)
        paths += [table.paths.manifest(base), table.paths.manifest(delta)]
        snap = Snapshot(
            id=latest.id + 1,
            schema_id=table.schema.id,
            base_manifest_list=base,
            delta_manifest_list=delta,
            index_manifest=latest.index_manifest,
            statistics=latest.statistics,
            watermark=latest.watermark,
            commit_user=str(uuid.uuid4()),
            commit_identifier=BATCH_COMMIT_IDENTIFIER,
            commit_kind=CommitKind.COMPACT,
            time_millis=int(time.time() * 1000),
            total_record_count=latest.total_record_count,
            delta_record_count=0,
            base_manifest_list_size=base_size,
            delta_manifest_list_size=delta_size,
            next_row_id=latest.next_row_id,
            uuid=str(uuid.uuid4()),
        )
        try:
            published = publish(sm, snap, parent=latest, table=table.identifier)
        except RollbackConflictError:  # withdrawn: plan again from the rolled-back latest snapshot
            published = False
        if published:
            return result(
                snapshot_id=snap.id,
                manifests_before=before[0],
                manifests_after=len(new_metas),
                manifest_bytes_before=before[1],
                manifest_bytes_after=sum(m.file_size for m in new_metas),
            )
        for p in paths:  # lost the race to another committer (or withdrawn): nobody references these
            fio.delete(p)
        time.sleep(0.05)
    raise MaintenanceAbortedError(
        f"compact_manifest on {table.identifier}: other committers kept winning for {retries + 1} attempts; "
        "nothing was committed, run it again"
    )
