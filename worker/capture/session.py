"""One job's capture: the chosen backend, its tracers, the lane names, and the facts the trace records.

    capture = JobCapture(sink, plan, processes, log)
    adjusted = capture.sandbox_options(options)   # before the sandbox starts: AIO mode, performance_schema
    layer = capture.datadir_layer()               # FUSE: mounted by the sandbox between install and start
    launcher = capture.server_launcher(kept=...)  # strace: the sandbox server is started under it
    capture.watch_server(pid, connect)            # tracers on the running server, lanes named
    popen = capture.client_popen(popen)           # processes the job launches are traced too
    capture.stop()                                # tracers stopped and drained; the caller closes the sink

Failures of a tracer after it started do not fail the restore: they are logged and recorded in the
trace's meta (capture_error), and the trace is marked failed by whoever closes it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from app.sandboxes.options import ServerOptions
from app.traces.operation import Operation
from app.traces.records import CounterSample, Lane, Span, TraceSink
from worker.capture.ebpf import EbpfCapture
from worker.capture.errors import CaptureError
from worker.capture.fuse import FuseCapture
from worker.capture.lanes import LaneNamer
from worker.capture.selection import CapturePlan, adjust_sandbox_options
from worker.capture.strace import StraceCapture
from worker.process_group import ProcessGroup

log = logging.getLogger("restorescope.capture")

Popen = Callable[..., subprocess.Popen[bytes]]


class SeenThreads:
    """A sink in front of the real one that remembers which threads had operations (to name them all)."""

    def __init__(self, sink: TraceSink) -> None:
        self.sink = sink
        self.tids: set[int] = set()
        self.operations = 0
        self._lock = threading.Lock()

    def add_operations(self, operations: Iterable[Operation]) -> None:
        batch = list(operations)
        with self._lock:
            self.tids.update(operation.tid for operation in batch)
            self.operations += len(batch)
        self.sink.add_operations(batch)

    def set_lane(self, lane: Lane) -> None:
        self.sink.set_lane(lane)

    def add_spans(self, spans: Iterable[Span]) -> None:
        self.sink.add_spans(spans)

    def add_counters(self, samples: Iterable[CounterSample]) -> None:
        self.sink.add_counters(samples)

    def __getattr__(self, name: str) -> Any:  # set_meta, add_malformed of the trace store
        return getattr(self.sink, name)


def children_of(pids: list[int]) -> list[int]:
    found = []
    for pid in pids:
        try:
            tasks = list(Path(f"/proc/{pid}/task").iterdir())
        except OSError:
            continue
        for task in tasks:
            with contextlib.suppress(OSError, ValueError):
                found += [int(child) for child in (task / "children").read_text().split()]
    return found


class JobCapture:
    def __init__(self, sink: TraceSink, plan: CapturePlan, processes: ProcessGroup, log: Callable[[str], None]):
        self.plan = plan
        self.sink = SeenThreads(sink)
        self._processes = processes
        self._log = log
        self._server_pids: list[int] = []
        self._client_pids: list[int] = []
        self._tracer_pids: list[int] = []  # strace processes the job launched, their children being the clients
        self._lanes: LaneNamer | None = None
        self._strace: StraceCapture | None = None
        self._ebpf: EbpfCapture | None = None
        self._fuse: FuseCapture | None = None
        self._earlier_lost_events = 0  # of an iotrace restarted by watch_server
        self.error: str | None = None
        self._set_meta(backend=plan.backend, requested=plan.requested, fallback_reason=plan.fallback_reason)
        if plan.fallback_reason:
            self._log(f"capture: {plan.backend} instead of {plan.requested}: {plan.fallback_reason}")
        if plan.backend == "strace":
            self._strace = StraceCapture(self.sink, processes.popen, log)
        elif plan.backend == "ebpf":
            self._ebpf = EbpfCapture(self.sink, processes.popen, log)
        elif plan.backend == "fuse":
            self._fuse = FuseCapture(self.sink, processes.popen, log)

    # --- before the server starts --------------------------------------------------------------------

    def sandbox_options(self, options: ServerOptions) -> ServerOptions:
        """The sandbox's options with what this backend needs to see the page IO; the changes are logged."""
        if not self.plan.active:
            return options
        adjusted = adjust_sandbox_options(self.plan.backend, options)
        for note in adjusted.notes:
            self._log(note)
        switch = next((note for note in adjusted.notes if note.startswith("AIO switched")), None)
        self._set_meta(
            aio_mode=adjusted.aio_mode or options.aio_mode or "io_uring",
            visibility=adjusted.visibility,
            aio_switch=switch,  # the switch and its measured cost, for the trace page as well as the log
        )
        return adjusted.options

    def datadir_layer(self) -> FuseCapture | None:
        return self._fuse

    def server_launcher(self, *, kept: bool) -> StraceCapture | None:
        """What the sandbox starts its server through: strace, so only IO calls stop it. Not for a sandbox
        the user keeps: that server outlives the capture, and strace could not leave it (it is attached
        with -p instead)."""
        if not self.plan.active or kept:
            return None
        return self._strace

    def describe_saved_target(self, aio_mode: str | None, visibility: str) -> None:
        self._set_meta(aio_mode=aio_mode, visibility=visibility)

    # --- while it runs -------------------------------------------------------------------------------

    def watch_clients(self) -> None:
        """Start recording before any server runs (a physical restore: mariabackup prepares and copies back
        first). The processes launched through client_popen are traced and named on lanes; watch_server adds
        the server once it is up. (eBPF sees the server from its exec, in the job's process group; a kept
        sandbox's server runs in a session of its own, so watch_server restarts iotrace with its pid.)"""
        if not self.plan.active:
            return
        try:
            if self._ebpf is not None:
                self._ebpf.start([])
        except CaptureError as error:
            self._broke(str(error))
            return
        self._lanes = LaneNamer(self.sink, self.pids, None, interval_s=0.5).start()
        self._log(f"capture: recording the IO of the job's processes with {self.plan.backend}")

    def watch_server(self, pid: int | None, connect: Callable[[], Any] | None) -> None:
        """Start tracing the running server (and later the clients), and name the lanes."""
        if not self.plan.active or self.error is not None:
            return
        if pid is not None:
            self._server_pids.append(pid)
        early = self._lanes is not None  # watch_clients started the tracers
        try:
            if self._strace is not None and pid is not None:
                self._strace.attach(pid)
            if self._ebpf is not None and not early:
                self._ebpf.start(self._server_pids)
            elif self._ebpf is not None and pid is not None and not self._in_job_group(pid):
                self._restart_ebpf()
        except CaptureError as error:
            self._broke(str(error))
            return
        if self._lanes is not None:
            if connect is not None:
                self._lanes.use_server(connect)
            self._lanes.look_closely()
            return
        self._lanes = LaneNamer(self.sink, self.pids, connect, interval_s=0.5).start()
        self._log(f"capture: recording the IO of every thread with {self.plan.backend}")

    def _in_job_group(self, pid: int) -> bool:
        try:
            return os.getpgid(pid) in self._processes.pgids
        except ProcessLookupError:
            return True  # gone: nothing to add

    def _restart_ebpf(self) -> None:
        """iotrace's pids are fixed at start: drain the one that watched the job's group and start one that
        also watches the server (nothing else of the job runs in between: the server has just started)."""
        assert self._ebpf is not None
        self._ebpf.stop()
        self._earlier_lost_events += self._ebpf.lost_events
        self._ebpf = EbpfCapture(self.sink, self._processes.popen, self._log)
        self._ebpf.start(self._server_pids)

    def pids(self) -> list[int]:
        """Processes whose threads have lanes: the server's, the clients' (and their children: under strace
        the process the job started is strace, the client its child)."""
        return [*self._server_pids, *self._client_pids, *children_of(self._tracer_pids)]

    def client_popen(self, popen: Popen) -> Popen:
        """A popen for the processes the job launches: traced (strace), named on lanes (all backends)."""
        if not self.plan.active or self.error is not None:
            return popen
        start = self._strace.popen(popen) if self._strace is not None else popen

        def traced(args: list[str], **kwargs: Any) -> subprocess.Popen[bytes]:
            process = start(args, **kwargs)
            (self._tracer_pids if self._strace is not None else self._client_pids).append(process.pid)
            if self._lanes is not None:
                self._lanes.look_closely()
            return process

        return traced

    def look_closely(self) -> None:
        """Name lanes often for a while: the job just opened a connection of its own (the loader's threads),
        whose server thread may serve it only briefly."""
        if self._lanes is not None:
            self._lanes.look_closely()

    def refresh_lanes(self) -> None:
        if self._lanes is not None:
            self._lanes.refresh()

    # --- at the end ----------------------------------------------------------------------------------

    def stop(self) -> None:
        """Stop every tracer and drain it; name the lanes that are left; record the final facts."""
        if self._lanes is not None:
            self._lanes.stop()
        for tracer in (self._strace, self._ebpf, self._fuse):
            if tracer is None:
                continue
            try:
                tracer.stop()
            except CaptureError as error:
                self._broke(str(error))
        self._name_unnamed_threads()
        meta: dict[str, str | int | float | None] = {"operations_captured": self.sink.operations}
        if self._ebpf is not None:
            meta["lost_events"] = self._ebpf.lost_events + self._earlier_lost_events
            meta["stdin_reads_counted"] = self._ebpf.stdin_reads
        self._set_meta(**meta)
        if self.plan.active:
            self._log(f"capture: {self.sink.operations} operations on {len(self.sink.tids)} threads")

    def _name_unnamed_threads(self) -> None:
        named = self._lanes.lanes if self._lanes is not None else {}
        for tid in sorted(self.sink.tids - set(named)):
            role = "file system (no caller)" if tid == 0 else "thread that exited before it was named"
            self.sink.set_lane(Lane(tid=tid, role=role))

    def _broke(self, message: str) -> None:
        self.error = message
        self._log(f"capture failed, the restore goes on without it: {message}")
        self._set_meta(capture_error=message)

    def _set_meta(self, **values: str | int | float | None) -> None:
        set_meta: Callable[..., None] | None = getattr(self.sink.sink, "set_meta", None)
        if set_meta is not None:
            set_meta(**values)
