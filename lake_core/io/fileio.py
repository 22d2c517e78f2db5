"""One narrow, picklable file-system interface over fsspec (the role of Java ``FileIO``).

Everything lake_core stores goes through ``FileIO``: local disk (``file://`` or plain paths) and
S3-compatible stores (``s3://``, MinIO/moto via ``endpoint_url``). The one operation that makes
commits atomic is :meth:`FileIO.try_create`: an exclusive create that fails if the target exists
(``os.link`` of a temp file locally; a conditional ``If-None-Match: *`` put on S3).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import uuid
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import urlparse

import pyarrow as pa

from lake_core.errors import LakeError


class FileIOError(LakeError):
    pass


def _strip_file_scheme(uri: str) -> str:
    if uri.startswith("file://"):
        return urlparse(uri).path
    return uri


class FileIO:
    """Stateless w.r.t. pickling: the fsspec filesystem is rebuilt lazily in each process."""

    def __init__(self, warehouse_uri: str, storage_options: Mapping[str, Any] | None = None):
        self.scheme = urlparse(warehouse_uri).scheme or "file"
        if self.scheme not in ("file", "s3", "s3a"):
            raise FileIOError(
                f"unsupported warehouse scheme {self.scheme!r} in {warehouse_uri!r}; use file:// or s3://"
            )
        self.storage_options = dict(storage_options or {})
        self._fs = None

    # -- pickling: never ship a live client to another process --------------------------------
    def __getstate__(self) -> dict[str, Any]:
        return {"scheme": self.scheme, "storage_options": self.storage_options}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.scheme = state["scheme"]
        self.storage_options = state["storage_options"]
        self._fs = None

    @property
    def identity(self) -> str:
        """Which storage this is, for caches keyed by path: the scheme, and for object stores the
        endpoint (two S3 servers may both have a bucket of the same name). No credentials."""
        if self.is_local:
            return "file"
        opts = self.storage_options
        client = opts.get("client_kwargs") or {}
        endpoint = opts.get("endpoint_url") or opts.get("endpoint") or client.get("endpoint_url") or ""
        return f"{self.scheme}:{endpoint}"

    @property
    def is_local(self) -> bool:
        return self.scheme == "file"

    @property
    def reads_are_remote(self) -> bool:
        """Whether each read is a network round trip (object stores): then overlapping a few reads
        in threads pays; on local disk it only adds overhead."""
        return not self.is_local

    @property
    def fs(self) -> Any:  # an fsspec file system
        if self._fs is None:
            if self.is_local:
                import fsspec  # noqa: PLC0415 - only when used: importing it costs ~0.3 s and tens of MB

                self._fs = fsspec.filesystem("file")
            else:
                self._fs = _make_s3fs(self.storage_options)
        return self._fs

    def _p(self, path: str) -> str:
        if self.is_local:
            return _strip_file_scheme(path)
        return path.split("://", 1)[1] if "://" in path else path

    # -- reads --------------------------------------------------------------------------------
    def read_bytes(self, path: str) -> bytes:
        try:
            if self.is_local:
                with open(self._p(path), "rb") as f:
                    return f.read()
            return self.fs.cat_file(self._p(path))
        except FileNotFoundError:
            raise
        except OSError as e:
            raise FileIOError(f"could not read {path}: {e}") from e

    def read_text(self, path: str) -> str:
        return self.read_bytes(path).decode("utf-8")

    def exists(self, path: str) -> bool:
        if self.is_local:
            return os.path.exists(self._p(path))
        return self.fs.exists(self._p(path))

    def file_size(self, path: str) -> int:
        if self.is_local:
            return os.path.getsize(self._p(path))
        return int(self.fs.info(self._p(path))["size"])

    def sizes(self, paths: Sequence[str]) -> dict[str, int]:
        """Size of each of ``paths`` that exists (missing ones are left out), in few round trips: a
        ``stat`` per file on local disk; on an object store one LIST per directory and name stem (the
        name up to its last ``-``: a writer's files are ``data-<writer uuid>-<n>``, so one listing
        answers for all files a writer put in a bucket, however many older files the bucket holds),
        the listings run in parallel. A HEAD per file would cost one request per file instead."""
        if self.is_local:  # a few µs a file; threads do not pay (measured)
            out: dict[str, int] = {}
            dirs: dict[str, str] = {}
            for path in paths:
                directory, _, name = path.rpartition("/")
                local = dirs.get(directory)
                if local is None:  # parsing the URI costs more than the stat: once per directory
                    local = dirs[directory] = self._p(directory)
                try:
                    out[path] = os.stat(f"{local}/{name}").st_size
                except FileNotFoundError:
                    continue
            return out
        groups: dict[tuple[str, str], None] = {}
        for path in paths:
            directory, _, name = path.rpartition("/")
            groups.setdefault((directory, name[: name.rfind("-") + 1] or name), None)
        found: dict[str, int] = {}
        with ThreadPoolExecutor(max_workers=min(16, max(1, len(groups)))) as pool:
            for listed in pool.map(lambda group: self._list_stem(*group), groups):
                found.update(listed)
        return {p: found[p] for p in paths if p in found}

    def _list_stem(self, directory: str, stem: str) -> dict[str, int]:
        """{path: size} of the objects directly in ``directory`` whose names start with ``stem``."""
        bucket, _, key = self._p(directory).rstrip("/").partition("/")
        request = {"Bucket": bucket, "Prefix": f"{key}/{stem}" if key else stem, "Delimiter": "/"}
        out = {}
        while True:
            page = self.fs.call_s3("list_objects_v2", **request)
            for obj in page.get("Contents", []):
                out[f"{directory}/{obj['Key'].rsplit('/', 1)[-1]}"] = int(obj["Size"])
            if not page.get("IsTruncated"):
                return out
            request["ContinuationToken"] = page["NextContinuationToken"]

    def list_names(self, directory: str) -> list[str]:
        """Base names of the entries directly under ``directory`` (empty if it does not exist)."""
        p = self._p(directory).rstrip("/")
        if self.is_local:
            try:
                return os.listdir(p)
            except FileNotFoundError:
                return []
        try:
            return [e.rstrip("/").rsplit("/", 1)[-1] for e in self.fs.ls(p, detail=False, refresh=True)]
        except FileNotFoundError:
            return []

    def directory_exists(self, directory: str) -> bool:
        """Whether ``directory`` exists: on an object store, whether its parent's listing shows it
        (it has files, or the marker of :meth:`create_directory`)."""
        if self.is_local:
            return os.path.isdir(self._p(directory))
        parent, _, name = directory.rstrip("/").rpartition("/")
        return name in self.list_names(parent)

    def create_directory(self, directory: str) -> None:
        """An empty directory that listings show. Object stores have no directories: a zero-byte
        ``<directory>/`` marker object stands for it, as Hadoop's S3A writes."""
        if self.is_local:
            os.makedirs(self._p(directory), exist_ok=True)
            return
        bucket, _, key = self._p(directory).rstrip("/").partition("/")
        self.fs.call_s3("put_object", Bucket=bucket, Key=key + "/", Body=b"")

    def list_files_relative(self, directory: str) -> list[tuple[str, int, float]]:
        """(path relative to ``directory`` with ``/`` separators, size, modification time epoch
        seconds) of every file under ``directory``; the same on local disk and object stores."""
        root_key = self._p(directory).rstrip("/") + "/"
        out = []
        for full, size, mtime in self.list_files_recursive(directory):
            key = self._p(full)
            if key.startswith(root_key):
                out.append((key[len(root_key) :], size, mtime))
        return out

    def list_files_recursive(self, directory: str) -> list[tuple[str, int, float]]:
        """(full path, size, modification time epoch seconds) of every file under a directory."""
        p = self._p(directory).rstrip("/")
        out = []
        if self.is_local:
            for root, _dirs, files in os.walk(p):
                for name in files:
                    full = os.path.join(root, name)
                    try:
                        st = os.stat(full)
                    except FileNotFoundError:
                        continue  # a temp file renamed or a file deleted while we walked
                    out.append((full, st.st_size, st.st_mtime))
            return out
        for full, info in self.fs.find(p, detail=True, withdirs=False).items():
            mtime = info.get("LastModified") or info.get("mtime")
            ts = mtime.timestamp() if hasattr(mtime, "timestamp") else float(mtime or 0)
            out.append(("s3://" + full, int(info.get("size", 0)), ts))
        return out

    def local_path(self, path: str) -> str | None:
        """The operating-system path of ``path`` on local disk (readers that are faster given a
        path use it), or None on an object store (use :meth:`open_input`)."""
        return self._p(path) if self.is_local else None

    def open_input(self, path: str) -> Any:  # a local file, or an fsspec one (with ``size``)
        """A seekable binary file object (for Parquet/ORC readers)."""
        if self.is_local:
            return open(self._p(path), "rb")
        return self.fs.open(self._p(path), "rb")

    # -- writes -------------------------------------------------------------------------------
    def mkdirs(self, directory: str) -> None:
        if self.is_local:
            os.makedirs(self._p(directory), exist_ok=True)
        # object stores have no directories

    def write_bytes(self, path: str, data: bytes) -> None:
        """Write a new immutable file (data, manifest...). Local writes go through a temp file so a
        crash never leaves a half-written file under the final name."""
        if self.is_local:
            p = self._p(path)
            os.replace(_write_temp_sibling(p, data, sync=False), p)
        else:
            self.fs.pipe_file(self._p(path), data)

    def open_output(self, path: str) -> OutputFile:
        """A new immutable file written as a stream (data files too large to hold in memory):
        write to :attr:`OutputFile.stream`, then :meth:`~OutputFile.commit` makes it appear under
        ``path`` whole, or :meth:`~OutputFile.abort` leaves nothing. As :meth:`write_bytes`, a
        crash never leaves a half-written file under the final name."""
        if self.is_local:
            p = self._p(path)
            d = os.path.dirname(p)
            os.makedirs(d, exist_ok=True)
            tmp = os.path.join(d, f".{os.path.basename(p)}.{uuid.uuid4()}.tmp")
            return OutputFile(pa.OSFile(tmp, "wb"), final=p, temp=tmp)  # native: writes release the GIL
        return OutputFile(self.fs.open(self._p(path), "wb"))  # a multipart upload, visible on close

    def overwrite_hint(self, path: str, text: str) -> None:
        """LATEST/EARLIEST hints: best effort, last writer wins."""
        self.write_bytes(path, text.encode("utf-8"))

    def try_create(self, path: str, data: bytes) -> bool:
        """Exclusively create ``path`` with ``data``; False if it already exists. Never overwrites."""
        if self.is_local:
            p = self._p(path)
            tmp = _write_temp_sibling(p, data, sync=True)
            try:
                os.link(tmp, p)  # atomic, fails if p exists (unlike rename, which replaces)
                return True
            except FileExistsError:
                return False
            finally:
                os.unlink(tmp)
        try:
            self.fs.pipe_file(self._p(path), data, mode="create")
            return True
        except FileExistsError:
            return False
        except OSError as e:
            if _is_precondition_failed(e):
                return False
            raise

    def delete(self, path: str) -> bool:
        try:
            if self.is_local:
                os.unlink(self._p(path))
            else:
                self.fs.rm_file(self._p(path))
            return True
        except FileNotFoundError:
            return False

    def delete_dir(self, directory: str) -> None:
        if self.is_local:
            shutil.rmtree(self._p(directory), ignore_errors=True)
        else:
            try:
                self.fs.rm(self._p(directory), recursive=True)
            except FileNotFoundError:
                pass


