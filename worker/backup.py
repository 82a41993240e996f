"""A backup job from claim to a registered backup: connect to the saved server, run the tool into a hidden
directory next to the destination, compress, check that restorescope recognises what was written, rename it
into place and register it.

Until the rename, the backup lives in `.NAME.partial-JOB` beside the destination: a failed or cancelled backup
is removed there and never looks complete. (A worker killed outright leaves that hidden directory behind.)
"""

import contextlib
import logging
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import pymysql

from app.backups.detect import Detected, detect_directory, detect_file
from app.backups.service import register_backup
from app.core.config import Settings, get_settings
from app.core.db import session_scope
from app.core.errors import DomainError
from app.jobs.destination import check_destination_free
from app.models import Job, JobPhase, JobStatus
from app.targets.connection import Credentials, TargetUnreachable, connect, option_file, saved_credentials
from app.targets.locality import find_local_server_pid
from worker.job_run import JobRun, claim_job, queued_parameters
from worker.restore import default_threads
from worker.runners import backup_tools
from worker.runners.mysql_client import RestoreCancelled
from worker.runners.tool_process import ToolError, run_tool
from worker.sandbox.binary import find_tool

log = logging.getLogger("restorescope.backup")

CHUNK = 1 << 20
POLL_S = 0.5
FILES_PER_COMPRESSOR = 256
STALL_WARNING_S = 180
MYDUMPER_STALLED = (
    "mydumper has written nothing for {minutes} minutes: it may be waiting for FLUSH TABLES WITH READ LOCK behind "
    "a long query on the source (see SHOW PROCESSLIST), or hung (mydumper 0.10 now and then does, all its threads "
    "asleep): cancel and retry the job if it stays so"
)

# What detect.py must call each tool's output.
EXPECTED_FORMAT = {
    "mysqldump": "mysqldump",
    "mysqldump-tab": "mysqldump-tab",
    "mydumper": "mydumper",
    "mariabackup": "mariabackup",
}
TOOL_NAMES = {
    "mysqldump": "mysqldump",
    "mysqldump-tab": "mysqldump --tab",
    "mydumper": "mydumper",
    "mariabackup": "mariabackup --backup",
}


class BackupError(Exception):
    """The backup could not be taken; the message says why and what to do."""


class BackupCancelled(Exception):
    """The user cancelled; the partial backup was removed."""


USER_FACING_ERRORS: tuple[type[Exception], ...] = (BackupError, DomainError, TargetUnreachable, ToolError)


@dataclass
class Source:
    name: str
    credentials: Credentials
    version: str
    databases: list[str]
    data_bytes: int


def run(job_id: int) -> None:
    settings = get_settings()
    parameters = queued_parameters(job_id)
    if parameters is None:
        return
    if not claim_job(job_id):
        return
    job_run = JobRun(job_id, settings)
    destination = Path(parameters["destination"])
    try:
        with job_run:
            _backup(job_run, parameters, settings)
    except (BackupCancelled, RestoreCancelled):
        job_run.finish(JobStatus.CANCELLED, _cancelled_message(destination))
    except USER_FACING_ERRORS as error:
        if job_run.cancelled.is_set():
            job_run.finish(JobStatus.CANCELLED, _cancelled_message(destination))
        else:
            job_run.finish(JobStatus.FAILED, str(error))
    except Exception as error:
        log.exception("job %s failed unexpectedly", job_id)
        job_run.finish(JobStatus.FAILED, f"internal error in restorescope: {error!r}; see the worker's log")
    else:
        job_run.finish(JobStatus.SUCCEEDED)


def _cancelled_message(destination: Path) -> str:
    return (
        f"cancelled by user; the backup was stopped and its partial files removed: nothing was written to {destination}"
    )


