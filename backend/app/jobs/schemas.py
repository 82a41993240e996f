from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, model_validator

from app.sandboxes.options import SIZE_PATTERN, ServerOptions

DATABASE_NAME = r"^[^`/\\.\x00]{1,64}$"

CaptureChoice = Literal["auto", "none", "strace", "ebpf", "fuse"]
RunnerChoice = Literal["auto", "loader", "mysql", "myloader", "mysqlimport", "mariabackup", "xtrabackup"]

# The loader's chunk: how much of a table one transaction loads (worker.runners.loader.DEFAULT_CHUNK_SIZE and
# MIN_CHUNK_SIZE; a test checks they agree). Above 1 GiB a chunk only makes a rollback and a resume longer.
DEFAULT_CHUNK_SIZE = 64 << 20
MIN_CHUNK_SIZE = 64 << 10
MAX_CHUNK_SIZE = 1 << 30
MAX_THREADS = 64


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


class JobRequest(BaseModel):
    @model_validator(mode="before")
    @classmethod
    def _started_by_is_the_session(cls, data: Any) -> Any:
        # Refused rather than ignored, so a script that used to set it learns why its value is not shown.
        if isinstance(data, dict) and "started_by" in data:
            raise ValueError("started_by is the logged-in user and cannot be set; leave it out")
        return data


class RestoreJobCreate(JobRequest):
    backup_path: str = Field(description="A backup under one of the backup roots, absolute or relative to a root")
    target: TargetSpec = Field(default_factory=SandboxTargetSpec)
    database: str | None = Field(
        default=None,
        pattern=DATABASE_NAME,
        description="Restore into this database; needed when the dump has no CREATE DATABASE/USE of its own",
    )
    verify: bool = Field(default=True, description="Compare per-table row counts with the dump afterwards")
    checksum_source_id: int | None = Field(
        default=None,
        description=(
            "A saved target holding the data the backup was taken from: after the row counts, CHECKSUM TABLE ... "
            "EXTENDED of every restored table is compared with the same table there, and a difference fails the "
            "job. The source must not have changed since the backup (else differences are expected), and CHECKSUM "
            "TABLE reads every row on both servers (costly on big tables). An unreachable source is skipped with a "
            "warning. Logical restores with verify only"
        ),
    )
    capture: CaptureChoice = Field(
        default="auto",
        description=(
            "How to record every read, write and fsync of every thread for the IO timeline: "
            "auto (eBPF when it can run here, else strace), none, strace, ebpf, or fuse (a logging "
            "passthrough file system over the sandbox datadir). An explicit choice that cannot run fails the job."
        ),
    )
    runner: RunnerChoice = Field(
        default="auto",
        description=(
            "What restores the backup: loader (restorescope's parallel loader: mysqldump files, mysqldump --tab, "
            "mydumper and MySQL Shell dumps), mysql (the mysql client reading a mysqldump file, one connection), "
            "myloader (mydumper directories), mysqlimport (mysqldump --tab directories with plain .txt files), "
            "mariabackup (a mariabackup directory: prepared on a copy, copied back into a new sandbox, started and "
            "checked table by table), xtrabackup (the same for Percona XtraBackup; untested), "
            "or auto: mariabackup (xtrabackup) for a physical backup, else the loader, which reads every dump format "
            "and is the fastest. A runner that cannot read the backup's format is refused."
        ),
    )
    use_memory: str | None = Field(
        default=None,
        pattern=SIZE_PATTERN,  # as the server's sizes, so the form words its message the same way
        description=(
            "Physical backups: memory the prepare may use to apply the redo log (mariabackup --use-memory, e.g. 1G; "
            "default 96M). Redo that does not fit is applied in several recovery batches, more slowly"
        ),
    )
    read_io_threads: int | None = Field(
        default=None, ge=1, le=MAX_THREADS, description="Physical backups: --innodb-read-io-threads of the prepare"
    )
    write_io_threads: int | None = Field(
        default=None, ge=1, le=MAX_THREADS, description="Physical backups: --innodb-write-io-threads of the prepare"
    )
    threads: int | None = Field(
        default=None,
        ge=1,
        le=MAX_THREADS,
        description=(
            "Connections loading in parallel (loader, myloader, mysqlimport); default: the number of CPUs the "
            "worker may run on (2 when that cannot be read), at most 64. The mysql client always uses one."
        ),
    )
    chunk_size: int = Field(
        default=DEFAULT_CHUNK_SIZE,
        ge=MIN_CHUNK_SIZE,
        le=MAX_CHUNK_SIZE,
        description=(
            "Bytes of a table the loader loads in one transaction (64 KiB to 1 GiB; default 64 MiB): "
            "smaller chunks spread one big table over more threads, larger ones commit less often"
        ),
    )


