"""What recording every thread's IO costs a real restore, per capture backend, and what the AIO mode costs.

The sysbench dataset (4 tables x 1M rows, dumped with mysqldump; made once and cached in bench/out, see
bench/restore_overhead.py) is restored through the mysql client into fresh sandboxes with server
defaults, the way a job does it (worker.capture.session.JobCapture, the real trace store), in one run,
interleaved: untraced, eBPF, strace, FUSE, and untraced with each AIO mode (io_uring, aio, off). Only
the restore itself is timed (server start, shutdown and the trace's compaction are not).

    PYTHONPATH=backend:. .venv/bin/python bench/capture_overhead.py [--rounds 2] [--save]

Goals: eBPF <= 1.05x, strace <= 1.5x (over the untraced restore with server defaults); FUSE as measured.
strace runs InnoDB on libaio (it cannot see io_uring), so its ratio includes that switch; the ratio over
an untraced libaio restore is printed too. --save appends the AIO-mode times to
worker/capture/aio_cost.json, which jobs quote when they switch AIO mode for a capture.
"""

import argparse
import json
import os
import resource
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from app.sandboxes.options import ServerOptions
from app.traces.records import TraceSink
from app.traces.store import TraceWriter
from bench.restore_overhead import OUT, make_sysbench_dump
from worker.capture.selection import AIO_COST_FILE, CapturePlan
from worker.capture.session import JobCapture
from worker.process_group import ProcessGroup
from worker.runners.mysql_client import restore_with_mysql_client
from worker.sandbox.binary import detect_server_binary
from worker.sandbox.server import Sandbox

# (name, capture backend, AIO mode asked for)
RUNS: list[tuple[str, str, str | None]] = [
    ("untraced", "none", None),
    ("ebpf", "ebpf", None),
    ("strace", "strace", None),
    ("fuse", "fuse", None),
    ("untraced, aio", "none", "aio"),
    ("untraced, AIO off", "none", "off"),
]


class _NoSink:
    def add_operations(self, operations: object) -> None: ...
    def set_lane(self, lane: object) -> None: ...
    def add_spans(self, spans: object) -> None: ...
    def add_counters(self, samples: object) -> None: ...