def _backup(job_run: JobRun, parameters: dict[str, Any], settings: Settings) -> None:
    tool = str(parameters["tool"])
    compression = str(parameters.get("compression") or "none")
    level = parameters.get("level")
    threads = int(parameters.get("threads") or default_threads())
    destination = Path(parameters["destination"])
    artifact = Path(parameters["backup_path"])
    # Something may have been written there since the job was queued (or this is a retry).
    check_destination_free(destination, str(destination))

    job_run.enter_phase(JobPhase.CONNECTING)
    source = _connect_source(job_run, int(parameters["source"]["target_id"]), tool, list(parameters["databases"]))
    partial = destination.parent / f".{destination.name}.partial-{job_run.job_id}"
    destination.parent.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir()
    started = time.monotonic()
    try:
        job_run.enter_phase(JobPhase.BACKING_UP)
        job_run.log(
            f"backing up {_what(tool, source)} ({_data_size(source.data_bytes)}) with {TOOL_NAMES[tool]}, "
            f"{_threads(threads)}, " + ("uncompressed" if compression == "none" else f"{compression} compressed")
        )
        settings.resolved_work_root.mkdir(parents=True, exist_ok=True)
        with option_file(source.credentials, directory=settings.resolved_work_root) as defaults:
            raw_bytes = _run_tool(job_run, tool, defaults, partial, artifact.name, source, threads, compression, level)
        if (
            compression != "none"
            and tool in ("mysqldump-tab", "mydumper")
            and (tool, compression) not in (("mydumper", "gzip"), ("mydumper", "pigz"))
        ):
            _compress_files(job_run, tool, partial, compression, threads, level)
        if job_run.cancelled.is_set():
            raise BackupCancelled()
        written = _directory_size(partial)
        job_run.update(bytes_total=raw_bytes, bytes_done=raw_bytes)
        job_run.enter_phase(JobPhase.VERIFYING)
        _check_detected(tool, partial, artifact.name)
        partial.chmod(0o755)  # readable by others, as the tools leave their own output
        try:
            # rename(2) replaces an empty directory, and fails on one that someone filled meanwhile.
            partial.rename(destination)
        except OSError as error:
            raise BackupError(f"cannot move the finished backup to {destination}: {error.strerror}") from error
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    elapsed = time.monotonic() - started
    job_run.enter_phase(JobPhase.CLEANING_UP)
    with session_scope() as session:
        backup = register_backup(session, str(artifact), settings.resolved_backup_roots)
        job = session.get(Job, job_run.job_id)
        assert job is not None
        job.backup_id = backup.id
        registered = f"{backup.format}" + (f", {backup.compression}" if backup.compression else "")
    # mydumper's own gzip leaves no uncompressed size to compare with.
    own_gzip = tool == "mydumper" and compression in ("gzip", "pigz")
    ratio = ""
    if compression != "none" and written and not own_gzip:
        ratio = f" from {_mb(raw_bytes)} of dump, compression ratio {raw_bytes / written:.2f}x"
    job_run.log(
        f"wrote {artifact} ({registered}): {_mb(written)} on disk{ratio}; {_data_size(source.data_bytes)}; "
        f"{elapsed:.1f} s, {written / 1e6 / max(elapsed, 1e-3):.1f} MB/s written"
    )


def _data_size(data_bytes: int) -> str:
    if data_bytes == 0:
        return "the server's statistics give no table size yet (progress shows bytes written only)"
    return f"{_mb(data_bytes)} of table data and indexes, as the server counts them"


def _threads(threads: int) -> str:
    return "1 thread" if threads == 1 else f"{threads} threads"


def _what(tool: str, source: Source) -> str:
    if tool == "mariabackup":
        return f"the whole server '{source.name}'"
    return f"{', '.join(source.databases)} of '{source.name}'"


def _mb(size: int) -> str:
    return f"{size / 1e6:.1f} MB"


def _connect_source(job_run: JobRun, target_id: int, tool: str, asked: list[str]) -> Source:
    credentials, name = saved_credentials(target_id)
    with connect(credentials) as connection, connection.cursor() as cursor:
        cursor.execute("SELECT VERSION()")
        row = cursor.fetchone()
        version = str(row[0]) if row else ""
        if tool in ("mysqldump-tab", "mariabackup"):
            _require_local(connection, tool, name)
        databases = _databases(cursor, asked, name)
        data_bytes = _data_bytes(cursor, None if tool == "mariabackup" else databases)
    job_run.update(
        server_flavour="mariadb" if "mariadb" in version.lower() else "mysql",
        server_version=version,
        bytes_total=data_bytes or None,
    )
    job_run.log(f"connected to saved target '{name}' ({version})")
    return Source(name, credentials, version, databases, data_bytes)


def _require_local(connection: pymysql.Connection, tool: str, name: str) -> None:
    _pid, problem = find_local_server_pid(connection)
    if problem is None:
        return
    reason = (
        "it copies the server's data files, so it must read its datadir"
        if tool == "mariabackup"
        else "the server itself writes the table data files into the backup directory"
    )
    raise BackupError(
        f"{TOOL_NAMES[tool]} can only back up a server on this worker's host ({reason}), and '{name}' is not "
        f"one: {problem}. Use mysqldump or mydumper, which work over the network"
    )


