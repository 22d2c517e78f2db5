"""Where a data file is read from or written to: a local path or a binary file-like object."""

from __future__ import annotations

import contextlib

__all__ = ["binary_file", "source_name"]


@contextlib.contextmanager
def binary_file(target, mode: str):
    """``target`` as a binary file object: a path is opened in ``mode`` and closed on exit; a
    file-like belongs to the caller and stays open."""
    if isinstance(target, str):
        with open(target, mode) as fo:
            yield fo
    else:
        yield target


def source_name(source) -> str:
    if isinstance(source, str):
        return f"'{source}'"
    return repr(getattr(source, "name", source))