class OutputFile:
    """A file being written by :meth:`FileIO.open_output`: ``stream`` (binary, with ``tell``)."""

    def __init__(self, stream: Any, *, final: str | None = None, temp: str | None = None):
        self.stream = stream
        # a local write goes to ``temp`` and is renamed to ``final`` on commit (both or neither)
        self._moves = (temp, final) if temp is not None and final is not None else None

    def commit(self) -> None:
        self.stream.close()
        if self._moves is not None:
            os.replace(*self._moves)

    def abort(self) -> None:
        """Drop the file (idempotent, never raises for a stream already closed)."""
        discard = getattr(self.stream, "discard", None)
        with contextlib.suppress(Exception):  # cleanup of a write that already failed
            if discard is not None:
                discard()  # fsspec: abort the multipart upload, nothing becomes visible
                self.stream.closed = True  # and never upload the rest when collected
            else:
                self.stream.close()
        if self._moves is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self._moves[0])


def _write_temp_sibling(path: str, data: bytes, sync: bool) -> str:
    """Write ``data`` to a hidden temp file next to ``path`` (Paimon's ``.<name>.<uuid>.tmp``)."""
    d = os.path.dirname(path)
    os.makedirs(d, exist_ok=True)
    tmp = os.path.join(d, f".{os.path.basename(path)}.{uuid.uuid4()}.tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        if sync:  # a snapshot must be durable before it becomes visible
            f.flush()
            os.fsync(f.fileno())
    return tmp


def _is_precondition_failed(e: BaseException) -> bool:
    seen = 0
    cause_: BaseException | None = e  # the error, or one it was raised from (s3fs wraps botocore's)
    while cause_ is not None and seen < 5:
        text = str(cause_)
        if "PreconditionFailed" in text or "412" in text:
            return True
        cause_ = cause_.__cause__ or cause_.__context__
        seen += 1
    return False


def _make_s3fs(opts: Mapping[str, Any]) -> Any:
    import s3fs  # noqa: PLC0415 - only S3 warehouses pay its import (about 0.8 s, aiobotocore)

    opts = dict(opts)
    client_kwargs = dict(opts.pop("client_kwargs", {}) or {})
    endpoint = opts.pop("endpoint_url", None) or opts.pop("endpoint", None)
    if endpoint:
        client_kwargs.setdefault("endpoint_url", endpoint)
    client_kwargs.setdefault("region_name", opts.pop("region", None) or opts.pop("region_name", None) or "us-east-1")
    config_kwargs = dict(opts.pop("config_kwargs", {}) or {})
    # MinIO and moto want path-style addressing.
    config_kwargs.setdefault("s3", {"addressing_style": "path"})
    key = opts.pop("key", None) or opts.pop("access_key", None) or opts.pop("aws_access_key_id", None)
    secret = opts.pop("secret", None) or opts.pop("secret_key", None) or opts.pop("aws_secret_access_key", None)
    return s3fs.S3FileSystem(
        key=key,
        secret=secret,
        client_kwargs=client_kwargs,
        config_kwargs=config_kwargs,
        use_listings_cache=False,
        skip_instance_cache=True,
        **opts,
    )