def _databases(cursor: Any, asked: list[str], name: str) -> list[str]:
    cursor.execute("SELECT schema_name FROM information_schema.schemata")
    present = sorted(str(row[0]) for row in cursor.fetchall())
    if asked:
        missing = [db for db in asked if db not in present]
        if missing:
            raise BackupError(f"'{name}' has no database named {', '.join(missing)}: check the spelling")
        return asked
    chosen = [db for db in present if db not in backup_tools.SYSTEM_SCHEMAS]
    if not chosen:
        raise BackupError(f"'{name}' has no databases of its own to back up (only {', '.join(present)})")
    return chosen


def _data_bytes(cursor: Any, databases: list[str] | None) -> int:
    """Table data and indexes as the server counts them: the yardstick for progress (an estimate, as a dump's
    text and a copy's pages are not the same size)."""
    query = "SELECT COALESCE(SUM(data_length + index_length), 0) FROM information_schema.tables"
    if databases is None:
        cursor.execute(query + " WHERE table_schema NOT IN ('information_schema', 'performance_schema')")
    else:
        cursor.execute(query + f" WHERE table_schema IN ({', '.join(['%s'] * len(databases))})", databases)
    row = cursor.fetchone()
    return int(row[0] or 0) if row else 0


def _run_tool(
    job_run: JobRun,
    tool: str,
    defaults: Path,
    partial: Path,
    file_name: str,
    source: Source,
    threads: int,
    compression: str,
    level: int | None,
) -> int:
    """Run the tool into `partial`; return the bytes it wrote before any compression (as far as known)."""
    mysqldump = find_tool(("mysqldump", "mariadb-dump"))
    if tool == "mysqldump":
        command = backup_tools.mysqldump_command(mysqldump, defaults, source.databases)
        compressor = None if compression == "none" else backup_tools.stream_compressor(compression, threads, level)
        # Named so that no scan lists it as a dump until it is whole (detect.py goes by the .sql suffixes).
        unfinished = partial / f"{file_name}.partial"
        written = _dump_through_pipe(job_run, command, compressor, unfinished)
        unfinished.rename(partial / file_name)
        return written
    if tool == "mysqldump-tab":
        # The server writes the .txt files as its own user, which may not be ours: it may create files, not list.
        partial.chmod(0o733)
        command = backup_tools.tab_command(mysqldump, defaults, partial, source.databases[0])
        routines = partial / f"{source.databases[0]}-routines.sql"
        with _watching(job_run, partial):
            _dump_through_pipe(job_run, command, None, routines, report=False)
        return _directory_size(partial)
    if tool == "mydumper":
        command = backup_tools.mydumper_command(
            find_tool(("mydumper",)),
            defaults,
            partial,
            source.databases,
            threads,
            compress=compression in ("gzip", "pigz"),
        )
        with _watching(job_run, partial, MYDUMPER_STALLED):
            _run_logged(job_run, command, "mydumper", lambda _line: True)
        return _directory_size(partial)
    command = backup_tools.mariabackup_command(find_tool(("mariabackup", "mariadb-backup")), defaults, partial, threads)
    with _watching(job_run, partial):
        _run_logged(job_run, command, "mariabackup", _mariabackup_line_matters)
    return _directory_size(partial)


_MARIABACKUP_NOTEWORTHY = re.compile(r"\b(?:error|warning)\b|completed OK", re.IGNORECASE)
_MARIABACKUP_FILE_LINE = re.compile(r"Copying |is copied|copied successfully|Streaming ")


def _mariabackup_line_matters(line: str) -> bool:
    # It prints a line per file copied (and a file may be named "error"): only its error and warning lines
    # and its verdict go into the job's log; the last lines are quoted anyway when it fails.
    return bool(_MARIABACKUP_NOTEWORTHY.search(line)) and not _MARIABACKUP_FILE_LINE.search(line)


def _run_logged(job_run: JobRun, command: list[str], source: str, matters: Callable[[str], bool]) -> None:
    def on_line(line: str) -> None:
        if line.strip() and matters(line):
            job_run.log(line.strip(), source=source)

    try:
        run_tool(command, job_run.processes.popen, on_line, job_run.cancelled.is_set)
    except RestoreCancelled as cancelled:
        raise BackupCancelled() from cancelled


