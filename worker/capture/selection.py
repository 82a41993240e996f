"""Which capture backend a job gets, and what it changes in the sandbox so that it sees the page IO.

auto: eBPF when it can run here, else strace, else none (the reasons are recorded). An explicit choice
that cannot run raises CaptureUnavailable, which fails the job with the reason.

InnoDB's AIO mode decides what a tracer can see (FIELD-NOTES): io_uring page IO is invisible to strace
(only io_uring_enter shows) but visible to eBPF through io_uring's tracepoints; libaio's io_submit
iocbs are decoded by strace; plain pread/pwrite (AIO off) is seen by all; oplogfs (FUSE) sees every
mode. A backend that cannot see the mode asked for switches it, and the job says so with the measured
cost of that switch on this machine (aio_cost.json, written by bench/capture_overhead.py).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from app.sandboxes.options import AioMode, ServerOptions
from worker.capture import ebpf, fuse, strace
from worker.capture.errors import CaptureUnavailable

BACKENDS = ("strace", "ebpf", "fuse")
AUTO_ORDER = ("ebpf", "strace")
# A comma-separated list of backends the operator turned off on this worker (e.g. "ebpf").
DISABLED_ENV = "RESTORESCOPE_CAPTURE_DISABLED"
AIO_COST_FILE = Path(__file__).resolve().parent / "aio_cost.json"
SERVER_DEFAULT_AIO: AioMode = "io_uring"  # MariaDB 10.11's compiled-in default

# The AIO mode each backend runs InnoDB with when the one asked for is invisible to it.
_VISIBLE_AIO: dict[str, tuple[AioMode, ...]] = {
    "strace": ("aio", "off"),
    "ebpf": ("io_uring", "off"),
    "fuse": ("io_uring", "aio", "off"),
}
_SWITCH_TO: dict[str, AioMode] = {"strace": "aio", "ebpf": "io_uring"}

_VISIBILITY = {
    ("strace", "aio"): (
        "strace sees every IO system call; InnoDB runs with libaio, so page reads and writes show as the "
        "iocbs of io_submit (file, offset, size; the duration is the submission, completions arrive through "
        "io_getevents on another thread)."
    ),
    ("strace", "off"): (
        "strace sees every IO system call; with native AIO off InnoDB reads and writes pages with plain "
        "pread64/pwrite64 (file, offset, size and the real duration)."
    ),
    ("ebpf", "io_uring"): (
        "Our eBPF probes (iotrace) see IO system calls on their tracepoints and io_uring requests natively "
        "(io_uring_submit_req/io_uring_complete: file, offset and size read from the kernel's request), "
        "so InnoDB keeps its default io_uring AIO."
    ),
    ("ebpf", "off"): (
        "Our eBPF probes (iotrace) see IO system calls on their tracepoints; with native AIO off InnoDB "
        "reads and writes pages with plain pread64/pwrite64."
    ),
    ("fuse", None): (
        "oplogfs, a logging passthrough file system mounted over the datadir, sees every file operation of "
        "every server thread whatever the AIO mode (io_uring requests show under the worker thread that ran "
        "them); socket traffic and files outside the datadir are not seen."
    ),
}


@dataclass(frozen=True)
class CapturePlan:
    requested: str
    backend: str  # "none", "strace", "ebpf" or "fuse"
    fallback_reason: str | None = None

    @property
    def active(self) -> bool:
        return self.backend != "none"


def disabled_backends() -> set[str]:
    return {name.strip() for name in os.environ.get(DISABLED_ENV, "").split(",") if name.strip()}


def unavailable_reason(
    backend: str, *, sandbox: bool, target_problem: str | None = None, kept_sandbox: bool = False
) -> str | None:
    """Why backend cannot capture this job, or None when it can."""
    if backend in disabled_backends():
        return f"{backend} capture is turned off on this worker ({DISABLED_ENV})"
    if backend == "fuse":
        if not sandbox:
            return "the FUSE capture mounts over a sandbox's datadir, and a saved target's datadir is not ours"
        if kept_sandbox:
            return "a kept sandbox outlives the job, and the FUSE mount under its datadir cannot"
        return fuse.unavailable_reason()
    if target_problem is not None:
        return target_problem
    return {"strace": strace.unavailable_reason, "ebpf": ebpf.unavailable_reason}[backend]()


def plan_capture(
    requested: str, *, sandbox: bool, target_problem: str | None = None, kept_sandbox: bool = False
) -> CapturePlan:
    """The backend for this job; raises CaptureUnavailable when an explicit choice cannot run."""
    if requested == "none":
        return CapturePlan(requested, "none")
    if requested != "auto":
        reason = unavailable_reason(
            requested, sandbox=sandbox, target_problem=target_problem, kept_sandbox=kept_sandbox
        )
        if reason is not None:
            raise CaptureUnavailable(requested, reason)
        return CapturePlan(requested, requested)
    reasons: list[str] = []
    for candidate in AUTO_ORDER:
        reason = unavailable_reason(candidate, sandbox=sandbox, target_problem=target_problem)
        if reason is None:
            return CapturePlan(requested, candidate, "; ".join(reasons) or None)
        reasons.append(f"{candidate}: {reason}")
    return CapturePlan(requested, "none", "no capture backend can run: " + "; ".join(reasons))


@dataclass(frozen=True)
class SandboxAdjustment:
    options: ServerOptions
    aio_mode: AioMode | None  # None: the AIO mode does not matter to this backend (FUSE) and was kept
    visibility: str
    notes: list[str]  # lines for the job's log


def adjust_sandbox_options(backend: str, options: ServerOptions) -> SandboxAdjustment:
    """Options for a sandbox captured by backend: an AIO mode it can see, performance_schema on for roles."""
    notes: list[str] = []
    changes: dict[str, object] = {}
    if options.performance_schema is None:
        changes["performance_schema"] = True
    elif not options.performance_schema:
        notes.append("performance_schema is off as asked: server threads are named from /proc, without roles")
    asked: AioMode = options.aio_mode or SERVER_DEFAULT_AIO
    mode: AioMode = asked
    if asked not in _VISIBLE_AIO[backend]:
        mode = _SWITCH_TO[backend]
        changes["aio_mode"] = mode
        notes.append(aio_switch_note(backend, asked, mode))
    adjusted = options.model_copy(update=changes)
    visibility = _VISIBILITY.get((backend, mode)) or _VISIBILITY[("fuse", None)]
    return SandboxAdjustment(adjusted, None if backend == "fuse" else mode, visibility, notes)


def existing_server_visibility(backend: str, aio_mode: AioMode) -> str:
    """What backend sees of a server whose settings we do not change (a saved target)."""
    if aio_mode in _VISIBLE_AIO[backend]:
        return _VISIBILITY.get((backend, aio_mode)) or _VISIBILITY[("fuse", None)]
    return (
        f"{backend} sees the IO system calls of the server, but its page IO goes through {aio_mode}, which "
        f"{backend} cannot see, and a saved target's settings are not changed: page reads and writes are missing"
    )


def aio_mode_of(variables: dict[str, str]) -> AioMode:
    """The AIO mode a running MariaDB uses, from its global variables."""
    if variables.get("innodb_use_native_aio", "ON").upper() in ("OFF", "0"):
        return "off"
    return "aio" if variables.get("innodb_linux_aio", "").lower() == "aio" else "io_uring"


def aio_switch_note(backend: str, asked: AioMode, mode: AioMode) -> str:
    """The log line of an AIO switch, with the restore-time changes measured on this machine."""
    head = f"AIO switched from {asked} to {mode} so {backend} can see page IO"
    measured = measured_aio_changes(asked, mode)
    if not measured:
        return f"{head}; its effect on restore time has not been measured here yet (run bench/capture_overhead.py)"
    changes, source = measured
    if len(changes) == 1:
        return f"{head}; on this machine that changed restore time by {changes[0]:+.0f}% ({source})"
    listed = ", ".join(f"{change:+.0f}%" for change in changes)
    return (
        f"{head}; on this machine that changed restore time by {listed} in {len(changes)} measured runs "
        f"({source}; runs that disagree this much are within the machine's noise)"
    )


def measured_aio_changes(asked: str, mode: str, path: Path | None = None) -> tuple[list[float], str] | None:
    """(percent change of restore time from asked to mode in each measured run, where it was measured)."""
    try:
        data = json.loads((path or AIO_COST_FILE).read_text())
        runs = data["runs"]
        changes = [
            float(run["restore_seconds"][mode]) / float(run["restore_seconds"][asked]) * 100 - 100 for run in runs
        ]
    except (OSError, ValueError, KeyError, TypeError, ZeroDivisionError):
        return None
    if not changes:
        return None
    last = runs[-1]
    source = f"bench/capture_overhead.py, {last.get('dataset', 'sysbench dump')}, {last.get('measured_on', '')}"
    return changes, source.rstrip(", ")


def mariabackup_aio_options(backend: str) -> list[str]:
    """Options for `mariabackup --prepare` under backend: prepare ignores --skip-innodb-use-native-aio but
    honours --innodb-linux-aio, so strace gets libaio (io_submit) and everything else keeps io_uring."""
    return ["--innodb-linux-aio=aio"] if backend == "strace" else []
