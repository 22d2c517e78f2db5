"""A FileIO that counts its operations by kind and fails, or "crashes", at the Nth one of a kind.

The real FileIO (local disk or the S3 test server) does the work underneath; tables get the
wrapper through ``Catalog(..., fileio=FaultyFileIO(...))``.

Kinds: ``write`` (a new immutable file or a hint), ``create`` (the exclusive create of a snapshot,
tag, consumer...), ``rename`` (local disk only: the temp file of a write moved under its final
name), ``delete``, ``list`` and ``read`` (reads, opens, existence and size checks).

Modes:
- ``fail``: the Nth operation raises ``InjectedIOError`` without taking effect; the process goes on
  (its own error handling and retries run).
- ``lost-ack``: the Nth operation takes effect, then raises (the reply of a request that succeeded
  was lost: S3's ambiguous timeout).
- ``crash``: the Nth operation raises ``InjectedCrash`` (a ``BaseException``: no ``except
  Exception`` handler runs) without taking effect and every later operation raises too, so nothing
  more reaches storage; the test then drops the process state and reopens the table from storage.
"""

from __future__ import annotations

import os
import threading
from collections import Counter
from dataclasses import dataclass

from lake_core.io.fileio import FileIO, _write_temp_sibling

KINDS = ("write", "create", "rename", "delete", "list", "read")
MODES = ("fail", "lost-ack", "crash")


class InjectedIOError(OSError):
    """A storage error injected by the test (the process survives it)."""


class InjectedCrash(BaseException):
    """The process "died" here: raised at the fault and by every later operation."""


@dataclass(frozen=True)
class Fault:
    kind: str
    n: int  # 1-based: the Nth operation of ``kind``
    mode: str

    def __post_init__(self):
        assert self.kind in KINDS and self.mode in MODES and self.n >= 1, self

    def __str__(self) -> str:
        return f"{self.mode}@{self.kind}#{self.n}"


def failing_reads(path_suffix: str):
    """A ``before`` hook: every read of a path ending with ``path_suffix`` raises ``InjectedIOError``
    (an object that is throttled or unreachable while the rest of the store answers)."""

    def before(kind: str, path: str) -> None:
        if kind == "read" and path.endswith(path_suffix):
            raise InjectedIOError(f"injected read failure: {path}")

    return before


class Pause:
    """A ``before`` hook that holds the first ``kind`` operation on a path ending with ``path_suffix``
    until :meth:`release`, so another thread can act at exactly that point. ``reached`` is set while
    it holds. ``armed`` (default: from the start) delays it until :meth:`arm`."""

    def __init__(self, kind: str, path_suffix: str, *, armed: bool = True, timeout_s: float = 60.0):
        self.kind, self.path_suffix, self.timeout_s = kind, path_suffix, timeout_s
        self.reached, self._go, self._armed = threading.Event(), threading.Event(), threading.Event()
        self._done = False
        if armed:
            self._armed.set()

    def arm(self) -> None:
        self._armed.set()

    def release(self) -> None:
        self._go.set()

    def wait_reached(self) -> None:
        assert self.reached.wait(self.timeout_s), f"nobody reached {self.kind} {self.path_suffix}"

    def __call__(self, kind: str, path: str) -> None:
        if self._done or not self._armed.is_set() or kind != self.kind or not path.endswith(self.path_suffix):
            return
        self._done = True
        self.reached.set()
        assert self._go.wait(self.timeout_s), f"never released at {kind} {path}"


def hooks(*before):
    """One ``before`` hook that runs each of ``before`` in turn."""

    def run(kind: str, path: str) -> None:
        for b in before:
            b(kind, path)

    return run


