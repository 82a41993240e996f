"""A restore job from claim to verdict: server, restore, verification, cleanup."""

import logging
import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pymysql
import redis

from app.backups.paths import resolve_backup_path
from app.core.config import Settings, get_settings
from app.core.db import session_scope
from app.core.errors import DomainError
from app.jobs.log import add_log
from app.models import Backup, BackupVerdict, Job, JobPhase, JobStatus, ServerSnapshot, Target, VerificationResult
from app.sandboxes.options import ServerOptions
from app.targets.connection import Credentials, TargetUnreachable, connect, option_file, saved_credentials
from app.targets.locality import find_local_server_pid
from worker.capture.errors import CaptureError
from worker.capture.sampling import SamplingReport, sample_job
from worker.capture.selection import CapturePlan, aio_mode_of, existing_server_visibility, plan_capture
from worker.capture.session import JobCapture
from worker.host_facts import host_facts
from worker.job_run import JobRun, claim_job, queued_parameters
from worker.runners.dump_stream import DumpError
from worker.runners.loader import (
    DEFAULT_CHUNK_SIZE,
    PRIVILEGE_CODES,
    LoaderError,
    LoaderOutcome,
    ResumeMismatchError,
    StatementError,
    restore_with_loader,
)
from worker.runners.myloader import restore_with_myloader
from worker.runners.mysql_client import (
    MysqlClientError,
    RestoreCancelled,
    RestoreOutcome,
    RestoreProgress,
    SqlError,
    restore_with_mysql_client,
)
from worker.runners.mysqlimport import restore_with_mysqlimport
from worker.runners.physical import (
    CopyBackProgress,
    DamagedBackupError,
    NotABackupError,
    NotPreparedError,
    PhysicalBackupError,
    PrepareError,
    PrepareOutcome,
    PrepareProgress,
    RestoreCheck,
    copy_back,
    prepare_backup,
    server_options_for_backup,
)
from worker.runners.physical.prepare import Tool
from worker.runners.tool_process import ToolError
from worker.sandbox.binary import detect_server_binary
from worker.sandbox.flags import mysql_untested_warning
from worker.sandbox.server import Sandbox, SandboxError
from worker.target_lock import JobLock, drill_lock, target_lock

log = logging.getLogger("restorescope.restore")

WAIT_FOR_TARGET_S = 5
LOADER_PROGRAM_NAME = "restorescope-loader"
SAMPLER_PROGRAM_NAME = "restorescope-sampler"
# The lane namer's connection (it reads performance_schema every half second): named so the advisor does not
# take it for a loading connection.
LANES_PROGRAM_NAME = "restorescope-lanes"


class VerificationFailed(Exception):
    """The restore ran but the server does not hold what the backup holds."""


# Errors whose message is written for the user: the job fails with exactly that text.
USER_FACING_ERRORS: tuple[type[Exception], ...] = (
    CaptureError,
    DomainError,
    DumpError,
    LoaderError,
    MysqlClientError,
    PhysicalBackupError,
    ResumeMismatchError,
    SandboxError,
    ToolError,
    TargetUnreachable,
    VerificationFailed,
)


@dataclass
class Server:
    """Whatever the restore writes into: how the mysql client reaches it, and a Python connection to it."""

    client_args: list[str]
    connect: Callable[[], pymysql.Connection]
    # A connection the server (and the timeline's lane of it) knows by this program name.
    connect_as: Callable[[str], pymysql.Connection]
    work_dir: Path  # the job's own files (the loader's progress file); removed with the job unless kept
    pid: int | None = None  # the server's process, when it runs on this host


def run(job_id: int) -> None:
    settings = get_settings()
    parameters = queued_parameters(job_id)
    if parameters is None:
        return

    lock = _job_lock(settings, parameters, job_id)
    if lock is not None and not lock.acquire():
        _wait_for_lock(job_id, lock)
        return
    try:
        if not claim_job(job_id):
            return
        _run_claimed(job_id, parameters, settings, lock)
    finally:
        if lock is not None:
            lock.release()


def _job_lock(settings: Settings, parameters: dict[str, Any], job_id: int) -> JobLock | None:
    """A saved target takes one restore at a time; a protected database one drill at a time (drills restore
    into sandboxes, so a job needs one lock at most)."""
    if parameters["target"]["kind"] == "saved":
        return target_lock(redis.Redis.from_url(settings.redis_url), parameters["target"]["target_id"], job_id)
    if drill := parameters.get("drill"):
        return drill_lock(redis.Redis.from_url(settings.redis_url), int(drill["protected_database_id"]), job_id)
    return None


def _wait_for_lock(job_id: int, lock: JobLock) -> None:
    # worker.tasks imports this module: import the task here, when both are loaded.
    from worker.tasks import run_restore

    with session_scope() as session:
        job = session.get(Job, job_id)
        if job is not None and job.phase != JobPhase.WAITING_FOR_TARGET:
            job.phase = JobPhase.WAITING_FOR_TARGET
            add_log(session, job_id, "waiting: " + lock.busy_message.format(holder=lock.holder()))
    run_restore.apply_async(args=[job_id], countdown=WAIT_FOR_TARGET_S)


