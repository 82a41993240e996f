"""Where a backup job may write: a new (or empty) directory inside a backup root, never an existing backup.

Resolved like the paths restores read (app.backups.paths): symlinks and ".." first, then the roots are checked,
so a link inside a root that points outside it is refused too.
"""

from pathlib import Path

from app.core.errors import InvalidRequest

FIELD = "destination"


def resolve_destination(raw: str, roots: list[Path]) -> Path:
    """The real path of the destination directory: inside a root, not the root itself, missing or empty."""
    if not raw.strip():
        raise InvalidRequest("name a directory to write the backup into", field=FIELD)
    if "\x00" in raw:
        raise InvalidRequest("the destination contains a NUL byte", field=FIELD)
    given = Path(raw.strip())
    real_roots = [root.resolve() for root in roots]
    candidate = given if given.is_absolute() else real_roots[0] / given
    real = candidate.resolve()
    root = next((r for r in real_roots if real.is_relative_to(r)), None)
    if root is None:
        listed = ", ".join(str(r) for r in real_roots)
        raise InvalidRequest(
            f"{raw} is outside the backup roots ({listed}); backups are only written under those directories",
            field=FIELD,
        )
    if real == root:
        raise InvalidRequest(f"{raw} is a backup root itself: name a new directory inside it", field=FIELD)
    check_destination_free(real, raw)
    return real


def check_destination_free(real: Path, shown: str) -> None:
    """A destination that already holds anything is refused: a backup never overwrites another."""
    if real.exists() and not real.is_dir():
        raise InvalidRequest(f"{shown} exists and is not a directory: choose a new name", field=FIELD)
    if real.is_dir() and any(real.iterdir()):
        raise InvalidRequest(
            f"{shown} already exists and is not empty: choose a new name (a backup never overwrites files)",
            field=FIELD,
        )
