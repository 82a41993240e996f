"""Export a trace as Chrome Trace Event JSON (what ui.perfetto.dev and chrome://tracing open), streamed.

- ``ts``/``dur`` are microseconds since the trace's first operation (``otherData.time_origin_epoch_us``
  gives that instant in microseconds since the Unix epoch).
- Each lane is a thread (``tid``) of a process (``pid``: the lane's process id when known, else 1), named
  by ``thread_name``/``process_name`` metadata events (``"ph": "M"``).
- An operation is a complete event (``"ph": "X"``) on its thread when it does not overlap the thread's
  earlier complete events (complete events on one thread must nest); one that does (async IO, JuiceFS
  background work) becomes an async pair (``"ph": "b"`` / ``"e"``, ``cat`` "io", a unique ``id``).
- CPU and SQL-state spans go to their own threads (``tid`` = lane tid, in processes "cpu" and "state"
  numbered after the lanes' processes), the same way; counters are ``"ph": "C"`` events.
- Events come sorted by ``ts``. The file is produced a time slice at a time, so a trace of millions of
  operations streams in bounded memory.
"""

import heapq
import json
from collections.abc import Iterator
from typing import Any, Final

import numpy as np

from app.traces.reader import TraceData
from app.traces.segment import NULL_INT
from app.traces.store import KINDS
from app.traces.window import lane_roles

SLICE_OPERATIONS: Final = 100_000
DEFAULT_PID: Final = 1


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


class _Emitter:
    """Turns intervals into X events, or b/e pairs when they would break nesting on their thread."""

    def __init__(self) -> None:
        self.open_until: dict[tuple[int, int], int] = {}  # (pid, tid) -> end of the last X event
        self.pending: list[tuple[int, int, str]] = []  # heap of (ts, seq, event) for "e" events
        self.next_id = 0
        self.seq = 0

    def interval(self, pid: int, tid: int, ts: int, dur: int, name: str, cat: str, args: str) -> str:
        key = (pid, tid)
        if ts >= self.open_until.get(key, -1):
            self.open_until[key] = ts + dur
            return (
                f'{{"ph":"X","pid":{pid},"tid":{tid},"ts":{ts},"dur":{dur},"name":{name},"cat":"{cat}","args":{args}}}'
            )
        self.next_id += 1
        self.seq += 1
        common = f'"pid":{pid},"tid":{tid},"name":{name},"cat":"{cat}","id":"0x{self.next_id:x}"'
        heapq.heappush(self.pending, (ts + dur, self.seq, f'{{"ph":"e",{common},"ts":{ts + dur}}}'))
        return f'{{"ph":"b",{common},"ts":{ts},"args":{args}}}'

    def ends_before(self, ts: int | None) -> list[tuple[int, int, str]]:
        out = []
        while self.pending and (ts is None or self.pending[0][0] < ts):
            out.append(heapq.heappop(self.pending))
        return out


