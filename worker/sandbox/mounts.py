"""Mount points under a sandbox (the FUSE capture mounts one over the datadir), found and removed.

/proc/self/mountinfo is read rather than stat(): a FUSE mount whose daemon died answers stat() with
ENOTCONN ("transport endpoint is not connected"), yet it is still a mount and still blocks rmtree.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

_UNMOUNT_TIMEOUT_S = 30


def _unescape(field: str) -> str:
    # mountinfo escapes space, tab, newline and backslash as \040, \011, \012, \134.
    return field.encode().decode("unicode_escape") if "\\" in field else field


def mount_points() -> list[Path]:
    try:
        text = Path("/proc/self/mountinfo").read_text()
    except OSError:
        return []
    return [Path(_unescape(line.split()[4])) for line in text.splitlines() if len(line.split()) > 4]


def is_mount_point(path: Path) -> bool:
    return path.absolute() in mount_points()


def mounts_under(directory: Path) -> list[Path]:
    """Mount points at or below directory, deepest first (the order to unmount them in)."""
    root = directory.absolute()
    found = [point for point in mount_points() if point == root or root in point.parents]
    return sorted(found, key=lambda point: len(point.parts), reverse=True)


def unmount(path: Path) -> str | None:
    """Unmount a FUSE mount: normally, else lazily (busy, or its daemon is gone). None when it is gone."""
    if not is_mount_point(path):
        return None
    for extra in ([], ["-z"]):
        for tool in (["fusermount3", "-u", *extra], ["umount", *(["-l"] if extra else [])]):
            try:
                subprocess.run([*tool, str(path)], capture_output=True, timeout=_UNMOUNT_TIMEOUT_S, check=False)
            except (OSError, subprocess.TimeoutExpired):
                continue
            if not is_mount_point(path):
                return None
    return f"could not unmount {path}: unmount it by hand with `fusermount3 -u -z {path}`"


def unmount_all_under(directory: Path) -> list[str]:
    """Unmount everything mounted inside directory; returns the problems (empty when all went)."""
    return [problem for point in mounts_under(directory) if (problem := unmount(point))]
