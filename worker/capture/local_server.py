"""Find the process of a saved target's server, when it runs on this worker's host (tracers need a pid)."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

_SERVER_NAMES = ("mariadbd", "mysqld")


def find_local_server_pid(connection: Any) -> tuple[int | None, str | None]:
    """(pid, None) when the server this connection reaches runs here, else (None, why not)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT @@hostname, @@pid_file")
        row = cursor.fetchone()
    hostname, pid_file = (str(value) if value is not None else "" for value in (row or ("", "")))
    here = socket.gethostname()
    if hostname != here:
        return None, (
            f"the saved target runs on host '{hostname}', not on this worker's host '{here}': tracers can only "
            "follow a server process on their own host"
        )
    try:
        pid = int(Path(pid_file).read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None, f"the server's pid file {pid_file!r} cannot be read on this host, so its process is unknown"
    try:
        comm = Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return None, f"the pid file says {pid}, but no such process runs here (a server in another container?)"
    if comm not in _SERVER_NAMES:
        return None, f"the pid file says {pid}, but that process is '{comm}', not a MariaDB/MySQL server"
    return pid, None
