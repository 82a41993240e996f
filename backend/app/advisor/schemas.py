"""The advisor's API shapes. Times are microseconds since the epoch, as in the trace API."""

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from app.jobs.schemas import JobPublic


class SettingPublic(BaseModel):
    option: str = Field(
        description="A restore request field (runner, threads, chunk_size, backup_path, database, use_memory, "
        "read_io_threads...), target.options.NAME for a sandbox's server option, or backup.tool / "
        "backup.compression for the next backup"
    )
    value: Any
    previous: Any = Field(description="What the analysed run had")


class ChangePublic(BaseModel):
    settings: list[SettingPublic]
    rerun: bool = Field(description="Whether “re-run with this change” can apply it to this job")
    note: str | None = Field(description="What to do instead when a re-run cannot apply it")


class RangePublic(BaseModel):
    t0_us: int
    t1_us: int


class WherePublic(BaseModel):
    lanes: list[int] = Field(description="Thread ids of the lanes the timeline highlights")
    ranges: list[RangePublic] = Field(description="Time ranges the timeline highlights")


class NumberPublic(BaseModel):
    label: str
    value: str


class OutcomePublic(BaseModel):
    """A suggestion a job was re-run with, and what the re-run measured."""

    rule: str
    title: str
    parent_job_id: int
    child_job_id: int
    child_status: str
    phase: str
    expected_speedup: float | None
    parent_seconds: float | None
    child_seconds: float | None
    speedup: float | None = Field(description="parent_seconds / child_seconds; above 1 the change helped")
    verdict: Literal["measuring", "helped", "no_effect", "slower", "failed"]
    created_at: datetime


class RecordPublic(BaseModel):
    """The score of a rule over every re-run made with it."""

    applied: int
    measured: int
    helped: int = Field(description="Re-runs at least 5% faster than their parent")
    median_speedup: float | None
    recent: list[OutcomePublic] = Field(description="The latest re-runs, newest first")


class SuggestionPublic(BaseModel):
    rule: str
    title: str
    seen: str
    numbers: list[NumberPublic]
    where: WherePublic
    change: ChangePublic
    expected: str
    expected_gain: float = Field(description="Share of the phase the change should save, from this run's evidence")
    expected_speedup: float
    caveat: str
    minor: bool = Field(description="Below the gain worth a re-run: listed so the reader sees it was checked")
    reruns: list[OutcomePublic] = Field(description="Re-runs of this job made with this suggestion")
    record: RecordPublic


class AdvicePublic(BaseModel):
    job_id: int
    state: Literal["ready", "pending", "unavailable"]
    note: str | None = Field(description="Why there is no advice (yet)")
    phase: str | None
    phase_s: float | None
    t0_us: int | None
    t1_us: int | None
    headline: str | None = Field(description="What held the run back")
    notes: list[str]
    suggestions: list[SuggestionPublic] = Field(description="Most to gain first; minor ones last")
    rules_checked: int
    applied_from: OutcomePublic | None = Field(description="The suggestion this job was re-run with, if it was")


class OpSidePublic(BaseModel):
    count: int
    bytes: int
    mb_per_s: float
    p50_us: int
    p95_us: int
    p99_us: int


class OpComparePublic(BaseModel):
    op: str
    kind: str
    a: OpSidePublic | None
    b: OpSidePublic | None
    count_change_pct: float | None = Field(description="(b - a) / a in %")
    bytes_change_pct: float | None
    p95_change_pct: float | None


class CompareSidePublic(BaseModel):
    job: JobPublic
    phase: str
    phase_s: float | None
    t0_us: int | None
    t1_us: int | None
    mb_per_s: float | None = Field(description="Backup bytes per second of the phase, in MB (10^6)")
    rows_per_s: float | None
    has_trace: bool


class SettingDiffPublic(BaseModel):
    option: str
    a: Any
    b: Any


class ComparePublic(BaseModel):
    a: CompareSidePublic
    b: CompareSidePublic
    speedup: float | None = Field(description="a's phase seconds / b's: above 1, b was faster")
    settings: list[SettingDiffPublic] = Field(description="Parameters that differ between the two runs")
    kinds: list[OpComparePublic]
    ops: list[OpComparePublic]
    applied: OutcomePublic | None = Field(description="The suggestion b was re-run from a with, if it was")
