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
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
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
from worker.sandbox.server import Sandbox

GOAL = 1.02


@dataclass
class SampledRun:
    with_start_and_stop_s: float  # the restore plus entering and leaving sample_job
    report: SamplingReport
    trace_bytes: int


def restore_once(dump: Path, name: str, sampled: bool) -> tuple[float, SampledRun | None]:
    """Seconds of the restore alone (sandbox start and removal are not timed)."""
    processes = ProcessGroup()
    options = ServerOptions(performance_schema=True)
    with Sandbox(OUT / "work", name, options, detect_server_binary(), processes, lambda _line: None) as sandbox:
        sandbox.start()
        clients: list[int] = []

        def popen(args: list[str], **kwargs: Any) -> subprocess.Popen[bytes]:
            client = processes.popen(args, **kwargs)
            clients.append(client.pid)
            return client

        def restore() -> None:
            restore_with_mysql_client(
                dump,
                ["--no-defaults", *sandbox.client_args()],
                popen,
                on_progress=lambda _progress: None,
                on_log=lambda line: print(f"  mysql: {line}", flush=True),
                should_stop=lambda: False,
            )

        if not sampled:
            started = time.perf_counter()
            restore()
            return time.perf_counter() - started, None
        trace_dir = Path(tempfile.mkdtemp(prefix="sampling-cost-", dir=OUT))
        try:
            writer = TraceWriter(trace_dir)
            entered = time.perf_counter()
            server_pid = sandbox.pid
            with sample_job(
                writer, pids=lambda: [p for p in [server_pid, *clients] if p], connect=sandbox.connect
            ) as report:
                started = time.perf_counter()
                restore()
                seconds = time.perf_counter() - started
            with_start_and_stop = time.perf_counter() - entered
            writer.close()
            size = sum(path.stat().st_size for path in trace_dir.rglob("*") if path.is_file())
        finally:
            shutil.rmtree(trace_dir, ignore_errors=True)
        return seconds, SampledRun(with_start_and_stop, report, size)


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

    plain: list[float] = []
    sampled: list[float] = []
    sampled_whole: list[float] = []
    for round_no in range(args.rounds):
        # Alternate which goes first, so a drift in the machine's load does not favour one side.
        order = (False, True) if round_no % 2 == 0 else (True, False)
        for with_sampling in order:
            name = f"sampling-cost-{'on' if with_sampling else 'off'}-{round_no}"
            seconds, run = restore_once(dump, name, with_sampling)
            (sampled if with_sampling else plain).append(seconds)
            if run is not None:
                sampled_whole.append(run.with_start_and_stop_s)
            label = "sampled" if with_sampling else "plain  "
            detail = f"   {describe(run)}" if run else ""
            print(f"round {round_no + 1}: {label} {seconds:7.1f} s{detail}", flush=True)

    plain_median, sampled_median = statistics.median(plain), statistics.median(sampled)
    ratio = sampled_median / plain_median
    print()
    print(f"median of {args.rounds} round(s), {args.tables} x {args.rows} rows, performance_schema on")
    print(f"  restore, not sampled      {plain_median:7.1f} s   1.000x")
    print(f"  restore, sampled          {sampled_median:7.1f} s   {ratio:.3f}x   (goal <= {GOAL:.2f}x)")
    whole = statistics.median(sampled_whole)
    print(f"  sampled, with start/stop  {whole:7.1f} s   {whole / plain_median:.3f}x")
    print(f"  all runs: plain {[round(t, 1) for t in plain]}, sampled {[round(t, 1) for t in sampled]}")
    sys.exit(0 if ratio <= GOAL else 1)


if __name__ == "__main__":
    main()