def _run_claimed(job_id: int, parameters: dict[str, Any], settings: Settings, lock: JobLock | None) -> None:
    job_run = JobRun(job_id, settings)
    if lock is not None:
        job_run.on_heartbeat.append(lock.renew)
    try:
        with job_run:
            _restore(job_run, parameters, settings)
    except RestoreCancelled:
        job_run.finish(JobStatus.CANCELLED, _cancelled_message(parameters))
    except USER_FACING_ERRORS as error:
        if job_run.cancelled.is_set():
            job_run.finish(JobStatus.CANCELLED, _cancelled_message(parameters))
        else:
            if verdict := _verdict_of_failure(error, parameters):
                job_run.update(backup_verdict=verdict)
            job_run.finish(JobStatus.FAILED, str(error))
    except Exception as error:
        log.exception("job %s failed unexpectedly", job_id)
        job_run.finish(JobStatus.FAILED, f"internal error in restorescope: {error!r}; see the worker's log")
    else:
        if parameters.get("verify", True):
            job_run.update(backup_verdict=BackupVerdict.RESTORES)
        job_run.finish(JobStatus.SUCCEEDED)


def _verdict_of_failure(error: Exception, parameters: dict[str, Any]) -> BackupVerdict | None:
    """The backup's fault: it cannot be read, it came back different, or a fresh sandbox rejected its SQL. On a
    saved server a rejected statement may be the server's doing (objects already there, missing privileges)."""
    if isinstance(error, DumpError | VerificationFailed):
        return BackupVerdict.DOES_NOT_RESTORE
    # A physical backup that is not one, is damaged, was never prepared or fails to prepare. (Unsupported kinds,
    # incremental or streamed, are not broken, and a missing tool or full disk is the worker's doing.)
    if isinstance(error, NotABackupError | DamagedBackupError | NotPreparedError | PrepareError):
        return BackupVerdict.DOES_NOT_RESTORE
    privileges = isinstance(error, StatementError) and error.code in PRIVILEGE_CODES
    if isinstance(error, SqlError | StatementError) and parameters["target"]["kind"] == "sandbox" and not privileges:
        return BackupVerdict.DOES_NOT_RESTORE
    return None


def _cancelled_message(parameters: dict[str, Any]) -> str:
    if parameters["target"]["kind"] == "sandbox":
        return "cancelled by user; the restore was stopped and its sandbox removed"
    if parameters.get("runner") == "loader":
        return (
            "cancelled by user; the loader stopped between chunks: retry the job to resume where it stopped "
            "(the target keeps the load's progress in its `_restorescope` schema)"
        )
    return "cancelled by user; the restore was stopped, and the target keeps what was restored so far"


def _restore(job_run: JobRun, parameters: dict[str, Any], settings: Settings) -> None:
    dump, _root = resolve_backup_path(parameters["backup_path"], settings.resolved_backup_roots)
    job_run.add_facts(host=host_facts(settings.resolved_work_root))
    if parameters.get("runner") in PHYSICAL_RUNNERS:
        _restore_physical(job_run, parameters, settings, dump)
        return
    requested_capture = str(parameters.get("capture", "auto"))
    with ExitStack() as stack:
        # Entered first, left last: the capture outlives the sandbox, so a FUSE log is drained after the
        # unmount and the server's shutdown IO is in the trace.
        if parameters["target"]["kind"] == "sandbox":
            kept = bool(parameters["target"].get("keep"))
            plan = plan_capture(requested_capture, sandbox=True, kept_sandbox=kept)
            capture = stack.enter_context(_job_capture(job_run, plan))
            server = stack.enter_context(_sandbox_server(job_run, parameters["target"], settings, capture))
        else:
            server = stack.enter_context(_saved_server(job_run, parameters["target"]["target_id"]))
            capture = stack.enter_context(_job_capture(job_run, _saved_target_plan(job_run, requested_capture, server)))
            if capture.plan.active:
                _describe_saved_target(capture, server)
        capture.watch_server(server.pid, lambda: server.connect_as(LANES_PROGRAM_NAME))
        if capture.plan.active:
            # Left before the capture: its last samples land in the trace before the trace closes.
            stack.enter_context(_server_sampling(job_run, capture, server))
        _take_snapshot(job_run, server, "start")
        database = parameters.get("database") or _default_database(job_run, dump)
        job_run.enter_phase(JobPhase.RESTORING)
        outcome = _run_runner(job_run, parameters, dump, server, capture, database)
        if job_run.cancelled.is_set():
            raise RestoreCancelled()
        if parameters.get("verify", True):
            job_run.enter_phase(JobPhase.VERIFYING)
            _verify_row_counts(job_run, server, outcome, database)
            if parameters.get("checksum_source_id") is not None:
                _verify_checksums(
                    job_run, server, _restored_tables(outcome, database), parameters["checksum_source_id"]
                )
        _take_snapshot(job_run, server, "end")
        job_run.enter_phase(JobPhase.CLEANING_UP)


