"""What kind of backup a file or directory is, from its content rather than its name."""

import bz2
import gzip
import json
import re
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import zstandard

GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
# "BZh", the block size digit, then the first block's magic (pi) or, for an empty stream, the end marker.
_BZIP2_HEAD = re.compile(rb"BZh[1-9](\x31\x41\x59\x26\x53\x59|\x17\x72\x45\x38\x50\x90)")
COMPRESSED_SUFFIXES = (".gz", ".zst", ".zstd", ".bz2")
HEAD_BYTES = 256 * 1024

# Restore jobs take the formats the parallel loader (worker.runners.loader) restores, LOADER_FORMATS, and
# physical backups, PHYSICAL_FORMATS (below); is_restorable() also looks at what detection found wrong in a
# backup (an unfinished dump). The others are listed so the user sees them.


@dataclass
class Detected:
    format: str
    compression: str | None = None
    details: dict[str, Any] = field(default_factory=dict)


# Bytes compression_of_head needs to tell a bzip2 stream from text that starts with "BZh".
HEAD_MAGIC_BYTES = 10


def compression_of_head(head: bytes) -> str | None:
    """gzip, zstd or bzip2 from a file's first HEAD_MAGIC_BYTES bytes; None for anything else."""
    if head.startswith(GZIP_MAGIC):
        return "gzip"
    if head.startswith(ZSTD_MAGIC):
        return "zstd"
    if _BZIP2_HEAD.match(head):
        return "bzip2"
    return None


def compression_of(path: Path) -> str | None:
    with path.open("rb") as handle:
        return compression_of_head(handle.read(HEAD_MAGIC_BYTES))


def read_head(path: Path, compression: str | None, limit: int = HEAD_BYTES) -> bytes:
    """The first bytes of the decompressed content; a damaged file gives what could be read."""
    try:
        if compression == "gzip":
            with gzip.open(path, "rb") as handle:
                return handle.read(limit)
        if compression == "zstd":
            with path.open("rb") as raw, zstandard.ZstdDecompressor().stream_reader(raw) as reader:
                return reader.read(limit)
        if compression == "bzip2":
            with bz2.open(path, "rb") as handle:
                return handle.read(limit)
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
    if not name.endswith(tuple([".sql", *(".sql" + suffix for suffix in COMPRESSED_SUFFIXES)])):
        return None
    compression = compression_of(path)
    details = _mysqldump_details(read_head(path, compression))
    if details is None:
        return Detected(format="sql", compression=compression, details={"note": "no mysqldump header found"})
    return Detected(format="mysqldump", compression=compression, details=details)


def detect_directory(path: Path) -> Detected | None:
    names = {child.name for child in path.iterdir()}
    if names & {"xtrabackup_checkpoints", "mariadb_backup_checkpoints"}:
        return _physical(path, names)
    if "@.json" in names:
        return _mysqlsh(path, names)
    if "metadata" in names or "metadata.partial" in names:
        return _mydumper(path, names)
    # mysqldump --tab writes table.sql (DDL) next to table.txt (data): a pair, not just any .sql and .txt.
    stems = {_plain(n)[:-4] for n in names if _plain(n).endswith(".sql")}
    pairs = {_plain(n)[:-4] for n in names if _plain(n).endswith(".txt") and _plain(n)[:-4] in stems}
    if pairs:
        details: dict[str, Any] = {"tables": len(pairs), "scripts_without_data": len(stems - pairs)}
        # A --tab dump does not name its database: the restore must be given one.
        details["has_use_statements"] = False
        details.update(_restorability([]))
        compression = _compression_of_names(names)
        return Detected(format="mysqldump-tab", compression=compression, details=details)
    return None


# --- dump directories: cheap checks (names, small metadata files); the loader checks every file before loading

LOADER_FORMATS = frozenset({"mysqldump", "mysqldump-tab", "mydumper", "mysqlsh"})
# Physical backups (unpacked directories): prepared on a copy and copied back into a new sandbox
# (worker.runners.physical), which checks them file by file; detection only reads the checkpoints file.
PHYSICAL_FORMATS = frozenset({"mariabackup", "xtrabackup"})


def is_restorable(format_name: str, details: dict[str, Any]) -> bool:
    """Whether restorescope can restore this backup (its format, and no problem found in it)."""
    return format_name in LOADER_FORMATS | PHYSICAL_FORMATS and bool(details.get("restorable", True))


_BACKUP_TYPE = re.compile(r"^backup_type\s*=\s*(\S+)", re.MULTILINE)


