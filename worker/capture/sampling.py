"""CPU and server-state sampling for the length of a job.

    with sample_job(writer, pids=lambda: [server_pid, *client_pids], connect=sandbox.connect) as report:
        run_the_restore()
    report.threads  # busy % per thread; report.errors, report.sampler_cpu_s, ...

What runs while the block runs:
- a small child process (worker.capture.cpu_sampler.main) reads /proc every `interval_s` (default
  20 ms): the threads of the watched processes -> "cpu" spans (worker.capture.cpu_sampler), and every
  `machine_interval_s` /proc/stat and /proc/diskstats -> "cpu.*" and "disk.*" counters
  (worker.capture.machine). It runs at nice 10, so it yields to the restore when CPUs are short (its
  rounds then come late, which the report counts). It is a process, not a thread, because of the GIL:
  every pread releases and retakes it, and next to a busy Python thread of the worker (the dump feeder's
  row counting, a trace parser) each retake waits up to the 5 ms switch interval, so a 20 ms round came
  out 50-100 ms late and slowed that thread too.
- a relay thread in this process passes `pids()` to the child (about every 0.1 s, so processes started
  later are picked up) and the child's batches (JSON lines, about once a second) to the sink.
- a server thread, every `server_interval_s` (default 0.5 s), on its own connection from `connect()`:
  "server.*" counters and "state" spans (worker.capture.server_state). None when `connect` is None.

Per-thread busy % is in the report (`SamplingReport.threads`, over the whole job). For a time window it
follows from the "cpu" spans: a lane's "running" time over the window.

Nothing raises out of the block because of sampling: an error is logged, counted in `report.errors`, and
the sampler carries on (the server one reconnects at most every 2 s, so a stopped server costs nothing).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import select
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import pymysql

from app.traces.records import CounterSample, Span, TraceSink
from worker.capture.cpu_sampler import SamplerProcessOptions, ThreadBusy, epoch_us
from worker.capture.machine import device_holding
from worker.capture.server_state import Connection, ServerStateSampler, ThreadMapping

log = logging.getLogger("restorescope.sampling")

PIDS_EVERY_S = 0.1
# How long stopping waits for a sampler stuck in a call (a hung server) before leaving it behind.
STOP_TIMEOUT_S = 10.0
_REPO_ROOT = Path(__file__).resolve().parents[2]
# Not `-m worker.capture.cpu_sampler`: that runs the module as __main__ and imports it a second time.
_CHILD_MAIN = "from worker.capture.cpu_sampler import main; main()"


@dataclass
class SamplerError:
    """One kind of failure of one sampler, with how often it happened."""

    sampler: str  # "cpu", "machine", "server" or "sink"
    message: str
    count: int = 1


@dataclass
class SamplingReport:
    """What sampling saw and what it cost. Filled in while the job runs; complete once the block exits."""

    interval_s: float
    server_interval_s: float
    started_us: int = 0
    stopped_us: int = 0
    # Busy figures per thread of the watched processes, busiest first (vanished threads included).
    threads: list[ThreadBusy] = field(default_factory=list)
    cpu_rounds: int = 0
    late_rounds: int = 0  # rounds skipped because the one before overran its interval
    machine_rounds: int = 0
    server_rounds: int = 0
    spans_written: int = 0
    counters_written: int = 0
    # CPU seconds of the samplers themselves: "cpu process" (the /proc child), "relay", "server".
    sampler_cpu: dict[str, float] = field(default_factory=dict)
    disk_device: str | None = None
    schedstat: bool = True  # False: CPU time comes from utime/stime ticks (10 ms resolution)
    performance_schema: bool | None = None  # None: no server sampling, or it never connected
    thread_mapping: ThreadMapping | None = None  # how processlist ids were mapped to OS threads
    # os tid -> (performance_schema thread name, processlist id), for naming lanes.
    server_threads: dict[int, tuple[str, int | None]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    errors: list[SamplerError] = field(default_factory=list)

    @property
    def wall_s(self) -> float:
        return max(self.stopped_us - self.started_us, 0) / 1e6

    @property
    def sampler_cpu_s(self) -> float:
        return sum(self.sampler_cpu.values())

    @property
    def sampler_cpu_pct(self) -> float:
        """Sampler CPU time as % of one core over the sampling time."""
        return 100.0 * self.sampler_cpu_s / self.wall_s if self.wall_s > 0 else 0.0

    def thread(self, tid: int) -> ThreadBusy | None:
        return next((busy for busy in self.threads if busy.tid == tid), None)


class _Errors:
    def __init__(self, report: SamplingReport) -> None:
        self._report = report
        self._lock = threading.Lock()

    def add(self, sampler: str, message: str, count: int = 1) -> None:
        with self._lock:
            for known in self._report.errors:
                if known.sampler == sampler and known.message == message:
                    known.count += count
                    return
            self._report.errors.append(SamplerError(sampler, message, count))
        log.warning("%s sampler: %s", sampler, message)


_TALLY_LOCK = threading.Lock()


def _hand_over(
    sink: TraceSink, spans: list[Span], counters: list[CounterSample], report: SamplingReport, errors: _Errors
) -> None:
    try:
        if spans:
            sink.add_spans(spans)
        if counters:
            sink.add_counters(counters)
    except Exception as error:
        errors.add("sink", f"the trace store refused records: {error!r}")
        return
    with _TALLY_LOCK:  # the relay and the server thread both hand over
        report.spans_written += len(spans)
        report.counters_written += len(counters)


# --- this process: relay and server threads ----------------------------------------------------------


class _Stop:
    """A stop signal that threads can wait for, or select() on next to their pipes (no polling delay)."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._read_fd, self._write_fd = os.pipe()

    def set(self) -> None:
        self._event.set()
        with contextlib.suppress(OSError):
            os.write(self._write_fd, b"x")

    def is_set(self) -> bool:
        return self._event.is_set()

    def wait(self, timeout: float) -> bool:
        return self._event.wait(timeout)

    def fileno(self) -> int:
        return self._read_fd

    def close(self) -> None:
        for fd in (self._read_fd, self._write_fd):
            with contextlib.suppress(OSError):
                os.close(fd)