def default_threads() -> int:
    """Loading connections when the job does not say: one per CPU this worker may run on (its affinity, so a
    container pinned to 2 of 64 cores gets 2), 2 when that cannot be read, at most 64."""
    try:
        count = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        count = os.cpu_count() or 2
    return max(1, min(count, 64))


def _run_runner(
    job_run: JobRun, parameters: dict[str, Any], dump: Path, server: Server, capture: JobCapture, database: str | None
) -> RestoreOutcome:
    runner = str(parameters.get("runner") or "mysql")  # jobs queued before runners could be chosen
    threads = int(parameters.get("threads") or default_threads())
    chunk_size = int(parameters.get("chunk_size") or DEFAULT_CHUNK_SIZE)
    on_progress = _progress_reporter(job_run)
    should_stop = job_run.cancelled.is_set
    popen = capture.client_popen(job_run.processes.popen)
    job_run.add_facts(runner=runner, threads=1 if runner == "mysql" else threads, chunk_size=chunk_size)
    if runner == "loader":
        job_run.log(f"restoring with restorescope's loader: {threads} threads, chunks of {_mib(chunk_size)}")
        outcome = restore_with_loader(
            dump,
            _watched(lambda: server.connect_as(LOADER_PROGRAM_NAME), capture),
            popen,
            on_progress,
            lambda line: job_run.log(line, level="warning" if line.startswith("warning") else "info", source="loader"),
            should_stop,
            database=database,
            threads=threads,
            chunk_size=chunk_size,
            progress_file=server.work_dir / "loader-progress.json",
        )
        _log_loader_outcome(job_run, outcome)
        return outcome
    if runner == "myloader":
        job_run.log(f"restoring with myloader: {threads} threads")
        return restore_with_myloader(
            dump,
            server.client_args,
            popen,
            on_progress,
            lambda line: job_run.log(line, source="myloader"),
            should_stop,
            threads=threads,
            database=database,
        )
    if runner == "mysqlimport":
        job_run.log(f"restoring with the mysql client and mysqlimport: {threads} threads")
        return restore_with_mysqlimport(
            dump,
            server.client_args,
            popen,
            on_progress,
            lambda line: job_run.log(line, source="mysqlimport"),
            should_stop,
            database=database or "restored",
            threads=threads,
        )
    job_run.log("restoring with the mysql client: one connection (threads and chunk size do not apply)")
    return restore_with_mysql_client(
        dump,
        server.client_args,
        popen,
        on_progress=on_progress,
        on_log=lambda line: job_run.log(line, level="warning", source="mysql"),
        should_stop=should_stop,
        database=database,
    )


def _watched(connect: Callable[[], pymysql.Connection], capture: JobCapture) -> Callable[[], pymysql.Connection]:
    """The loader's connections are server threads that may live for a second: the lanes look closely after
    each one opens, so the timeline names them "connection N" instead of an exited thread."""

    def connect_and_name() -> pymysql.Connection:
        connection = connect()
        capture.look_closely()
        return connection

    return connect_and_name


def _mib(size: int) -> str:
    return f"{size / (1 << 20):g} MiB"


def _progress_reporter(job_run: JobRun) -> Callable[[RestoreProgress], None]:
    """Progress into the job's counters. A runner counts the bytes it reads (a directory's data files, not its
    metadata), so the job's total becomes the runner's once it knows it: the percentage then ends at 100."""
    total = 0

    def report(progress: RestoreProgress) -> None:
        nonlocal total
        if progress.bytes_total and progress.bytes_total != total:
            total = progress.bytes_total
            job_run.update(bytes_total=total)
        done = total > 0 and progress.bytes_done >= total
        job_run.report_progress(progress.bytes_done, progress.rows_done, force=done)

    return report


def _log_loader_outcome(job_run: JobRun, outcome: LoaderOutcome) -> None:
    job_run.add_facts(
        loader={
            "format": outcome.format,
            "chunks_loaded": outcome.chunks_loaded,
            "resumed": outcome.resumed,
            "seconds_by_phase": dict(outcome.seconds_by_phase),
        }
    )
    phases = ", ".join(f"{phase} {seconds:.1f} s" for phase, seconds in outcome.seconds_by_phase.items())
    resumed = "resumed an unfinished load, " if outcome.resumed else ""
    job_run.log(
        f"loader: {resumed}{outcome.format} dump, {outcome.chunks_loaded} chunks loaded"
        + (f"; {phases}" if phases else ""),
        source="loader",
    )
    for warning in outcome.warnings:
        job_run.log(warning, level="warning", source="loader")


