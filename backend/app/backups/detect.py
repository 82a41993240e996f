"""What kind of backup a file or directory is, from its content rather than its name."""

import gzip
import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import zstandard

GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
HEAD_BYTES = 256 * 1024

# Formats restorescope can restore today; the others are listed so the user sees them, marked as not yet.
RESTORABLE_FORMATS = frozenset({"mysqldump"})


@dataclass
class Detected:
    format: str
    compression: str | None = None
    details: dict[str, Any] = field(default_factory=dict)


def compression_of(path: Path) -> str | None:
    with path.open("rb") as handle:
        magic = handle.read(4)
    if magic.startswith(GZIP_MAGIC):
        return "gzip"
    if magic == ZSTD_MAGIC:
        return "zstd"
    return None


def read_head(path: Path, compression: str | None, limit: int = HEAD_BYTES) -> bytes:
    """The first bytes of the decompressed content; a damaged file gives what could be read."""
    try:
        if compression == "gzip":
            with gzip.open(path, "rb") as handle:
                return handle.read(limit)
        if compression == "zstd":
            with path.open("rb") as raw, zstandard.ZstdDecompressor().stream_reader(raw) as reader:
                return reader.read(limit)
        with path.open("rb") as handle:
            return handle.read(limit)
    except (OSError, EOFError, zlib.error, zstandard.ZstdError):
        return b""


_DUMP_HEADER = re.compile(rb"^-- (MySQL|MariaDB) dump [^\n]*", re.MULTILINE)
_SERVER_VERSION = re.compile(rb"^-- Server version\s+([^\n]+)", re.MULTILINE)
_CURRENT_DB = re.compile(rb"^-- Current Database: `((?:[^`]|``)+)`", re.MULTILINE)
_USE = re.compile(rb"^USE `((?:[^`]|``)+)`;", re.MULTILINE)
_HOST_DB = re.compile(rb"^-- Host: [^\n]*Database: ([^\s]+)", re.MULTILINE)


def _mysqldump_details(head: bytes) -> dict[str, Any] | None:
    header = _DUMP_HEADER.search(head)
    if header is None:
        return None
    databases = [m.group(1).decode(errors="replace").replace("``", "`") for m in _CURRENT_DB.finditer(head)]
    has_use = bool(_USE.search(head))
    details: dict[str, Any] = {"tool": header.group(0).decode(errors="replace")[3:], "databases": databases}
    details["has_use_statements"] = has_use or bool(databases)
    if version := _SERVER_VERSION.search(head):
        details["server_version"] = version.group(1).decode(errors="replace").strip()
    if not databases and (host_db := _HOST_DB.search(head)):
        details["source_database"] = host_db.group(1).decode(errors="replace")
    return details


def detect_file(path: Path) -> Detected | None:
    name = path.name.lower()
    if not (name.endswith((".sql", ".sql.gz", ".sql.zst", ".sql.zstd"))):
        return None
    compression = compression_of(path)
    details = _mysqldump_details(read_head(path, compression))
    if details is None:
        return Detected(format="sql", compression=compression, details={"note": "no mysqldump header found"})
    return Detected(format="mysqldump", compression=compression, details=details)


def detect_directory(path: Path) -> Detected | None:
    names = {child.name for child in path.iterdir()}
    if names & {"xtrabackup_checkpoints", "mariadb_backup_checkpoints"}:
        tool = "mariabackup" if "mariadb_backup_checkpoints" in names or "aria_log_control" in names else "xtrabackup"
        return Detected(format=tool)
    if "@.json" in names:
        return Detected(format="mysqlsh", details={"complete": "@.done.json" in names})
    if "metadata" in names:
        return Detected(format="mydumper")
    # mysqldump --tab writes table.sql (DDL) next to table.txt (data): a pair, not just any .sql and .txt.
    tables = {n.removesuffix(".sql") for n in names if n.endswith(".sql")}
    if any(n.endswith(".txt") and n.removesuffix(".txt") in tables for n in names):
        return Detected(format="mysqldump-tab", details={"tables": len(tables)})
    return None
