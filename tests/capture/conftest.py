"""Capture tests: real tracers (strace, iotrace for eBPF, oplogfs) on real sandbox servers, writing real traces."""

import threading
from collections.abc import Iterable
from pathlib import Path

import pytest

from app.traces.operation import Operation
from app.traces.records import CounterSample, Lane, Span
from app.traces.store import TraceWriter
from worker.sandbox.binary import ServerBinary, detect_server_binary

PAGE_SIZE = 16384


class Recorder:
    """The real trace writer, with a copy of what went into it kept for the assertions."""

    def __init__(self, writer: TraceWriter) -> None:
        self.writer = writer
        self.operations: list[Operation] = []
        self.lanes: dict[int, Lane] = {}
        self.meta: dict[str, object] = {}
        self._lock = threading.Lock()

    def add_operations(self, operations: Iterable[Operation]) -> None:
        batch = list(operations)
        with self._lock:
            self.operations += batch
        self.writer.add_operations(batch)

    def set_lane(self, lane: Lane) -> None:
        self.lanes[lane.tid] = lane
        self.writer.set_lane(lane)

    def add_spans(self, spans: Iterable[Span]) -> None:
        self.writer.add_spans(spans)

    def add_counters(self, samples: Iterable[CounterSample]) -> None:
        self.writer.add_counters(samples)

    def set_meta(self, **values: str | int | float | None) -> None:
        self.meta.update(values)
        self.writer.set_meta(**values)

    def role(self, tid: int) -> str:
        lane = self.lanes.get(tid)
        return lane.role if lane else "(unnamed)"

    def ibd_writes(self) -> list[Operation]:
        return [op for op in self.operations if op.kind == "write" and op.path and op.path.endswith(".ibd")]

    def ibd_reads(self) -> list[Operation]:
        return [op for op in self.operations if op.kind == "read" and op.path and op.path.endswith(".ibd")]


@pytest.fixture
def recorder(tmp_path: Path) -> Recorder:
    return Recorder(TraceWriter(tmp_path / "trace", flush_every_s=0.5))


@pytest.fixture(scope="session")
def binary() -> ServerBinary:
    return detect_server_binary()


@pytest.fixture(scope="session")
def small_demo_dump(work_root: Path) -> Path:
    from worker.demo import make_demo_dumps

    paths = make_demo_dumps(work_root / "capture-demo", work_root / "capture-demo-make", rows=2000, log=lambda _: None)
    return next(path for path in paths if path.name == "shop.sql")


def assert_page_io(operations: list[Operation], what: str) -> None:
    """Every operation is page-aligned with a size in whole pages, as InnoDB writes .ibd files."""
    assert operations, f"no {what} of .ibd files were captured"
    for op in operations:
        assert op.offset is not None and op.offset % PAGE_SIZE == 0, op
        assert op.size is not None and op.size > 0 and op.size % PAGE_SIZE == 0, op