def _default_database(job_run: JobRun, dump: Path) -> str | None:
    """A dump made without --databases needs a database chosen for it; a sandbox gets one named after the file."""
    with session_scope() as session:
        job = session.get(Job, job_run.job_id)
        backup = session.get(Backup, job.backup_id) if job is not None and job.backup_id is not None else None
        details = backup.details if backup is not None else {}
    if details.get("has_use_statements", True):
        return None
    name = re.sub(r"[^A-Za-z0-9_]", "_", dump.name.split(".")[0])[:64] or "restored"
    job_run.log(f"the dump does not create or choose a database: restoring into `{name}`")
    return name


@contextmanager
def _job_capture(job_run: JobRun, plan: CapturePlan) -> Iterator[JobCapture]:
    """The job's trace (none when the user asked for no capture) and its tracers, stopped and closed at the end."""
    if plan.backend == "none" and plan.fallback_reason is None:
        yield JobCapture(_NoTrace(), plan, job_run.processes, job_run.log)
        return
    # The trace store is imported here: a worker without capture never loads pyarrow.
    from app.traces.service import open_job_trace

    writer = open_job_trace(job_run.job_id, backend=plan.backend)
    capture = JobCapture(writer, plan, job_run.processes, lambda line: job_run.log(line, source="capture"))
    failed = True
    try:
        yield capture
        failed = False
    finally:
        try:
            capture.stop()
        finally:
            writer.close(status="failed" if failed or capture.error else "complete")


class _NoTrace:
    """The sink of a job that records nothing."""

    def add_operations(self, operations: Any) -> None: ...

    def set_lane(self, lane: Any) -> None: ...

    def add_spans(self, spans: Any) -> None: ...

    def add_counters(self, samples: Any) -> None: ...


@contextmanager
def _job_sampling(
    job_run: JobRun,
    capture: JobCapture,
    connect: Callable[[], pymysql.Connection] | None,
    datadir: Path | None = None,
    what: str = "sampling",
) -> Iterator[SamplingReport]:
    """CPU per thread, the machine and (given `connect`) the server's state, on the same timeline as the IO."""
    with sample_job(capture.sink, pids=capture.pids, connect=connect, datadir=datadir) as report:
        yield report
    busiest = ", ".join(
        f"{_thread_name(report, busy.tid, busy.comm)} {busy.busy_pct:.0f}%"
        for busy in report.threads[:3]
        if busy.busy_pct >= 1
    )
    job_run.log(
        f"{what}: {report.cpu_rounds} CPU rounds every {report.interval_s * 1000:.0f} ms, "
        f"{report.server_rounds} server rounds; busiest threads: {busiest or 'none'}; "
        f"the samplers used {report.sampler_cpu_pct:.1f}% of a core",
        source="capture",
    )
    for note in report.notes:
        job_run.log(f"{what}: {note}", source="capture")
    for error in report.errors:
        times = f" ({error.count} times)" if error.count > 1 else ""
        job_run.log(f"{what} ({error.sampler}): {error.message}{times}", level="warning", source="capture")


@contextmanager
def _server_sampling(job_run: JobRun, capture: JobCapture, server: Server) -> Iterator[SamplingReport]:
    with _job_sampling(job_run, capture, lambda: server.connect_as(SAMPLER_PROGRAM_NAME)) as report:
        yield report


def _thread_name(report: SamplingReport, tid: int, comm: str) -> str:
    """performance_schema's name for a server thread ("thread/sql/one_connection", "connection 8"), else its comm."""
    name, connection_id = report.server_threads.get(tid, (None, None))
    if connection_id is not None:
        return f"{comm} {tid} (connection {connection_id})"
    return f"{comm} {tid} ({name.rsplit('/', 1)[-1]})" if name else f"{comm} {tid}"


def _saved_target_plan(job_run: JobRun, requested: str, server: Server) -> CapturePlan:
    """Tracers need the server's process: only a server on this host can be captured."""
    problem = None
    if requested != "none":
        with server.connect() as connection:
            server.pid, problem = find_local_server_pid(connection)
    plan = plan_capture(requested, sandbox=False, target_problem=problem)
    if not plan.active and plan.fallback_reason:
        job_run.log(f"capture is off: {plan.fallback_reason}", level="warning")
    return plan


def _describe_saved_target(capture: JobCapture, server: Server) -> None:
    with server.connect() as connection, connection.cursor() as cursor:
        cursor.execute("SHOW GLOBAL VARIABLES WHERE Variable_name IN ('innodb_use_native_aio', 'innodb_linux_aio')")
        mode = aio_mode_of({str(name): str(value) for name, value in cursor.fetchall()})
    capture.describe_saved_target(mode, existing_server_visibility(capture.plan.backend, mode))


PHYSICAL_RUNNERS = ("mariabackup", "xtrabackup")
PREPARE_DIR = "prepare"  # inside the sandbox's directory: removed with it, or by the sweep if the worker dies


