"""The trace API's response shapes (see /work/coord/CONTRACT.md); times are microseconds since the epoch."""

from typing import Literal

from pydantic import BaseModel, Field

Kind = Literal["read", "write", "fsync", "open", "close", "other"]
TraceStatusName = Literal["recording", "complete", "failed"]


class MalformedLinePublic(BaseModel):
    line_no: int = Field(description="1-based line number in the uploaded or captured log")
    reason: str
    text: str = Field(description="The line, cut to 200 characters")


class LanePublic(BaseModel):
    tid: int
    role: str
    name: str = ""
    process: str = ""
    pid: int | None = None
    connection_id: int | None = None
    operations: int = 0
    busy_us: int = Field(0, description="Summed duration of the lane's operations")


class CounterTrackPublic(BaseModel):
    track: str
    unit: str


class TracePublic(BaseModel):
    job_id: int
    source: Literal["capture", "import"]
    backend: str
    status: TraceStatusName
    aio_mode: str | None
    visibility: str | None
    fallback_reason: str | None
    operations: int
    malformed_lines: int
    malformed: list[MalformedLinePublic]
    t_min_us: int | None
    t_max_us: int | None
    bytes_read: int
    bytes_written: int
    lanes: list[LanePublic]
    kinds: dict[str, int]
    counters: list[CounterTrackPublic]
    meta: dict[str, str | int | float | None] = Field(description="Other facts the capture or import recorded")


class BucketPublic(BaseModel):
    i: int = Field(description="Bucket index: it covers [t0_us + i * bucket_us, t0_us + (i + 1) * bucket_us)")
    busy: float = Field(description="Fraction (0..1) of the bucket the lane spent inside an operation")
    kind: Kind = Field(description="The kind with the most time in the bucket")
    count: int = Field(description="Operations starting in the bucket")
    bytes: int = Field(description="Bytes read or written by the operations starting in the bucket")


class WindowOperationPublic(BaseModel):
    start_us: int
    duration_us: int
    op: str
    kind: Kind
    path: str | None
    offset: int | None
    size: int | None
    result: str


class SpanPublic(BaseModel):
    start_us: int
    duration_us: int
    track: Literal["cpu", "state"]
    label: str


class WindowLanePublic(BaseModel):
    tid: int
    detail: Literal["buckets", "operations"]
    buckets: list[BucketPublic]
    operations: list[WindowOperationPublic]
    spans: list[SpanPublic]


class CounterSeriesPublic(BaseModel):
    track: str
    unit: str
    points: list[tuple[int, float]] = Field(description="[t_us, value] pairs, at most ~2 per pixel")


class WindowPublic(BaseModel):
    t0_us: int
    t1_us: int
    bucket_us: int
    lanes: list[WindowLanePublic]
    counters: list[CounterSeriesPublic]


class LatencyPublic(BaseModel):
    p50: int
    p95: int
    p99: int
    max: int


class KindStatsPublic(BaseModel):
    kind: Kind
    count: int
    bytes: int
    mb_per_s: float
    latency_us: LatencyPublic


class OpStatsPublic(KindStatsPublic):
    op: str


class LatencyBucketPublic(BaseModel):
    le_us: int
    count: int


class SizeBucketPublic(BaseModel):
    le_bytes: int
    count: int


class LatencyHistogramPublic(BaseModel):
    kind: Kind
    buckets: list[LatencyBucketPublic]


class SizeHistogramPublic(BaseModel):
    kind: Kind
    buckets: list[SizeBucketPublic]


class ThreadStatsPublic(BaseModel):
    tid: int
    role: str
    busy_pct: float
    cpu_pct: float | None
    operations: int
    bytes: int


class FileStatsPublic(BaseModel):
    path: str
    reads: int
    writes: int
    fsyncs: int
    bytes_read: int
    bytes_written: int
    busy_us: int


class AccessPublic(BaseModel):
    sequential_ops: int
    random_ops: int
    sequential_pct: float


class StatsPublic(BaseModel):
    t0_us: int
    t1_us: int
    duration_us: int
    by_kind: list[KindStatsPublic]
    by_op: list[OpStatsPublic]
    latency_histogram: list[LatencyHistogramPublic]
    size_histogram: list[SizeHistogramPublic]
    threads: list[ThreadStatsPublic]
    files: list[FileStatsPublic]
    access: AccessPublic
    fsync_time_pct: float


class OperationPublic(WindowOperationPublic):
    tid: int


class OperationsPublic(BaseModel):
    total: int
    items: list[OperationPublic]


class TraceImportPublic(BaseModel):
    job_id: int
    format: Literal["juicefs", "strace"]
    operations: int
    lanes: int
    malformed_lines: int
    malformed: list[MalformedLinePublic]
