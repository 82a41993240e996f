"""A restore job from claim to verdict: server, restore, verification, cleanup."""

import logging
import re
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pymysql
import redis

from app.backups.paths import resolve_backup_path
from app.core.config import Settings, get_settings
from app.core.db import session_scope
from app.core.errors import DomainError
from app.jobs.log import add_log
from app.models import Backup, Job, JobPhase, JobStatus, ServerSnapshot, Target, VerificationResult
from app.sandboxes.options import ServerOptions
from app.targets.connection import Credentials, TargetUnreachable, connect, option_file
from worker.capture.errors import CaptureError
from worker.capture.local_server import find_local_server_pid
from worker.capture.selection import CapturePlan, aio_mode_of, existing_server_visibility, plan_capture
from worker.capture.session import JobCapture
from worker.job_run import JobRun, claim_job
from worker.runners.dump_stream import DumpError
from worker.runners.mysql_client import MysqlClientError, RestoreCancelled, RestoreOutcome, restore_with_mysql_client
from worker.sandbox.binary import detect_server_binary
from worker.sandbox.flags import mysql_untested_warning
from worker.sandbox.server import Sandbox, SandboxError
from worker.target_lock import TargetLock

log = logging.getLogger("restorescope.restore")

WAIT_FOR_TARGET_S = 5


class VerificationFailed(Exception):
    """The restore ran but the server does not hold what the backup holds."""


# Errors whose message is written for the user: the job fails with exactly that text.
USER_FACING_ERRORS: tuple[type[Exception], ...] = (
    CaptureError,
    DomainError,
    DumpError,
    MysqlClientError,
    SandboxError,
    TargetUnreachable,
    VerificationFailed,
)


@dataclass
class Server:
    """Whatever the restore writes into: how the mysql client reaches it, and a Python connection to it."""

    client_args: list[str]
    connect: Callable[[], pymysql.Connection]
    pid: int | None = None  # the server's process, when it runs on this host


def run(job_id: int) -> None:
    settings = get_settings()
    with session_scope() as session:
        job = session.get(Job, job_id)
        if job is None or job.status != JobStatus.QUEUED:
            state = job.status if job else "gone"
            log.info("job %s is %s: message ignored (redelivered, duplicated or cancelled)", job_id, state)
            return
        parameters = dict(job.parameters)

    lock = _target_lock(settings, parameters, job_id)
    if lock is not None and not lock.acquire():
        _wait_for_target(job_id, lock)
        return
    try:
        if not claim_job(job_id):
            return
        _run_claimed(job_id, parameters, settings, lock)
    finally:
        if lock is not None:
            lock.release()


def _target_lock(settings: Settings, parameters: dict[str, Any], job_id: int) -> TargetLock | None:
    if parameters["target"]["kind"] != "saved":
        return None
    return TargetLock(redis.Redis.from_url(settings.redis_url), parameters["target"]["target_id"], job_id)


def _wait_for_target(job_id: int, lock: TargetLock) -> None:
    # worker.tasks imports this module: import the task here, when both are loaded.
    from worker.tasks import run_restore

    with session_scope() as session:
        job = session.get(Job, job_id)
        if job is not None and job.phase != JobPhase.WAITING_FOR_TARGET:
            job.phase = JobPhase.WAITING_FOR_TARGET
            add_log(session, job_id, f"waiting: the target is busy with job {lock.holder()}")
    run_restore.apply_async(args=[job_id], countdown=WAIT_FOR_TARGET_S)


def _run_claimed(job_id: int, parameters: dict[str, Any], settings: Settings, lock: TargetLock | None) -> None:
    job_run = JobRun(job_id, settings)
    if lock is not None:
        job_run.on_heartbeat.append(lock.renew)
    try:
        with job_run:
            _restore(job_run, parameters, settings)
    except RestoreCancelled:
        job_run.finish(JobStatus.CANCELLED, "cancelled by user; the restore was stopped and its sandbox removed")
    except USER_FACING_ERRORS as error:
        if job_run.cancelled.is_set():
            job_run.finish(JobStatus.CANCELLED, "cancelled by user; the restore was stopped and its sandbox removed")
        else:
            job_run.finish(JobStatus.FAILED, str(error))
    except Exception as error:
        log.exception("job %s failed unexpectedly", job_id)
        job_run.finish(JobStatus.FAILED, f"internal error in restorescope: {error!r}; see the worker's log")
    else:
        job_run.finish(JobStatus.SUCCEEDED)