def _restore_physical(job_run: JobRun, parameters: dict[str, Any], settings: Settings, backup_dir: Path) -> None:
    """Prepare a copy of the backup, move it into a new sandbox's datadir, start the sandbox and check it."""
    target = parameters["target"]
    tool: Tool = "xtrabackup" if parameters["runner"] == "xtrabackup" else "mariabackup"
    verify = bool(parameters.get("verify", True))
    plan = plan_capture(str(parameters.get("capture", "auto")), sandbox=True, kept_sandbox=bool(target.get("keep")))
    with ExitStack() as stack:
        capture = stack.enter_context(_job_capture(job_run, plan))
        # mariabackup runs before any server: the tracers start first, so its IO is on the timeline.
        capture.watch_clients()
        popen = capture.client_popen(job_run.processes.popen)
        sandbox = stack.enter_context(_physical_sandbox(job_run, target, settings, capture, backup_dir))
        job_run.enter_phase(JobPhase.PREPARING)
        with ExitStack() as sampling:
            if capture.plan.active:
                # mariabackup's threads on a CPU, so the advisor tells a CPU-bound prepare from one waiting on IO.
                sampling.enter_context(
                    _job_sampling(job_run, capture, None, datadir=sandbox.root_dir, what="sampling the prepare")
                )
            outcome = _prepare(job_run, parameters, tool, backup_dir, sandbox.root_dir / PREPARE_DIR, popen)
        server = _server_of(sandbox)

        def server_is_up() -> None:
            job_run.update(sandbox_port=sandbox.port)
            job_run.log(f"sandbox up on the restored files: port {sandbox.port}, socket {sandbox.socket_path}")
            capture.watch_server(sandbox.pid, lambda: sandbox.connect(program_name=LANES_PROGRAM_NAME))
            if capture.plan.active:
                stack.enter_context(_server_sampling(job_run, capture, server))
            _take_snapshot(job_run, server, "start")
            job_run.enter_phase(JobPhase.VERIFYING)

        check = copy_back(
            outcome.prepared_dir,
            sandbox,
            popen,
            _copy_back_reporter(job_run, server_is_up, check_tables=verify),
            _tool_logger(job_run, tool),
            job_run.cancelled.is_set,
            check_tables=verify,
            move=True,  # prepare_backup's own copy: moved, not copied a second time
            tool=tool,
        )
        if job_run.cancelled.is_set():
            raise RestoreCancelled()
        _record_check(job_run, check, check_tables=verify)
        _take_snapshot(job_run, server, "end")
        job_run.enter_phase(JobPhase.CLEANING_UP)


def _prepare(
    job_run: JobRun,
    parameters: dict[str, Any],
    tool: Tool,
    backup_dir: Path,
    work_dir: Path,
    popen: Callable[..., subprocess.Popen[bytes]],
) -> PrepareOutcome:
    use_memory = parameters.get("use_memory")
    read_io, write_io = parameters.get("read_io_threads"), parameters.get("write_io_threads")
    settings_said = ", ".join(
        f"{name} {value}"
        for name, value in (("--use-memory", use_memory), ("read IO threads", read_io), ("write IO threads", write_io))
        if value
    )
    job_run.log(
        f"preparing a copy of the physical backup with {tool} ({settings_said or '--use-memory default: 96M'}); "
        "the backup itself is only read"
    )
    outcome = prepare_backup(
        backup_dir,
        work_dir,
        popen,
        _prepare_reporter(job_run),
        _tool_logger(job_run, tool),
        job_run.cancelled.is_set,
        use_memory=use_memory,
        read_io_threads=read_io,
        write_io_threads=write_io,
        tool=tool,
    )
    _log_prepare_outcome(job_run, outcome)
    return outcome


_FILE_LINE = re.compile(r"^(?:\[\d+\] [\d-]+ [\d:]+ )?\s*(?:Copying |Moving |\.\.\.done$)")


def _tool_logger(job_run: JobRun, tool: str) -> Callable[[str], None]:
    """mariabackup's lines into the job log, but for blank ones and one per file copied back (hundreds)."""

    def log_line(line: str) -> None:
        if line.strip() and not _FILE_LINE.match(line):
            job_run.log(line.rstrip(), level="error" if "[ERROR]" in line else "info", source=tool)

    return log_line


@dataclass
class _PrepareState:
    phase: str = ""
    copy_total: int = 0
    redo_total: int = 0
    total: int = 0


def _prepare_reporter(job_run: JobRun) -> Callable[[PrepareProgress], None]:
    """Progress of the prepare into the job's counters: the bytes of the backup copied, then the bytes of redo
    applied (LSNs count bytes of redo), against the sum of both; each phase change is logged (mariabackup's own
    lines say each recovery batch, "To recover: LSN ...")."""
    state = _PrepareState()

    def report(progress: PrepareProgress) -> None:
        if progress.phase == "copying":
            state.copy_total = progress.bytes_total
            done = progress.bytes_copied
        else:
            if progress.start_lsn is not None and progress.end_lsn is not None:
                state.redo_total = max(progress.end_lsn - progress.start_lsn, 0)
            applied = progress.lsn - progress.start_lsn if progress.lsn and progress.start_lsn else 0
            done = state.copy_total + min(max(applied, 0), state.redo_total)
        total = state.copy_total + state.redo_total
        if progress.phase == "done":
            done = total
        if total != state.total:
            state.total = total
            job_run.update(bytes_total=total)
        if progress.phase != state.phase:
            state.phase = progress.phase
            _log_prepare_phase(job_run, progress)
        job_run.report_progress(done, 0, force=progress.phase == "done" or progress.percent >= 100)

    return report


