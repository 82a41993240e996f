"""A sink that keeps records in lists: the seam for tests of the samplers alone (the real store is A's TraceWriter)."""

import threading
from collections.abc import Iterable

import pytest

from app.traces.operation import Operation
from app.traces.records import CounterSample, Lane, Span


class ListSink:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.operations: list[Operation] = []
        self.lanes: dict[int, Lane] = {}
        self.spans: list[Span] = []
        self.counters: list[CounterSample] = []

    def add_operations(self, operations: Iterable[Operation]) -> None:
        with self._lock:
            self.operations += operations

    def set_lane(self, lane: Lane) -> None:
        with self._lock:
            self.lanes[lane.tid] = lane

    def add_spans(self, spans: Iterable[Span]) -> None:
        with self._lock:
            self.spans += spans

    def add_counters(self, samples: Iterable[CounterSample]) -> None:
        with self._lock:
            self.counters += samples

    def spans_of(self, tid: int, track: str = "cpu") -> list[Span]:
        return sorted(
            (span for span in self.spans if span.tid == tid and span.track == track), key=lambda s: s.start_us
        )

    def time_in(self, tid: int, label: str, track: str = "cpu") -> int:
        return sum(span.duration_us for span in self.spans_of(tid, track) if span.label == label)

    def counter_values(self, track: str) -> list[float]:
        return [sample.value for sample in sorted(self.counters, key=lambda c: c.t_us) if sample.track == track]


@pytest.fixture
def sink() -> ListSink:
    return ListSink()
