"""Helpers the layout readers share."""

from __future__ import annotations

from pathlib import Path

from worker.runners.dump_stream import DumpError, open_dump
from worker.runners.loader.plan import LayoutError

COMPRESSED_SUFFIXES = (".gz", ".zst", ".zstd", ".bz2")


def without_compression(name: str) -> str:
    for suffix in COMPRESSED_SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def read_text(path: Path, limit: int = 256 << 20) -> bytes:
    """A whole (small) script file, decompressed; LayoutError when it is damaged or too big to be DDL."""
    try:
        with open_dump(path) as reader:
            parts: list[bytes] = []
            size = 0
            for block in reader.chunks():
                parts.append(block)
                size += len(block)
                if size > limit:
                    raise LayoutError(f"{path.name} is over {limit >> 20} MB: too big for a schema file")
            return b"".join(parts)
    except DumpError as error:
        if isinstance(error, LayoutError):
            raise
        raise LayoutError(str(error)) from error