def _log_prepare_phase(job_run: JobRun, progress: PrepareProgress) -> None:
    if progress.phase == "copying":
        job_run.log(f"preparing: copying the backup ({_mib(progress.bytes_total)}) into the job's work directory")
    elif progress.phase == "applying redo":
        job_run.log(f"preparing: applying the redo log up to LSN {progress.end_lsn}")
    else:
        job_run.log(f"preparing: done at LSN {progress.lsn}")


def _log_prepare_outcome(job_run: JobRun, outcome: PrepareOutcome) -> None:
    job_run.add_facts(
        prepare={
            "batches": outcome.batches,
            "use_memory": outcome.use_memory,
            "redo_bytes": outcome.redo_bytes,
            "copy_seconds": round(outcome.copy_seconds, 3),
            "prepare_seconds": round(outcome.prepare_seconds, 3),
            "bytes_copied": outcome.bytes_copied,
            "already_prepared": outcome.already_prepared,
        }
    )
    memory = outcome.use_memory or "the default (96M)"
    if outcome.already_prepared:
        job_run.log("prepare: the backup had been prepared before; no redo to apply")
    else:
        redo = outcome.redo_bytes
        job_run.log(
            f"prepared: copy {outcome.copy_seconds:.1f} s ({_mib(outcome.bytes_copied)}), prepare "
            f"{outcome.prepare_seconds:.1f} s; redo from LSN {outcome.start_lsn} to {outcome.end_lsn}"
            + (f" ({_mib(redo)})" if redo is not None else "")
            + f" applied in {outcome.batches} recovery batch{'es' if outcome.batches != 1 else ''} "
            f"with --use-memory {memory}"
        )
    if outcome.batches > 1:
        job_run.log(
            f"recovery needed {outcome.batches} batches: more --use-memory would do it in one "
            f"(this prepare used {memory})",
            level="warning",
        )
    for warning in outcome.warnings:
        job_run.log(warning, level="warning")


def _copy_back_reporter(
    job_run: JobRun, server_is_up: Callable[[], None], *, check_tables: bool
) -> Callable[[CopyBackProgress], None]:
    """Copy-back's steps into the job's phases; the capture and sampling attach once the server is up."""
    seen: set[str] = set()

    def report(progress: CopyBackProgress) -> None:
        if progress.phase in seen:
            return
        seen.add(progress.phase)
        if progress.phase == "copying back":
            job_run.log(f"moving the prepared files ({progress.files_total}) into the sandbox's datadir")
        elif progress.phase == "starting":
            job_run.enter_phase(JobPhase.STARTING_SERVER)
            job_run.log("starting the sandbox on the restored files (it runs InnoDB's crash recovery, if any)")
        elif progress.phase == "verifying":
            server_is_up()
            what = "CHECK TABLE and a row count" if check_tables else "a row count"
            job_run.log(f"verifying {progress.tables_total} tables of the restored server: {what} each")

    return report


def _record_check(job_run: JobRun, check: RestoreCheck, *, check_tables: bool) -> None:
    """The tables the restored server read into verification rows; a backup that did not restore fails the job."""
    results = []
    for (schema, table), rows in sorted(check.rows.items(), key=lambda item: (item[0][0] or "", item[0][1])):
        name = f"{_quote_identifier(schema or '')}.{_quote_identifier(table)}"
        problems = [problem for problem in check.problems if name in problem]
        results.append(
            VerificationResult(
                job_id=job_run.job_id,
                database=schema or "",
                table=table,
                check="check_table" if check_tables else "row_count",
                expected=None,
                actual=rows,
                ok=not problems,
                detail="; ".join(problems) or None,
            )
        )
    with session_scope() as session:
        session.add_all(results)
    job_run.update(rows_done=sum(check.rows.values()))
    job_run.log(
        f"restored server checked: {len(check.rows)} tables read ({sum(check.rows.values())} rows); "
        f"copy-back {check.copy_seconds:.1f} s, start {check.start_seconds:.1f} s, checks {check.verify_seconds:.1f} s"
    )
    if not check.restorable:
        more = len(check.problems) - 5
        listed = "; ".join(check.problems[:5]) + (f"; and {more} more (see the job log)" if more > 0 else "")
        for problem in check.problems:
            job_run.log(problem, level="error")
        raise VerificationFailed(f"the physical backup does not restore: {listed}")


def _server_of(sandbox: Sandbox) -> Server:
    return Server(
        client_args=["--no-defaults", *sandbox.client_args()],
        connect=sandbox.connect,
        connect_as=lambda name: sandbox.connect(program_name=name),
        work_dir=sandbox.root_dir,
        pid=None,
    )