def _dump_through_pipe(
    job_run: JobRun, command: list[str], compressor: list[str] | None, target: Path, report: bool = True
) -> int:
    """mysqldump's standard output into target, through the compressor if any; the bytes are counted on the way,
    so progress is in dump bytes before compression."""
    done = 0
    with (
        tempfile.TemporaryFile() as dump_errors,
        tempfile.TemporaryFile() as compressor_errors,
        target.open("wb") as out,
    ):
        dump = job_run.processes.popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=dump_errors)
        squeeze = None
        if compressor is not None:
            squeeze = job_run.processes.popen(compressor, stdin=subprocess.PIPE, stdout=out, stderr=compressor_errors)
        sink: IO[bytes] = squeeze.stdin if squeeze is not None and squeeze.stdin is not None else out
        assert dump.stdout is not None
        try:
            while chunk := os.read(dump.stdout.fileno(), CHUNK):
                if job_run.cancelled.is_set():
                    raise BackupCancelled()
                try:
                    sink.write(chunk)
                except BrokenPipeError as error:
                    raise BackupError(
                        f"{compressor[0] if compressor else 'writing'} stopped: {_said(compressor_errors)}"
                    ) from error
                done += len(chunk)
                if report:
                    job_run.report_progress(done, 0)
            if squeeze is not None and squeeze.stdin is not None:
                squeeze.stdin.close()
            dump_code = dump.wait()
            squeeze_code = squeeze.wait() if squeeze is not None else 0
        except BaseException:
            for process in (dump, squeeze):
                if process is not None and process.poll() is None:
                    process.kill()
                    process.wait()
            raise
        if job_run.cancelled.is_set():
            raise BackupCancelled()
        if dump_code != 0:
            raise BackupError(f"{Path(command[0]).name} exited with code {dump_code}: {_said(dump_errors)}")
        if squeeze_code != 0 and compressor is not None:
            raise BackupError(f"{compressor[0]} exited with code {squeeze_code}: {_said(compressor_errors)}")
    if report:
        job_run.report_progress(done, 0, force=True)
    return done


def _said(errors: IO[bytes]) -> str:
    errors.seek(0)
    text = errors.read()[-4000:].decode("utf-8", errors="replace").strip()
    lines = [line for line in text.splitlines() if line.strip()]
    return " | ".join(lines[-5:]) or "no message"


@contextmanager
def _watching(job_run: JobRun, directory: Path, stalled: str | None = None) -> Iterator[None]:
    """Progress of a tool that writes files: the directory's size, polled. With `stalled`, the log says it once
    when nothing has been written for STALL_WARNING_S."""
    stop = threading.Event()

    def poll() -> None:
        size, changed, warned = -1, time.monotonic(), False
        while not stop.wait(POLL_S):
            with contextlib.suppress(Exception):
                now_size = _directory_size(directory)
                job_run.report_progress(now_size, 0)
                if now_size != size:
                    size, changed, warned = now_size, time.monotonic(), False
                elif stalled and not warned and time.monotonic() - changed > STALL_WARNING_S:
                    warned = True
                    job_run.log(stalled.format(minutes=int(STALL_WARNING_S // 60)), level="warning")

    watcher = threading.Thread(target=poll, name=f"backup-progress-{job_run.job_id}", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        stop.set()
        watcher.join(timeout=5)
    job_run.report_progress(_directory_size(directory), 0, force=True)


def _compress_files(
    job_run: JobRun, tool: str, directory: Path, compression: str, threads: int, level: int | None
) -> None:
    files = backup_tools.files_to_compress(directory, tool)
    before = _directory_size(directory)
    job_run.log(f"compressing {len(files)} files with {compression}, {_threads(threads)}")
    for start in range(0, len(files), FILES_PER_COMPRESSOR):
        batch = files[start : start + FILES_PER_COMPRESSOR]
        _run_logged(
            job_run, backup_tools.file_compressor(compression, threads, level, batch), compression, lambda _line: True
        )
    job_run.log(f"compressed {_mb(before)} into {_mb(_directory_size(directory))}")


def _check_detected(tool: str, partial: Path, file_name: str) -> None:
    """What was written must be what restorescope lists and restores: the detector is asked, as a scan would."""
    found: Detected | None = detect_file(partial / file_name) if tool == "mysqldump" else detect_directory(partial)
    expected = EXPECTED_FORMAT[tool]
    if found is None or found.format != expected:
        seen = found.format if found else "nothing it knows"
        raise BackupError(
            f"{TOOL_NAMES[tool]} finished, but restorescope reads what it wrote as {seen}, not a {expected} backup; "
            "the files were removed. See the job's log for what the tool said"
        )
    problems = found.details.get("problems") or []
    if problems and tool != "mariabackup":
        raise BackupError(f"{TOOL_NAMES[tool]} finished, but the backup is incomplete: {'; '.join(map(str, problems))}")


def _directory_size(path: Path) -> int:
    total = 0
    for current, _dirs, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += (Path(current) / name).lstat().st_size
    return total
