"""Creating, listing, cancelling and retrying jobs. Services flush; the caller's unit of work commits."""

from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.audit.service import record
from app.backups.detect import LOADER_FORMATS, PHYSICAL_FORMATS, is_restorable
from app.backups.service import register_backup
from app.core.config import Settings
from app.core.errors import Conflict, InvalidRequest, NotFound
from app.jobs.destination import resolve_destination
from app.jobs.log import add_log
from app.jobs.schemas import (
    BackupJobCreate,
    RestoreJobCreate,
    SandboxTargetSpec,
    ServerSnapshotPublic,
    ServerStatePublic,
)
from app.models import (
    AuditAction,
    Backup,
    Job,
    JobKind,
    JobLog,
    JobPhase,
    JobStatus,
    ServerSnapshot,
    Target,
    User,
    VerificationResult,
)
from app.models.base import utcnow
from app.sandboxes.options import PRESETS, ServerOptions


def resolve_sandbox_options(spec: SandboxTargetSpec) -> ServerOptions:
    """The preset's settings with the ones the user set explicitly on top."""
    if spec.preset not in PRESETS:
        known = ", ".join(PRESETS)
        raise InvalidRequest(f"unknown preset '{spec.preset}'; choose one of: {known}", field="target.preset")
    base = PRESETS[spec.preset][1].model_dump()
    overrides = spec.options.model_dump(exclude_unset=True)
    return ServerOptions.model_validate({**base, **overrides})


# The formats each runner reads (format names from app.backups.detect).
RUNNER_FORMATS: dict[str, frozenset[str]] = {
    "loader": LOADER_FORMATS,
    "mysql": frozenset({"mysqldump"}),
    "myloader": frozenset({"mydumper"}),
    "mysqlimport": frozenset({"mysqldump-tab"}),
    "mariabackup": frozenset({"mariabackup"}),
    "xtrabackup": frozenset({"xtrabackup"}),
}
_FORMAT_NAMES = {
    "mysqldump": "a mysqldump file (.sql, .sql.gz, .sql.zst, .sql.bz2)",
    "mysqldump-tab": "a mysqldump --tab directory",
    "mydumper": "a mydumper directory",
    "mysqlsh": "a MySQL Shell dump directory",
    "mariabackup": "a mariabackup directory (a physical copy of a server's files, not SQL)",
    "xtrabackup": "a Percona XtraBackup directory (a physical copy of a server's files, not SQL)",
}
_RUNNER_NAMES = {
    "loader": "restorescope's loader",
    "mysql": "the mysql client",
    "myloader": "myloader",
    "mysqlimport": "mysqlimport",
    "mariabackup": "mariabackup",
    "xtrabackup": "xtrabackup (untested)",
}


def choose_runner(requested: str, backup: Backup) -> str:
    """The runner that restores this backup: the one asked for if it reads the format; for auto, the physical
    backup's own tool, else the loader."""
    if not is_restorable(backup.format, backup.details):
        problems = "; ".join(str(p) for p in backup.details.get("problems") or [])
        raise InvalidRequest(
            f"{backup.path} cannot be restored: {problems}"
            if problems
            else f"{backup.path} is a {backup.format} backup, which restorescope does not restore; it restores "
            "mysqldump files, mysqldump --tab, mydumper and MySQL Shell dumps, and mariabackup directories",
            field="backup_path",
        )
    auto = backup.format if backup.format in PHYSICAL_FORMATS else "loader"
    runner = auto if requested == "auto" else requested
    if backup.format not in RUNNER_FORMATS[runner]:
        reads = " or ".join(_FORMAT_NAMES[f] for f in sorted(RUNNER_FORMATS[runner]))
        able = [_RUNNER_NAMES[r] for r, formats in RUNNER_FORMATS.items() if backup.format in formats]
        raise InvalidRequest(
            f"{_RUNNER_NAMES[runner]} reads only {reads}, and this backup is "
            f"{_FORMAT_NAMES.get(backup.format, backup.format)}: choose {' or '.join(able)} "
            f"(auto picks {'the loader' if auto == 'loader' else _RUNNER_NAMES[auto]})",
            field="runner",
        )
    if runner == "mysqlimport" and backup.compression is not None:
        raise InvalidRequest(
            f"mysqlimport reads only plain .txt files and this --tab dump is compressed ({backup.compression}): "
            "choose restorescope's loader, which reads .gz, .zst and .bz2",
            field="runner",
        )
    if runner == "myloader" and backup.compression == "bzip2":
        raise InvalidRequest(
            "myloader reads plain, .gz and .zst files and this mydumper directory is compressed with bzip2: "
            "choose restorescope's loader, which reads .bz2 too",
            field="runner",
        )
    return runner