@contextmanager
def _physical_sandbox(
    job_run: JobRun, target: dict[str, Any], settings: Settings, capture: JobCapture, backup_dir: Path
) -> Iterator[Sandbox]:
    """A sandbox that is not started: copy_back fills its datadir and starts it. Claimed at once, so the
    prepare's copy inside it is removed by the sweep if the worker dies; removed at the end unless kept."""
    # The backup's backup-my.cnf (the prepared copy holds the same file) says the page size and system
    # tablespace the server must be started with; read here so the sandbox exists before the prepare.
    options = server_options_for_backup(backup_dir, ServerOptions.model_validate(target["options"]))
    with _job_sandbox(job_run, target, settings, capture, options, "with the prepared copy") as sandbox:
        yield sandbox


@contextmanager
def _sandbox_server(
    job_run: JobRun, target: dict[str, Any], settings: Settings, capture: JobCapture
) -> Iterator[Server]:
    job_run.enter_phase(JobPhase.STARTING_SERVER)
    with _job_sandbox(job_run, target, settings, capture, ServerOptions.model_validate(target["options"])) as sandbox:
        sandbox.start()
        job_run.update(sandbox_port=sandbox.port)
        binary = sandbox.binary
        job_run.log(
            f"sandbox {binary.flavour} {binary.version} up on port {sandbox.port}, socket {sandbox.socket_path}"
        )
        yield replace(_server_of(sandbox), pid=sandbox.pid)


@contextmanager
def _job_sandbox(
    job_run: JobRun,
    target: dict[str, Any],
    settings: Settings,
    capture: JobCapture,
    options: ServerOptions,
    also_removed: str = "",
) -> Iterator[Sandbox]:
    """The job's sandbox, claimed (the sweep removes it if the worker dies) but not started; at the end kept
    if the user asked and the job was not cancelled, else stopped and removed."""
    binary = detect_server_binary(settings.mariadbd_path)
    if warning := mysql_untested_warning(binary):
        job_run.log(warning, level="warning")
    keep = bool(target.get("keep"))
    sandbox = Sandbox(
        settings.resolved_work_root,
        f"job-{job_run.job_id}",
        capture.sandbox_options(options),
        binary,
        job_run.processes,
        lambda line: job_run.log(line, source="sandbox"),
        outlive_job=keep,
        datadir_layer=capture.datadir_layer(),
        launcher=capture.server_launcher(kept=keep),
    )
    job_run.update(server_flavour=binary.flavour, server_version=binary.version, sandbox_dir=str(sandbox.root_dir))
    sandbox.claim()
    try:
        yield sandbox
    except BaseException:
        keep = False
        raise
    finally:
        if keep and not job_run.cancelled.is_set():
            sandbox.keep = True
            job_run.update(sandbox_kept=True)
            job_run.log(f"sandbox kept as asked: connect with mysql --socket={sandbox.socket_path} -uroot")
        else:
            sandbox.remove()
            job_run.log(f"sandbox stopped and removed{', ' + also_removed if also_removed else ''}")


@contextmanager
def _saved_server(job_run: JobRun, target_id: int) -> Iterator[Server]:
    job_run.enter_phase(JobPhase.CONNECTING)
    credentials, name = saved_credentials(target_id)
    with connect(credentials) as probe, probe.cursor() as cursor:
        cursor.execute("SELECT VERSION()")
        row = cursor.fetchone()
    version = str(row[0]) if row else ""
    job_run.update(server_flavour="mariadb" if "mariadb" in version.lower() else "mysql", server_version=version)
    job_run.log(f"connected to saved target '{name}' ({version})")
    # Not a sandbox directory (no owner file): the reaper leaves it alone, and the job removes it itself.
    work_dir = get_settings().resolved_work_root / f"saved-target-job-{job_run.job_id}"
    work_dir.mkdir(parents=True, exist_ok=True)
    try:
        with option_file(credentials, directory=work_dir) as defaults:
            yield Server(
                client_args=[f"--defaults-file={defaults}"],
                connect=lambda: connect(credentials),
                connect_as=lambda name: connect(credentials, program_name=name),
                work_dir=work_dir,
            )
    finally:
        shutil.rmtree(work_dir, ignore_errors=True)


def _take_snapshot(job_run: JobRun, server: Server, moment: str) -> None:
    with server.connect() as connection, connection.cursor() as cursor:
        cursor.execute("SHOW GLOBAL VARIABLES")
        variables = {str(k): str(v) for k, v in cursor.fetchall()}
        cursor.execute("SHOW GLOBAL STATUS")
        status = {str(k): str(v) for k, v in cursor.fetchall()}
    with session_scope() as session:
        session.add(ServerSnapshot(job_id=job_run.job_id, moment=moment, variables=variables, status=status))