class _CpuRelay:
    """Starts the child, feeds it pids, hands its batches to the sink."""

    def __init__(
        self,
        sink: TraceSink,
        report: SamplingReport,
        errors: _Errors,
        pids: Callable[[], list[int]],
        options: SamplerProcessOptions,
        stop: _Stop,
    ) -> None:
        self._sink = sink
        self._report = report
        self._errors = errors
        self._pids = pids
        self._options = options
        self._stop = stop
        self._sent_pids = options.pids

    def run(self) -> None:
        try:
            self._run_child()
        except Exception as error:  # a bug, not a condition of the job: the job runs on without CPU spans
            log.exception("the CPU sampler relay stopped")
            self._errors.add("cpu", f"stopped: {error!r}")
        finally:
            self._report.sampler_cpu["relay"] = time.thread_time()

    def _run_child(self) -> None:
        child = subprocess.Popen(
            [sys.executable, "-c", _CHILD_MAIN, *self._options.arguments()],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": os.pathsep.join([str(_REPO_ROOT), str(_REPO_ROOT / "backend")])},
            cwd=_REPO_ROOT,
        )
        assert child.stdin is not None and child.stdout is not None and child.stderr is not None
        try:
            self._relay(child.stdin, child.stdout)
            child.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self._errors.add("cpu", f"the /proc sampler process did not stop within {STOP_TIMEOUT_S:.0f} s: killed")
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
            stderr = child.stderr.read().decode(errors="replace").strip()
            child.stderr.close()
            child.stdout.close()
            with contextlib.suppress(OSError):
                child.stdin.close()
        if child.returncode != 0:
            tail = stderr.splitlines()[-1] if stderr else "no output"
            self._errors.add("cpu", f"the /proc sampler process exited with code {child.returncode}: {tail}")

    def _relay(self, stdin: IO[bytes], stdout: IO[bytes]) -> None:
        pending = b""
        stop_sent = False
        next_pids_at = time.monotonic()
        while True:
            if self._stop.is_set() and not stop_sent:
                self._send(stdin, b"stop\n")
                with contextlib.suppress(OSError):
                    stdin.close()
                stop_sent = True
            elif not stop_sent and time.monotonic() >= next_pids_at:
                self._send_pids(stdin)
                next_pids_at = time.monotonic() + PIDS_EVERY_S
            watched = [stdout.fileno()] if stop_sent else [stdout.fileno(), self._stop.fileno()]
            ready, _, _ = select.select(watched, [], [], PIDS_EVERY_S)
            if stdout.fileno() not in ready:
                continue
            data = os.read(stdout.fileno(), 1 << 20)
            if not data:
                return
            pending += data
            *lines, pending = pending.split(b"\n")
            for line in lines:
                self._take_batch(json.loads(line))

    def _send_pids(self, stdin: IO[bytes]) -> None:
        try:
            pids = sorted(set(self._pids()))
        except Exception as error:
            self._errors.add("cpu", f"the list of processes to watch failed: {error!r}")
            return
        if pids != self._sent_pids:
            self._send(stdin, f"pids {','.join(map(str, pids))}\n".encode())
            self._sent_pids = pids

    def _send(self, stdin: IO[bytes], line: bytes) -> None:
        try:
            stdin.write(line)
            stdin.flush()
        except (BrokenPipeError, ValueError):
            pass  # the child has exited; its exit code and stderr say why

    def _take_batch(self, batch: dict[str, Any]) -> None:
        spans = [Span(tid, start, duration, "cpu", label) for tid, start, duration, label in batch["spans"]]
        counters = [CounterSample(track, t_us, value, unit) for track, t_us, value, unit in batch["counters"]]
        _hand_over(self._sink, spans, counters, self._report, self._errors)
        report = self._report
        if "threads" in batch:
            report.threads = [ThreadBusy(**busy) for busy in batch["threads"]]
        report.cpu_rounds, report.late_rounds = batch["rounds"], batch["late"]
        report.machine_rounds = batch["machine_rounds"]
        for sampler, message, count in batch["errors"]:
            self._errors.add(sampler, message, count)
        if "cpu_s" in batch:
            report.sampler_cpu["cpu process"] = batch["cpu_s"]
            report.schedstat = batch["schedstat"]


