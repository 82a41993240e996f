"""strace capture: every IO system call of the server and of the processes the job launches.

A sandbox server the job starts is started under strace (-D, --seccomp-bpf: only the IO calls stop it);
a server that was already running, or one the user keeps, is attached with -p, where every system call
stops it (futexes and all), which costs a busy server much more. A server started with --seccomp-bpf must
keep its tracer until it exits: once detached, its filtered calls would fail with ENOSYS.

strace writes one line per call (``-f -ttt -T -y``: thread id, epoch time, duration, descriptors as
paths) into a pipe; app.traces.strace_log.StraceLogParser turns them into operations as they come.
strace stops the calling thread for every traced call (~0.1-0.2 ms each here): its cost follows the
number of calls per second. io_uring page IO is invisible to it (only io_uring_enter shows), so a job
that captures with strace runs InnoDB with libaio (io_submit, whose iocbs strace decodes).
"""

from __future__ import annotations

import functools
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from app.traces.records import TraceSink
from app.traces.strace_log import StraceLogParser
from worker.capture.errors import CaptureFailed
from worker.capture.stream import LinePump

NAME = "strace"

# Data reads and writes (files, pipes and sockets: the client's traffic arrives through recvfrom),
# syncs, opens and closes (they tie descriptors to files), and the asynchronous IO calls.
IO_SYSCALLS = (
    "read", "pread64", "readv", "preadv", "preadv2",
    "write", "pwrite64", "writev", "pwritev", "pwritev2",
    "recvfrom", "sendto",
    "fsync", "fdatasync", "sync_file_range", "fallocate",
    "openat", "close",
    "io_submit", "io_getevents", "io_uring_enter",
)  # fmt: skip

# The SQL client fed a dump on its stdin: its read() calls are that feed (its server traffic is sendto and
# recvfrom), 4 KiB each, two thirds of a restore's calls, and each would stop the thread that paces the
# whole restore. They are left out for it (eBPF counts them in the kernel instead).
SQL_CLIENTS = ("mysql", "mariadb")
CLIENT_IO_SYSCALLS = tuple(call for call in IO_SYSCALLS if call != "read")

ATTACH_TIMEOUT_S = 10
STOP_TIMEOUT_S = 30

Popen = Callable[..., subprocess.Popen[bytes]]


def _base_command(output: str, syscalls: tuple[str, ...] = IO_SYSCALLS) -> list[str]:
    return [
        "strace",
        "-f",  # every thread, and children
        "-ttt",  # epoch seconds with microseconds
        "-T",  # time spent in each call
        "-qq",  # no attach/exit chatter
        "-y",  # descriptors decoded to paths
        "-s",
        # Little of the buffers' contents (we want sizes, not data; paths are printed in full regardless),
        # but -s also caps array elements, and io_submit's iocbs are an array: 0 would print "[...]".
        "16",
        "-e",
        "signal=none",
        "-e",
        f"trace={','.join(syscalls)}",
        "-o",
        output,
    ]