def _check_physical(data: RestoreJobCreate, physical: bool) -> None:
    """A physical restore replaces a whole datadir, so it goes into a new sandbox; the prepare's settings
    apply to it alone."""
    if not physical:
        for name in ("use_memory", "read_io_threads", "write_io_threads"):
            if getattr(data, name) is not None:
                raise InvalidRequest(
                    f"{name} sets the prepare of a physical backup (mariabackup): leave it empty for this dump",
                    field=name,
                )
        return
    if not isinstance(data.target, SandboxTargetSpec):
        raise InvalidRequest(
            "a physical backup is restored by replacing a server's whole datadir with the backup's files, so it "
            "only goes into a new sandbox: choose a sandbox target (a saved server is never overwritten)",
            field="target",
        )
    if data.database:
        raise InvalidRequest(
            "a physical backup restores the whole server with its own databases: leave database empty",
            field="database",
        )


def _check_checksum_source(session: Session, data: RestoreJobCreate, physical: bool) -> None:
    """The source to compare checksums with exists, and there is a logical restore's verification to extend."""
    if data.checksum_source_id is None:
        return
    if session.get(Target, data.checksum_source_id) is None:
        raise InvalidRequest(f"no saved target with id {data.checksum_source_id}", field="checksum_source_id")
    if physical:
        raise InvalidRequest(
            "a physical restore is checked table by table by the restored server itself: leave checksum_source_id "
            "empty",
            field="checksum_source_id",
        )
    if not data.verify:
        raise InvalidRequest(
            "checksums are compared during verification: turn verify on, or leave checksum_source_id empty",
            field="checksum_source_id",
        )


def _starter(actor: User | None, started_by: str | None) -> str | None:
    """Who a job is shown as started by: the logged-in user, or what a job the app starts itself says (a drill)."""
    return actor.username if actor is not None else started_by


def create_restore_job(
    session: Session, data: RestoreJobCreate, settings: Settings, actor: User | None, started_by: str | None = None
) -> Job:
    """`actor` is the logged-in user who asked; None for a job the app starts itself, named by `started_by`."""
    backup = register_backup(session, data.backup_path, settings.resolved_backup_roots)
    runner = choose_runner(data.runner, backup)
    physical = backup.format in PHYSICAL_FORMATS
    _check_physical(data, physical)
    _check_checksum_source(session, data, physical)
    target: dict[str, Any]
    target_id: int | None = None
    if isinstance(data.target, SandboxTargetSpec):
        options = resolve_sandbox_options(data.target)
        target = {
            "kind": "sandbox",
            "preset": data.target.preset,
            "options": options.model_dump(),
            "keep": data.target.keep,
        }
    else:
        saved = session.get(Target, data.target.target_id)
        if saved is None:
            raise InvalidRequest(f"no saved target with id {data.target.target_id}", field="target.target_id")
        target_id = saved.id
        has_own_database = bool(backup.details.get("has_use_statements"))
        if not has_own_database and not data.database:
            raise InvalidRequest(
                "this dump does not create or choose its database: name the database to restore into",
                field="database",
            )
        # The name as it is now, so the job's record still says where it went once the server is renamed or deleted.
        target = {"kind": "saved", "target_id": target_id, "name": saved.name}
    job = Job(
        kind=JobKind.RESTORE,
        status=JobStatus.QUEUED,
        phase=JobPhase.QUEUED,
        parameters={
            "backup_path": backup.path,
            "backup_format": backup.format,
            "target": target,
            "database": data.database,
            "verify": data.verify,
            "checksum_source_id": data.checksum_source_id,
            "capture": data.capture,
            "runner": runner,
            # None: the worker uses its host's CPU count (worker.restore.default_threads).
            "threads": data.threads,
            "chunk_size": data.chunk_size,
            **(
                {
                    "use_memory": data.use_memory,
                    "read_io_threads": data.read_io_threads,
                    "write_io_threads": data.write_io_threads,
                }
                if physical
                else {}
            ),
        },
        backup_id=backup.id,
        target_id=target_id,
        started_by=_starter(actor, started_by),
        bytes_total=backup.size_bytes,
        phase_times={},
    )
    session.add(job)
    session.flush()
    add_log(
        session,
        job.id,
        f"queued: restore {backup.path} ({backup.format}, {backup.size_bytes} bytes) with {_RUNNER_NAMES[runner]}",
    )
    into = (
        f"saved target '{target['name']}' ({target_id})" if target_id is not None else f"a sandbox ({target['preset']})"
    )
    record(
        session,
        AuditAction.JOB_RESTORE,
        actor,
        username=started_by,
        object_type="job",
        object_id=job.id,
        detail=f"restore {backup.path} into {into} with {runner}",
    )
    return job


