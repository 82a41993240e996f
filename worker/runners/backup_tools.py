"""The command lines of the backup tools and compressors; pure, so they are tested without running anything.

Connection options (and the password) reach every tool through `--defaults-file`, which must come first.
"""

import re
from pathlib import Path

# The schemas a logical backup of "every database" leaves out: the server's own, rebuilt by any new server.
SYSTEM_SCHEMAS = ("information_schema", "mysql", "performance_schema", "sys")

# Per-file compression: the suffix each compressor adds (pigz and gzip both write .gz).
SUFFIX = {"zstd": ".zst", "pigz": ".gz", "gzip": ".gz", "pbzip2": ".bz2"}
DEFAULT_LEVEL = {"zstd": 3, "pigz": 6, "gzip": 6, "pbzip2": 9}


def mysqldump_command(mysqldump: str, defaults: Path, databases: list[str]) -> list[str]:
    """One consistent .sql of the databases, with CREATE DATABASE/USE so it restores under the same names."""
    return [
        mysqldump,
        f"--defaults-file={defaults}",
        "--single-transaction",
        "--routines",
        "--triggers",
        "--events",
        "--hex-blob",
        "--databases",
        *databases,
    ]


def tab_command(mysqldump: str, defaults: Path, directory: Path, database: str) -> list[str]:
    """--tab: mysqldump writes table.sql, the server table.txt (so it must run on this host); the routines and
    events come out on standard output."""
    return [
        mysqldump,
        f"--defaults-file={defaults}",
        f"--tab={directory}",
        "--single-transaction",
        "--routines",
        "--triggers",
        "--events",
        "--hex-blob",
        database,
    ]


def mydumper_command(
    mydumper: str, defaults: Path, directory: Path, databases: list[str], threads: int, compress: bool
) -> list[str]:
    # mydumper 0.10 takes one --database; several go through its regex on "db.table".
    if len(databases) == 1:
        which = [f"--database={databases[0]}"]
    else:
        which = ["--regex=^(" + "|".join(re.escape(name) for name in databases) + r")\."]
    return [
        mydumper,
        f"--defaults-file={defaults}",
        *which,
        f"--outputdir={directory}",
        f"--threads={threads}",
        # Chunks of a big table let a parallel restore share it out (the field notes: one big table needs chunking).
        "--rows=500000",
        "--triggers",
        "--events",
        "--routines",
        "--verbose=2",
        *(["--compress"] if compress else []),
    ]


def mariabackup_command(mariabackup: str, defaults: Path, directory: Path, threads: int) -> list[str]:
    return [
        mariabackup,
        f"--defaults-file={defaults}",
        "--backup",
        f"--parallel={threads}",
        f"--target-dir={directory}",
    ]


def stream_compressor(compression: str, threads: int, level: int | None) -> list[str]:
    """Compress standard input to standard output."""
    chosen = level or DEFAULT_LEVEL[compression]
    if compression == "zstd":
        return ["zstd", "-q", "-c", f"-T{threads}", f"-{chosen}"]
    if compression == "pigz":
        return ["pigz", "-c", "-p", str(threads), f"-{chosen}"]
    if compression == "gzip":
        return ["gzip", "-c", f"-{chosen}"]
    if compression == "pbzip2":
        return ["pbzip2", "-c", f"-p{threads}", f"-{chosen}"]
    raise ValueError(f"no stream compressor for {compression!r}")


def file_compressor(compression: str, threads: int, level: int | None, files: list[Path]) -> list[str]:
    """Compress files in place: each file.ext becomes file.ext.zst (or .gz), the original removed."""
    chosen = level or DEFAULT_LEVEL[compression]
    names = [str(f) for f in files]
    if compression == "zstd":
        return ["zstd", "-q", "--rm", f"-T{threads}", f"-{chosen}", "--", *names]
    if compression == "pigz":
        return ["pigz", "-p", str(threads), f"-{chosen}", "--", *names]
    if compression == "gzip":
        return ["gzip", f"-{chosen}", "--", *names]
    if compression == "pbzip2":
        return ["pbzip2", f"-p{threads}", f"-{chosen}", *names]  # pbzip2 has no "--"; the names are absolute
    raise ValueError(f"no file compressor for {compression!r}")


def files_to_compress(directory: Path, tool: str) -> list[Path]:
    """The files of a dump directory a compressor should take: mydumper's metadata stays readable as text."""
    keep = {"metadata"} if tool == "mydumper" else set()
    return sorted(p for p in directory.iterdir() if p.is_file() and p.name not in keep)