def _restore(job_run: JobRun, parameters: dict[str, Any], settings: Settings) -> None:
    dump, _root = resolve_backup_path(parameters["backup_path"], settings.resolved_backup_roots)
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
        capture.watch_server(server.pid, server.connect)
        # --- CPU and server-state sampling (helper D) goes here, e.g.:
        #     stack.enter_context(sample_job(capture.sink, pids=capture.pids, connect=server.connect))
        # It writes into the same trace as the capture (capture.sink); worker/capture/sampling.py.
        _take_snapshot(job_run, server, "start")
        database = parameters.get("database") or _default_database(job_run, dump)
        job_run.enter_phase(JobPhase.RESTORING)
        outcome = restore_with_mysql_client(
            dump,
            server.client_args,
            capture.client_popen(job_run.processes.popen),
            on_progress=lambda p: job_run.report_progress(
                p.bytes_done, p.rows_done, force=p.bytes_done == p.bytes_total
            ),
            on_log=lambda line: job_run.log(line, level="warning", source="mysql"),
            should_stop=job_run.cancelled.is_set,
            database=database,
        )
        if job_run.cancelled.is_set():
            raise RestoreCancelled()
        if parameters.get("verify", True):
            job_run.enter_phase(JobPhase.VERIFYING)
            _verify_row_counts(job_run, server, outcome, database)
        _take_snapshot(job_run, server, "end")
        job_run.enter_phase(JobPhase.CLEANING_UP)


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


@contextmanager
def _sandbox_server(
    job_run: JobRun, target: dict[str, Any], settings: Settings, capture: JobCapture
) -> Iterator[Server]:
    job_run.enter_phase(JobPhase.STARTING_SERVER)
    binary = detect_server_binary(settings.mariadbd_path)
    if warning := mysql_untested_warning(binary):
        job_run.log(warning, level="warning")
    options = capture.sandbox_options(ServerOptions.model_validate(target["options"]))
    sandbox = Sandbox(
        settings.resolved_work_root,
        f"job-{job_run.job_id}",
        options,
        binary,
        job_run.processes,
        lambda line: job_run.log(line, source="sandbox"),
        outlive_job=bool(target.get("keep")),
        datadir_layer=capture.datadir_layer(),
    )
    job_run.update(server_flavour=binary.flavour, server_version=binary.version, sandbox_dir=str(sandbox.root_dir))
    keep = bool(target.get("keep"))
    try:
        sandbox.start()
        job_run.update(sandbox_port=sandbox.port)
        job_run.log(
            f"sandbox {binary.flavour} {binary.version} up on port {sandbox.port}, socket {sandbox.socket_path}"
        )
        yield Server(client_args=["--no-defaults", *sandbox.client_args()], connect=sandbox.connect, pid=sandbox.pid)
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
            job_run.log("sandbox stopped and removed")


@contextmanager
def _saved_server(job_run: JobRun, target_id: int) -> Iterator[Server]:
    job_run.enter_phase(JobPhase.CONNECTING)
    with session_scope() as session:
        target = session.get(Target, target_id)
        if target is None:
            raise TargetUnreachable(f"the saved target {target_id} was deleted after the job was queued")
        credentials, name = Credentials.of(target), target.name
    with connect(credentials) as probe, probe.cursor() as cursor:
        cursor.execute("SELECT VERSION()")
        row = cursor.fetchone()
    version = str(row[0]) if row else ""
    job_run.update(server_flavour="mariadb" if "mariadb" in version.lower() else "mysql", server_version=version)
    job_run.log(f"connected to saved target '{name}' ({version})")
    with option_file(credentials) as defaults:
        yield Server(client_args=[f"--defaults-file={defaults}"], connect=lambda: connect(credentials))


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