def _metadata(data: TraceData, job_id: int) -> tuple[list[str], dict[int, int], int]:
    roles = lane_roles(data)
    pids = {tid: int(lane.get("pid") or DEFAULT_PID) for tid, lane in roles.items()}
    events = [
        _dumps({"ph": "M", "name": "process_name", "pid": DEFAULT_PID, "tid": 0, "args": {"name": f"job {job_id}"}})
    ]
    named = {DEFAULT_PID}
    for tid, lane in roles.items():
        pid = pids[tid]
        if pid not in named:
            process = lane.get("process") or f"pid {pid}"
            events.append(_dumps({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": process}}))
            named.add(pid)
        events.append(
            _dumps({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": lane["role"]}})
        )
    span_pid = max(named) + 1
    for offset, track in enumerate(data.spans.tracks):
        events.append(
            _dumps({"ph": "M", "name": "process_name", "pid": span_pid + offset, "tid": 0, "args": {"name": track}})
        )
        for tid, _ in {key for key in data.spans.groups if key[1] == offset}:
            role = roles.get(tid, {}).get("role", f"thread {tid}")
            events.append(
                _dumps({"ph": "M", "name": "thread_name", "pid": span_pid + offset, "tid": tid, "args": {"name": role}})
            )
    return events, pids, span_pid


def _slices(data: TraceData) -> list[tuple[int, int]]:
    """Time slices of about SLICE_OPERATIONS operations each, covering the trace."""
    t_min, t_max = data.summary.t_min_us, data.summary.t_max_us
    starts = [int(s.start.min()) for s in data.segments if len(s)] + [int(s) for s in data.spans.start[:1]]
    ends = [s.t_max for s in data.segments if len(s)]
    t_min = min(starts + ([t_min] if t_min is not None else []), default=0)
    t_max = max(ends + ([t_max] if t_max is not None else []) + [t_min + 1])
    total = sum(len(s) for s in data.segments) + len(data.spans.start)
    count = max(1, total // SLICE_OPERATIONS)
    width = max(1, -(-(t_max + 1 - t_min) // count))
    return [(t_min + i * width, t_min + (i + 1) * width) for i in range(count)]


def stream_events(data: TraceData, job_id: int) -> Iterator[str]:
    slices = _slices(data)
    origin = slices[0][0]
    metadata, pids, span_pid = _metadata(data, job_id)
    yield (
        '{"displayTimeUnit":"ms","otherData":'
        + _dumps({"job_id": job_id, "time_origin_epoch_us": origin, "ts_unit": "microseconds since the origin"})
        + ',"traceEvents":[\n'
    )
    yield ",\n".join(metadata)
    emitter = _Emitter()
    encoded = [
        ([_dumps(name) for name in s.ops], [_dumps(path) for path in s.paths], [_dumps(r) for r in s.results])
        for s in data.segments
    ]
    labels = [_dumps(label) for label in data.spans.labels]
    # Anything starting before the first slice (or after the last) is folded into the ends.
    slices[0] = (np.iinfo(np.int64).min, slices[0][1])
    slices[-1] = (slices[-1][0], np.iinfo(np.int64).max)
    for lo, hi in slices:
        events: list[tuple[int, int, str]] = []
        for number, segment in enumerate(data.segments):
            names, paths, results = encoded[number]
            for tid, (begin, end) in segment.lanes.items():
                first = begin + int(np.searchsorted(segment.start[begin:end], lo, side="left"))
                last = begin + int(np.searchsorted(segment.start[begin:end], hi, side="left"))
                pid = pids.get(tid, DEFAULT_PID)
                for row in range(first, last):
                    ts = int(segment.start[row]) - origin
                    args = (
                        f'{{"file":{paths[segment.path[row]] if segment.path[row] >= 0 else "null"},'
                        f'"offset":{_number(segment.offset[row])},"size":{_number(segment.size[row])},'
                        f'"result":{results[segment.result[row]] if segment.result[row] >= 0 else "null"}}}'
                    )
                    emitter.seq += 1
                    events.append(
                        (
                            ts,
                            emitter.seq,
                            emitter.interval(
                                pid, tid, ts, int(segment.duration[row]), names[segment.op[row]],
                                KINDS[segment.kind[row]], args,
                            ),
                        )
                    )  # fmt: skip
        spans = data.spans
        for (tid, track), (begin, end) in spans.groups.items():
            first = begin + int(np.searchsorted(spans.start[begin:end], lo, side="left"))
            last = begin + int(np.searchsorted(spans.start[begin:end], hi, side="left"))
            for row in range(first, last):
                ts = int(spans.start[row]) - origin
                emitter.seq += 1
                event = emitter.interval(
                    span_pid + track, tid, ts, int(spans.duration[row]), labels[spans.label[row]],
                    spans.tracks[track], "{}",
                )  # fmt: skip
                events.append((ts, emitter.seq, event))
        for counter, (times, values) in data.counters.series.items():
            first = int(np.searchsorted(times, lo, side="left"))
            last = int(np.searchsorted(times, hi, side="left"))
            name = _dumps(counter)
            for t, value in zip(times[first:last].tolist(), values[first:last].tolist(), strict=True):
                emitter.seq += 1
                events.append(
                    (
                        t - origin,
                        emitter.seq,
                        f'{{"ph":"C","pid":{DEFAULT_PID},"ts":{t - origin},"name":{name},"args":{{"value":{value}}}}}',
                    )
                )
        # Ends due before this slice's end can go out now; later ones wait in the heap.
        events.extend(emitter.ends_before(None if hi == np.iinfo(np.int64).max else hi - origin))
        events.sort()
        if events:
            yield ",\n" + ",\n".join(event for _, _, event in events)
    yield "\n]}\n"


def _number(value: np.int64) -> str:
    return "null" if value == NULL_INT else str(int(value))
