"""Which backups are a protected database's: pure functions of what the backups table knows of each backup."""

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from fnmatch import fnmatchcase
from pathlib import PurePosixPath
from typing import Any, Protocol, TypeVar


@dataclass(frozen=True)
class Selection:
    """How a protected database names its backups: the database they must hold, and optionally a path pattern
    and the saved server whose backup jobs wrote them."""

    database: str
    backup_glob: str | None = None
    # Paths written by successful backup jobs of the source server that included the database; None when the
    # protected database names no source server.
    source_paths: Collection[str] | None = None


def databases_held(details: dict[str, Any]) -> list[str] | None:
    """The databases a backup says it holds: a mysqldump's "Current Database" lines (or, for a dump of one
    database without them, the header's Database), a mydumper directory's schema files, a MySQL Shell dump's
    schemas, a physical backup's database directories. None when it does not say (a --tab directory)."""
    for key in ("databases", "schemas"):
        names = details.get(key)
        if isinstance(names, list) and names:
            return [str(name) for name in names]
    if source := details.get("source_database"):
        return [str(source)]
    return None


def relative_path(path: str, root: str) -> str:
    backup, base = PurePosixPath(path), PurePosixPath(root)
    return str(backup.relative_to(base)) if backup.is_relative_to(base) else str(backup)


def belongs(selection: Selection, *, path: str, root: str, details: dict[str, Any]) -> bool:
    """Whether the backup at `path` (under `root`) is one of the selection's. A backup that names its databases
    must name this one; one that does not is taken only on the word of the pattern or the source server."""
    if selection.backup_glob and not fnmatchcase(relative_path(path, root), selection.backup_glob):
        return False
    if selection.source_paths is not None and path not in selection.source_paths:
        return False
    held = databases_held(details)
    if held is not None:
        return selection.database in held
    return bool(selection.backup_glob) or selection.source_paths is not None


class BackupLike(Protocol):
    """What latest() needs of a backup row."""

    @property
    def id(self) -> int: ...

    @property
    def modified_at(self) -> datetime: ...


B = TypeVar("B", bound=BackupLike)


def latest(backups: Sequence[B]) -> B | None:
    """The newest backup by modification time (then by id), gone from disk or not: a drill must say when the
    newest backup vanished rather than quietly restore an older one."""
    return max(backups, key=lambda b: (b.modified_at, b.id), default=None)