def cpu_seconds() -> float:
    """CPU time of this process and of every child it has waited for (server, client, tracers)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def restore_once(
    dump: Path, name: str, backend: str, aio_mode: str | None, log: Callable[[str], None]
) -> tuple[float, float]:
    """(seconds the restore itself took, CPU seconds of the whole run), captured by backend into a real trace.

    The CPU time covers server start to teardown, tracers and this process's reading of their output
    included: unlike wall time it hardly moves with the load of a shared machine."""
    cpu_before = cpu_seconds()
    slug = name.replace(", ", "-").replace(" ", "-")
    trace_dir = OUT / "traces" / slug
    writer = TraceWriter(trace_dir) if backend != "none" else None
    sink: TraceSink = writer if writer is not None else _NoSink()
    shutil.rmtree(OUT / "work" / f"capture-{slug}", ignore_errors=True)  # left by an interrupted run
    processes = ProcessGroup()
    capture = JobCapture(sink, CapturePlan(backend, backend), processes, log)
    options = capture.sandbox_options(ServerOptions.model_validate({"aio_mode": aio_mode}))
    sandbox = Sandbox(
        OUT / "work",
        f"capture-{slug}",
        options,
        detect_server_binary(),
        processes,
        lambda _line: None,
        datadir_layer=capture.datadir_layer(),
        launcher=capture.server_launcher(kept=False),
    )
    try:
        sandbox.start()
        capture.watch_server(sandbox.pid, sandbox.connect)
        started = time.perf_counter()
        restore_with_mysql_client(
            dump,
            ["--no-defaults", *sandbox.client_args()],
            capture.client_popen(processes.popen),
            on_progress=lambda _progress: None,
            on_log=log,
            should_stop=lambda: False,
        )
        seconds = time.perf_counter() - started
    finally:
        sandbox.remove()
        capture.stop()
        if writer is not None:
            summary = writer.close()
            log(f"{name}: {summary.operations} operations in the trace")
            shutil.rmtree(trace_dir, ignore_errors=True)
        processes.kill()
    if capture.error:
        raise SystemExit(f"{name}: the capture failed: {capture.error}")
    return seconds, cpu_seconds() - cpu_before


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tables", type=int, default=4)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--only", help="comma-separated run names (default: all)")
    parser.add_argument("--save", action="store_true", help=f"write the AIO-mode times to {AIO_COST_FILE}")
    args = parser.parse_args()

    dump = OUT / "backups" / f"sysbench-{args.tables}x{args.rows}.sql"
    make_sysbench_dump(dump, args.tables, args.rows)
    print(f"dump: {dump} ({dump.stat().st_size / 1e6:.0f} MB)", flush=True)
    runs = [run for run in RUNS if not args.only or run[0] in args.only.split(",")]
    times: dict[str, list[float]] = {name: [] for name, _, _ in runs}
    cpu_times: dict[str, list[float]] = {name: [] for name, _, _ in runs}
    notes: list[str] = []
    loads: list[float] = []  # the machine may be shared: say how busy it was
    for round_no in range(args.rounds):
        # Rotate the order each round, so a drift in the machine's load does not favour one run.
        shift = round_no % len(runs)
        for name, backend, aio_mode in runs[shift:] + runs[:shift]:
            seconds, cpu = restore_once(dump, name, backend, aio_mode, notes.append)
            times[name].append(seconds)
            cpu_times[name].append(cpu)
            loads.append(os.getloadavg()[0])
            print(f"round {round_no + 1}: {name:20s} {seconds:7.1f} s   CPU {cpu:6.1f} s", flush=True)

    median = {name: statistics.median(values) for name, values in times.items() if values}
    print()
    for line in notes:
        if "operations in the trace" in line or "lost" in line:
            print(f"  {line}")
    print(f"\nmedian of {args.rounds} round(s), {args.tables} x {args.rows} rows, server defaults, restore only")
    print(f"load average during the runs: median {statistics.median(loads):.1f} on {os.cpu_count()} CPUs")
    base = median.get("untraced")
    goals = {"ebpf": "goal <= 1.05x", "strace": "goal <= 1.5x", "fuse": "as measured"}
    cpu_median = {name: statistics.median(values) for name, values in cpu_times.items() if values}
    cpu_base = cpu_median.get("untraced")
    print(f"  {'':20s} {'restore':>9s}   {'ratio':>7s}   {'CPU, whole run':>14s}   {'ratio':>7s}")
    for name, seconds in median.items():
        ratio = f"{seconds / base:.3f}x" if base else "-"
        cpu_ratio = f"{cpu_median[name] / cpu_base:.3f}x" if cpu_base else "-"
        goal = goals.get(name, "")
        print(f"  {name:20s} {seconds:7.1f} s   {ratio:>7s}   {cpu_median[name]:12.1f} s   {cpu_ratio:>7s}   {goal}")
    if "strace" in median and "untraced, aio" in median:
        print(f"  strace over an untraced libaio restore: {median['strace'] / median['untraced, aio']:.3f}x")
    aio = {
        "io_uring": median.get("untraced"),
        "aio": median.get("untraced, aio"),
        "off": median.get("untraced, AIO off"),
    }
    if all(aio.values()):
        print("\nAIO mode (untraced): " + ", ".join(f"{mode} {value:.1f} s" for mode, value in aio.items()))
        if args.save:
            run = {
                "restore_seconds": {mode: round(value or 0, 2) for mode, value in aio.items()},
                "dataset": f"sysbench {args.tables} x {args.rows} rows, mysql client, median of {args.rounds}",
                "measured_on": datetime.now(UTC).date().isoformat(),
                "rounds": args.rounds,
                "conditions": f"load average {statistics.median(loads):.1f} during the runs, on {os.cpu_count()} CPUs",
            }
            try:
                runs = json.loads(AIO_COST_FILE.read_text())["runs"]
            except (OSError, ValueError, KeyError):
                runs = []
            # Every run is kept: on a shared machine one run alone can mislead, and jobs quote them all.
            AIO_COST_FILE.write_text(json.dumps({"runs": [*runs, run]}, indent=2) + "\n")
            print(f"saved to {AIO_COST_FILE}")
    ok = (not base) or all(
        median[name] / base <= limit for name, limit in (("ebpf", 1.05), ("strace", 1.5)) if name in median
    )
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