class FaultyFileIO(FileIO):
    """Delegates to ``inner``; counts every operation in ``counts`` and injects ``fault``."""

    def __init__(self, inner: FileIO, fault: Fault | None = None, before=None):
        # No FileIO.__init__: every attribute a caller reads comes from the real FileIO.
        self.inner = inner
        self.scheme = inner.scheme
        self.storage_options = inner.storage_options
        self.fault = fault
        self.before = before  # before(kind, path), called ahead of every operation: interleaves other jobs
        self.counts: Counter = Counter()
        self.fired = False
        self.dead = False
        self._lock = threading.Lock()  # compaction, reads and writes use threads

    def __reduce__(self):  # another process gets the real FileIO: faults stay in this one
        return (FileIO, (f"{self.inner.scheme}://", self.inner.storage_options))

    @property
    def fs(self):
        return self.inner.fs

    def _p(self, path: str) -> str:
        return self.inner._p(path)

    # -- the one gate every operation goes through -------------------------------------------------
    def _op(self, kind: str, do, path: str):
        if self.before is not None:
            self.before(kind, path)
        with self._lock:
            if self.dead:
                raise InjectedCrash(f"process already crashed ({self.fault}); {kind} {path}")
            self.counts[kind] += 1
            f = self.fault
            hit = f is not None and f.kind == kind and f.n == self.counts[kind]
            if hit:
                self.fired = True
                if f.mode == "crash":
                    self.dead = True
                    raise InjectedCrash(f"injected crash at {f}: {path}")
                if f.mode == "fail":
                    raise InjectedIOError(f"injected failure at {f}: {path}")
        result = do()
        if hit:  # lost-ack
            raise InjectedIOError(f"injected lost reply at {f}: {path} (the {kind} took effect)")
        return result

    # -- reads ------------------------------------------------------------------------------------------
    def read_bytes(self, path):
        return self._op("read", lambda: self.inner.read_bytes(path), path)

    def exists(self, path):
        return self._op("read", lambda: self.inner.exists(path), path)

    def file_size(self, path):
        return self._op("read", lambda: self.inner.file_size(path), path)

    def local_path(self, path):
        local = self.inner.local_path(path)
        return local if local is None else self._op("read", lambda: local, path)

    def open_input(self, path):
        return self._op("read", lambda: self.inner.open_input(path), path)

    def sizes(self, paths):
        if not paths:
            return {}
        return self._op("list", lambda: self.inner.sizes(paths), paths[0].rpartition("/")[0])

    def list_names(self, directory):
        return self._op("list", lambda: self.inner.list_names(directory), directory)

    def list_files_recursive(self, directory):
        return self._op("list", lambda: self.inner.list_files_recursive(directory), directory)

    # -- writes ------------------------------------------------------------------------------------------
    def mkdirs(self, directory):
        if self.dead:
            raise InjectedCrash(f"process already crashed ({self.fault}); mkdirs {directory}")
        self.inner.mkdirs(directory)

    def write_bytes(self, path, data):
        if not self.inner.is_local:
            return self._op("write", lambda: self.inner.write_bytes(path, data), path)
        # Local writes are two steps (temp file, then rename): a fault can fall between them.
        p = self.inner._p(path)
        tmp = self._op("write", lambda: _write_temp_sibling(p, data, sync=False), path)
        self._op("rename", lambda: os.replace(tmp, p), path)

    def open_output(self, path):
        if not self.inner.is_local:  # the object appears when its upload completes: that is the write
            return _FaultyOutput(self, self.inner.open_output(path), path, "write")
        # local: the temp file is the write, moving it under its final name the rename
        return _FaultyOutput(self, self._op("write", lambda: self.inner.open_output(path), path), path, "rename")

    def overwrite_hint(self, path, text):
        self.write_bytes(path, text.encode("utf-8"))

    def try_create(self, path, data):
        return self._op("create", lambda: self.inner.try_create(path, data), path)

    def delete(self, path):
        return self._op("delete", lambda: self.inner.delete(path), path)

    def delete_dir(self, directory):
        return self._op("delete", lambda: self.inner.delete_dir(directory), directory)


class _FaultyOutput:
    """A streamed file (``FileIO.open_output``) whose commit goes through the fault gate."""

    def __init__(self, fio: FaultyFileIO, out, path: str, commit_kind: str):
        self._fio, self._out, self._path, self._kind = fio, out, path, commit_kind
        self.stream = out.stream

    def commit(self) -> None:
        self._fio._op(self._kind, self._out.commit, self._path)

    def abort(self) -> None:
        if not self._fio.dead:  # a crashed process cleans nothing up
            self._out.abort()
