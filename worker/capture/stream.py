"""From a tracer's output pipe to a TraceSink: lines in, Operation batches out, in bounded memory.

A tracer writes lines to a pipe; one thread per pipe reads them, a parser turns each line into zero or
more operations, and a batcher hands them to the sink every few thousand operations or a quarter of a
second, whichever comes first, so the trace store sees new data while the job runs and no more than one
batch per pipe ever sits in memory. When the pipe closes the parser is finished, the last batch goes
out, and lines that could not be read are reported to the sink when it can take them.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import IO, Protocol

from app.traces.operation import Malformed, Operation
from app.traces.records import TraceSink

log = logging.getLogger("restorescope.capture")

BATCH_OPERATIONS = 5_000
BATCH_SECONDS = 0.25


class LineParser(Protocol):
    lines: int
    malformed: list[Malformed]

    def feed(self, line: str) -> list[Operation]: ...

    def finish(self) -> None: ...


class OperationBatcher:
    """Collects operations and hands them to the sink in batches (one batcher per thread)."""

    def __init__(self, sink: TraceSink, max_operations: int = BATCH_OPERATIONS, max_seconds: float = BATCH_SECONDS):
        self._sink = sink
        self._max_operations = max_operations
        self._max_seconds = max_seconds
        self._batch: list[Operation] = []
        self._due = time.monotonic() + max_seconds
        self.count = 0

    def add(self, operations: Iterable[Operation]) -> None:
        self._batch.extend(operations)
        if len(self._batch) >= self._max_operations or time.monotonic() >= self._due:
            self.flush()

    def flush_if_due(self) -> None:
        if self._batch and time.monotonic() >= self._due:
            self.flush()

    def flush(self) -> None:
        if self._batch:
            self._sink.add_operations(self._batch)
            self.count += len(self._batch)
            self._batch = []
        self._due = time.monotonic() + self._max_seconds


def report_malformed(sink: TraceSink, malformed: list[Malformed]) -> None:
    """Tell the sink about unreadable lines when it keeps them (the trace store does)."""
    add_malformed: Callable[[Iterable[Malformed]], None] | None = getattr(sink, "add_malformed", None)
    if add_malformed is not None and malformed:
        add_malformed(malformed)


class LinePump:
    """Reads a pipe line by line in a thread: parse, transform, batch into the sink."""

    def __init__(
        self,
        name: str,
        pipe: IO[bytes],
        parser: LineParser,
        sink: TraceSink,
        transform: Callable[[list[Operation]], list[Operation]] | None = None,
        on_other_line: Callable[[str], bool] | None = None,
    ) -> None:
        self.name = name
        self._pipe = pipe
        self._parser = parser
        self._sink = sink
        self._transform = transform
        # Sees each line first; returns True when the line was its own (not for the parser).
        self._on_other_line = on_other_line
        self.batcher = OperationBatcher(sink)
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=f"capture-{name}", daemon=True)

    def start(self) -> LinePump:
        self._thread.start()
        return self

    def join(self, timeout_s: float | None = None) -> None:
        self._thread.join(timeout_s)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def _run(self) -> None:
        try:
            self._pump()
        except BaseException as error:  # reported by the session, never lost in a thread
            log.exception("capture reader %s failed", self.name)
            self.error = error
        finally:
            self._pipe.close()

    def _pump(self) -> None:
        parser, batcher, transform, other = self._parser, self.batcher, self._transform, self._on_other_line
        for raw in self._pipe:
            line = raw.decode(errors="replace")
            if other is not None and other(line):
                continue
            operations = parser.feed(line)
            if operations:
                batcher.add(transform(operations) if transform else operations)
            else:
                batcher.flush_if_due()
        parser.finish()
        batcher.flush()
        report_malformed(self._sink, parser.malformed)
