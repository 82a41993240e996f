"""Per-thread CPU state: parsing /proc files, intervals to labels, merging, threads that come and go."""

import os
import threading
import time
from pathlib import Path

import pytest

from app.traces.records import Span
from worker.capture.cpu_sampler import (
    IntervalShares,
    MalformedProcFile,
    ProcReader,
    SchedStat,
    SpanMerger,
    TaskStat,
    ThreadReading,
    ThreadTracker,
    classify,
    idle_label,
    interval_shares,
    parse_schedstat,
    parse_task_stat,
)

# A real line of /proc/PID/task/TID/stat from mariadbd, and variants.
_STAT_TAIL = "S 1 11195 7949 0 -1 4194624 2157 0 0 0 310 95 0 0 20 0 13 0 92122 1317244928 24000 18446744073709551615"


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (f"11207 (mariadbd) {_STAT_TAIL}", TaskStat("mariadbd", "S", 310, 95, 92122)),
        # The comm may contain spaces and parentheses: only the last ')' ends it.
        (f"42 (odd (name) x) {_STAT_TAIL.replace('S', 'D', 1)}", TaskStat("odd (name) x", "D", 310, 95, 92122)),
        (f"43 () {_STAT_TAIL.replace('S', 'R', 1)}", TaskStat("", "R", 310, 95, 92122)),
    ],
    ids=["plain", "parentheses-in-comm", "empty-comm"],
)
def test_parse_task_stat(line: str, expected: TaskStat) -> None:
    assert parse_task_stat(line) == expected


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("", "no \\(comm\\)"),
        ("12 mariadbd S 1 2 3", "no \\(comm\\)"),
        ("12 (mariadbd) S 1 2 3", "expected at least 22"),
        (f"12 (mariadbd) {_STAT_TAIL.replace('310', 'x')}", "non-numeric"),
    ],
    ids=["empty", "no-parentheses", "truncated", "not-a-number"],
)
def test_parse_task_stat_rejects_what_it_cannot_read(line: str, message: str) -> None:
    with pytest.raises(MalformedProcFile, match=message):
        parse_task_stat(line)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("185979 0 1\n", SchedStat(185979, 0)),
        ("8123456789 1200000 5321", SchedStat(8123456789, 1200000)),
    ],
)
def test_parse_schedstat(text: str, expected: SchedStat) -> None:
    assert parse_schedstat(text) == expected


@pytest.mark.parametrize("text", ["", "12", "a b c"])
def test_parse_schedstat_rejects_garbage(text: str) -> None:
    with pytest.raises(MalformedProcFile):
        parse_schedstat(text)


def _reading(
    on_cpu_ns: int = 0, runqueue_ns: int = 0, state: str = "S", tid: int = 7, start: int = 100
) -> ThreadReading:
    return ThreadReading(tid, 1, "mariadbd", state, on_cpu_ns, runqueue_ns, start)


INTERVAL_NS = 20_000_000


@pytest.mark.parametrize(
    ("before", "after", "shares", "label"),
    [
        (_reading(0, 0), _reading(20_000_000, 0, "R"), IntervalShares(20_000_000, 0, 0), "running"),
        (_reading(0, 0), _reading(11_000_000, 0), IntervalShares(11_000_000, 0, 9_000_000), "running"),
        (
            _reading(0, 0),
            _reading(5_000_000, 12_000_000, "R"),
            IntervalShares(5_000_000, 12_000_000, 3_000_000),
            "runnable",
        ),
        (_reading(0, 0), _reading(1_000_000, 0), IntervalShares(1_000_000, 0, 19_000_000), "blocked"),
        (_reading(0, 0, "D"), _reading(0, 0, "S"), IntervalShares(0, 0, 20_000_000), "io_wait"),
        (_reading(0, 0), _reading(2_000_000, 0, "D"), IntervalShares(2_000_000, 0, 18_000_000), "io_wait"),
        # Ties: running wins over the rest, runnable over off-CPU.
        (_reading(0, 0), _reading(10_000_000, 0), IntervalShares(10_000_000, 0, 10_000_000), "running"),
        (_reading(0, 0), _reading(0, 10_000_000), IntervalShares(0, 10_000_000, 10_000_000), "runnable"),
        # The two files are read microseconds apart: a delta above the interval is clamped to it.
        (_reading(0, 0), _reading(20_400_000, 900_000, "R"), IntervalShares(20_000_000, 0, 0), "running"),
        # Preempted the whole interval: the wait shows in schedstat only once it ends; R at both ends says so.
        (_reading(0, 0, "R"), _reading(0, 0, "R"), IntervalShares(0, 0, 20_000_000), "runnable"),
        (_reading(0, 0, "S"), _reading(0, 0, "R"), IntervalShares(0, 0, 20_000_000), "blocked"),
        # A counter that went backwards (cannot happen for one thread) counts as nothing.
        (_reading(5_000_000, 0), _reading(1_000_000, 0), IntervalShares(0, 0, 20_000_000), "blocked"),
    ],
    ids=[
        "all-running",
        "mostly-running",
        "waiting-for-a-cpu",
        "mostly-asleep",
        "disk-sleep-at-start",
        "disk-sleep-at-end",
        "tie-running",
        "tie-runnable",
        "clamped",
        "preempted-all-along",
        "just-woken",
        "backwards",
    ],
)
def test_interval_to_label(before: ThreadReading, after: ThreadReading, shares: IntervalShares, label: str) -> None:
    assert interval_shares(before, after, INTERVAL_NS) == shares
    assert classify(before, shares, after) == label


