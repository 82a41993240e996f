"""What a physical backup directory says about itself, and checks that its files are all there.

mariabackup (MariaDB 10.11, tested) and xtrabackup (UNTESTED) write, next to the copied data files:
    xtrabackup_checkpoints      backup_type, from_lsn, to_lsn, last_lsn (MariaDB 11.x names it
                                mariadb_backup_checkpoints; both are read)
    backup-my.cnf               the source's InnoDB settings the files depend on (page size, system
                                tablespace files, undo tablespaces)
    ibdata1, ib_logfile0        the system tablespace and the redo log copied during the backup

`to_lsn` is the checkpoint the copied data files start from and `last_lsn` the end of the copied redo:
prepare applies the redo between the two. backup_type is "full-backuped" before prepare and
"log-applied" (mariabackup) or "full-prepared" (xtrabackup) after it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from worker.runners.physical.errors import (
    DamagedBackupError,
    NotABackupError,
    NotPreparedError,
    UnsupportedBackupError,
)

CHECKPOINT_FILES = ("mariadb_backup_checkpoints", "xtrabackup_checkpoints")
INFO_FILES = ("mariadb_backup_info", "xtrabackup_info")
OPTIONS_FILE = "backup-my.cnf"
REDO_LOG = "ib_logfile0"
PREPARED_TYPES = frozenset({"log-applied", "full-prepared"})
UNPREPARED_TYPES = frozenset({"full-backuped"})
# backup-my.cnf settings the data files depend on: prepare and the restored server must use the same.
# innodb_undo_directory is left out on purpose: it is a path on the source machine, and copy-back puts the
# undo tablespaces into the datadir, where the server looks for them by default.
_FILE_LAYOUT_OPTIONS = ("innodb_page_size", "innodb_data_file_path", "innodb_undo_tablespaces")
_UNKNOWN_DATA_FILE_PATH = "ibdata1:1:autoextend"
_STREAM_SUFFIXES = (".xbstream", ".mbstream", ".xbs")
_COMPRESSED_SUFFIXES = (".qp", ".zst", ".lz4")
_SIZE = re.compile(r"^(?P<number>\d+)(?P<unit>[KMGT]?)$", re.IGNORECASE)
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


@dataclass(frozen=True)
class Checkpoints:
    path: Path  # the checkpoints file itself, for messages
    backup_type: str
    from_lsn: int  # 0 for a full backup; the base's to_lsn for an incremental one
    to_lsn: int  # the checkpoint the copied data files start from
    last_lsn: int  # where the copied redo log ends

    @property
    def prepared(self) -> bool:
        return self.backup_type in PREPARED_TYPES


def read_checkpoints(backup_dir: Path) -> Checkpoints:
    """The backup's checkpoints file; NotABackupError when there is none (with a hint of what it is)."""
    if not backup_dir.is_dir():
        raise NotABackupError(
            f"{backup_dir} does not exist or is not a directory: give the directory that "
            "mariabackup --backup --target-dir wrote"
        )
    for name in CHECKPOINT_FILES:
        path = backup_dir / name
        if path.is_file():
            return _parse_checkpoints(path)
    raise _not_a_backup(backup_dir)


def check_restorable_kind(checkpoints: Checkpoints) -> None:
    """Refuse the backup kinds this runner does not handle."""
    if checkpoints.backup_type == "incremental" or checkpoints.from_lsn:
        raise UnsupportedBackupError(
            f"{checkpoints.path.parent} is an incremental backup ({checkpoints.path.name}: backup_type = "
            f"{checkpoints.backup_type}, from_lsn = {checkpoints.from_lsn}); restore its full backup instead, "
            "or merge the increments into the full one with mariabackup --prepare --incremental-dir first"
        )
    if checkpoints.backup_type not in PREPARED_TYPES | UNPREPARED_TYPES:
        raise UnsupportedBackupError(
            f"{checkpoints.path} says backup_type = {checkpoints.backup_type!r}, which restorescope does not "
            "know; only full backups (full-backuped, log-applied, full-prepared) can be restored"
        )


def require_prepared(checkpoints: Checkpoints) -> None:
    if not checkpoints.prepared:
        raise NotPreparedError(
            f"{checkpoints.path.parent} has not been prepared ({checkpoints.path.name} says backup_type = "
            f"{checkpoints.backup_type}): its data files are an inconsistent copy until the redo log is applied; "
            "prepare it first (restorescope's prepare step, or mariabackup --prepare on a copy)"
        )


def file_layout_options(backup_dir: Path) -> dict[str, str]:
    """The InnoDB settings of backup-my.cnf that the data files depend on (empty without the file)."""
    path = backup_dir / OPTIONS_FILE
    try:
        text = path.read_text(errors="replace")
    except FileNotFoundError:
        return {}
    except OSError as error:
        raise DamagedBackupError(f"{path} cannot be read ({error.strerror}); check its permissions") from error
    options: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if "=" not in line or line.startswith(("#", ";", "[")):
            continue
        name, value = (part.strip() for part in line.split("=", 1))
        name = name.replace("-", "_")
        if name in _FILE_LAYOUT_OPTIONS and value and "\n" not in value:
            options[name] = value
    return options


