"""eBPF capture: our probes (worker/capture/iotrace) on the syscall tracepoints of IO calls and on io_uring's.

What is watched: every process that starts (execs) inside iotrace's own process group, which is the job's
(iotrace is started through the job's ProcessGroup), plus the pids given explicitly (a server started before
the capture, or a saved target's server).

io_uring page IO, invisible to strace, is seen natively: ``io_uring:io_uring_submit_req`` fires once a
request is prepared, in the submitting thread; its request's command area gives the file position and
length, and ``io_uring:io_uring_complete`` the result; the pair gives the duration, on the lane of the
thread that submitted. (This kernel has no kprobes: tracepoints and BTF (CO-RE) reads are all we need.)

Why our own program rather than bpftrace: bpftrace's printf sends each record through a perf buffer
that wakes its reader with an irq_work, a self-IPI that is a VM exit on a virtualized host, paid by the
traced thread; iotrace submits to a BPF ring buffer without a wakeup and polls it (bench/capture_overhead).

iotrace prints one compact line per operation into a pipe; times are CLOCK_MONOTONIC nanoseconds, turned
into epoch microseconds with an offset taken at start. Descriptors become paths through worker.capture.fds
(openat/close as seen, /proc/PID/fd for the rest). Lost records are reported.

Line formats (space separated, the path last since it may contain spaces):
    S tid pid start_ns duration_ns call fd offset size result     a system call on a descriptor
    O tid pid start_ns duration_ns result path                      openat
    U tid pid start_ns duration_ns opcode fd offset size result     an io_uring request
and, once stopped, ``@stdin_reads[tid]: N`` / ``@stdin_bytes[tid]: N`` and ``Lost N events``.
"""

from __future__ import annotations

import errno
import functools
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from app.traces.operation import Malformed, Operation, kind_of
from app.traces.records import TraceSink
from worker.capture.errors import CaptureFailed
from worker.capture.fds import FdPaths
from worker.capture.stream import LinePump

NAME = "ebpf"
TRACEFS = Path("/sys/kernel/tracing")
READY_TIMEOUT_S = 60
STOP_TIMEOUT_S = 30
IOTRACE = Path(__file__).parent / "iotrace" / "iotrace"

# io_uring opcodes (include/uapi/linux/io_uring.h) whose file, offset and size we report.
IO_URING_OPS = {1: "readv", 2: "writev", 3: "fsync", 4: "read_fixed", 5: "write_fixed", 8: "sync_file_range",
                22: "read", 23: "write"}  # fmt: skip
_IO_URING_KINDS = {"readv": "read", "read_fixed": "read", "read": "read", "writev": "write", "write_fixed": "write",
                   "write": "write", "fsync": "fsync", "sync_file_range": "fsync"}  # fmt: skip

_LOST = re.compile(r"Lost (\d+) events")
_STDIN_COUNT = re.compile(r"^@stdin_(?P<what>reads|bytes)\[(?P<tid>\d+)\]: (?P<value>\d+)")


@functools.cache
def unavailable_reason() -> str | None:
    """Why the probes cannot capture here, or None (checks root, the binary, tracefs, BTF, the tracepoints)."""
    if not os.access(IOTRACE, os.X_OK):
        return f"{IOTRACE} is not built (scripts/setup.sh builds it; it needs clang, bpftool and libbpf-dev)"
    if os.geteuid() != 0:
        return f"eBPF capture needs root and this worker runs as uid {os.geteuid()}"
    if not Path("/sys/kernel/btf/vmlinux").exists():
        return "the kernel has no BTF (/sys/kernel/btf/vmlinux), which the io_uring probes need"
    problem = _mount_tracefs()
    if problem:
        return problem
    for event in ("syscalls/sys_enter_pwrite64", "io_uring/io_uring_submit_req", "io_uring/io_uring_complete"):
        if not (TRACEFS / "events" / event).is_dir():
            return f"the kernel has no tracepoint {event.replace('/', ':')}"
    return None


