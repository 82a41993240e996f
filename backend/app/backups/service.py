"""Finding backups under the roots and keeping the backups table in step with the disk."""

import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.backups.detect import Detected, detect_directory, detect_file
from app.backups.paths import resolve_backup_path
from app.backups.schemas import LastRestorePublic
from app.models import Backup, Job
from app.models.base import utcnow

MAX_SCAN_DEPTH = 6


def _directory_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())


def _walk(root: Path) -> Iterator[tuple[Path, Detected]]:
    """Artifacts under one root; a directory recognised as a backup is one artifact, not descended into."""
    for current, dirnames, filenames in os.walk(root, followlinks=False):
        here = Path(current)
        # Hidden directories are work in progress (a backup job writes into .NAME.partial-JOB), never listed.
        dirnames[:] = [name for name in dirnames if not name.startswith(".")]
        depth = len(here.relative_to(root).parts)
        if here != root and (found := detect_directory(here)) is not None:
            dirnames.clear()
            yield here, found
            continue
        if depth >= MAX_SCAN_DEPTH:
            dirnames.clear()
        for name in sorted(filenames):
            path = here / name
            # A symlink may point outside the root: only what resolves inside it is listed.
            if path.is_symlink() and not path.resolve().is_relative_to(root):
                continue
            try:
                if (found := detect_file(path)) is not None:
                    yield path, found
            except OSError:
                continue


def scan_backups(session: Session, roots: list[Path]) -> list[Backup]:
    now = utcnow()
    seen: set[str] = set()
    existing = {b.path: b for b in session.scalars(select(Backup))}
    for root in (r.resolve() for r in roots):
        if not root.is_dir():
            continue
        for path, found in _walk(root):
            key = str(path)
            seen.add(key)
            stat = path.stat()
            backup = existing.get(key) or Backup(path=key, discovered_at=now)
            backup.root = str(root)
            backup.format = found.format
            backup.compression = found.compression
            backup.size_bytes = stat.st_size if path.is_file() else _directory_size(path)
            backup.modified_at = datetime.fromtimestamp(stat.st_mtime, UTC)
            backup.details = found.details
            backup.last_seen_at = now
            backup.missing = False
            session.add(backup)
    for known_path, backup in existing.items():
        if known_path not in seen:
            backup.missing = True
    session.flush()
    return list_backups(session)


def last_restores(session: Session, backup_ids: list[int]) -> dict[int, LastRestorePublic]:
    """Per backup, the newest finished restore that showed whether the backup restores."""
    if not backup_ids:
        return {}
    newest = (
        select(func.max(Job.id))
        .where(Job.backup_id.in_(backup_ids), Job.backup_verdict.is_not(None))
        .group_by(Job.backup_id)
    )
    jobs = session.scalars(select(Job).where(Job.id.in_(newest)))
    return {
        job.backup_id: LastRestorePublic(
            job_id=job.id, verdict=job.backup_verdict, finished_at=job.finished_at, error=job.error
        )
        for job in jobs
        if job.backup_id is not None and job.backup_verdict is not None
    }


def list_backups(session: Session, include_missing: bool = False) -> list[Backup]:
    query = select(Backup).order_by(Backup.path)
    if not include_missing:
        query = query.where(Backup.missing.is_(False))
    return list(session.scalars(query))


def register_backup(session: Session, raw_path: str, roots: list[Path]) -> Backup:
    """The backups row for one path inside the roots, creating or refreshing it."""
    real, root = resolve_backup_path(raw_path, roots)
    found = detect_file(real) if real.is_file() else detect_directory(real)
    backup = session.scalar(select(Backup).where(Backup.path == str(real)))
    if backup is None:
        backup = Backup(path=str(real))
    stat = real.stat()
    backup.root = str(root)
    backup.format = found.format if found else "unknown"
    backup.compression = found.compression if found else None
    backup.size_bytes = stat.st_size if real.is_file() else _directory_size(real)
    backup.modified_at = datetime.fromtimestamp(stat.st_mtime, UTC)
    backup.details = found.details if found else {}
    backup.last_seen_at = utcnow()
    backup.missing = False
    session.add(backup)
    session.flush()
    return backup
