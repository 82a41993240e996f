"""Whether a saved server runs on a worker's host: tracers need its process, and mysqldump --tab and mariabackup
need its files. A worker decides for itself when a job runs (find_local_server_pid); the API's connection check
compares the server's host with the hosts of the live workers (worker_host_verdict)."""

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
    return local_server_pid(hostname, pid_file)


def local_server_pid(hostname: str, pid_file: str) -> tuple[int | None, str | None]:
    """(pid, None) when a server reporting this @@hostname and @@pid_file runs on this host, else (None, why not)."""
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


def worker_host_verdict(hostname: str, pid_file: str, worker_hosts: list[str] | None) -> tuple[bool | None, str]:
    """Whether the server that reports this @@hostname and @@pid_file is on a live worker's host, and why we think
    so; None when no worker can tell. On this API's own host the server's process is looked up too, so a server
    in another container that shares the host name is not taken for a local one."""
    if worker_hosts is None:
        return None, "unknown: Redis did not answer, so the live workers (and their hosts) are unknown"
    if not worker_hosts:
        return None, f"unknown: no worker is running to compare with the server's host '{hostname}'"
    if hostname not in worker_hosts:
        hosts = ", ".join(f"'{host}'" for host in sorted(set(worker_hosts)))
        return False, (
            f"no: the server runs on host '{hostname}' and the workers on {hosts}; mysqldump --tab and mariabackup "
            "cannot back it up, and the IO timeline cannot follow its threads"
        )
    if hostname == socket.gethostname():
        pid, problem = local_server_pid(hostname, pid_file)
        if problem is not None:
            return False, f"no: {problem}"
        return True, f"yes: it runs on the worker's host '{hostname}' (process {pid})"
    return True, f"yes: it reports the host name '{hostname}', where a worker runs"