def _quote_identifier(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _restored_tables(outcome: RestoreOutcome, database: str | None) -> list[tuple[str, str]]:
    """(schema, table) of every table the dump holds, in the order verification lists them."""
    tables = {(db or database, table) for db, table in outcome.expected_rows}
    return sorted((schema, table) for schema, table in tables if schema is not None)


def _verify_checksums(job_run: JobRun, server: Server, tables: list[tuple[str, str]], source_id: int) -> None:
    """CHECKSUM TABLE of each restored table against the server the backup was taken from. Only meaningful if
    the source has not changed since the backup; an unreachable source is skipped (the issue asks for the
    comparison "when the source is reachable"), so the row counts alone decide."""
    with session_scope() as session:
        target = session.get(Target, source_id)
        source = (Credentials.of(target), target.name) if target is not None else None
    if source is None:
        job_run.log(f"checksums not compared: the saved target {source_id} was deleted", level="warning")
        return
    credentials, name = source
    started = time.monotonic()
    try:
        with connect(credentials) as connection:
            expected = _checksums(connection, tables)
    except (TargetUnreachable, pymysql.MySQLError) as error:
        reason = error if isinstance(error, TargetUnreachable) else error.args[-1]
        job_run.log(
            f"checksums not compared: the source '{name}' is not reachable ({reason}); the row counts alone decide",
            level="warning",
        )
        return
    with server.connect() as connection:
        actual = _checksums(connection, tables)
    results = [
        VerificationResult(
            job_id=job_run.job_id,
            database=schema,
            table=table,
            check="checksum",
            expected=expected[schema, table],
            actual=actual[schema, table],
            ok=expected[schema, table] is not None and expected[schema, table] == actual[schema, table],
            detail=_checksum_detail(expected[schema, table], actual[schema, table], name),
        )
        for schema, table in tables
    ]
    with session_scope() as session:
        session.add_all(results)
    bad = [r for r in results if not r.ok]
    job_run.log(
        f"compared CHECKSUM TABLE of {len(results)} tables with the source '{name}' in "
        f"{time.monotonic() - started:.1f} s: {len(results) - len(bad)} match"
    )
    if bad:
        listed = ", ".join(f"{r.database}.{r.table}" for r in bad[:10])
        raise VerificationFailed(
            f"verification failed: {len(bad)} of {len(results)} tables hold other data than the source "
            f"'{name}' ({listed}); unless the source changed since the backup, the backup does not restore faithfully"
        )


def _checksums(connection: pymysql.Connection, tables: list[tuple[str, str]]) -> dict[tuple[str, str], int | None]:
    """CHECKSUM TABLE ... EXTENDED (reads every row) of each table; None for a table the server does not have."""
    checksums: dict[tuple[str, str], int | None] = {}
    with connection.cursor() as cursor:
        for schema, table in tables:
            try:
                cursor.execute(f"CHECKSUM TABLE {_quote_identifier(schema)}.{_quote_identifier(table)} EXTENDED")
                row = cursor.fetchone()
            except pymysql.MySQLError:
                row = None
            checksums[schema, table] = int(row[1]) if row and row[1] is not None else None
    return checksums


def _checksum_detail(expected: int | None, actual: int | None, source: str) -> str | None:
    if expected is None and actual is None:
        return f"the table is missing on the source '{source}' and on the restored server"
    if expected is None:
        return f"the table is missing on the source '{source}'"
    if actual is None:
        return "the table is missing on the restored server"
    if expected != actual:
        return f"CHECKSUM TABLE differs from the source '{source}'"
    return None


def _verify_row_counts(job_run: JobRun, server: Server, outcome: RestoreOutcome, database: str | None) -> None:
    results: list[VerificationResult] = []
    with server.connect() as connection, connection.cursor() as cursor:
        for (db, table), expected in sorted(
            outcome.expected_rows.items(), key=lambda item: (item[0][0] or "", item[0][1])
        ):
            schema = db or database
            if schema is None:
                continue
            try:
                cursor.execute(f"SELECT COUNT(*) FROM {_quote_identifier(schema)}.{_quote_identifier(table)}")
                row = cursor.fetchone()
                actual: int | None = int(row[0]) if row else None
                detail = None
            except pymysql.MySQLError as error:
                actual, detail = None, f"cannot count rows: {error.args[-1]}"
            results.append(
                VerificationResult(
                    job_id=job_run.job_id,
                    database=schema,
                    table=table,
                    expected=expected,
                    actual=actual,
                    ok=actual == expected,
                    detail=detail,
                )
            )
    with session_scope() as session:
        session.add_all(results)
    bad = [r for r in results if not r.ok]
    job_run.log(f"verified row counts of {len(results)} tables: {len(results) - len(bad)} match")
    if bad:
        listed = "; ".join(f"{r.database}.{r.table}: expected {r.expected} rows, found {r.actual}" for r in bad[:5])
        raise VerificationFailed(
            f"verification failed: {len(bad)} of {len(results)} tables differ from the dump ({listed}); "
            f"the backup does not restore completely"
        )
