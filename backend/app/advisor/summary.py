"""What held a run back, in one sentence, and what the reader should know about how it was measured."""

from __future__ import annotations

from app.advisor.evidence import Evidence, LaneActivity
from app.advisor.text import pct, secs

# Our threads spent this share of the phase waiting for a CPU while other processes kept the host's cores
# busy (at least SHARED_HOST_CORES of them on average): the run was slowed by load that was not its own.
SHARED_RUNNABLE_SHARE = 0.2
SHARED_HOST_CORES = 0.3
# The main threads (loading connections, or the prepare's) spent this share of their time in IO sleep: the
# storage held the run up; else, on a CPU or waiting for one this share: the CPUs did.
STORAGE_BOUND_SHARE = 0.2
CPU_BOUND_SHARE = 0.6


def _main_lanes(e: Evidence) -> list[LaneActivity]:
    """The loading connections; for a prepare, the tool's busiest thread (recovery runs in one thread, and the
    tool's dozen idle IO threads would drown it in an average)."""
    if e.job.kind != "prepare":
        return e.group("loading")
    tools = e.group("tool")
    return [max(tools, key=lambda lane: lane.running_s + lane.runnable_s + lane.io_wait_s)] if tools else []


def headline(e: Evidence) -> str:
    if not e.has_cpu:
        return (
            f"The {secs(e.seconds)} {e.phase} phase has no CPU samples (the job ran without capture, or before the "
            "sampler watched this phase): the advisor read the run's IO, settings and counters only."
        )
    lanes = _main_lanes(e)
    if not lanes:
        return f"No thread did the {e.phase} work on a sampled lane: the advisor read the server's counters only."
    lives = sum(lane.sampled_s for lane in lanes) or 1.0
    running = sum(lane.running_s for lane in lanes)
    runnable = sum(lane.runnable_s for lane in lanes)
    io_wait = sum(lane.io_wait_s for lane in lanes)
    blocked = sum(lane.blocked_s for lane in lanes)
    plural = "s" if len(lanes) > 1 else ""
    who = (
        f"the prepare's busiest thread ({lanes[0].role} {lanes[0].tid})"
        if e.job.kind == "prepare"
        else f"the {len(lanes)} loading thread{plural}"
    )
    their = "their" if len(lanes) > 1 else "its"
    if io_wait / lives >= STORAGE_BOUND_SHARE:
        return f"The storage: {who} waited on the disk {pct(io_wait / lives)} of {their} time."
    if (running + runnable) / lives >= CPU_BOUND_SHARE:
        cores = (running + runnable) / e.seconds
        return (
            f"CPU: {who} wanted {cores:.1f} of the host's {e.host.cpus} cores over the {secs(e.seconds)} "
            f"({pct(running / lives)} of {their} time on a CPU, {pct(runnable / lives)} waiting for one); "
            f"the disk held {'them' if len(lanes) > 1 else 'it'} up {pct(io_wait / lives)} of the time."
        )
    why = (
        "waiting for its asynchronous page IO and the flushes that end each recovery batch"
        if e.job.kind == "prepare"
        else "mostly blocked on something other than the disk (the client sending rows, a lock)"
    )
    return (
        f"Waiting: {who} {'were' if len(lanes) > 1 else 'was'} off the CPU {pct((blocked + io_wait) / lives)} of "
        f"{their} time, {why}."
    )


def notes(e: Evidence) -> list[str]:
    found: list[str] = []
    if e.has_cpu and e.busy_cores is not None:
        ours = sum(lane.running_s for lane in e.lanes) / e.seconds
        runnable = sum(lane.runnable_s for lane in _main_lanes(e)) / e.seconds
        others = e.busy_cores - ours
        if runnable >= SHARED_RUNNABLE_SHARE and others >= SHARED_HOST_CORES:
            found.append(
                f"The host was shared: other processes (and the worker itself) kept about {others:.1f} of its "
                f"{e.host.cpus} cores busy, and this run's threads waited {secs(runnable * e.seconds)} for a CPU. "
                "Times measured meanwhile are slower than on an idle host, and speedups noisier."
            )
    if not e.has_trace and e.job.kind != "import":
        found.append("No IO trace: rules that read fsync, page reads and writes were skipped.")
    return found
