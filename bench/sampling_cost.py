"""What CPU and server-state sampling costs a restore, measured side by side in one run.

Each round restores the sysbench dump twice into fresh sandboxes with the same settings (performance_schema
on, as sampled jobs want it), once plain and once inside `sample_job` (per-thread /proc sampling every
20 ms, machine counters every 0.25 s, server status and processlist every 0.5 s, everything written to a
real TraceWriter). The restore is the product's: `restore_with_mysql_client`, whose feeder thread shares
this process with the sampler's threads. The order alternates between rounds, so a drift in the load of
the machine (shared with other work) does not favour one side.

    PYTHONPATH=backend:. .venv/bin/python bench/sampling_cost.py [--tables 4] [--rows 1000000] [--rounds 3]

Goal: the sampled restore at most 1.02x the plain one (medians).
"""

import argparse
import contextlib
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.sandboxes.options import ServerOptions
from app.traces.store import TraceWriter
from bench.restore_overhead import OUT, make_sysbench_dump
from worker.capture.sampling import SamplingReport, sample_job
from worker.process_group import ProcessGroup
from worker.runners.mysql_client import restore_with_mysql_client
from worker.sandbox.binary import detect_server_binary
from worker.sandbox.server import Sandbox, SandboxError

GOAL = 1.02


@dataclass
class Run:
    seconds: float  # the restore alone
    cpu_s: float  # CPU time of the server and the mysql client during the restore
    server_wait_s: float  # time the server's threads waited for a CPU: how contended the machine was
    sampled: "SampledRun | None" = None


@dataclass
class SampledRun:
    with_start_and_stop_s: float  # the restore plus entering and leaving sample_job
    report: SamplingReport
    trace_bytes: int


def start_sandbox(sandbox: Sandbox) -> None:
    """Start it, once more after a failure: on this shared machine an install has failed under others' load."""
    try:
        sandbox.start()
    except SandboxError as error:
        print(f"  sandbox did not start ({str(error).splitlines()[0]}); trying once more", flush=True)
        sandbox.remove()
        sandbox.start()