# What each compressor writes, and the levels it takes.
COMPRESSION_SUFFIX = {"none": "", "zstd": ".zst", "pigz": ".gz", "gzip": ".gz", "pbzip2": ".bz2"}
_LEVELS = {"zstd": (1, 19), "pigz": (1, 9), "gzip": (1, 9), "pbzip2": (1, 9)}


def backup_compression(data: BackupJobCreate) -> str:
    """The compression a backup gets: the one asked for when the tool can write it restorably."""
    compression = data.compression or ("none" if data.tool == "mariabackup" else "zstd")
    if data.tool == "mariabackup" and compression != "none":
        raise InvalidRequest(
            "mariabackup backups are written as uncompressed directories, which prepare and restore read as they "
            "are: choose none (compress a copy afterwards if you need to)",
            field="compression",
        )
    if data.level is not None:
        if compression == "none":
            raise InvalidRequest("a level applies to compression only: leave it empty or choose a compressor", "level")
        if data.tool == "mydumper" and compression != "zstd":
            raise InvalidRequest(
                "mydumper compresses with its own gzip (-c) at a level of its own: leave the level empty, or "
                "choose zstd",
                field="level",
            )
        low, high = _LEVELS[compression]
        if not low <= data.level <= high:
            raise InvalidRequest(f"{compression} levels go from {low} to {high}", field="level")
    return compression


def _check_databases(data: BackupJobCreate) -> None:
    if data.tool == "mysqldump-tab" and len(data.databases) != 1:
        raise InvalidRequest(
            "mysqldump --tab writes the tables of one database into a directory: name exactly one database",
            field="databases",
        )
    if data.tool == "mariabackup" and data.databases:
        raise InvalidRequest(
            "mariabackup copies the whole server (a partial copy cannot be restored as a server): leave databases "
            "empty",
            field="databases",
        )
    if len(set(data.databases)) != len(data.databases):
        raise InvalidRequest("a database is named twice", field="databases")


def backup_artifact(tool: str, destination: Path, databases: list[str], compression: str) -> Path:
    """What the backup is once written: mysqldump's one file inside the destination, else the directory."""
    if tool != "mysqldump":
        return destination
    name = databases[0] if len(databases) == 1 else "dump"
    return destination / f"{name}.sql{COMPRESSION_SUFFIX[compression]}"


def create_backup_job(
    session: Session, data: BackupJobCreate, settings: Settings, actor: User | None, started_by: str | None = None
) -> Job:
    target = session.get(Target, data.source.target_id)
    if target is None:
        raise InvalidRequest(f"no saved target with id {data.source.target_id}", field="source.target_id")
    _check_databases(data)
    compression = backup_compression(data)
    destination = resolve_destination(data.destination, settings.resolved_backup_roots)
    artifact = backup_artifact(data.tool, destination, data.databases, compression)
    job = Job(
        kind=JobKind.BACKUP,
        status=JobStatus.QUEUED,
        phase=JobPhase.QUEUED,
        parameters={
            "source": {"kind": "saved", "target_id": target.id, "name": target.name},
            "tool": data.tool,
            "databases": list(data.databases),
            # None: the worker uses the CPUs it may run on (worker.restore.default_threads).
            "threads": data.threads,
            "compression": compression,
            "level": data.level,
            "destination": str(destination),
            "backup_path": str(artifact),
        },
        target_id=target.id,
        started_by=_starter(actor, started_by),
        phase_times={},
    )
    session.add(job)
    session.flush()
    what = ", ".join(data.databases) if data.databases else "every database"
    add_log(
        session,
        job.id,
        f"queued: back up {what} of '{target.name}' with {data.tool} into {destination}"
        + ("" if compression == "none" else f", {compression} compressed"),
    )
    record(
        session,
        AuditAction.JOB_BACKUP,
        actor,
        username=started_by,
        object_type="job",
        object_id=job.id,
        detail=f"back up {what} of saved target '{target.name}' ({target.id}) with {data.tool} into {destination}",
    )
    return job


def get_job(session: Session, job_id: int) -> Job:
    job = session.get(Job, job_id)
    if job is None:
        raise NotFound(f"no job with id {job_id}")
    return job


def list_jobs(
    session: Session,
    *,
    statuses: list[str] | None = None,
    kind: str | None = None,
    backup_id: int | None = None,
    target_id: int | None = None,
    started_by: str | None = None,
    created_after: datetime | None = None,
    created_before: datetime | None = None,
    offset: int = 0,
    limit: int = 50,
) -> tuple[list[Job], int]:
    query = select(Job)
    if statuses:
        query = query.where(Job.status.in_(statuses))
    if kind:
        query = query.where(Job.kind == kind)
    if backup_id is not None:
        query = query.where(Job.backup_id == backup_id)
    if target_id is not None:
        query = query.where(Job.target_id == target_id)
    if started_by:
        query = query.where(Job.started_by == started_by)
    if created_after:
        query = query.where(Job.created_at >= created_after)
    if created_before:
        query = query.where(Job.created_at < created_before)
    count = session.scalar(select(func.count()).select_from(query.subquery())) or 0
    page = session.scalars(query.order_by(Job.created_at.desc(), Job.id.desc()).offset(offset).limit(limit))
    return list(page), count