@functools.cache
def unavailable_reason() -> str | None:
    """Why strace cannot trace here, or None when it can (a real trace of `true` is tried once)."""
    if shutil.which("strace") is None:
        return "strace is not installed (Debian/Ubuntu: apt-get install strace)"
    try:
        probe = subprocess.run(
            ["strace", "-qq", "-e", "trace=read", "-o", "/dev/null", "true"],
            capture_output=True,
            text=True,
            timeout=20,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"strace could not run ({error})"
    if probe.returncode != 0:
        return f"strace cannot trace on this host: {probe.stderr.strip()[:300]}"
    if os.geteuid() != 0 and _ptrace_scope() > 0:
        return (
            "attaching to a running server needs root or kernel.yama.ptrace_scope=0, "
            f"and this worker runs as uid {os.geteuid()} with ptrace_scope={_ptrace_scope()}"
        )
    return None


def _ptrace_scope() -> int:
    try:
        return int(Path("/proc/sys/kernel/yama/ptrace_scope").read_text())
    except (OSError, ValueError):
        return 0


class StraceCapture:
    """Tracers of one job, all feeding one sink. Start them with attach() and popen(); stop() at the end."""

    name = NAME

    def __init__(self, sink: TraceSink, popen: Popen, log: Callable[[str], None]) -> None:
        self._sink = sink
        self._popen = popen
        self._log = log
        self._attached: list[subprocess.Popen[bytes]] = []
        self._launched: list[subprocess.Popen[bytes]] = []
        self._pumps: list[LinePump] = []
        self._fifo_dirs: list[Path] = []
        self._held_writers: list[int] = []
        self._server_pumps: list[LinePump] = []  # of servers started through server_command

    def server_command(self, command: list[str]) -> list[str]:
        """`command` (the sandbox server) started under strace: -D keeps the server the process the sandbox
        started (its pid, signals, exit status), with strace as a grandchild; --seccomp-bpf stops it on the
        IO calls only. The output goes through a FIFO only strace opens, so the server holds no end of it.
        -I 2 lets strace end when the server does, as it always must here (see the module's docstring)."""
        fifo_dir = Path(tempfile.mkdtemp(prefix="restorescope-strace-"))
        self._fifo_dirs.append(fifo_dir)
        fifo = fifo_dir / "server.strace"
        os.mkfifo(fifo, 0o600)
        read_end = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        # A FIFO without a writer reads as ended: hold one until strace has opened it (see attach).
        self._held_writers.append(os.open(fifo, os.O_WRONLY))
        os.set_blocking(read_end, True)
        pipe = os.fdopen(read_end, "rb", buffering=1 << 16)
        name = f"strace-{Path(command[0]).name}"
        self._server_pumps.append(LinePump(name, pipe, StraceLogParser(), self._sink).start())
        return [*_base_command(str(fifo)), "-D", "-I", "2", "--seccomp-bpf", "--", *command]

    def attach(self, pid: int) -> None:
        """Trace every thread of a running process (new threads too) until stop(); a server started through
        server_command is traced already."""
        tracer_pid = _tracer_of(pid)
        if self._fifo_dirs and tracer_pid and _command_name(tracer_pid) == "strace":
            self._release_writers()  # strace opened its output before it started the server
            return
        read_end, write_end = os.pipe()
        command = [*_base_command(f"/dev/fd/{write_end}"), "-p", str(pid)]
        tracer = self._start(command, read_end, write_end, f"strace-p{pid}")
        self._attached.append(tracer)
        self._wait_attached(pid, tracer)

    def popen(self, popen: Popen) -> Popen:
        """A popen that starts its command under strace (with --seccomp-bpf: only IO calls stop)."""

        def traced_popen(args: list[str], **kwargs: Any) -> subprocess.Popen[bytes]:
            read_end, write_end = os.pipe()
            syscalls: tuple[str, ...] = IO_SYSCALLS
            if Path(args[0]).name in SQL_CLIENTS and kwargs.get("stdin") == subprocess.PIPE:
                syscalls = CLIENT_IO_SYSCALLS
                self._log(
                    f"strace: the reads of {Path(args[0]).name}'s standard input (the dump) are not traced: "
                    "each would stop the client that paces the restore"
                )
            command = [*_base_command(f"/dev/fd/{write_end}", syscalls), "--seccomp-bpf", "--", *args]
            process = self._start(command, read_end, write_end, f"strace-{Path(args[0]).name}", popen, kwargs)
            self._launched.append(process)
            return process

        return traced_popen

    def _start(
        self,
        command: list[str],
        read_end: int,
        write_end: int,
        name: str,
        popen: Popen | None = None,
        kwargs: dict[str, Any] | None = None,
    ) -> subprocess.Popen[bytes]:
        options = dict(kwargs or {})
        options["pass_fds"] = (*options.get("pass_fds", ()), write_end)
        try:
            process = (popen or self._popen)(command, **options)
        finally:
            os.close(write_end)
        pipe = os.fdopen(read_end, "rb", buffering=1 << 16)
        self._pumps.append(LinePump(name, pipe, StraceLogParser(), self._sink).start())
        return process

    def _wait_attached(self, pid: int, tracer: subprocess.Popen[bytes]) -> None:
        deadline = time.monotonic() + ATTACH_TIMEOUT_S
        while time.monotonic() < deadline:
            if tracer.poll() is not None:
                raise CaptureFailed(
                    f"strace could not attach to process {pid} (exit code {tracer.returncode}); "
                    "is the process still running, and may this worker trace it?"
                )
            if _tracer_of(pid) == tracer.pid:
                return
            time.sleep(0.02)
        raise CaptureFailed(f"strace did not attach to process {pid} within {ATTACH_TIMEOUT_S} s")

    def _release_writers(self) -> None:
        for writer in self._held_writers:
            os.close(writer)
        self._held_writers = []

    def stop(self) -> int:
        """Detach from attached processes, wait for every tracer and reader; returns operations written.
        A server started through server_command has been stopped by now: its strace ends with it."""
        self._release_writers()
        for tracer in self._attached:
            if tracer.poll() is None:
                tracer.send_signal(signal.SIGINT)  # strace detaches cleanly on SIGINT
        for tracer in [*self._attached, *self._launched]:
            try:
                tracer.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                tracer.kill()
                tracer.wait()
        for pump in self._pumps:
            pump.join()
        for pump in self._server_pumps:
            pump.join(STOP_TIMEOUT_S)
            if pump.alive:  # never detached: the server would get ENOSYS (see the module's docstring)
                self._log(f"{pump.name}: the server still runs, so its strace goes on; its trace ends here")
        for fifo_dir in self._fifo_dirs:
            shutil.rmtree(fifo_dir, ignore_errors=True)
        pumps = [*self._pumps, *self._server_pumps]
        errors = [pump.error for pump in pumps if pump.error is not None]
        if errors:
            raise CaptureFailed(f"reading strace output failed: {errors[0]!r}") from errors[0]
        return sum(pump.batcher.count for pump in pumps)


def _command_name(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return None


def _tracer_of(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("TracerPid:"):
                return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


__all__ = ["IO_SYSCALLS", "NAME", "StraceCapture", "unavailable_reason"]
