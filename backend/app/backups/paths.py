"""Every backup path the user names is resolved here, and must stay inside a configured backup root."""

from pathlib import Path

from app.core.errors import InvalidRequest


def resolve_backup_path(raw: str, roots: list[Path]) -> tuple[Path, Path]:
    """Return (real path, real root) for a path given absolute or relative to a root.

    Symlinks and ".." are resolved first, so a link inside a root that points outside it is refused.
    """
    if not raw.strip():
        raise InvalidRequest("choose a backup: the path is empty", field="backup_path")
    if "\x00" in raw:
        raise InvalidRequest("the backup path contains a NUL byte", field="backup_path")
    given = Path(raw)
    candidates = [given] if given.is_absolute() else [root / given for root in roots]
    real_roots = [root.resolve() for root in roots]
    inside_but_missing = False
    for candidate in candidates:
        real = candidate.resolve()
        root = next((r for r in real_roots if real == r or real.is_relative_to(r)), None)
        if root is None:
            continue
        if real.exists():
            return real, root
        inside_but_missing = True
    if inside_but_missing:
        raise InvalidRequest(
            f"{raw} does not exist under the backup roots; refresh the backup list and pick it again",
            field="backup_path",
        )
    listed = ", ".join(str(r) for r in real_roots)
    raise InvalidRequest(
        f"{raw} is outside the backup roots ({listed}); restores only read backups under those directories",
        field="backup_path",
    )
