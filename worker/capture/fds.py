"""File descriptor -> path, per process, for tracers that report descriptor numbers (eBPF).

Filled from /proc/PID/fd when a process is first watched, then kept up to date from the openat and
close calls the tracer reports. A descriptor never seen opened (inherited, or opened before the
tracer attached) is read from /proc/PID/fd/N the first time it shows up, while the process lives.
"""

from __future__ import annotations

import os
from pathlib import Path


class FdPaths:
    def __init__(self) -> None:
        self._paths: dict[tuple[int, int], str] = {}
        self._cwds: dict[int, str] = {}

    def seed(self, pid: int) -> None:
        """Learn every descriptor the process has open right now."""
        directory = Path(f"/proc/{pid}/fd")
        try:
            entries = list(os.scandir(directory))
        except OSError:
            return
        for entry in entries:
            if entry.name.isdigit():
                self._read_link(pid, int(entry.name))

    def opened(self, pid: int, fd: int, path: str) -> None:
        self._paths[(pid, fd)] = path

    def closed(self, pid: int, fd: int) -> str | None:
        return self._paths.pop((pid, fd), None)

    def path(self, pid: int, fd: int) -> str | None:
        found = self._paths.get((pid, fd))
        return found if found is not None else self._read_link(pid, fd)

    def absolute(self, pid: int, path: str) -> str:
        """A path as opened (relative to the process's working directory, say "./db/t.ibd") made absolute."""
        if path.startswith("/"):
            return path
        cwd = self._cwds.get(pid)
        if cwd is None:
            try:
                cwd = self._cwds[pid] = str(Path(f"/proc/{pid}/cwd").readlink())
            except OSError:
                return path
        return os.path.normpath(Path(cwd) / path)

    def forget_process(self, pid: int) -> None:
        for key in [key for key in self._paths if key[0] == pid]:
            del self._paths[key]

    def _read_link(self, pid: int, fd: int) -> str | None:
        try:
            target = str(Path(f"/proc/{pid}/fd/{fd}").readlink())
        except OSError:
            return None
        self._paths[(pid, fd)] = target
        return target
