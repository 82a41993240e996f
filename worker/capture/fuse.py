"""FUSE capture: oplogfs, a logging passthrough file system mounted over the sandbox datadir.

The real files live in a sibling directory; the server's --datadir is the mount, so every file
operation of every server thread passes through oplogfs, whatever the AIO mode (io_uring included),
and is logged with the caller's thread id in the JuiceFS access-log format. Its stdout is a pipe read
by app.traces.juicefs_log.JuiceFsLogParser. JuiceFS logs inode numbers, not paths; oplogfs reports the
real files' inodes, so they are mapped back to paths by looking at the real directory.

The mount always goes away: detach() unmounts (fusermount3 -u, lazily when busy), and a job killed
outright leaves at most a disconnected mount that worker.sandbox.server removes before deleting the
sandbox (unmount_if_mounted, also run by reap_orphans).
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import IO

from app.traces.juicefs_log import JuiceFsLogParser
from app.traces.operation import Operation
from app.traces.records import TraceSink
from worker.capture.errors import CaptureFailed
from worker.capture.stream import LinePump
from worker.sandbox.mounts import is_mount_point, unmount

NAME = "fuse"
OPLOGFS_DIR = Path(__file__).resolve().parent / "oplogfs"
OPLOGFS = OPLOGFS_DIR / "oplogfs"
MOUNT_TIMEOUT_S = 10
EXIT_TIMEOUT_S = 30
_INODE_PATH = re.compile(r"inode:(\d+)(?:/(.*))?$")
_CREATED = re.compile(r"\] create \((\d+),([^,)]*),[^)]*\): \((\d+),")
_RENAMED = re.compile(r"\] rename \((\d+),([^,)]*),(\d+),([^,)]*),\d+\) - OK")


@functools.cache
def unavailable_reason() -> str | None:
    """Why oplogfs cannot mount here, or None. Builds it once if the binary is missing."""
    if not Path("/dev/fuse").exists():
        return "/dev/fuse does not exist on this host (load the fuse module, or give the container the device)"
    if not os.access("/dev/fuse", os.R_OK | os.W_OK):
        return f"/dev/fuse is not readable and writable by this worker (uid {os.geteuid()})"
    if shutil.which("fusermount3") is None:
        return "fusermount3 is not installed (Debian/Ubuntu: apt-get install fuse3)"
    if not OPLOGFS.exists():
        build = subprocess.run(["make", "-s", "-C", str(OPLOGFS_DIR)], capture_output=True, text=True, check=False)
        if build.returncode != 0 or not OPLOGFS.exists():
            return (
                f"oplogfs is not built and building it failed ({build.stderr.strip()[:300]}); "
                "install libfuse3-dev and pkg-config, then run scripts/setup.sh"
            )
    return None


class InodePaths:
    """inode number -> path as the server sees it (under the mount), learned by walking the real directory."""

    RESCAN_INTERVAL_S = 0.5

    def __init__(self, real_dir: Path, mount_dir: Path) -> None:
        self._real_dir = real_dir
        self._mount_dir = mount_dir
        self._paths: dict[int, str] = {}
        self._last_scan = 0.0

    def path(self, text: str | None) -> str | None:
        """'inode:N' or 'inode:P/name' -> a path; unchanged when the inode is not (or no longer) found."""
        if text is None:
            return None
        match = _INODE_PATH.match(text)
        if match is None:
            return text
        inode, name = int(match.group(1)), match.group(2)
        found = self._lookup(inode)
        if found is None:
            return text
        return f"{found}/{name}" if name is not None else found

    def learn(self, line: str) -> None:
        """Names the log itself gives: a create's new inode, a rename's new name (before any rescan sees them)."""
        created = _CREATED.search(line)
        if created:
            parent = self._lookup(int(created.group(1)), force=True)
            if parent is not None:
                self._paths[int(created.group(3))] = f"{parent}/{created.group(2)}"
            return
        renamed = _RENAMED.search(line)
        if renamed:
            old_parent = self._lookup(int(renamed.group(1)), force=True)
            new_parent = self._lookup(int(renamed.group(3)), force=True)
            if old_parent is None or new_parent is None:
                return
            old, new = f"{old_parent}/{renamed.group(2)}", f"{new_parent}/{renamed.group(4)}"
            for inode, path in list(self._paths.items()):
                if path == old:
                    self._paths[inode] = new

    def _lookup(self, inode: int, force: bool = False) -> str | None:
        """force: rescan even within the interval (a create names a directory that must exist: worth a look)."""
        found = self._paths.get(inode)
        if found is None and (force or time.monotonic() - self._last_scan >= self.RESCAN_INTERVAL_S):
            self._scan()
            found = self._paths.get(inode)
        return found

    def _scan(self) -> None:
        self._last_scan = time.monotonic()
        self._paths[self._inode(self._real_dir)] = str(self._mount_dir)
        for directory, subdirs, files in os.walk(self._real_dir):
            for name in (*subdirs, *files):
                real = Path(directory) / name
                inode = self._inode(real)
                if inode:
                    self._paths[inode] = str(self._mount_dir / real.relative_to(self._real_dir))

    @staticmethod
    def _inode(path: Path) -> int:
        try:
            return path.lstat().st_ino
        except OSError:
            return 0


class FuseCapture:
    """A worker.sandbox.server DatadirLayer: attach() mounts oplogfs, detach() unmounts it."""

    name = NAME

    def __init__(self, sink: TraceSink, popen: Callable[..., subprocess.Popen[bytes]], log: Callable[[str], None]):
        self._sink = sink
        self._popen = popen
        self._log = log
        self._process: subprocess.Popen[bytes] | None = None
        self._pump: LinePump | None = None
        self._mount_dir: Path | None = None
        self._stderr: list[str] = []
        self._stderr_thread: threading.Thread | None = None
        self.operations = 0

    def attach(self, real_dir: Path, mount_dir: Path) -> None:
        """Mount oplogfs of real_dir on mount_dir; returns once the mount is up."""
        mount_dir.mkdir(parents=True, exist_ok=True)
        self._mount_dir = mount_dir
        read_end, write_end = os.pipe()
        options = "default_permissions,allow_other" if os.geteuid() == 0 else "default_permissions"
        try:
            self._process = self._popen(
                [str(OPLOGFS), str(real_dir), str(mount_dir), "-o", options, "-o", "fsname=oplogfs"],
                stdout=write_end,
                stderr=subprocess.PIPE,
                stdin=subprocess.DEVNULL,
            )
        finally:
            os.close(write_end)
        self._stderr_thread = threading.Thread(
            target=self._read_stderr, args=(self._process.stderr,), name="capture-oplogfs-stderr", daemon=True
        )
        self._stderr_thread.start()
        inodes = InodePaths(real_dir, mount_dir)
        pipe = os.fdopen(read_end, "rb", buffering=1 << 16)
        self._pump = LinePump(
            "oplogfs",
            pipe,
            JuiceFsLogParser(),
            self._sink,
            transform=functools.partial(_with_paths, inodes),
            on_other_line=functools.partial(_learn_names, inodes),
        ).start()
        self._wait_mounted(mount_dir)

    def _read_stderr(self, stream: IO[bytes]) -> None:
        with stream:
            for raw in stream:
                line = raw.decode(errors="replace").rstrip()
                if "invalid max threads" not in line:  # libfuse 3.14's harmless complaint about its own default
                    self._stderr = [*self._stderr[-20:], line]

    def _wait_mounted(self, mount_dir: Path) -> None:
        deadline = time.monotonic() + MOUNT_TIMEOUT_S
        assert self._process is not None
        while time.monotonic() < deadline:
            if is_mount_point(mount_dir):
                return
            if self._process.poll() is not None:
                if self._stderr_thread is not None:
                    self._stderr_thread.join(2)
                raise CaptureFailed(
                    f"oplogfs could not mount {mount_dir} (exit code {self._process.returncode}): "
                    + " | ".join(self._stderr[-5:])
                )
            time.sleep(0.02)
        self.detach()
        raise CaptureFailed(f"oplogfs did not mount {mount_dir} within {MOUNT_TIMEOUT_S} s")

    def detach(self) -> None:
        """Unmount (the server must have stopped), let oplogfs exit and drain its log. Idempotent."""
        if self._mount_dir is not None:
            problem = unmount(self._mount_dir)
            if problem:
                self._log(problem)
        process, self._process = self._process, None
        if process is not None:
            try:
                process.wait(timeout=EXIT_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if self._stderr_thread is not None:
            self._stderr_thread.join(5)
        if self._pump is not None:
            self._pump.join()
            self.operations = self._pump.batcher.count
            if self._pump.error is not None:
                error, self._pump = self._pump.error, None
                raise CaptureFailed(f"reading the oplogfs log failed: {error!r}") from error
            self._pump = None

    def stop(self) -> int:
        self.detach()
        return self.operations


def _learn_names(inodes: InodePaths, line: str) -> bool:
    if "] create (" in line or "] rename (" in line:
        inodes.learn(line)
    return False  # the parser reads the line as well


def _with_paths(inodes: InodePaths, operations: list[Operation]) -> list[Operation]:
    return [replace(operation, path=inodes.path(operation.path)) for operation in operations]


__all__ = ["NAME", "FuseCapture", "InodePaths", "unavailable_reason"]