def _mount_tracefs() -> str | None:
    """Tracepoints are found under /sys/kernel/tracing; mount it when the host has not."""
    if (TRACEFS / "events").is_dir():
        return None
    result = subprocess.run(
        ["mount", "-t", "tracefs", "nodev", str(TRACEFS)], capture_output=True, text=True, check=False
    )
    if result.returncode != 0 or not (TRACEFS / "events").is_dir():
        return f"tracefs is not mounted at {TRACEFS} and mounting it failed: {result.stderr.strip()}"
    return None


def monotonic_to_epoch_offset_ns() -> int:
    """Add to a CLOCK_MONOTONIC (bpf_ktime_get_ns) reading to get nanoseconds since the epoch."""
    best: tuple[int, int] | None = None
    for _ in range(5):  # the pair read closest together wins
        before = time.monotonic_ns()
        wall = time.time_ns()
        after = time.monotonic_ns()
        if best is None or after - before < best[0]:
            best = (after - before, wall - (before + after) // 2)
    assert best is not None
    return best[1]


@dataclass
class IotraceLineParser:
    """Turns iotrace's lines into operations; resolves descriptors to paths as it goes."""

    offset_ns: int
    fds: FdPaths
    lines: int = 0

    def __post_init__(self) -> None:
        self.malformed: list[Malformed] = []
        self.lost_events = 0
        self.stdin_reads: dict[int, int] = {}  # tid -> reads of its stdin, counted in the kernel
        self.stdin_bytes: dict[int, int] = {}

    def feed(self, line: str) -> list[Operation]:
        self.lines += 1
        fields = line.rstrip("\n").split(" ", 6 if line.startswith("O ") else 10)
        try:
            return self._operations(fields)
        except (ValueError, IndexError):
            if line.strip() and not self._note(line):
                self.malformed.append(Malformed(self.lines, "not a line of iotrace", line))
            return []

    def _note(self, line: str) -> bool:
        lost = _LOST.search(line)
        if lost:
            self.lost_events += int(lost.group(1))
            return True
        if counted := _STDIN_COUNT.match(line):
            totals = self.stdin_reads if counted["what"] == "reads" else self.stdin_bytes
            totals[int(counted["tid"])] = int(counted["value"])
            return True
        return line.startswith(("READY", "@")) or not line.strip()

    def _operations(self, fields: list[str]) -> list[Operation]:
        tag, tid, pid = fields[0], int(fields[1]), int(fields[2])
        start_us = (int(fields[3]) + self.offset_ns) // 1000
        duration_us = int(fields[4]) // 1000
        if tag == "O":
            result, path = int(fields[5]), self.fds.absolute(pid, fields[6])
            if result >= 0:
                self.fds.opened(pid, result, path)
            return [Operation(start_us, duration_us, tid, "openat", "open", path, None, None, _result(result))]
        if tag == "S":
            call, fd, offset, size, result = fields[5], int(fields[6]), int(fields[7]), int(fields[8]), int(fields[9])
            found: str | None
            found = self.fds.closed(pid, fd) if call == "close" and result == 0 else self.fds.path(pid, fd)
            kind = kind_of(call)
            if kind in ("read", "write") and result >= 0:
                size = result  # bytes transferred, as strace reports them
            return [
                Operation(
                    start_us, duration_us, tid, call, kind, found,
                    offset if offset >= 0 else None, size if size >= 0 else None, _result(result),
                )
            ]  # fmt: skip
        if tag == "U":
            opcode, fd, offset, size, result = (int(value) for value in fields[5:10])
            call = IO_URING_OPS.get(opcode, f"io_uring_op{opcode}")
            kind = _IO_URING_KINDS.get(call, "other")
            if kind in ("read", "write") and result >= 0:
                size = result
            return [
                Operation(
                    start_us, duration_us, tid, f"io_uring_{call}", kind, self.fds.path(pid, fd),
                    offset if offset >= 0 and kind != "fsync" else None,
                    size if kind != "fsync" else None, _result(result),
                )
            ]  # fmt: skip
        raise ValueError(tag)

    def finish(self) -> None:
        """Nothing waits across lines."""


def _result(value: int) -> str:
    if value >= 0:
        return str(value)
    return errno.errorcode.get(-value, str(value))


class EbpfCapture:
    """One iotrace for the job; its pids are fixed at start, so give every known pid up front."""

    name = NAME

    def __init__(self, sink: TraceSink, popen: Callable[..., subprocess.Popen[bytes]], log: Callable[[str], None]):
        self._sink = sink
        self._popen = popen
        self._log = log
        self._process: subprocess.Popen[bytes] | None = None
        self._pump: LinePump | None = None
        self._parser: IotraceLineParser | None = None
        self._stderr_lines: list[str] = []
        self._stderr_thread: threading.Thread | None = None
        self._ready = threading.Event()

    @property
    def lost_events(self) -> int:
        return self._parser.lost_events if self._parser else 0

    def start(self, pids: list[int]) -> None:
        """Start iotrace watching pids and the job's process group; returns once its probes are attached."""
        fds = FdPaths()
        self._parser = IotraceLineParser(monotonic_to_epoch_offset_ns(), fds)
        read_end, write_end = os.pipe()
        try:
            self._process = self._popen(
                [str(IOTRACE), *(str(pid) for pid in pids)],
                stdout=write_end,
                stderr=subprocess.PIPE,
                stdin=subprocess.DEVNULL,
            )
        finally:
            os.close(write_end)
        assert self._process.stderr is not None
        self._stderr_thread = threading.Thread(
            target=self._read_stderr, args=(self._process.stderr,), name="capture-iotrace-stderr", daemon=True
        )
        self._stderr_thread.start()
        pipe = os.fdopen(read_end, "rb", buffering=1 << 16)
        self._pump = LinePump("iotrace", pipe, self._parser, self._sink, on_other_line=self._control_line).start()
        self._wait_ready()
        for pid in pids:
            fds.seed(pid)

    def _control_line(self, line: str) -> bool:
        if line.startswith("READY"):
            self._ready.set()
            return True
        return False

    def _read_stderr(self, stream: IO[bytes]) -> None:
        with stream:
            for raw in stream:
                line = raw.decode(errors="replace").rstrip()
                self._stderr_lines = [*self._stderr_lines[-30:], line]

    def _wait_ready(self) -> None:
        # iotrace prints READY (and flushes) once every probe is attached.
        deadline = time.monotonic() + READY_TIMEOUT_S
        assert self._process is not None
        while time.monotonic() < deadline:
            if self._ready.is_set():
                return
            if self._process.poll() is not None:
                if self._stderr_thread is not None:
                    self._stderr_thread.join(2)
                raise CaptureFailed("iotrace exited while starting: " + " | ".join(self._stderr_lines[-8:]))
            time.sleep(0.02)
        raise CaptureFailed(f"iotrace did not attach its probes within {READY_TIMEOUT_S} s")

    def stop(self) -> int:
        """SIGINT iotrace (it drains its ring buffer and exits), read its output; returns operations written."""
        process = self._process
        if process is None:
            return 0
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if self._pump is not None:
            self._pump.join()
            if self._pump.error is not None:
                raise CaptureFailed(f"reading iotrace output failed: {self._pump.error!r}") from self._pump.error
        if self._stderr_thread is not None:
            self._stderr_thread.join(5)
        if self.lost_events:
            self._log(f"eBPF capture lost {self.lost_events} events (its ring buffer overflowed)")
        if self.stdin_reads:
            read_bytes = sum(self._parser.stdin_bytes.values()) if self._parser else 0
            self._log(
                f"eBPF capture: {self.stdin_reads} reads of standard input ({read_bytes / 1e6:.1f} MB, the dump the "
                "worker pipes into the client) were counted per thread, not recorded one by one"
            )
        return self._pump.batcher.count if self._pump else 0

    @property
    def stdin_reads(self) -> int:
        """Reads of standard input the kernel counted instead of sending (see iotrace.bpf.c)."""
        return sum(self._parser.stdin_reads.values()) if self._parser else 0


__all__ = ["IOTRACE", "NAME", "EbpfCapture", "IotraceLineParser", "unavailable_reason"]