def check_files(backup_dir: Path, checkpoints: Checkpoints, options: dict[str, str]) -> None:
    """Every system tablespace file at least as large as innodb_data_file_path says, and (before prepare)
    a redo log holding at least the LSN range the checkpoints file promises."""
    # Without backup-my.cnf only ibdata1's presence can be checked: its declared size is unknown.
    for name, minimum in data_files(options.get("innodb_data_file_path", _UNKNOWN_DATA_FILE_PATH)):
        _check_size(backup_dir / name, minimum, f"innodb_data_file_path in {OPTIONS_FILE} says at least")
    if checkpoints.prepared:
        return  # prepare rewrote the redo log as an empty one
    # The redo file holds every byte from the checkpoint to last_lsn (plus its header), so it cannot be
    # shorter than last_lsn - to_lsn; prepare of a shorter one would silently stop early.
    _check_size(
        backup_dir / REDO_LOG,
        max(checkpoints.last_lsn - checkpoints.to_lsn, 1),
        f"{checkpoints.path.name} says the redo from LSN {checkpoints.to_lsn} to {checkpoints.last_lsn} was copied:",
    )


def backup_server_version(backup_dir: Path) -> str | None:
    """server_version from xtrabackup_info (mariadb_backup_info in MariaDB 11.x), e.g. "10.11.19-MariaDB"."""
    for name in INFO_FILES:
        try:
            text = (backup_dir / name).read_text(errors="replace")
        except OSError:
            continue
        for line in text.splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "server_version" and value.strip():
                return value.strip()
    return None


def data_files(data_file_path: str) -> list[tuple[str, int]]:
    """[("ibdata1", 12 MiB)] from "ibdata1:12M:autoextend"; "ibdata1:12M;ibdata2:50M:autoextend" gives two."""
    files = []
    for spec in data_file_path.split(";"):
        parts = spec.strip().split(":")
        if len(parts) >= 2 and parts[0]:
            files.append((parts[0], parse_size(parts[1])))
    return files


def parse_size(text: str) -> int:
    match = _SIZE.match(text.strip())
    if match is None:
        return 0
    return int(match["number"]) * _UNITS[match["unit"].upper()]


def _check_size(path: Path, minimum: int, promise: str) -> None:
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        raise DamagedBackupError(
            f"{path.name} is missing from the backup {path.parent}: the backup is incomplete (copied without "
            "it, or it was deleted since); take a new backup, or restore the file from the backup's storage"
        ) from None
    if size < minimum:
        raise DamagedBackupError(
            f"{path.name} in {path.parent} is truncated: it has {_human(size)}, but {promise} {_human(minimum)}; "
            "the backup was damaged in transfer or storage: copy it again from its source, or take a new backup"
        )


def _human(size: int) -> str:
    if size < 1 << 20:
        return f"{size} bytes"
    return f"{size / (1 << 20):.1f} MiB"


def _parse_checkpoints(path: Path) -> Checkpoints:
    try:
        text = path.read_text(errors="replace")
    except OSError as error:
        raise DamagedBackupError(f"{path} cannot be read ({error.strerror}); check its permissions") from error
    values = {}
    for line in text.splitlines():
        if "=" in line:
            name, value = (part.strip() for part in line.split("=", 1))
            values[name] = value
    try:
        return Checkpoints(
            path,
            values["backup_type"],
            int(values.get("from_lsn", "0")),
            int(values["to_lsn"]),
            int(values["last_lsn"]),
        )
    except (KeyError, ValueError):
        raise DamagedBackupError(
            f"{path} is damaged: it must hold backup_type, to_lsn and last_lsn lines, and holds {text[:200]!r}; "
            "copy the backup again from its source"
        ) from None


def _not_a_backup(backup_dir: Path) -> Exception:
    names = [path.name for path in backup_dir.iterdir()]
    expected = " or ".join(reversed(CHECKPOINT_FILES))
    if any(name.endswith(_STREAM_SUFFIXES) for name in names):
        return UnsupportedBackupError(
            f"{backup_dir} holds a streamed backup ({', '.join(n for n in names if n.endswith(_STREAM_SUFFIXES))}), "
            "not an unpacked one: unpack it first (mbstream -x -C DIR < FILE, or xbstream -x for xtrabackup) "
            "and give that directory"
        )
    if any(name.endswith(_COMPRESSED_SUFFIXES) for name in names if name not in CHECKPOINT_FILES):
        return UnsupportedBackupError(
            f"{backup_dir} holds compressed files (.qp/.zst/.lz4): decompress them first "
            "(mariabackup --decompress, or xtrabackup --decompress) and give the directory again"
        )
    if "mysql" in names and ("ibdata1" in names or "ib_logfile0" in names):
        return NotABackupError(
            f"{backup_dir} has no {expected}: it looks like a copy of a server's datadir, not a mariabackup "
            "backup; take one with mariabackup --backup --target-dir=DIR and give DIR"
        )
    return NotABackupError(
        f"{backup_dir} is not a mariabackup or xtrabackup backup: it has no {expected} file; "
        "give the directory that mariabackup --backup --target-dir wrote"
    )