class _ServerLoop:
    """Samples the server every server_interval_s until stopped; reconnects after errors, at most every 2 s."""

    def __init__(
        self,
        sink: TraceSink,
        report: SamplingReport,
        errors: _Errors,
        connect: Callable[[], Connection],
        epoch_offset_ns: int,
        stop: _Stop,
    ) -> None:
        self._sink = sink
        self._report = report
        self._errors = errors
        self._sampler = ServerStateSampler(connect)
        self._offset_ns = epoch_offset_ns
        self._stop = stop
        self._answering = False  # the last round reached the server

    def run(self) -> None:
        sampler = self._sampler
        try:
            self._loop()
            if self._answering:
                self._last_round()
            self._hand_over(sampler.finish(epoch_us(self._offset_ns)), [])
        except Exception as error:
            log.exception("the server sampler stopped")
            self._errors.add("server", f"stopped: {error!r}")
        finally:
            sampler.close()
            self._report.server_threads = dict(sampler.server_threads)
            self._note_thread_mapping(sampler.thread_mapping)
            self._report.sampler_cpu["server"] = time.thread_time()

    def _loop(self) -> None:
        interval = self._report.server_interval_s
        next_at = time.monotonic()
        while not self._stop.is_set():
            try:
                counters, spans = self._sampler.sample(epoch_us(self._offset_ns))
            except Exception as error:  # connect() may raise anything, and the server may vanish mid-query
                self._answering = False
                self._errors.add("server", _describe_server_error(error))
                self._hand_over(self._sampler.lose_round(), [])
                next_at = time.monotonic() + max(2.0, interval)
            else:
                self._answering = True
                self._report.server_rounds += 1
                self._report.performance_schema = self._sampler.performance_schema
                self._report.thread_mapping = self._sampler.thread_mapping
                self._hand_over(spans, counters)
                next_at = max(next_at + interval, time.monotonic())
            self._stop.wait(next_at - time.monotonic())

    def _last_round(self) -> None:
        """One more reading as sampling stops: the rates of the job's last moments, or of a job shorter than
        one interval, would be missing without it."""
        try:
            counters, spans = self._sampler.sample(epoch_us(self._offset_ns))
        except Exception as error:  # the server may be shutting down
            self._errors.add("server", _describe_server_error(error))
            return
        self._report.server_rounds += 1
        self._hand_over(spans, counters)

    def _hand_over(self, spans: list[Span], counters: list[CounterSample]) -> None:
        _hand_over(self._sink, spans, counters, self._report, self._errors)

    def _note_thread_mapping(self, mapping: ThreadMapping | None) -> None:
        if mapping == "processlist_tid":
            self._report.notes.append(
                "performance_schema is OFF on the server: connection states were placed on their threads through "
                "information_schema.PROCESSLIST.TID; names (roles) of the server's own threads are unknown"
            )
        elif mapping == "none":
            self._report.notes.append(
                "performance_schema is OFF and the server has no PROCESSLIST.TID: connection states cannot be "
                "placed on thread lanes, so only server counters were recorded; turn performance_schema on"
            )