@pytest.mark.parametrize("state", ["R", "S", "D", "T", "t", "Z", "I"])
def test_idle_label_is_what_classify_says_of_an_interval_without_change(state: str) -> None:
    unchanged = _reading(5 * 1_000_000, 1_000_000, state)
    assert idle_label(state) == classify(unchanged, interval_shares(unchanged, unchanged, INTERVAL_NS), unchanged)


def test_merger_joins_equal_neighbours_and_splits_on_change_gap_and_length() -> None:
    merger = SpanMerger("cpu", max_span_us=100)
    steps: list[tuple[int, int, str, list[Span]]] = [
        (0, 20, "running", []),
        (20, 40, "running", []),
        (40, 60, "blocked", [Span(1, 0, 40, "cpu", "running")]),
        # A gap (a round that did not read this thread) ends the span even with the same label.
        (70, 90, "blocked", [Span(1, 40, 20, "cpu", "blocked")]),
        (90, 170, "blocked", [Span(1, 70, 100, "cpu", "blocked")]),  # reached max_span_us: cut
        (170, 190, "blocked", []),
    ]
    for start, end, label, finished in steps:
        assert merger.extend(1, start, end, label) == finished
    assert merger.close(1) == [Span(1, 170, 20, "cpu", "blocked")]
    assert merger.close(1) == []


def test_merger_keeps_threads_apart() -> None:
    merger = SpanMerger("state")
    assert merger.extend(1, 0, 10, "Update") == []
    assert merger.extend(2, 0, 10, "Update") == []
    assert merger.extend(1, 10, 20, "Update") == []
    assert sorted(merger.close_all(), key=lambda span: span.tid) == [
        Span(1, 0, 20, "state", "Update"),
        Span(2, 0, 10, "state", "Update"),
    ]


MS = 1_000_000  # ns


def test_tracker_new_thread_needs_two_rounds_and_a_vanished_one_ends_where_last_seen() -> None:
    tracker = ThreadTracker()
    rounds: list[tuple[int, dict[int, ThreadReading]]] = [
        (0, {1: _reading(0, tid=1)}),
        (20_000, {1: _reading(20 * MS, tid=1), 2: _reading(0, tid=2)}),
        (40_000, {1: _reading(40 * MS, tid=1), 2: _reading(1 * MS, tid=2)}),
        (60_000, {2: _reading(2 * MS, tid=2)}),  # thread 1 exited
        (80_000, {2: _reading(3 * MS, tid=2)}),
    ]
    spans: list[Span] = []
    for t_us, readings in rounds:
        spans += tracker.update(t_us, readings)
    assert spans == [Span(1, 0, 40_000, "cpu", "running")]
    assert tracker.finish() == [Span(2, 20_000, 60_000, "cpu", "blocked")]
    busy = {thread.tid: thread for thread in tracker.threads()}
    assert (busy[1].first_seen_us, busy[1].last_seen_us, busy[1].busy_pct) == (0, 40_000, 100.0)
    assert busy[1].label_pct("running") == 100.0
    assert (busy[2].observed_us, busy[2].cpu_ns) == (60_000, 3 * MS)
    assert busy[2].busy_pct == pytest.approx(5.0)
    assert [thread.tid for thread in tracker.threads()] == [1, 2]  # busiest first


def test_tracker_tells_a_reused_tid_from_the_thread_that_had_it() -> None:
    tracker = ThreadTracker()
    spans = tracker.update(0, {5: _reading(100 * MS, tid=5, start=1000)})
    spans += tracker.update(20_000, {5: _reading(120 * MS, tid=5, start=1000)})
    # Same tid, later start time, a CPU counter far below the old one: a new thread, not -100 ms of CPU.
    spans += tracker.update(40_000, {5: _reading(1 * MS, tid=5, start=2000)})
    spans += tracker.update(60_000, {5: _reading(1 * MS, tid=5, start=2000)})
    spans += tracker.finish()
    assert spans == [Span(5, 0, 20_000, "cpu", "running"), Span(5, 40_000, 20_000, "cpu", "blocked")]
    assert sorted((thread.cpu_ns, thread.first_seen_us) for thread in tracker.threads()) == [
        (0, 40_000),
        (20 * MS, 0),
    ]