def _physical(path: Path, names: set[str]) -> Detected:
    tool = "mariabackup" if "mariadb_backup_checkpoints" in names or "aria_log_control" in names else "xtrabackup"
    checkpoints = "mariadb_backup_checkpoints" if "mariadb_backup_checkpoints" in names else "xtrabackup_checkpoints"
    try:
        text = (path / checkpoints).read_text(errors="replace")[: 1 << 16]
    except OSError:
        text = ""
    found = _BACKUP_TYPE.search(text)
    backup_type = found.group(1) if found else None
    problems = []
    if backup_type is None:
        problems.append(f"{checkpoints} has no backup_type: the backup is damaged or unfinished")
    elif backup_type == "incremental":
        problems.append("an incremental backup: restore its full backup with the increments applied instead")
    if any(name.endswith((".qp", ".lz4", ".xbcrypt")) for name in names):
        problems.append("its files are compressed or encrypted: decompress them first (mariabackup --decompress)")
    details: dict[str, Any] = {"backup_type": backup_type, "prepared": backup_type in ("full-prepared", "log-applied")}
    details["databases"] = _physical_databases(path)
    details.update(_restorability(problems))
    return Detected(format=tool, details=details)


# Schemas of the server itself, copied by every physical backup: not databases anyone protects.
_SYSTEM_SCHEMAS = frozenset({"mysql", "performance_schema", "sys", "information_schema"})


def _physical_databases(path: Path) -> list[str]:
    """A physical backup copies the datadir: one directory per database (names starting with # are InnoDB's)."""
    try:
        children = list(path.iterdir())
    except OSError:
        return []
    names = (_decode_filename(c.name) for c in children if c.is_dir() and not c.name.startswith("#"))
    return sorted(name for name in names if name not in _SYSTEM_SCHEMAS)


_ENCODED_CHARACTER = re.compile(r"@([0-9a-fA-F]{4})")


def _decode_filename(name: str) -> str:
    """A database name from its directory name: the server writes other characters than [A-Za-z0-9_] as @XXXX
    (their code point in hex), so `my-db` lives in my@002ddb."""
    return _ENCODED_CHARACTER.sub(lambda match: chr(int(match.group(1), 16)), name)


def _restorability(problems: list[str]) -> dict[str, Any]:
    return {"restorable": not problems, "problems": problems}


def _plain(name: str) -> str:
    for suffix in COMPRESSED_SUFFIXES:
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def _compression_of_names(names: set[str]) -> str | None:
    if any(n.endswith((".zst", ".zstd")) for n in names):
        return "zstd"
    if any(n.endswith(".gz") for n in names):
        return "gzip"
    if any(n.endswith(".bz2") for n in names):
        return "bzip2"
    return None


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        value = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _mysqlsh(path: Path, names: set[str]) -> Detected:
    top = _read_json(path / "@.json")
    problems = []
    details: dict[str, Any] = {"complete": "@.done.json" in names, "has_use_statements": True}
    if top is None:
        problems.append("@.json cannot be read: the dump is damaged")
    else:
        details["schemas"] = [str(s) for s in top.get("schemas") or []]
        details["dumper"] = str(top.get("dumper") or "")
        if top.get("serverVersion"):
            details["server_version"] = str(top["serverVersion"])
    if "@.done.json" not in names:
        problems.append("@.done.json is missing: the dump is unfinished (interrupted, or still running)")
    chunks = [n for n in names if re.search(r"@@?\d+\.(?:tsv|csv|json|txt)(?:\.zst|\.gz)?$", n)]
    details["data_files"] = len(chunks)
    if chunks and not any(re.search(r"@@\d+\.", n) for n in chunks):
        problems.append("no last data chunk (named schema@table@@N): files are missing")
    details.update(_restorability(problems))
    return Detected(format="mysqlsh", compression=_compression_of_names(set(chunks)), details=details)


_MYDUMPER_DATA = re.compile(
    r"^[^.]+\..+?\.\d{5,}(?:\.\d{5,})?\.(?:sql|dat)(?:\.gz|\.zst|\.bz2)?$|^[^.]+\.[^-]+\.sql(?:\.gz|\.bz2)?$"
)


def _mydumper(path: Path, names: set[str]) -> Detected:
    problems = []
    details: dict[str, Any] = {"has_use_statements": True}
    if "metadata" not in names:
        problems.append("metadata.partial without metadata: mydumper did not finish this dump")
        text = ""
    else:
        try:
            text = (path / "metadata").read_text(errors="replace")[: 1 << 20]
        except OSError:
            text = ""
    is_ini = any(line.startswith("[") and line.rstrip().endswith("]") for line in text.splitlines())
    details["layout"] = "0.14+" if is_ini else "0.10"
    if not is_ini and text and "Finished dump at" not in text:
        problems.append("the metadata file has no 'Finished dump at' line: mydumper did not finish this dump")
    schemas = sorted(
        {_plain(n)[: -len("-schema-create.sql")] for n in names if _plain(n).endswith("-schema-create.sql")}
    )
    details["databases"] = schemas
    details["tables"] = sum(1 for n in names if _plain(n).endswith("-schema.sql"))
    details["data_files"] = sum(1 for n in names if _MYDUMPER_DATA.match(n))
    details["load_data"] = any(_plain(n).endswith(".dat") for n in names)
    details.update(_restorability(problems))
    return Detected(format="mydumper", compression=_compression_of_names(names), details=details)
