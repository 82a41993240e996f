from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from app.sandboxes.options import ServerOptions

DATABASE_NAME = r"^[^`/\\.\x00]{1,64}$"

CaptureChoice = Literal["auto", "none", "strace", "ebpf", "fuse"]


class SandboxTargetSpec(BaseModel):
    """A scratch server started for this job with the settings asked for, removed afterwards."""

    kind: Literal["sandbox"] = "sandbox"
    preset: str = Field(default="server-defaults", description="Name of a preset from /sandbox-presets")
    options: ServerOptions = Field(default_factory=ServerOptions, description="Settings on top of the preset")
    keep: bool = Field(default=False, description="Leave the sandbox running after the job, for inspection")


class SavedTargetSpec(BaseModel):
    """An existing server saved under /targets."""

    kind: Literal["saved"]
    target_id: int


TargetSpec = Annotated[SandboxTargetSpec | SavedTargetSpec, Field(discriminator="kind")]


class RestoreJobCreate(BaseModel):
    backup_path: str = Field(description="A backup under one of the backup roots, absolute or relative to a root")
    target: TargetSpec = Field(default_factory=SandboxTargetSpec)
    database: str | None = Field(
        default=None,
        pattern=DATABASE_NAME,
        description="Restore into this database; needed when the dump has no CREATE DATABASE/USE of its own",
    )
    verify: bool = Field(default=True, description="Compare per-table row counts with the dump afterwards")
    capture: CaptureChoice = Field(
        default="auto",
        description=(
            "How to record every read, write and fsync of every thread for the IO timeline: "
            "auto (eBPF when it can run here, else strace), none, strace, ebpf, or fuse (a logging "
            "passthrough file system over the sandbox datadir). An explicit choice that cannot run fails the job."
        ),
    )
    started_by: str | None = Field(default=None, max_length=128)


class VerificationPublic(BaseModel):
    database: str
    table: str
    check: str
    expected: int | None
    actual: int | None
    ok: bool
    detail: str | None


class JobPublic(BaseModel):
    id: int
    kind: str
    status: str
    phase: str
    parameters: dict[str, Any]
    backup_id: int | None
    backup_path: str | None
    target_id: int | None
    parent_id: int | None
    started_by: str | None
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    heartbeat_at: datetime | None
    cancel_requested: bool
    phase_times: dict[str, list[str | None]]
    bytes_total: int | None
    bytes_done: int
    rows_done: int
    percent: float | None = Field(description="Share of the backup's bytes consumed, 0-100")
    mb_per_s: float | None = Field(description="Backup bytes consumed per second while restoring, in MB (10^6)")
    rows_per_s: float | None
    eta_s: float | None = Field(description="Seconds left at the current rate")
    duration_s: float | None
    worker: str | None
    server_flavour: str | None
    server_version: str | None
    sandbox_port: int | None
    sandbox_dir: str | None
    sandbox_kept: bool
    error: str | None


class JobDetail(JobPublic):
    verification: list[VerificationPublic]


class JobsPublic(BaseModel):
    data: list[JobPublic]
    count: int


class JobLogPublic(BaseModel):
    id: int
    created_at: datetime
    level: str
    source: str
    message: str


class JobLogsPublic(BaseModel):
    data: list[JobLogPublic]
    next_after_id: int


class ServerSnapshotPublic(BaseModel):
    moment: str
    taken_at: datetime
    variables: dict[str, str]
    status: dict[str, str]


class ServerStatePublic(BaseModel):
    snapshots: list[ServerSnapshotPublic]
    status_delta: dict[str, float] = Field(description="Numeric SHOW GLOBAL STATUS counters, end minus start")