def request_cancel(session: Session, job_id: int, actor: User | None) -> Job:
    job = get_job(session, job_id)
    if JobStatus(job.status).is_final:
        raise Conflict(f"job {job_id} already ended ({job.status}); nothing to cancel")
    now = utcnow()
    job.cancel_requested_at = job.cancel_requested_at or now
    if job.status == JobStatus.QUEUED:
        # No worker holds it yet: the worker that picks the message up will find it cancelled and skip it.
        job.status, job.phase, job.finished_at = JobStatus.CANCELLED, JobPhase.DONE, now
        add_log(session, job.id, "cancelled before it started")
    else:
        add_log(session, job.id, "cancel requested: stopping the job's processes")
    record(
        session,
        AuditAction.JOB_CANCEL,
        actor,
        object_type="job",
        object_id=job.id,
        detail=f"{job.kind} job, {'queued' if job.status == JobStatus.CANCELLED else 'running'}",
    )
    session.flush()
    return job


def _require_saved_servers(session: Session, job: Job) -> None:
    """A retry needs the saved servers its job used: a deleted one is refused here rather than failing the job."""
    parameters = job.parameters
    named = [
        (spec.get("target_id"), spec.get("name"))
        for spec in (parameters.get("target"), parameters.get("source"))
        if isinstance(spec, dict) and spec.get("kind") == "saved"
    ]
    named.append((parameters.get("checksum_source_id"), None))
    for target_id, name in named:
        if isinstance(target_id, int) and session.get(Target, target_id) is None:
            which = f"'{name}' (id {target_id})" if name else f"{target_id}"
            raise Conflict(
                f"job {job.id} used the saved server {which}, which has been deleted: launch a new job instead"
            )


def retry_job(session: Session, job_id: int, actor: User | None, started_by: str | None = None) -> Job:
    original = get_job(session, job_id)
    if original.kind == JobKind.IMPORT:
        raise Conflict(f"job {job_id} is an imported trace and has nothing to run again: upload the log again")
    if not JobStatus(original.status).is_final:
        raise Conflict(f"job {job_id} is still {original.status}; cancel it or wait for it to end before retrying")
    _require_saved_servers(session, original)
    job = Job(
        kind=original.kind,
        status=JobStatus.QUEUED,
        phase=JobPhase.QUEUED,
        parameters=dict(original.parameters),
        backup_id=original.backup_id,
        target_id=original.target_id,
        parent_id=original.id,
        started_by=_starter(actor, started_by),
        bytes_total=original.bytes_total,
        phase_times={},
    )
    session.add(job)
    session.flush()
    add_log(session, job.id, f"queued: retry of job {original.id}")
    record(
        session,
        AuditAction.JOB_RETRY,
        actor,
        username=started_by,
        object_type="job",
        object_id=job.id,
        detail=f"retry of {original.kind} job {original.id}",
    )
    return job


def read_logs(session: Session, job_id: int, after_id: int = 0, limit: int = 500) -> list[JobLog]:
    get_job(session, job_id)
    query = select(JobLog).where(JobLog.job_id == job_id, JobLog.id > after_id).order_by(JobLog.id).limit(limit)
    return list(session.scalars(query))


def read_verification(session: Session, job_id: int) -> list[VerificationResult]:
    query = select(VerificationResult).where(VerificationResult.job_id == job_id)
    return list(session.scalars(query.order_by(VerificationResult.database, VerificationResult.table)))


def read_server_state(session: Session, job_id: int) -> ServerStatePublic:
    get_job(session, job_id)
    snapshots = list(
        session.scalars(select(ServerSnapshot).where(ServerSnapshot.job_id == job_id).order_by(ServerSnapshot.id))
    )
    by_moment = {s.moment: s for s in snapshots}
    delta: dict[str, float] = {}
    if "start" in by_moment and "end" in by_moment:
        start, end = by_moment["start"].status, by_moment["end"].status
        for name, end_value in end.items():
            try:
                delta[name] = float(end_value) - float(start.get(name, "0"))
            except ValueError:
                continue
    return ServerStatePublic(
        snapshots=[
            ServerSnapshotPublic(moment=s.moment, taken_at=s.taken_at, variables=s.variables, status=s.status)
            for s in snapshots
        ],
        status_delta=delta,
    )
