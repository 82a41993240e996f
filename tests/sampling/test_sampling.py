"""sample_job end to end on real processes of this machine (its /proc sampler is a real child process)."""

import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Iterator

import pymysql
import pytest

from app.traces.records import Span
from tests.conftest import free_port
from tests.sampling.conftest import ListSink
from worker.capture.sampling import sample_job


@pytest.fixture
def busy_process() -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen(
        [sys.executable, "-c", "print('spinning', flush=True)\nwhile True: pass"], stdout=subprocess.PIPE
    )
    assert process.stdout is not None
    assert process.stdout.readline() == b"spinning\n"  # past its start-up, which reads files and sleeps
    yield process
    process.stdout.close()
    process.kill()
    process.wait()


@pytest.fixture
def sleeping_process() -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen(["sleep", "60"])
    yield process
    process.kill()
    process.wait()


def _spans_cover(spans: list[Span]) -> int:
    return sum(span.duration_us for span in spans)


def test_a_busy_and_a_sleeping_process(
    sink: ListSink, busy_process: subprocess.Popen[bytes], sleeping_process: subprocess.Popen[bytes]
) -> None:
    with sample_job(sink, pids=lambda: [busy_process.pid, sleeping_process.pid], connect=None) as report:
        time.sleep(1.5)
    busy_tid, sleeping_tid = busy_process.pid, sleeping_process.pid  # single-threaded: tid == pid
    # The lanes start once the sampler process is up (a fraction of a second on a busy machine).
    busy_covered, sleeping_covered = _spans_cover(sink.spans_of(busy_tid)), _spans_cover(sink.spans_of(sleeping_tid))
    assert busy_covered > 800_000 and sleeping_covered > 800_000
    on_cpu = sink.time_in(busy_tid, "running") + sink.time_in(busy_tid, "runnable")
    assert on_cpu > 0.9 * busy_covered
    assert sink.time_in(sleeping_tid, "blocked") == sleeping_covered
    # Merged: a lane that never changes state needs about one span per second, not one per round.
    assert len(sink.spans_of(sleeping_tid)) <= 3
    assert report.cpu_rounds >= 50 and report.errors == []
    busy = report.thread(busy_tid)
    assert busy is not None and busy.busy_pct + busy.runnable_pct > 90
    assert busy.comm == "python" or busy.comm.startswith("python")
    sleeping = report.thread(sleeping_tid)
    assert sleeping is not None and sleeping.busy_pct < 1 and sleeping.comm == "sleep"
    assert report.machine_rounds >= 4
    assert {"cpu.user", "cpu.system", "cpu.iowait", "cpu.steal", "cpu.busy_cores"} <= {c.track for c in sink.counters}
    assert max(sink.counter_values("cpu.busy_cores")) > 0.8
    assert report.sampler_cpu["cpu process"] > 0 and "relay" in report.sampler_cpu
    assert report.spans_written == len(sink.spans) and report.counters_written == len(sink.counters)


def test_processes_that_start_late_and_exit_early(sink: ListSink) -> None:
    watched: list[int] = []
    with sample_job(sink, pids=lambda: list(watched), connect=None, interval_s=0.01) as report:
        time.sleep(0.3)
        short = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.8)"])
        watched.append(short.pid)
        short.wait()
        time.sleep(0.5)
    spans = sink.spans_of(short.pid)
    assert spans, "a process started after sampling began was not picked up"
    # It ran about 0.8 s; its lane ends at the last round that saw it, not at the end of sampling.
    assert 300_000 < spans[-1].start_us + spans[-1].duration_us - spans[0].start_us < 1_000_000
    assert spans[-1].start_us + spans[-1].duration_us < report.stopped_us - 300_000
    assert report.thread(short.pid) is not None


def test_an_unreachable_server_is_reported_not_raised(
    sink: ListSink, sleeping_process: subprocess.Popen[bytes]
) -> None:
    # A TCP port nobody listens on, not a missing unix socket: PyMySQL 1.1 leaves the socket of a failed
    # unix-socket connect to the garbage collector, whose ResourceWarning then fails whatever test runs next.
    closed_port = free_port()

    def connect() -> pymysql.connections.Connection:
        return pymysql.connect(host="127.0.0.1", port=closed_port, user="root", connect_timeout=1)

    with sample_job(sink, pids=lambda: [sleeping_process.pid], connect=connect, server_interval_s=0.1) as report:
        time.sleep(0.5)
    assert [error.sampler for error in report.errors] == ["machine", "server"]
    server_error = report.errors[1]
    assert server_error.message.startswith("server state not read: Can't connect to")
    assert server_error.count == 1  # retried at most every 2 s, not every round
    assert report.server_rounds == 0 and report.performance_schema is None
    assert "no disk counters" in report.notes[0]
    assert sink.spans_of(sleeping_process.pid), "CPU sampling goes on without the server"


class _RefusingSink(ListSink):
    def add_spans(self, spans: Iterable[Span]) -> None:
        raise RuntimeError("disk full")


def test_a_failing_sink_and_a_failing_pid_list_are_reported(sleeping_process: subprocess.Popen[bytes]) -> None:
    calls = []

    def pids() -> list[int]:
        calls.append(1)
        if len(calls) > 1:
            raise ProcessLookupError("job gone")
        return [sleeping_process.pid]

    with sample_job(_RefusingSink(), pids=pids, connect=None) as report:
        time.sleep(1.3)
    messages = {(error.sampler, error.message) for error in report.errors}
    assert ("sink", "the trace store refused records: RuntimeError('disk full')") in messages
    assert ("cpu", "the list of processes to watch failed: ProcessLookupError('job gone')") in messages


def test_the_job_error_passes_through_and_the_samplers_stop() -> None:
    sink = ListSink()
    with pytest.raises(ValueError, match="restore failed"), sample_job(sink, pids=lambda: [], connect=None):
        raise ValueError("restore failed")
    assert not [thread for thread in threading.enumerate() if thread.name.startswith("restorescope-")]


@pytest.mark.parametrize("interval", [0.0, -1.0])
def test_intervals_must_be_positive(interval: float) -> None:
    with (
        pytest.raises(ValueError, match="positive"),
        sample_job(ListSink(), pids=list, connect=None, interval_s=interval),
    ):
        pass
