"""Reading files whose content must match what the table says about them.

Metadata files (snapshots, schemas, tags, manifest lists, manifests, index manifests) are decoded
through :func:`decode_metadata`, so a garbled file gives a :class:`CorruptFileError` naming it instead
of a raw ``UnicodeDecodeError`` or ``KeyError``. Data files are read through
:func:`read_checked_data_file`, which compares the file's size and row count with its manifest entry
(``file_size``, ``row_count``) before trusting its rows: the size costs one ``stat`` (local) or
nothing (S3 learns it when the file is opened), the row count comes with the rows.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import pyarrow as pa

from lake_core.errors import CorruptFileError, DataFileMismatchError
from lake_core.format.data_file import iter_data_file, read_data_file
from lake_core.format.parquet_file import parquet_row_group_ranges

if TYPE_CHECKING:
    from lake_core.io.fileio import FileIO

T = TypeVar("T")


class RecordedFile(Protocol):
    """What a manifest entry records about a data file and a read checks: a ``DataFileMeta``
    (lake_core.manifest sits a layer above this one, so it is not named here)."""

    @property
    def file_size(self) -> int: ...

    @property
    def row_count(self) -> int: ...


_REMEDY = (
    "restore it from a backup, or roll the table back to a snapshot that does not use it; "
    "the table's other files were not changed"
)


def decode_metadata(path: str, what: str, decode: Callable[[bytes], T], data: bytes) -> T:
    """``decode(data)``, turning any failure into a :class:`CorruptFileError` that names ``path``."""
    try:
        return decode(data)
    except CorruptFileError:
        raise
    except MemoryError:
        raise
    except Exception as e:  # any failure to decode these bytes means the file is not a valid `what`
        raise CorruptFileError(
            path, f"{what} {path} is corrupt or truncated ({type(e).__name__}: {e}); " + _REMEDY
        ) from e


def read_metadata(fileio: FileIO, path: str, what: str, decode: Callable[[bytes], T]) -> T:
    """Read and decode one metadata file (``FileNotFoundError`` passes through: callers decide)."""
    return decode_metadata(path, what, decode, fileio.read_bytes(path))


@contextmanager
def _checked_source(
    fileio: FileIO, path: str, meta: RecordedFile, missing: Callable[[], Exception] | None
) -> Iterator[Any]:
    """The data file to read (a local path, or an open remote stream), after its size matched
    ``meta``; a missing file raises ``missing()`` (default: a :class:`CorruptFileError`)."""
    try:
        local = fileio.local_path(path)
        if local is not None:
            _check_size(path, meta, os.path.getsize(local))
            yield local
        else:
            with fileio.open_input(path) as src:
                _check_size(path, meta, int(src.size))
                yield src
    except FileNotFoundError:
        raise (missing() if missing is not None else _missing(path)) from None


def read_checked_data_file(
    fileio: FileIO,
    path: str,
    meta: RecordedFile,
    fmt: str,
    columns: Sequence[str],
    schema: pa.Schema,
    *,
    missing: Callable[[], Exception] | None = None,
    keep_dictionaries: Collection[str] = (),
) -> pa.Table:
    """The rows of one data file, after checking its size and row count against ``meta``.
    ``missing``: the error to raise when the file does not exist (default: a
    :class:`CorruptFileError`); ``keep_dictionaries``: see :func:`read_data_file`."""
    with _checked_source(fileio, path, meta, missing) as src:
        table = read_data_file(src, fmt, columns, schema, keep_dictionaries=keep_dictionaries)
    _check_rows(path, meta, table.num_rows)
    return table


def iter_checked_data_file(
    fileio: FileIO,
    path: str,
    meta: RecordedFile,
    fmt: str,
    columns: Sequence[str],
    schema: pa.Schema,
    batch_rows: int,
    *,
    missing: Callable[[], Exception] | None = None,
    row_groups: Sequence[int] | None = None,
    keep_dictionaries: Collection[str] = (),
) -> Iterator[pa.Table]:
    """:func:`read_checked_data_file` in chunks of about ``batch_rows`` rows. The file is opened on
    the first ``next()``; its size is checked before the first chunk, its row count after the last
    (a reader that stops early never learns it). ``missing``: as for :func:`read_checked_data_file`.
    ``row_groups``: only these Parquet row groups (the row count is then not checked).
    ``keep_dictionaries``: see :func:`read_data_file`."""
    keep = keep_dictionaries
    if row_groups is not None:
        with _checked_source(fileio, path, meta, missing) as src:
            yield from iter_data_file(src, fmt, columns, schema, batch_rows, row_groups, keep_dictionaries=keep)
        return
    if meta.row_count <= batch_rows:
        # one chunk anyway: read it whole and close the file, rather than holding a reader (and its
        # buffers per column) open while a merge works through the other files
        yield read_checked_data_file(fileio, path, meta, fmt, columns, schema, missing=missing, keep_dictionaries=keep)
        return
    rows = 0
    with _checked_source(fileio, path, meta, missing) as src:
        for chunk in iter_data_file(src, fmt, columns, schema, batch_rows, keep_dictionaries=keep):
            rows += chunk.num_rows
            yield chunk
    _check_rows(path, meta, rows)


def checked_row_group_ranges(
    fileio: FileIO,
    path: str,
    meta: RecordedFile,
    fmt: str,
    columns: Sequence[str],
    schema: pa.Schema,
    *,
    missing: Callable[[], Exception] | None = None,
) -> list[tuple[int, tuple, tuple]] | None:
    """:func:`parquet_row_group_ranges` of a data file after its size matched ``meta`` (None: not
    Parquet, or no usable statistics)."""
    if fmt != "parquet":
        return None
    with _checked_source(fileio, path, meta, missing) as src:
        ranges = parquet_row_group_ranges(src, columns, schema)
    if ranges is not None:
        _check_rows(path, meta, sum(r[0] for r in ranges))
    return ranges


def _missing(path: str) -> CorruptFileError:
    return CorruptFileError(
        path,
        f"data file {path} is listed in the table's manifests but does not exist "
        "(deleted outside lake_core, or its snapshot was expired while reading)",
    )


def _check_rows(path: str, meta: RecordedFile, rows: int) -> None:
    if rows != meta.row_count:
        raise DataFileMismatchError(
            path,
            f"data file {path} holds {rows} rows but its manifest entry "
            f"says {meta.row_count}; it was replaced or damaged after it was committed, "
            "so its rows are not trusted; " + _REMEDY,
        )


def _check_size(path: str, meta: RecordedFile, actual: int) -> None:
    if actual != meta.file_size:
        raise DataFileMismatchError(
            path,
            f"data file {path} is {actual} bytes but its manifest entry says "
            f"{meta.file_size}; it was truncated, replaced or damaged after it was "
            "committed, so its rows are not trusted; " + _REMEDY,
        )