def process_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def runqueue_wait_s(pid: int) -> float:
    """Summed over the process's threads: ns spent runnable but waiting for a CPU (schedstat, 2nd field)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError, ValueError, IndexError):
            total += int((task / "schedstat").read_text().split()[1])
    return total / 1e9


def children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def restore_once(dump: Path, name: str, sampled: bool) -> Run:
    """Time (and CPU) of the restore alone: sandbox start and removal are not counted."""
    processes = ProcessGroup()
    options = ServerOptions(performance_schema=True)
    with Sandbox(OUT / "work", name, options, detect_server_binary(), processes, lambda _line: None) as sandbox:
        start_sandbox(sandbox)
        server_pid = sandbox.pid
        assert server_pid is not None
        clients: list[int] = []

        def popen(args: list[str], **kwargs: Any) -> subprocess.Popen[bytes]:
            client = processes.popen(args, **kwargs)
            clients.append(client.pid)
            return client

        def restore() -> tuple[float, float, float]:
            # The client is reaped before this returns, so its CPU time is in RUSAGE_CHILDREN; the
            # sampler's process is reaped later, outside this window.
            cpu_before = process_cpu_s(server_pid) + children_cpu_s()
            wait_before = runqueue_wait_s(server_pid)
            started = time.perf_counter()
            restore_with_mysql_client(
                dump,
                ["--no-defaults", *sandbox.client_args()],
                popen,
                on_progress=lambda _progress: None,
                on_log=lambda line: print(f"  mysql: {line}", flush=True),
                should_stop=lambda: False,
            )
            seconds = time.perf_counter() - started
            cpu_s = process_cpu_s(server_pid) + children_cpu_s() - cpu_before
            return seconds, cpu_s, runqueue_wait_s(server_pid) - wait_before

        if not sampled:
            return Run(*restore())
        trace_dir = Path(tempfile.mkdtemp(prefix="sampling-cost-", dir=OUT))
        try:
            writer = TraceWriter(trace_dir)
            entered = time.perf_counter()
            with sample_job(writer, pids=lambda: [server_pid, *clients], connect=sandbox.connect) as report:
                seconds, cpu_s, wait_s = restore()
            with_start_and_stop = time.perf_counter() - entered
            writer.close()
            size = sum(path.stat().st_size for path in trace_dir.rglob("*") if path.is_file())
        finally:
            shutil.rmtree(trace_dir, ignore_errors=True)
        return Run(seconds, cpu_s, wait_s, SampledRun(with_start_and_stop, report, size))


def describe(run: SampledRun) -> str:
    report = run.report
    busiest = report.threads[0] if report.threads else None
    lane = f"busiest lane {busiest.tid} ({busiest.comm}) {busiest.busy_pct:.0f}% busy" if busiest else "no lanes"
    return (
        f"(with start and stop {run.with_start_and_stop_s:.1f} s), "
        f"sampler CPU {report.sampler_cpu_s:.2f} s ({report.sampler_cpu_pct:.2f}% of a core: "
        + ", ".join(f"{name} {seconds:.2f} s" for name, seconds in report.sampler_cpu.items())
        + f"), {report.cpu_rounds} rounds ({report.late_rounds} late), {report.server_rounds} server rounds, "
        f"{report.spans_written} spans, {report.counters_written} counter samples, "
        f"trace {run.trace_bytes / 1e6:.1f} MB, {lane}, errors {len(report.errors)}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tables", type=int, default=4)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    dump = OUT / "backups" / f"sysbench-{args.tables}x{args.rows}.sql"
    make_sysbench_dump(dump, args.tables, args.rows)
    print(f"dump: {dump} ({dump.stat().st_size / 1e6:.0f} MB)", flush=True)

    plain: list[Run] = []
    sampled: list[Run] = []
    for round_no in range(args.rounds):
        # Alternate which goes first, so a drift in the machine's load does not favour one side.
        order = (False, True) if round_no % 2 == 0 else (True, False)
        for with_sampling in order:
            name = f"sampling-cost-{'on' if with_sampling else 'off'}-{round_no}"
            run = restore_once(dump, name, with_sampling)
            (sampled if with_sampling else plain).append(run)
            label = "sampled" if with_sampling else "plain  "
            detail = f"   {describe(run.sampled)}" if run.sampled else ""
            print(
                f"round {round_no + 1}: {label} {run.seconds:7.1f} s, restore CPU {run.cpu_s:6.1f} s, "
                f"server waited for a CPU {run.server_wait_s:6.1f} s{detail}",
                flush=True,
            )

    def median(runs: list[Run], value: Callable[[Run], float]) -> float:
        return statistics.median(value(run) for run in runs)

    plain_s, sampled_s = median(plain, lambda r: r.seconds), median(sampled, lambda r: r.seconds)
    plain_cpu, sampled_cpu = median(plain, lambda r: r.cpu_s), median(sampled, lambda r: r.cpu_s)
    whole = statistics.median(r.sampled.with_start_and_stop_s for r in sampled if r.sampled)
    paired = statistics.median(s.seconds / p.seconds for s, p in zip(sampled, plain, strict=True))
    sampler_pct = statistics.median(r.sampled.report.sampler_cpu_pct for r in sampled if r.sampled)
    ratio = sampled_s / plain_s
    print()
    print(f"median of {args.rounds} round(s), {args.tables} x {args.rows} rows, performance_schema on")
    print(f"  restore, not sampled       {plain_s:7.1f} s   1.000x   restore CPU {plain_cpu:6.1f} s")
    print(
        f"  restore, sampled           {sampled_s:7.1f} s   {ratio:.3f}x   restore CPU {sampled_cpu:6.1f} s "
        f"({sampled_cpu / plain_cpu:.3f}x)   (goal <= {GOAL:.2f}x)"
    )
    print(f"  sampled, with start/stop   {whole:7.1f} s   {whole / plain_s:.3f}x")
    print(f"  median of the per-round ratios sampled/plain: {paired:.3f}x")
    print(f"  the samplers' own CPU: {sampler_pct:.2f}% of one core (median)")
    plain_wait, sampled_wait = median(plain, lambda r: r.server_wait_s), median(sampled, lambda r: r.server_wait_s)
    print(
        f"  the server's threads waited for a CPU {plain_wait:.1f} s (plain) / {sampled_wait:.1f} s (sampled): "
        "when that varies between rounds, other work on the machine decides the wall times"
    )
    print(f"  all runs: plain {[round(r.seconds, 1) for r in plain]}, sampled {[round(r.seconds, 1) for r in sampled]}")
    sys.exit(0 if ratio <= GOAL else 1)


if __name__ == "__main__":
    main()
