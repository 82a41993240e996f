"""What goes into a job's trace besides IO operations, and the one interface every producer writes to.

Producers (the capture backends, the CPU and server-state samplers, the import of an uploaded log) hand
records to a ``TraceSink``; the trace store is the sink that keeps them. All times are integers in
microseconds since the Unix epoch, so records from different producers line up on one time axis.

A lane is one thread, keyed by its kernel thread id (``tid``). Everything on a lane (operations, CPU
state spans, SQL state spans) carries that tid; machine- and server-wide series are counter tracks.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, Protocol

from app.traces.operation import Operation

SpanTrack = Literal["cpu", "state"]
CPU_STATES = ("running", "runnable", "blocked", "io_wait")


@dataclass(frozen=True, slots=True)
class Lane:
    """A thread and what it does.

    ``name`` is the raw name the system gives it ("thread/innodb/page_cleaner_thread" from
    performance_schema, or the comm "mariadbd"); ``role`` is the label a DBA reads ("page cleaner",
    "connection 12", "mysql client"). ``process`` is the program ("mariadbd", "mysql", "mariabackup").
    """

    tid: int
    role: str
    name: str = ""
    process: str = ""
    pid: int | None = None
    connection_id: int | None = None


@dataclass(frozen=True, slots=True)
class Span:
    """A stretch of time a thread spent in one state.

    ``track`` "cpu": ``label`` is one of CPU_STATES. ``track`` "state": ``label`` is what the server says
    the connection is doing (a SHOW PROCESSLIST state such as "setting auto-inc lock").
    """

    tid: int
    start_us: int
    duration_us: int
    track: SpanTrack
    label: str


@dataclass(frozen=True, slots=True)
class CounterSample:
    """One reading of a series drawn as a counter track ("cpu.iowait" in %, "server.rows_inserted" in rows/s)."""

    track: str
    t_us: int
    value: float
    unit: str = ""


class TraceSink(Protocol):
    """Where producers put records. Implementations are safe to call from several threads at once."""

    def add_operations(self, operations: Iterable[Operation]) -> None: ...

    def set_lane(self, lane: Lane) -> None:
        """Name a thread's lane; a later call for the same tid replaces the earlier one."""

    def add_spans(self, spans: Iterable[Span]) -> None: ...

    def add_counters(self, samples: Iterable[CounterSample]) -> None: ...
