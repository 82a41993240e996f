"""Per-thread CPU state from /proc, turned into "cpu" spans on each thread's lane.

Every round reads, for each thread of the watched processes, /proc/PID/task/TID/schedstat (nanoseconds
on a CPU, nanoseconds waiting on a runqueue) and /proc/PID/task/TID/stat (the state letter, utime and
stime in clock ticks). Between two rounds a thread spent the interval partly running, partly runnable
(ready but waiting for a CPU) and the rest off the CPU; the span gets the largest of the three. Off the
CPU is "io_wait" when the thread was in uninterruptible sleep (state D) at either end, else "blocked"
(waiting on a lock, a socket, a condition); in state R at both ends it was waiting for a CPU all along
(the kernel credits a runqueue wait only when the wait ends). The exact times are kept too: `ThreadBusy`
sums them, so busy % does not depend on the rounding to one label per interval.

Threads come and go during a restore (one per connection, InnoDB's pool threads): a new thread gets a
baseline reading and spans from its second round on; a vanished one has its span closed at the last
round it was seen. A tid the kernel reused for a new thread is told apart by its start time.

Reading is split from deciding: `ProcReader` does the IO; `ThreadTracker` and `SpanMerger` are pure.
Cost matters at 50 rounds a second: the reader keeps the /proc files open and rereads them with pread (a
fifth of the cost of open/read/close), and skips the stat file of a thread whose schedstat has not moved.
`SamplerProcess` (started through `main()`) runs the rounds as a process of its own.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import select
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from app.traces.records import CounterSample, Span, SpanTrack

CLOCK_TICKS_PER_S = os.sysconf("SC_CLK_TCK")
# A merged span is cut at this length so a thread busy for minutes still shows up while the job runs.
MAX_SPAN_US = 1_000_000
_STAT_READ_BYTES = 1024
_SCHEDSTAT_READ_BYTES = 128


class MalformedProcFile(ValueError):
    """A /proc file did not have the expected layout (a kernel we do not know)."""


# --- parsing ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TaskStat:
    """The fields of /proc/PID/task/TID/stat that the sampler uses."""

    comm: str
    state: str
    utime_ticks: int
    stime_ticks: int
    start_ticks: int  # since boot: tells a reused tid from the thread that had it before


def parse_task_stat(text: str) -> TaskStat:
    """Parse a stat line; the command name may hold spaces and parentheses, so split at the last ')'."""
    open_paren, close_paren = text.find("("), text.rfind(")")
    if open_paren < 0 or close_paren < open_paren:
        raise MalformedProcFile(f"no (comm) in stat line: {text[:80]!r}")
    fields = text[close_paren + 2 :].split()
    # After the comm: state is field 3; utime 14, stime 15, starttime 22 (1-based, proc(5)).
    if len(fields) < 20:
        raise MalformedProcFile(f"stat line has {len(fields) + 2} fields, expected at least 22: {text[:80]!r}")
    try:
        return TaskStat(
            comm=text[open_paren + 1 : close_paren],
            state=fields[0],
            utime_ticks=int(fields[11]),
            stime_ticks=int(fields[12]),
            start_ticks=int(fields[19]),
        )
    except ValueError as error:
        raise MalformedProcFile(f"stat line with a non-numeric time field: {text[:80]!r}") from error


@dataclass(frozen=True, slots=True)
class SchedStat:
    on_cpu_ns: int
    runqueue_ns: int


def parse_schedstat(text: str) -> SchedStat:
    """'<ns on cpu> <ns waiting on a runqueue> <timeslices>' (Documentation/scheduler/sched-stats.rst)."""
    fields = text.split()
    if len(fields) < 2:
        raise MalformedProcFile(f"schedstat should hold at least two numbers: {text[:80]!r}")
    try:
        return SchedStat(on_cpu_ns=int(fields[0]), runqueue_ns=int(fields[1]))
    except ValueError as error:
        raise MalformedProcFile(f"schedstat with a non-numeric field: {text[:80]!r}") from error


@dataclass(frozen=True, slots=True)
class ThreadReading:
    """One thread at one round."""

    tid: int
    pid: int
    comm: str
    state: str
    on_cpu_ns: int
    runqueue_ns: int
    start_ticks: int
    user_ticks: int = 0
    system_ticks: int = 0


def reading_of(tid: int, pid: int, stat: TaskStat, sched: SchedStat | None) -> ThreadReading:
    """Without schedstat (kernels built without CONFIG_SCHED_INFO) CPU time falls back to utime+stime ticks."""
    if sched is None:
        on_cpu_ns = (stat.utime_ticks + stat.stime_ticks) * 1_000_000_000 // CLOCK_TICKS_PER_S
        sched = SchedStat(on_cpu_ns=on_cpu_ns, runqueue_ns=0)
    return ThreadReading(
        tid=tid,
        pid=pid,
        comm=stat.comm,
        state=stat.state,
        on_cpu_ns=sched.on_cpu_ns,
        runqueue_ns=sched.runqueue_ns,
        start_ticks=stat.start_ticks,
        user_ticks=stat.utime_ticks,
        system_ticks=stat.stime_ticks,
    )


# --- deciding ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class IntervalShares:
    """How a thread spent one interval between two rounds, in ns; the three parts add up to the interval."""

    running_ns: int
    runnable_ns: int
    off_cpu_ns: int


def interval_shares(previous: ThreadReading, current: ThreadReading, interval_ns: int) -> IntervalShares:
    """Deltas clamped to the interval: the two files of a round are read microseconds apart."""
    running = min(max(current.on_cpu_ns - previous.on_cpu_ns, 0), interval_ns)
    runnable = min(max(current.runqueue_ns - previous.runqueue_ns, 0), interval_ns - running)
    return IntervalShares(running, runnable, interval_ns - running - runnable)


def classify(previous: ThreadReading, shares: IntervalShares, current: ThreadReading) -> str:
    """The CPU_STATES label of the largest share; ties favour running, then runnable.

    The kernel adds a runqueue wait to schedstat only once the thread gets a CPU, so a thread preempted
    for the whole interval shows no change at all: in state R at both ends, it was waiting, not asleep.
    """
    if shares.running_ns >= shares.runnable_ns and shares.running_ns >= shares.off_cpu_ns:
        return "running"
    if shares.runnable_ns >= shares.off_cpu_ns or previous.state == current.state == "R":
        return "runnable"
    return "io_wait" if "D" in (previous.state, current.state) else "blocked"


@dataclass
class _OpenSpan:
    start_us: int
    end_us: int
    label: str


class SpanMerger:
    """Joins back-to-back intervals of one thread with the same label into one span.

    `extend` and `close` return the spans that are finished; the open one of each thread stays until its
    label changes, a gap appears, the thread is closed, or it reaches `max_span_us`.
    """

    def __init__(self, track: SpanTrack, max_span_us: int = MAX_SPAN_US) -> None:
        self._track: SpanTrack = track
        self._max_span_us = max_span_us
        self._open: dict[int, _OpenSpan] = {}

    def extend(self, tid: int, start_us: int, end_us: int, label: str) -> list[Span]:
        finished: list[Span] = []
        current = self._open.get(tid)
        if current is not None and (current.label != label or current.end_us != start_us):
            finished.append(self._span(tid, current))
            current = None
        if current is None:
            current = self._open[tid] = _OpenSpan(start_us, end_us, label)
        else:
            current.end_us = end_us
        if current.end_us - current.start_us >= self._max_span_us:
            finished.append(self._span(tid, current))
            del self._open[tid]
        return finished

    def close(self, tid: int) -> list[Span]:
        current = self._open.pop(tid, None)
        return [] if current is None else [self._span(tid, current)]

    def close_all(self) -> list[Span]:
        finished = [self._span(tid, current) for tid, current in self._open.items()]
        self._open.clear()
        return finished

    def _span(self, tid: int, current: _OpenSpan) -> Span:
        return Span(tid, current.start_us, current.end_us - current.start_us, self._track, current.label)


@dataclass
class ThreadBusy:
    """How busy one thread was over the rounds it was seen in.

    `busy_pct` is CPU time over observed time (100 = one full core); `runnable_pct` is time spent ready
    but waiting for a CPU, the sign of too few cores. `label_us` is the time under each span label.
    """

    tid: int
    pid: int
    comm: str
    first_seen_us: int
    last_seen_us: int
    cpu_ns: int = 0
    runnable_ns: int = 0
    user_ticks: int = 0
    system_ticks: int = 0
    rounds: int = 1
    label_us: dict[str, int] = field(default_factory=dict)

    @property
    def observed_us(self) -> int:
        return self.last_seen_us - self.first_seen_us

    @property
    def busy_pct(self) -> float:
        return self._pct(self.cpu_ns)

    @property
    def runnable_pct(self) -> float:
        return self._pct(self.runnable_ns)

    def _pct(self, ns: int) -> float:
        # Capped: the kernel's totals and our round times are read microseconds apart.
        return min(100.0 * ns / (self.observed_us * 1000), 100.0) if self.observed_us > 0 else 0.0

    @property
    def cpu_s(self) -> float:
        return self.cpu_ns / 1e9

    def label_pct(self, label: str) -> float:
        return 100.0 * self.label_us.get(label, 0) / self.observed_us if self.observed_us > 0 else 0.0


def idle_label(state: str) -> str:
    """The label of an interval in which a thread did not run at all: what `classify` gives for no change."""
    return "runnable" if state == "R" else "io_wait" if state == "D" else "blocked"


@dataclass
class _Tracked:
    last: ThreadReading
    last_us: int
    busy: ThreadBusy
    first: ThreadReading
    idle_label: str


class ThreadTracker:
    """Turns rounds of readings into merged "cpu" spans and per-thread busy figures."""

    def __init__(self, max_span_us: int = MAX_SPAN_US) -> None:
        self._merger = SpanMerger("cpu", max_span_us)
        self._live: dict[int, _Tracked] = {}
        self._gone: list[ThreadBusy] = []

    def update(self, t_us: int, readings: dict[int, ThreadReading]) -> list[Span]:
        """Take one round taken at `t_us`; return the spans finished by it."""
        finished: list[Span] = []
        for tid in self._live.keys() - readings.keys():
            finished += self._forget(tid)
        for tid, reading in readings.items():
            tracked = self._live.get(tid)
            if tracked is not None and tracked.last.start_ticks != reading.start_ticks:
                finished += self._forget(tid)  # the old thread exited and its tid went to a new one
                tracked = None
            if tracked is None:
                busy = ThreadBusy(tid, reading.pid, reading.comm, first_seen_us=t_us, last_seen_us=t_us)
                self._live[tid] = _Tracked(reading, t_us, busy, reading, idle_label(reading.state))
                continue
            finished += self._advance(tracked, reading, t_us)
        return finished

    def finish(self) -> list[Span]:
        """Close every open span (end of sampling)."""
        return self._merger.close_all()

    def threads(self) -> list[ThreadBusy]:
        """Every thread seen, vanished ones included, busiest first."""
        every = self._gone + [tracked.busy for tracked in self._live.values()]
        return sorted(every, key=lambda busy: (-busy.cpu_ns, busy.tid))

    def _advance(self, tracked: _Tracked, reading: ThreadReading, t_us: int) -> list[Span]:
        interval_us = t_us - tracked.last_us
        if interval_us <= 0:
            return []
        busy = tracked.busy
        if reading is tracked.last:  # ProcReader's "unchanged": it has not run since the last round
            label = tracked.idle_label
        else:
            label = classify(tracked.last, interval_shares(tracked.last, reading, interval_us * 1000), reading)
            # The totals take the kernel's deltas as they are: a wait credited late still counts.
            busy.cpu_ns += max(reading.on_cpu_ns - tracked.last.on_cpu_ns, 0)
            busy.runnable_ns += max(reading.runqueue_ns - tracked.last.runqueue_ns, 0)
            busy.comm = reading.comm
            busy.user_ticks = reading.user_ticks - tracked.first.user_ticks
            busy.system_ticks = reading.system_ticks - tracked.first.system_ticks
            tracked.idle_label = idle_label(reading.state)
        busy.label_us[label] = busy.label_us.get(label, 0) + interval_us
        busy.last_seen_us = t_us
        busy.rounds += 1
        spans = self._merger.extend(reading.tid, tracked.last_us, t_us, label)
        tracked.last, tracked.last_us = reading, t_us
        return spans

    def _forget(self, tid: int) -> list[Span]:
        tracked = self._live.pop(tid)
        self._gone.append(tracked.busy)
        return self._merger.close(tid)


# --- reading /proc ----------------------------------------------------------------------------------


@dataclass
class _TaskFiles:
    pid: int
    stat_fd: int
    schedstat_fd: int | None
    last: ThreadReading | None = None
    last_sched_raw: bytes | None = None

    def close(self) -> None:
        for fd in (self.stat_fd, self.schedstat_fd):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)


@dataclass
class _ProcessFiles:
    stat_fd: int
    tids: list[int] = field(default_factory=list)
    listed: bool = False
    stale: bool = False  # a listed thread has exited: list the threads again

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.stat_fd)


class ProcReader:
    """Reads the threads of a set of processes each round, keeping their /proc files open between rounds.

    A file opened for a thread stays bound to that thread: once it exits, reads fail (ESRCH) even if the
    tid is reused, so a stale descriptor never reports another thread. Listing /proc/PID/task costs more
    than reading all the threads of mariadbd, so it is listed again only when the process's thread count
    (from /proc/PID/stat) changed or a listed thread has exited.
    """

    def __init__(self, proc_root: Path = Path("/proc")) -> None:
        self._root = str(proc_root)
        self._files: dict[int, _TaskFiles] = {}
        self._processes: dict[int, _ProcessFiles] = {}
        self.schedstat_missing = False

    def read(self, pids: Iterable[int]) -> dict[int, ThreadReading]:
        readings: dict[int, ThreadReading] = {}
        wanted = dict.fromkeys(pids)
        for pid in wanted:
            for tid in self._threads_of(pid):
                if tid in readings:
                    continue
                reading = self._read_thread(pid, tid)
                if reading is None:
                    self._processes[pid].stale = True
                else:
                    readings[tid] = reading
        for pid in [pid for pid in self._processes if pid not in wanted]:
            self._processes.pop(pid).close()
        for tid in [tid for tid in self._files if tid not in readings]:
            self._files.pop(tid).close()
        return readings

    def _threads_of(self, pid: int) -> list[int]:
        process = self._processes.get(pid)
        if process is None:
            try:
                process = self._processes[pid] = _ProcessFiles(
                    os.open(f"{self._root}/{pid}/stat", os.O_RDONLY | os.O_CLOEXEC)
                )
            except OSError:
                return []  # no such process (any more)
        try:
            stat_raw = os.pread(process.stat_fd, _STAT_READ_BYTES, 0)
            # num_threads is field 20 of /proc/PID/stat: the 18th after the comm's closing parenthesis.
            thread_count = int(stat_raw[stat_raw.rfind(b")") + 2 :].split()[17])
            if not process.listed or process.stale or thread_count != len(process.tids):
                # Plain names, not Path objects: cheaper, and this may run 50 times a second.
                process.tids = [int(name) for name in os.listdir(f"{self._root}/{pid}/task")]  # noqa: PTH208
                process.listed, process.stale = True, False
        except (OSError, ValueError, IndexError):
            self._processes.pop(pid).close()  # the process has exited
            return []
        return process.tids

    def close(self) -> None:
        for files in self._files.values():
            files.close()
        self._files.clear()
        for process in self._processes.values():
            process.close()
        self._processes.clear()

    def _read_thread(self, pid: int, tid: int) -> ThreadReading | None:
        files = self._files.get(tid)
        if files is None:
            files = self._open(pid, tid)
            if files is None:
                return None
            self._files[tid] = files
        try:
            sched_raw = None if files.schedstat_fd is None else os.pread(files.schedstat_fd, _SCHEDSTAT_READ_BYTES, 0)
            # A thread that has neither run nor waited for a CPU since the last round cannot have changed
            # state: the previous reading stands, and the stat file (the costly read) is skipped. Most
            # server threads sleep most of the time.
            if files.last is not None and sched_raw is not None and sched_raw == files.last_sched_raw:
                return files.last
            stat_raw = os.pread(files.stat_fd, _STAT_READ_BYTES, 0)
        except OSError:
            stat_raw = b""
        if not stat_raw:  # the thread exited since the listing
            self._files.pop(tid).close()
            return None
        stat = parse_task_stat(stat_raw.decode(errors="replace"))
        sched = parse_schedstat(sched_raw.decode()) if sched_raw else None
        files.last, files.last_sched_raw = reading_of(tid, files.pid, stat, sched), sched_raw
        return files.last

    def _open(self, pid: int, tid: int) -> _TaskFiles | None:
        task_dir = f"{self._root}/{pid}/task/{tid}"
        try:
            stat_fd = os.open(f"{task_dir}/stat", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return None
        try:
            schedstat_fd: int | None = os.open(f"{task_dir}/schedstat", os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            self.schedstat_missing = True
            schedstat_fd = None
        except OSError:
            os.close(stat_fd)
            return None
        return _TaskFiles(pid, stat_fd, schedstat_fd)


# --- the sampler process ----------------------------------------------------------------------------
# `main()` runs the rounds in a process of its own (worker.capture.sampling
# says why and starts it). Commands come on stdin, one a line: "pids 12,34" (the processes to watch from
# now on) and "stop"; end of input stops too. Out on stdout, about once a second, a JSON line (a batch):
#   {"spans": [[tid, start_us, duration_us, label], ...], "counters": [[track, t_us, value, unit], ...],
#    "threads": [ThreadBusy fields, ...] (every 5th batch and the last), "rounds": n, "late": n,
#    "machine_rounds": n, "errors": [[sampler, message, count], ...]}
# and the last batch also has "cpu_s" (this process's CPU time) and "schedstat" (false: tick fallback).

BATCH_EVERY_S = 1.0
# The sampler yields to the work it watches when CPUs are short: under contention its rounds come late
# (counted, and the spans just get coarser) instead of taking CPU time from the restore.
SAMPLER_NICE = 10
_THREADS_EVERY_BATCHES = 5


def epoch_us(epoch_offset_ns: int) -> int:
    """Epoch microseconds from the monotonic clock: never jumps, and equal in every process given one offset."""
    return (time.monotonic_ns() + epoch_offset_ns) // 1000


@dataclass
class SamplerProcessOptions:
    interval_s: float
    machine_every: int  # machine counters every this many rounds
    disk_device: str | None
    epoch_offset_ns: int
    pids: list[int]
    max_span_us: int = MAX_SPAN_US

    def arguments(self) -> list[str]:
        arguments = [
            f"--interval-s={self.interval_s}",
            f"--machine-every={self.machine_every}",
            f"--epoch-offset-ns={self.epoch_offset_ns}",
            f"--max-span-us={self.max_span_us}",
            f"--pids={','.join(map(str, self.pids))}",
        ]
        return arguments + ([f"--disk-device={self.disk_device}"] if self.disk_device else [])


class SamplerProcess:
    """The loop of the sampler process: rounds on a fixed grid, commands read while waiting for the next."""

    def __init__(self, options: SamplerProcessOptions, out: IO[str], commands_fd: int = 0) -> None:
        from worker.capture.machine import MachineSampler  # machine imports this module

        self._options = options
        self._out = out
        self._commands_fd = commands_fd
        self._pids = options.pids
        self._reader = ProcReader()
        self._tracker = ThreadTracker(options.max_span_us)
        self._machine = MachineSampler(options.disk_device)
        self._spans: list[Span] = []
        self._counters: list[CounterSample] = []
        self._errors: dict[tuple[str, str], int] = {}
        self._rounds = self._late = self._machine_rounds = self._batches = 0
        self._pending_input = b""
        self._stopping = False

    def run(self) -> None:
        os.set_blocking(self._commands_fd, False)
        interval = self._options.interval_s
        next_at = batch_at = time.monotonic()
        while not self._stopping:
            self._round()
            now = time.monotonic()
            if now - batch_at >= BATCH_EVERY_S:
                self._write_batch()
                batch_at = now
            next_at += interval
            if now > next_at:  # overran: skip the missed rounds, stay on the grid
                self._late += 1
                next_at = now + interval - (now - next_at) % interval
            self._wait_for_commands(next_at)
        if (self._rounds - 1) % self._options.machine_every != 0:
            # The tail since the last machine reading: a job shorter than one machine interval still gets figures.
            self._machine_round(epoch_us(self._options.epoch_offset_ns))
        self._spans += self._tracker.finish()
        self._reader.close()
        self._write_batch(final=True)

    def _round(self) -> None:
        self._rounds += 1
        try:
            readings = self._reader.read(self._pids)
            t_us = epoch_us(self._options.epoch_offset_ns)
            self._spans += self._tracker.update(t_us, readings)
        except (OSError, ValueError) as error:
            self._error("cpu", f"reading threads from /proc failed: {error!r}")
            return
        if (self._rounds - 1) % self._options.machine_every == 0:
            self._machine_round(t_us)

    def _machine_round(self, t_us: int) -> None:
        try:
            self._counters += self._machine.sample(t_us)
            self._machine_rounds += 1
        except (OSError, ValueError) as error:
            self._error("machine", f"reading /proc/stat or /proc/diskstats failed: {error!r}")

    def _wait_for_commands(self, until: float) -> None:
        while not self._stopping:
            timeout = until - time.monotonic()
            if timeout <= 0:
                return
            ready, _, _ = select.select([self._commands_fd], [], [], timeout)
            if not ready:
                return
            data = os.read(self._commands_fd, 65536)
            if not data:  # the parent closed our input, or died
                self._stopping = True
                return
            *lines, self._pending_input = (self._pending_input + data).split(b"\n")
            for line in lines:
                self._command(line.decode().strip())

    def _command(self, line: str) -> None:
        if line == "stop":
            self._stopping = True
        elif line.startswith("pids"):
            self._pids = [int(pid) for pid in line.removeprefix("pids").strip().split(",") if pid]

    def _error(self, sampler: str, message: str) -> None:
        self._errors[(sampler, message)] = self._errors.get((sampler, message), 0) + 1

    def _write_batch(self, final: bool = False) -> None:
        self._batches += 1
        batch: dict[str, Any] = {
            "spans": [[s.tid, s.start_us, s.duration_us, s.label] for s in self._spans],
            "counters": [[c.track, c.t_us, c.value, c.unit] for c in self._counters],
            "rounds": self._rounds,
            "late": self._late,
            "machine_rounds": self._machine_rounds,
            "errors": [[sampler, message, count] for (sampler, message), count in self._errors.items()],
        }
        if final or self._batches % _THREADS_EVERY_BATCHES == 0:
            batch["threads"] = [dataclasses.asdict(busy) for busy in self._tracker.threads()]
        if final:
            batch["cpu_s"] = time.process_time()
            batch["schedstat"] = not self._reader.schedstat_missing
        self._spans, self._counters, self._errors = [], [], {}
        self._out.write(json.dumps(batch, separators=(",", ":")) + "\n")
        self._out.flush()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="restorescope's /proc sampler process (started by sample_job)")
    parser.add_argument("--interval-s", type=float, required=True)
    parser.add_argument("--machine-every", type=int, required=True)
    parser.add_argument("--epoch-offset-ns", type=int, required=True)
    parser.add_argument("--max-span-us", type=int, default=MAX_SPAN_US)
    parser.add_argument("--pids", default="")
    parser.add_argument("--disk-device", default=None)
    args = parser.parse_args(argv)
    options = SamplerProcessOptions(
        interval_s=args.interval_s,
        machine_every=args.machine_every,
        disk_device=args.disk_device,
        epoch_offset_ns=args.epoch_offset_ns,
        pids=[int(pid) for pid in args.pids.split(",") if pid],
        max_span_us=args.max_span_us,
    )
    os.nice(SAMPLER_NICE)
    SamplerProcess(options, sys.stdout).run()
