"""Manifest compaction run inside every commit (Java ``ManifestFileMerger``: ``tryMinorCompaction``
and ``tryFullCompaction``).

Without it every commit adds one manifest to the base list and scan planning slows down without
bound. Full compaction (Java's ``tryFullCompaction``) runs first once its size trigger is reached.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from lake_core.manifest.metadata import FileKind, ManifestFileMeta, merge_entries
from lake_core.options import CoreOptions
from lake_core.paths import FileNamer

if TYPE_CHECKING:
    from lake_core.manifest.store import ManifestStore


#: Besides Java's size trigger, a commit rewrites the manifests holding DELETE entries once there
#: are at least this many deletes and the entries they cancel outnumber the live files (the commit
#: after a large compaction: every later plan would decode the dead pairs again; see deletes_pay).
FOLD_DELETES_MIN = 10_000


def deletes_pay(metas: Sequence[ManifestFileMeta]) -> bool:
    """Whether folding the DELETE entries of ``metas`` pays: at least :data:`FOLD_DELETES_MIN` of
    them, and they and the ADDs they cancel (twice the deletes) at least as many as the live files
    that remain. Rewriting costs about one encode of the live entries, once; not rewriting costs
    every later plan the decoding of the dead pairs."""
    deleted = sum(m.num_deleted_files for m in metas)
    if deleted < FOLD_DELETES_MIN:
        return False
    live = sum(m.num_added_files for m in metas) - deleted
    return 2 * deleted >= live


def merge_manifests(
    store: ManifestStore, metas: Sequence[ManifestFileMeta], options: CoreOptions, schema_id: int, namer: FileNamer
) -> tuple[list[ManifestFileMeta], list[ManifestFileMeta]]:
    """Returns (new base list, manifests newly written). Groups consecutive manifests until their
    size reaches the target; a trailing group is merged only if it has >= merge-min-count files."""
    # manifest.full-compaction-threshold-size, or many deletes (deletes_pay)
    full = try_full_compaction(store, metas, options, schema_id, namer, force=deletes_pay(metas))
    if full is not None:
        return full
    target = options.manifest_target_file_size
    min_count = options.manifest_merge_min_count
    if len(metas) < min_count:
        return list(metas), []
    result: list[ManifestFileMeta] = []
    written: list[ManifestFileMeta] = []
    group: list[ManifestFileMeta] = []
    size = 0

    def flush() -> None:
        entries = merge_entries(store.read_entries(group))
        if entries:
            new = store.write_manifests(entries, schema_id, namer)
            written.extend(new)
            result.extend(new)

    for m in metas:
        if m.file_size >= target and not group:
            result.append(m)  # already big: keep as is
            continue
        group.append(m)
        size += m.file_size
        if size >= target:
            flush()
            group, size = [], 0
    if group:
        if len(group) >= min_count:
            flush()
        else:
            result.extend(group)
    return result, written


def try_full_compaction(
    store: ManifestStore,
    metas: Sequence[ManifestFileMeta],
    options: CoreOptions,
    schema_id: int,
    namer: FileNamer,
    *,
    force: bool = False,
) -> tuple[list[ManifestFileMeta], list[ManifestFileMeta]] | None:
    """(new base list, manifests written), or None when not triggered / nothing to fold."""
    target = options.manifest_target_file_size
    threshold = options.manifest_full_compaction_threshold_size
    must = [m for m in metas if m.num_deleted_files > 0 or m.file_size < target]
    if not force and sum(m.file_size for m in must) < threshold:
        return None
    if len(must) <= 1 and not any(m.num_deleted_files for m in must):
        return None  # already compact
    must_names = {m.file_name for m in must}
    deleted = {
        e.identifier()
        for m in metas
        if m.num_deleted_files > 0
        for e in store.read_manifest(m.file_name)
        if e.kind == FileKind.DELETE
    }
    keep, rewrite = [], []
    for m in metas:
        if m.file_name in must_names or (
            deleted and any(e.identifier() in deleted for e in store.read_manifest(m.file_name))
        ):
            rewrite.append(m)
        else:
            keep.append(m)
    # Deletes whose file is in no manifest any more are dropped, as Java does.
    adds = [e for e in merge_entries(store.read_entries(rewrite)) if e.kind == FileKind.ADD]
    written = store.write_manifests(adds, schema_id, namer) if adds else []
    return keep + written, written
