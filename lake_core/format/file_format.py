"""Data file formats and their compression codecs: the values of ``file.format`` (parquet, orc, avro),
the file name extension of each, and the codec a format gets for ``file.compression`` (Java
``FileFormat`` / ``FileCompression``, each format accepting its own codec names)."""

from __future__ import annotations

from collections.abc import Mapping

from lake_core.errors import InvalidOptionError
from lake_core.format.avro import CODEC_ALIASES
from lake_core.option_values import parse_int

__all__ = ["FORMATS", "DEFAULT_ZSTD_LEVEL", "check_format", "file_extension", "choose_codec"]

FORMATS = ("parquet", "orc", "avro")


DEFAULT_ZSTD_LEVEL = 1


def check_format(fmt: str) -> str:
    f = (fmt or "").strip().lower()
    if f not in FORMATS:
        raise InvalidOptionError(
            f"Unsupported value {fmt!r} for option 'file.format': expected one of {', '.join(FORMATS)}"
        )
    return f


def file_extension(fmt: str) -> str:
    """File name extension (without dot) of a data file format: parquet, orc or avro."""
    return check_format(fmt)


_PARQUET_CODECS = {
    "zstd": "zstd",
    "zstandard": "zstd",
    "snappy": "snappy",
    "gzip": "gzip",
    "lz4": "lz4",
    "brotli": "brotli",
    "none": "none",
    "uncompressed": "none",
}
_ORC_CODECS = {
    "zstd": "zstd",
    "zstandard": "zstd",
    "snappy": "snappy",
    "gzip": "zlib",
    "zlib": "zlib",
    "lz4": "lz4",
    "none": "uncompressed",
    "uncompressed": "uncompressed",
}
_AVRO_CODECS = {**CODEC_ALIASES, "gzip": "deflate", "uncompressed": "null"}


def choose_codec(fmt: str, compression: str, options: Mapping[str, str]) -> tuple[str, int | None]:
    raw = options.get("file.compression", compression) or "none"
    name = str(raw).strip().lower()
    table = {"parquet": _PARQUET_CODECS, "orc": _ORC_CODECS, "avro": _AVRO_CODECS}[fmt]
    if name not in table:
        raise InvalidOptionError(
            f"Unsupported value {raw!r} for option 'file.compression' with file.format={fmt}: "
            f"expected one of {', '.join(sorted(table))}"
        )
    codec = table[name]
    level = None
    if codec in ("zstd", "zstandard"):
        level = parse_int(
            "file.compression.zstd-level", options.get("file.compression.zstd-level", str(DEFAULT_ZSTD_LEVEL))
        )
    return codec, level