def test_tracker_treats_an_unchanged_reading_as_off_cpu() -> None:
    # ProcReader hands back the very same object when schedstat has not moved.
    tracker = ThreadTracker()
    asleep = _reading(5 * MS, state="D")
    tracker.update(0, {7: asleep})
    tracker.update(20_000, {7: asleep})
    assert tracker.finish() == [Span(7, 0, 20_000, "cpu", "io_wait")]


def _burn_until(stop: threading.Event, tids: list[int]) -> None:
    tids.append(threading.get_native_id())
    while not stop.is_set():
        pass


def test_proc_reader_on_real_threads_of_this_process() -> None:
    reader = ProcReader()
    stop, tids = threading.Event(), list[int]()
    burner = threading.Thread(target=_burn_until, args=(stop, tids))
    burner.start()
    try:
        while not tids:
            time.sleep(0.001)
        first = reader.read([os.getpid(), os.getpid()])  # listed twice: read once
        time.sleep(0.05)
        second = reader.read([os.getpid()])
    finally:
        stop.set()
        burner.join()
    tid = tids[0]
    # join() returns a moment before the OS thread is gone.
    deadline = time.monotonic() + 2
    while (third := reader.read([os.getpid(), 999_999_999])) and tid in third and time.monotonic() < deadline:
        time.sleep(0.01)
    reader.close()
    assert tid in first and tid in second and tid not in third  # 999_999_999: no such process, skipped
    assert threading.get_native_id() in third
    assert first[tid].pid == os.getpid() and first[tid].comm
    assert second[tid].on_cpu_ns > first[tid].on_cpu_ns
    assert first[tid].start_ticks == second[tid].start_ticks
    assert not reader.schedstat_missing


def test_proc_reader_without_schedstat_falls_back_to_ticks(tmp_path: Path) -> None:
    # A /proc tree as kernels without CONFIG_SCHED_INFO have it: no schedstat file.
    task = tmp_path / "10" / "task" / "11"
    task.mkdir(parents=True)
    (task / "stat").write_text(f"11 (mysql) {_STAT_TAIL.replace('S', 'R', 1)}\n")
    (tmp_path / "10" / "stat").write_text(f"10 (mysql) {_STAT_TAIL}\n")
    reader = ProcReader(tmp_path)
    readings = reader.read([10])
    reader.close()
    assert reader.schedstat_missing
    assert readings[11].on_cpu_ns == (310 + 95) * 1_000_000_000 // os.sysconf("SC_CLK_TCK")
    assert (readings[11].pid, readings[11].state, readings[11].runqueue_ns) == (10, "R", 0)


def _wait_until(stop: threading.Event, tids: list[int]) -> None:
    tids.append(threading.get_native_id())
    stop.wait()


def test_proc_reader_sees_a_thread_started_between_rounds() -> None:
    # The task list is read again only when the thread count changes: a new thread must change it.
    reader = ProcReader()
    before = reader.read([os.getpid()])
    stop, tids = threading.Event(), list[int]()
    waiter = threading.Thread(target=_wait_until, args=(stop, tids))
    waiter.start()
    try:
        while not tids:
            time.sleep(0.001)
        after = reader.read([os.getpid()])
    finally:
        stop.set()
        waiter.join()
        reader.close()
    assert tids[0] not in before and tids[0] in after
    assert set(before) <= set(after)


def test_tracker_totals_keep_a_wait_the_kernel_credits_late() -> None:
    tracker = ThreadTracker()
    preempted = _reading(0, 0, state="R")
    spans = tracker.update(0, {7: preempted})
    spans += tracker.update(20_000, {7: preempted})  # unchanged: still waiting for a CPU
    # Now it ran 10 ms, and the 30 ms it waited (over both intervals) shows up at once; the label of
    # this interval can only use 20 ms of it (10 running, 10 runnable: a tie, running wins).
    spans += tracker.update(40_000, {7: _reading(10 * MS, 30 * MS, state="R")})
    spans += tracker.finish()
    assert spans == [Span(7, 0, 20_000, "cpu", "runnable"), Span(7, 20_000, 20_000, "cpu", "running")]
    [busy] = tracker.threads()
    assert (busy.cpu_ns, busy.runnable_ns) == (10 * MS, 30 * MS)
    assert (busy.busy_pct, busy.runnable_pct) == (25.0, 75.0)