def _describe_server_error(error: BaseException) -> str:
    if isinstance(error, pymysql.MySQLError) and len(error.args) >= 2:
        return f"server state not read: {error.args[1]} (error {error.args[0]})"
    return f"server state not read: {error!r}"


def _disk_device(
    datadir: Path | None, connect: Callable[[], Connection] | None, report: SamplingReport, errors: _Errors
) -> str | None:
    if datadir is None and connect is not None:
        datadir = _server_datadir(connect, errors)
    if datadir is None:
        report.notes.append("no disk counters: no datadir given, and the server's is not on this machine")
        return None
    try:
        device = device_holding(datadir, Path("/proc/diskstats").read_text(), Path("/proc/self/mountinfo").read_text())
    except OSError as error:
        report.notes.append(f"no disk counters: the device holding {datadir} is unknown ({error})")
        return None
    if device is None:
        report.notes.append(f"no disk counters: {datadir} is not on a block device listed in /proc/diskstats")
    return device


def _server_datadir(connect: Callable[[], Connection], errors: _Errors) -> Path | None:
    """The server's @@datadir when it is a directory on this machine (a sandbox, a local target)."""
    try:
        with connect() as connection, connection.cursor() as cursor:
            cursor.execute("SELECT @@datadir")
            row = cursor.fetchone()
    except Exception as error:  # connect() may raise anything: no datadir then, and the job goes on
        errors.add("machine", f"could not ask the server for its datadir: {error!r}")
        return None
    path = Path(str(row[0])) if row and row[0] else None
    return path if path is not None and path.is_dir() else None


@contextlib.contextmanager
def sample_job(
    sink: TraceSink,
    *,
    pids: Callable[[], list[int]],
    connect: Callable[[], Connection] | None,
    interval_s: float = 0.02,
    server_interval_s: float = 0.5,
    machine_interval_s: float = 0.25,
    datadir: Path | None = None,
) -> Iterator[SamplingReport]:
    """Sample CPU per thread, the machine and the server while the block runs; see the module docstring.

    `pids()` is called about every 0.1 s from a sampler thread: keep it cheap and thread-safe.
    `datadir` chooses the disk whose counters are recorded; by default the server's own @@datadir, if
    local. Machine counters come every `machine_interval_s`: /proc/stat counts in 10 ms ticks, too
    coarse for 20 ms readings of a whole machine.
    """
    if interval_s <= 0 or server_interval_s <= 0 or machine_interval_s <= 0:
        raise ValueError("sampling intervals must be positive")
    report = SamplingReport(interval_s=interval_s, server_interval_s=server_interval_s)
    errors = _Errors(report)
    stop = _Stop()
    # Shared with the child process, so both put the same instant at the same epoch time.
    offset_ns = time.time_ns() - time.monotonic_ns()
    report.started_us = epoch_us(offset_ns)
    report.disk_device = _disk_device(datadir, connect, report, errors)
    try:
        first_pids = sorted(set(pids()))
    except Exception as error:
        errors.add("cpu", f"the list of processes to watch failed: {error!r}")
        first_pids = []
    options = SamplerProcessOptions(
        interval_s=interval_s,
        machine_every=max(round(machine_interval_s / interval_s), 1),
        disk_device=report.disk_device,
        epoch_offset_ns=offset_ns,
        pids=first_pids,
    )
    workers = [
        threading.Thread(
            target=_CpuRelay(sink, report, errors, pids, options, stop).run, name="restorescope-cpu-relay", daemon=True
        )
    ]
    if connect is not None:
        server = _ServerLoop(sink, report, errors, connect, offset_ns, stop)
        workers.append(threading.Thread(target=server.run, name="restorescope-server-sampler", daemon=True))
    for worker in workers:
        worker.start()
    try:
        yield report
    finally:
        stop.set()
        deadline = time.monotonic() + STOP_TIMEOUT_S + 1
        for worker in workers:
            worker.join(max(deadline - time.monotonic(), 0))
            if worker.is_alive():
                errors.add("server", f"{worker.name} did not stop in time and was left behind")
        report.stopped_us = epoch_us(offset_ns)
        if not any(worker.is_alive() for worker in workers):
            stop.close()
