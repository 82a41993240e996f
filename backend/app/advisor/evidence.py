"""What the advisor knows of a run: the input of every rule. Plain frozen data, so rules are pure functions and
tests build evidence by hand (``replace(quiet, field=value)``).

Times are seconds over the run's main phase ("restoring", or "preparing" for a physical backup), the window
in which every share below is measured; ``None`` means "not known for this run" (no trace, capture off, a
server variable the server does not have), and a rule that needs it stays silent.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

LaneGroup = Literal["loading", "tool", "background"]


@dataclass(frozen=True)
class Host:
    cpus: int
    memory_bytes: int | None = None
    disk_device: str | None = None
    disk_rotational: bool | None = None


@dataclass(frozen=True)
class JobFacts:
    """What the job asked for and what the worker used."""

    kind: Literal["restore", "prepare", "import"]  # prepare: a physical restore, whose main phase is the prepare
    runner: str | None = None
    backup_path: str | None = None
    backup_format: str | None = None
    backup_compression: str | None = None
    backup_bytes: int | None = None
    database: str | None = None
    target_kind: Literal["sandbox", "saved"] | None = "sandbox"
    threads: int | None = None  # connections the runner used (1 for the mysql client)
    chunk_size: int | None = None
    use_memory: str | None = None
    read_io_threads: int | None = None
    write_io_threads: int | None = None
    capture: str | None = None
    aio_mode: str | None = None  # the server's AIO mode as the trace recorded it: io_uring, aio, off
    # Verified tables of the run as (database, table): what an alternative backup must hold to be the same data.
    tables: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class LaneActivity:
    """One thread over the main phase: where its time went (CPU states from the /proc sampler, IO and server
    states from the trace)."""

    tid: int
    role: str
    process: str
    group: LaneGroup
    running_s: float = 0.0
    runnable_s: float = 0.0  # ready, waiting for a CPU
    io_wait_s: float = 0.0  # uninterruptible sleep (disk)
    blocked_s: float = 0.0  # off the CPU otherwise: a lock, the network, a condition
    # Running share (0..1) in each of `Evidence.buckets` equal slices of the phase.
    running_series: tuple[float, ...] = ()
    # The processlist state it spent most of each slice in ("" when none was sampled).
    state_series: tuple[str, ...] = ()
    # Seconds in each SHOW PROCESSLIST state ("Update", "setting auto-inc lock"...).
    states: Mapping[str, float] = field(default_factory=dict)
    fsync_s: float = 0.0  # inside fsync/fdatasync (redo and binary log flushes at commit, for a connection)
    data_read_s: float = 0.0  # inside reads of data files (.ibd, ibdata): pages not in the buffer pool
    data_reads: int = 0

    @property
    def sampled_s(self) -> float:
        return self.running_s + self.runnable_s + self.io_wait_s + self.blocked_s


@dataclass(frozen=True)
class Interval:
    t0_us: int
    t1_us: int


@dataclass(frozen=True)
class Series:
    """A counter track over the phase: (t_us, value) samples."""

    t_us: tuple[int, ...]
    values: tuple[float, ...]


@dataclass(frozen=True)
class IoFacts:
    """Operations of every thread over the main phase (from the trace)."""

    fsyncs: int = 0
    fsync_p50_us: int = 0
    fsync_total_s: float = 0.0
    data_writes: int = 0  # writes to data files (.ibd, ibdata*, undo)
    data_write_bytes: int = 0
    data_write_p50_bytes: int = 0
    data_write_p95_us: int = 0
    data_sequential_pct: float = 100.0  # of reads and writes of data files with an offset
    bytes_written_by_file_kind: Mapping[str, int] = field(default_factory=dict)  # redo, data, system, binlog, other


@dataclass(frozen=True)
class PrepareFacts:
    batches: int
    use_memory: str | None
    redo_bytes: int | None
    prepare_seconds: float
    copy_seconds: float = 0.0


@dataclass(frozen=True)
class Alternative:
    """Another backup under the roots holding the same tables, in another format or compression."""

    path: str
    format: str
    compression: str | None
    size_bytes: int
    delimited: bool  # rows as text fields (mysqldump --tab, MySQL Shell, mydumper --load-data), not SQL
    database: str | None = None  # the database to restore it into, for a dump that does not name one


@dataclass(frozen=True)
class Evidence:
    job: JobFacts
    host: Host
    phase: str  # "restoring", "preparing", or "trace" for an import
    t0_us: int
    t1_us: int
    lanes: tuple[LaneActivity, ...] = ()
    has_cpu: bool = False  # CPU spans were sampled (capture on)
    has_trace: bool = False  # IO operations were captured
    buckets: int = 0
    busy_cores: float | None = None  # mean over the phase, of all processes on the host
    iowait_pct: float | None = None  # % of all CPU time (machine-wide)
    io: IoFacts = field(default_factory=IoFacts)
    checkpoint_age_mb: Series | None = None
    variables: Mapping[str, str] = field(default_factory=dict)
    status_delta: Mapping[str, float] = field(default_factory=dict)
    status_end: Mapping[str, str] = field(default_factory=dict)
    prepare: PrepareFacts | None = None
    alternatives: tuple[Alternative, ...] = ()

    @property
    def seconds(self) -> float:
        return max(self.t1_us - self.t0_us, 1) / 1e6

    @property
    def window(self) -> Interval:
        return Interval(self.t0_us, self.t1_us)

    def group(self, group: LaneGroup) -> list[LaneActivity]:
        return [lane for lane in self.lanes if lane.group == group]

    def process_running_s(self, *processes: str) -> float:
        return sum(lane.running_s for lane in self.lanes if lane.process in processes)

    def variable(self, name: str) -> str | None:
        value = self.variables.get(name)
        return None if value is None else str(value)

    def variable_int(self, name: str) -> int | None:
        value = self.variable(name)
        try:
            return int(value) if value is not None else None
        except ValueError:
            return None

    def variable_on(self, name: str) -> bool | None:
        value = self.variable(name)
        if value is None:
            return None
        return value.upper() in ("ON", "1", "YES", "TRUE")
