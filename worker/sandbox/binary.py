"""Find the database server binary a sandbox runs, and learn its flavour and version from --version."""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from worker.sandbox.errors import SandboxError

Flavour = Literal["mariadb", "mysql"]

# Preference order: MariaDB first (what this product is tested with); on Debian `mysqld` is often just
# a symlink to mariadbd, and --version tells the truth either way.
_SERVER_NAMES = ("mariadbd", "mysqld")
_EXTRA_DIRS = ("/usr/sbin", "/usr/local/mysql/bin", "/usr/local/sbin")
_VERSION = re.compile(r"\bVer\s+(\d+\.\d+\.\d+)(\S*)")
_INSTALL_HINT = (
    "install MariaDB server (Debian/Ubuntu: `apt-get install mariadb-server`) or give the full path "
    "of mariadbd/mysqld in the sandbox settings"
)


@dataclass(frozen=True)
class ServerBinary:
    path: str
    flavour: Flavour
    version: str

    @property
    def version_tuple(self) -> tuple[int, ...]:
        return tuple(int(part) for part in self.version.split("."))


def detect_server_binary(explicit: str = "") -> ServerBinary:
    """The server binary at `explicit`, else the first mariadbd/mysqld found on PATH or usual places."""
    path = _checked_explicit_path(explicit) if explicit else _find_server_path()
    return ServerBinary(path, *parse_version_output(_run_version(path)))


def parse_version_output(output: str) -> tuple[Flavour, str]:
    """("mariadb", "10.11.19") from `mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 for ...`."""
    match = _VERSION.search(output)
    if match is None:
        raise SandboxError(f"could not read a server version from {output.strip()!r}: {_INSTALL_HINT}")
    flavour: Flavour = "mariadb" if "mariadb" in output.lower() else "mysql"
    return flavour, match.group(1)


def find_tool(names: tuple[str, ...], near: str = "") -> str:
    """The first of `names` on PATH, in the usual dirs, or next to the server binary `near`."""
    dirs = [str(Path(near).parent), str(Path(near).parent.parent / "bin")] if near else []
    for name in names:
        found = shutil.which(name) or shutil.which(name, path=":".join([*dirs, *_EXTRA_DIRS, "/usr/bin"]))
        if found:
            return found
    raise SandboxError(f"none of {', '.join(names)} was found: {_INSTALL_HINT}")


def _checked_explicit_path(explicit: str) -> str:
    found = shutil.which(explicit)
    if found is None:
        raise SandboxError(f"the server binary {explicit!r} does not exist or is not executable: {_INSTALL_HINT}")
    return found


def _find_server_path() -> str:
    try:
        return find_tool(_SERVER_NAMES)
    except SandboxError:
        raise SandboxError(f"no MariaDB or MySQL server binary (mariadbd, mysqld) was found: {_INSTALL_HINT}") from None


def _run_version(path: str) -> str:
    try:
        result = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise SandboxError(f"could not run {path} --version ({error}): {_INSTALL_HINT}") from error
    return result.stdout + result.stderr
