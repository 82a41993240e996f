"""The evidence a trace holds about one time window: where each thread's time went, the machine's counters and
the IO of every thread. Pure functions over an opened trace (app.traces.reader.TraceData), tested on small
traces written through the real store."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

import numpy as np

from app.advisor.evidence import IoFacts, LaneActivity, LaneGroup, Series
from app.traces import stats
from app.traces.reader import TraceData
from app.traces.segment import Int64s
from app.traces.window import Filters

SERVER_PROCESSES = frozenset({"mariadbd", "mysqld"})
# Connections of restorescope itself (the state sampler, the lane namer) never load rows
# (worker.restore.SAMPLER_PROGRAM_NAME and LANES_PROGRAM_NAME).
_OWN_PROGRAMS = ("restorescope-sampler", "restorescope-lanes")
# A connection lane is a loading one when it did something: this share of the window on a CPU, or outside
# "Sleep" (a connection that only slept is one of restorescope's own, or the loader's coordinator, which
# runs the DDL and then waits: 2.4% of a 55 s restore for the sysbench set).
LOADING_MIN_ACTIVE_SHARE = 0.05
BUCKETS = 60


def lane_group(role: str, process: str) -> LaneGroup:
    if process not in SERVER_PROCESSES:
        return "tool"
    if role.startswith("connection") and not any(program in role for program in _OWN_PROGRAMS):
        return "loading"
    return "background"


def _overlap(start: Int64s, duration: Int64s, t0: int, t1: int) -> Int64s:
    result: Int64s = np.clip(np.minimum(start + duration, t1) - np.maximum(start, t0), 0, None)
    return result


def _seconds_by_label(data: TraceData, tid: int, track: str, t0: int, t1: int) -> dict[str, float]:
    spans = data.spans
    if track not in spans.tracks:
        return {}
    begin, end = spans.groups.get((tid, spans.tracks.index(track)), (0, 0))
    if begin == end:
        return {}
    inside = _overlap(spans.start[begin:end], spans.duration[begin:end], t0, t1)
    totals = np.bincount(spans.label[begin:end], weights=inside, minlength=len(spans.labels))
    return {spans.labels[code]: float(totals[code]) / 1e6 for code in np.flatnonzero(totals).tolist()}


def _running_series(data: TraceData, tid: int, t0: int, t1: int, buckets: int) -> tuple[float, ...]:
    """Running share of each of `buckets` equal slices of [t0, t1)."""
    spans = data.spans
    if "cpu" not in spans.tracks or buckets <= 0:
        return ()
    begin, end = spans.groups.get((tid, spans.tracks.index("cpu")), (0, 0))
    running = [code for code, label in enumerate(spans.labels) if label == "running"]
    mask = np.isin(spans.label[begin:end], running)
    start = spans.start[begin:end][mask]
    duration = spans.duration[begin:end][mask]
    edges = np.linspace(t0, t1, buckets + 1)
    # Running time before each edge: the sum over spans of their part before it (spans of a lane never overlap).
    before = np.array([float(np.clip(edge - start, 0, duration).sum()) for edge in edges])
    width = (t1 - t0) / buckets
    return tuple(round(float(x), 4) for x in np.clip(np.diff(before) / width, 0.0, 1.0))


def _state_series(data: TraceData, tid: int, t0: int, t1: int, buckets: int) -> tuple[str, ...]:
    """The state each of `buckets` equal slices of [t0, t1) was spent in most."""
    spans = data.spans
    if "state" not in spans.tracks or buckets <= 0:
        return ()
    begin, end = spans.groups.get((tid, spans.tracks.index("state")), (0, 0))
    if begin == end:
        return ()
    start, duration, label = spans.start[begin:end], spans.duration[begin:end], spans.label[begin:end]
    edges = np.linspace(t0, t1, buckets + 1)
    codes = np.unique(label)
    per_label = np.array(
        [
            np.diff([float(np.clip(edge - start[label == code], 0, duration[label == code]).sum()) for edge in edges])
            for code in codes
        ]
    )
    best = per_label.argmax(axis=0)
    return tuple(spans.labels[int(codes[i])] if per_label[i, k] > 0 else "" for k, i in enumerate(best.tolist()))


def lane_activity(data: TraceData, t0: int, t1: int, buckets: int = BUCKETS) -> list[LaneActivity]:
    """Every named lane that had CPU or state spans in the window, grouped; IO time is added by `with_io`."""
    lanes: list[LaneActivity] = []
    seconds = max(t1 - t0, 1) / 1e6
    for lane in data.summary.lanes:
        tid, role, process = int(lane["tid"]), str(lane.get("role") or ""), str(lane.get("process") or "")
        cpu = _seconds_by_label(data, tid, "cpu", t0, t1)
        states = _seconds_by_label(data, tid, "state", t0, t1)
        if not cpu and not states:
            continue
        group = lane_group(role, process)
        active = cpu.get("running", 0.0) + sum(v for k, v in states.items() if k != "Sleep")
        if group == "loading" and active < LOADING_MIN_ACTIVE_SHARE * seconds:
            group = "background"
        lanes.append(
            LaneActivity(
                tid=tid,
                role=role,
                process=process,
                group=group,
                running_s=round(cpu.get("running", 0.0), 3),
                runnable_s=round(cpu.get("runnable", 0.0), 3),
                io_wait_s=round(cpu.get("io_wait", 0.0), 3),
                blocked_s=round(cpu.get("blocked", 0.0), 3),
                running_series=_running_series(data, tid, t0, t1, buckets),
                state_series=_state_series(data, tid, t0, t1, buckets) if group == "loading" else (),
                states={k: round(v, 3) for k, v in states.items()},
            )
        )
    return lanes


def counter_mean(data: TraceData, track: str, t0: int, t1: int) -> float | None:
    series = data.counters.series.get(track)
    if series is None:
        return None
    times, values = series
    inside = (times > t0) & (times <= t1)
    return float(values[inside].mean()) if inside.any() else None


def counter_series(data: TraceData, track: str, t0: int, t1: int) -> Series | None:
    series = data.counters.series.get(track)
    if series is None:
        return None
    times, values = series
    inside = (times >= t0) & (times <= t1)
    if not inside.any():
        return None
    return Series(tuple(int(t) for t in times[inside]), tuple(float(v) for v in values[inside]))


_REDO = re.compile(r"(ib_logfile\d+|ib_redo\d+|#ib_redo\d+)$")
_SYSTEM = re.compile(r"(ibdata\d+|ib_doublewrite|undo\d+)$")
_BINLOG = re.compile(r"(-bin|binlog)\.\d+$")


def file_kind(path: str) -> str:
    if _REDO.search(path):
        return "redo"
    if path.endswith(".ibd"):
        return "data"
    if _SYSTEM.search(path):
        return "system"  # the system tablespace: the doublewrite buffer and undo logs live here
    if _BINLOG.search(path):
        return "binlog"
    return "other"


def _size_p50(histogram: list[dict[str, Any]], kind: str) -> int:
    for entry in histogram:
        if entry["kind"] == kind:
            buckets = entry["buckets"]
            total = sum(b["count"] for b in buckets)
            seen = 0
            for bucket in buckets:
                seen += bucket["count"]
                if seen * 2 >= total:
                    return int(bucket["le_bytes"])
    return 0


def io_facts(data: TraceData, t0: int, t1: int) -> IoFacts:
    whole = stats.read_stats(data, t0=t0, t1=t1, filters=Filters())
    fsync = next((k for k in whole["by_kind"] if k["kind"] == "fsync"), None)
    by_file_kind: dict[str, int] = {}
    for entry in whole["files"]:
        if not entry["bytes_written"]:
            continue
        kind = file_kind(entry["path"])
        by_file_kind[kind] = by_file_kind.get(kind, 0) + int(entry["bytes_written"])
    writes = stats.read_stats(data, t0=t0, t1=t1, filters=Filters(kinds=frozenset({"write"}), path=".ibd"))
    write = next((k for k in writes["by_kind"] if k["kind"] == "write"), None)
    return IoFacts(
        fsyncs=int(fsync["count"]) if fsync else 0,
        fsync_p50_us=int(fsync["latency_us"]["p50"]) if fsync else 0,
        fsync_total_s=round(
            sum(f["busy_us"] for f in _files_of_kind(data, t0, t1, "fsync")) / 1e6 if fsync else 0.0, 3
        ),
        data_writes=int(write["count"]) if write else 0,
        data_write_bytes=int(write["bytes"]) if write else 0,
        data_write_p50_bytes=_size_p50(writes["size_histogram"], "write"),
        data_write_p95_us=int(write["latency_us"]["p95"]) if write else 0,
        data_sequential_pct=float(writes["access"]["sequential_pct"]) if write else 100.0,
        bytes_written_by_file_kind=by_file_kind,
    )


def _files_of_kind(data: TraceData, t0: int, t1: int, kind: str) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = stats.read_stats(data, t0=t0, t1=t1, filters=Filters(kinds=frozenset({kind})))[
        "files"
    ]
    return result


def _busy_by_tid(data: TraceData, t0: int, t1: int, filters: Filters) -> dict[int, tuple[float, int]]:
    """(seconds inside the selected operations, how many) per thread."""
    found = stats.read_stats(data, t0=t0, t1=t1, filters=filters)
    seconds = found["duration_us"] / 1e6
    return {int(t["tid"]): (t["busy_pct"] / 100 * seconds, int(t["operations"])) for t in found["threads"]}


def with_io(data: TraceData, lanes: Iterable[LaneActivity], t0: int, t1: int) -> list[LaneActivity]:
    """The lanes with the time their threads spent in fsync and in reads of data files (loading and tool lanes:
    a commit that waits for the redo log, a page that was not in the buffer pool)."""
    lanes = list(lanes)
    watched = frozenset(lane.tid for lane in lanes if lane.group in ("loading", "tool"))
    if not watched:
        return lanes
    fsync = _busy_by_tid(data, t0, t1, Filters(tids=watched, kinds=frozenset({"fsync"})))
    reads = _busy_by_tid(data, t0, t1, Filters(tids=watched, kinds=frozenset({"read"}), path=".ibd"))
    return [
        replace(
            lane,
            fsync_s=round(fsync.get(lane.tid, (0.0, 0))[0], 3),
            data_read_s=round(reads.get(lane.tid, (0.0, 0))[0], 3),
            data_reads=reads.get(lane.tid, (0.0, 0))[1],
        )
        if lane.tid in watched
        else lane
        for lane in lanes
    ]