BackupTool = Literal["mysqldump", "mysqldump-tab", "mydumper", "mariabackup"]
Compression = Literal["none", "zstd", "pigz", "pbzip2", "gzip"]


class SavedSourceSpec(BaseModel):
    """A server saved under /targets, read by the backup tool through a 0600 option file."""

    kind: Literal["saved"] = "saved"
    target_id: int


class BackupJobCreate(JobRequest):
    source: SavedSourceSpec
    tool: BackupTool = Field(
        default="mysqldump",
        description=(
            "mysqldump (one .sql file), mysqldump-tab (a --tab directory of one database; the server must run on "
            "the worker's host, it writes the data files), mydumper (a directory, -t threads) or mariabackup "
            "(a physical copy with --parallel; the server must run on the worker's host, it reads the datadir)"
        ),
    )
    databases: list[Annotated[str, Field(pattern=DATABASE_NAME)]] = Field(
        default_factory=list,
        max_length=256,
        description="Databases to back up; empty: every database but the system ones (mariabackup: the whole server)",
    )
    threads: int | None = Field(
        default=None,
        ge=1,
        le=MAX_THREADS,
        description=(
            "mydumper -t, mariabackup --parallel, and the compressor's threads (zstd -T, pigz -p, pbzip2 -p); default: "
            "the CPUs "
            "the worker may run on. mysqldump itself always uses one connection."
        ),
    )
    compression: Compression | None = Field(
        default=None,
        description=(
            "Default: zstd for the dump tools, none for mariabackup. none, zstd, pigz or pbzip2 (multi-threaded) or "
            "gzip (one thread); mysqldump output goes through the "
            "compressor as it is written, --tab and mydumper files are compressed one by one (mydumper's own -c for "
            "gzip and pigz); mariabackup backups stay uncompressed directories (prepare and restore read them as they "
            "are). The loader reads all of them; myloader and mysqlimport cannot read bzip2, and bzip2 decodes about "
            "10x slower than zstd"
        ),
    )
    level: int | None = Field(
        default=None, ge=1, le=19, description="Compression level: zstd 1-19, gzip/pigz/pbzip2 1-9"
    )
    destination: str = Field(
        description="A new directory under one of the backup roots, relative to a root or absolute; never overwritten"
    )


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
    started_by: str | None = Field(description="The user who launched the job (or retried it)")
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
    backup_verdict: Literal["restores", "does_not_restore"] | None = Field(
        default=None,
        description="What this restore showed of its backup: restores (restored and verified), does_not_restore "
        "(unreadable, rejected by a fresh sandbox, or verification failed); none when the failure was not the backup's",
    )
    run_facts: dict[str, Any] = Field(
        default_factory=dict,
        description="What the worker learnt running the job: host (cpus, memory_bytes, disk_device, "
        "disk_rotational), runner, threads and chunk_size used, loader (format, chunks_loaded, seconds_by_phase), "
        "prepare (batches, use_memory, redo_bytes, copy_seconds, prepare_seconds)",
    )


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
