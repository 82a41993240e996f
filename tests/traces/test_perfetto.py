"""The Chrome Trace Event export, checked against the format's rules (what Perfetto's importer needs)."""

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from app.traces import perfetto
from app.traces.records import CounterSample, Lane, Span
from tests.traces.helpers import make_trace, op

T = 1_700_000_000_000_000


def export(directory: Path, **trace: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    data = make_trace(directory, **trace)
    text = "".join(perfetto.stream_events(data, job_id=42))
    document = json.loads(text)
    return document, document["traceEvents"]


def check_format(events: list[dict[str, Any]]) -> None:
    """Fields per phase, sorted timestamps, X events nesting per thread, b/e pairs matching."""
    timed = [e for e in events if e["ph"] != "M"]
    assert [e["ts"] for e in timed] == sorted(e["ts"] for e in timed), "events sorted by ts"
    open_x: dict[tuple[int, int], list[tuple[int, int]]] = defaultdict(list)
    async_open: dict[tuple[str, str], dict[str, Any]] = {}
    for event in events:
        assert isinstance(event["pid"], int)
        if event["ph"] == "M":
            assert event["name"] in ("process_name", "thread_name") and isinstance(event["args"]["name"], str)
        elif event["ph"] == "X":
            assert {"tid", "ts", "dur", "name", "cat", "args"} <= set(event)
            assert isinstance(event["ts"], int) and isinstance(event["dur"], int) and event["dur"] >= 0
            stack = open_x[(event["pid"], event["tid"])]
            while stack and stack[-1][1] <= event["ts"]:
                stack.pop()
            if stack:  # inside its parent entirely, or it would not nest
                assert event["ts"] + event["dur"] <= stack[-1][1]
            stack.append((event["ts"], event["ts"] + event["dur"]))
        elif event["ph"] == "b":
            assert {"id", "cat", "name", "ts"} <= set(event)
            async_open[(event["cat"], event["id"])] = event
        elif event["ph"] == "e":
            begin = async_open.pop((event["cat"], event["id"]))
            assert begin["name"] == event["name"] and begin["ts"] <= event["ts"]
        else:
            assert event["ph"] == "C" and isinstance(event["args"]["value"], float)
    assert async_open == {}, "every async begin has its end"


def test_operations_threads_counters_and_units(tmp_path: Path) -> None:
    document, events = export(
        tmp_path / "t",
        operations=[
            op(T + 100, 50, tid=11, kind="write", offset=16384, path="/d/a.ibd"),
            op(T + 200, 400, tid=11, kind="fsync", path="/d/a.ibd"),
            op(T, 20, tid=12, kind="read", size=4096, offset=0, path='/d/"quoted".ibd'),
        ],
        lanes=[Lane(11, "page cleaner", process="mariadbd", pid=900), Lane(12, "connection 3", pid=900)],
        spans=[Span(11, T, 1000, "cpu", "running")],
        counters=[CounterSample("cpu.iowait", T + 500, 12.5, "%")],
    )
    check_format(events)
    assert document["displayTimeUnit"] == "ms"
    assert document["otherData"]["time_origin_epoch_us"] == T  # ts and dur are microseconds after it
    names = {(e["pid"], e.get("tid"), e["name"]): e["args"]["name"] for e in events if e["ph"] == "M"}
    assert names[(900, 0, "process_name")] == "mariadbd"
    assert names[(900, 11, "thread_name")] == "page cleaner"
    assert names[(900, 12, "thread_name")] == "connection 3"
    write = next(e for e in events if e.get("cat") == "write")
    assert write == {
        "ph": "X",
        "pid": 900,
        "tid": 11,
        "ts": 100,
        "dur": 50,
        "name": "pwrite64",
        "cat": "write",
        "args": {"file": "/d/a.ibd", "offset": 16384, "size": 16384, "result": "OK"},
    }
    fsync = next(e for e in events if e.get("cat") == "fsync")
    assert fsync["args"] == {"file": "/d/a.ibd", "offset": None, "size": None, "result": "OK"}
    read = next(e for e in events if e.get("cat") == "read")
    assert read["args"]["file"] == '/d/"quoted".ibd' and read["ts"] == 0
    cpu = next(e for e in events if e.get("cat") == "cpu")
    assert cpu["name"] == "running" and cpu["dur"] == 1000 and cpu["pid"] != 900  # its own process, "cpu"
    assert names[(cpu["pid"], 0, "process_name")] == "cpu"
    (counter,) = [e for e in events if e["ph"] == "C"]
    assert counter == {"ph": "C", "pid": 1, "ts": 500, "name": "cpu.iowait", "args": {"value": 12.5}}


def test_overlapping_operations_become_async_pairs(tmp_path: Path) -> None:
    """JuiceFS pid 0 and async IO overlap on one lane: X events there could not nest."""
    _, events = export(
        tmp_path / "t",
        operations=[op(T + i * 10, 35, tid=0, kind="write") for i in range(6)] + [op(T + 100, 5, tid=0)],
        lanes=[Lane(0, "juicefs background (pid 0)")],
    )
    check_format(events)
    complete = [e for e in events if e["ph"] == "X"]
    begins = [e for e in events if e["ph"] == "b"]
    # 0..35 is complete; 10, 20, 30 overlap it; 40..75 is complete again; 50 overlaps; 100 is free.
    assert [e["ts"] for e in complete] == [0, 40, 100]
    assert [e["ts"] for e in begins] == [10, 20, 30, 50]
    assert len({e["id"] for e in begins}) == 4
    assert sorted(e["ts"] for e in events if e["ph"] == "e") == [45, 55, 65, 85]


def test_large_trace_streams_in_slices(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(perfetto, "SLICE_OPERATIONS", 1000)
    operations = [op(T + i * 7, 5 + (i % 3) * 10, tid=1 + i % 4) for i in range(20_000)]
    data = make_trace(tmp_path / "t", operations, flush_every_ops=5000)
    chunks = list(perfetto.stream_events(data, job_id=1))
    assert len(chunks) > 20, "produced piece by piece"
    events = json.loads("".join(chunks))["traceEvents"]
    check_format(events)
    assert sum(1 for e in events if e["ph"] in ("X", "b")) == 20_000


def test_empty_trace_is_still_valid_json(tmp_path: Path) -> None:
    _, events = export(tmp_path / "t")
    assert [e["name"] for e in events] == ["process_name"]
