"""Prepare a physical backup (apply its redo log) with mariabackup --prepare, on a copy in the job's work dir.

Tested with mariabackup 10.11 (Debian 12). Percona XtraBackup (`tool="xtrabackup"`) takes the same
--prepare --target-dir --use-memory options, but it cannot be installed on this machine: that path is
UNTESTED, and the job log says so when it is used.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from worker.runners.mysql_client import RestoreCancelled
from worker.runners.physical.backup_dir import (
    Checkpoints,
    backup_server_version,
    check_files,
    check_restorable_kind,
    file_layout_options,
    read_checkpoints,
)
from worker.runners.physical.errors import DamagedBackupError, PhysicalBackupError, PrepareError
from worker.runners.physical.prepare_log import PrepareLog
from worker.runners.tool_process import ToolError, run_tool
from worker.sandbox.binary import find_tool
from worker.sandbox.errors import SandboxError

Tool = Literal["mariabackup", "xtrabackup"]
Phase = Literal["copying", "applying redo", "done"]

PREPARED_DIR_NAME = "prepared"
PROGRESS_INTERVAL_SECONDS = 0.5
XTRABACKUP_UNTESTED = (
    "Warning: Percona XtraBackup support is UNTESTED: it cannot be installed on the machine restorescope is "
    "developed on. Its --prepare options and log lines follow its documentation; check the result closely."
)
_SIZE_OPTION = re.compile(r"^\d+[KMGkmg]?$")
# Free space kept beyond the copy itself: prepare grows ibdata1 and the .ibd files a little.
_SPACE_MARGIN = 1.1


@dataclass
class PrepareProgress:
    phase: Phase
    percent: float  # of the phase: bytes copied, or (lsn - start_lsn) / (end_lsn - start_lsn)
    bytes_copied: int = 0
    bytes_total: int = 0
    lsn: int | None = None
    start_lsn: int | None = None
    end_lsn: int | None = None
    batches: int = 0


@dataclass
class PrepareOutcome:
    prepared_dir: Path  # the prepared copy, ready for copy_back
    start_lsn: int | None  # the checkpoint recovery started from
    end_lsn: int | None  # where the redo log ended
    batches: int  # recovery batches: more than one when the redo did not fit in --use-memory
    copy_seconds: float
    prepare_seconds: float
    bytes_copied: int
    already_prepared: bool  # the backup had been prepared before; nothing was applied
    use_memory: str | None = None  # as asked; None is mariabackup's default (96M in 10.11)
    warnings: list[str] = field(default_factory=list)  # e.g. tablespaces whose redo was ignored

    @property
    def redo_bytes(self) -> int | None:
        """How much redo was applied (LSNs count bytes of redo)."""
        if self.already_prepared:
            return 0
        if self.start_lsn is None or self.end_lsn is None:
            return None
        return self.end_lsn - self.start_lsn


def prepare_backup(
    backup_dir: Path,
    work_dir: Path,
    popen: Callable[..., subprocess.Popen[bytes]],
    on_progress: Callable[[PrepareProgress], None],
    on_log: Callable[[str], None],
    should_stop: Callable[[], bool],
    *,
    use_memory: str | None = None,
    read_io_threads: int | None = None,
    write_io_threads: int | None = None,
    tool: Tool = "mariabackup",
    binary: str | None = None,
) -> PrepareOutcome:
    """Copy `backup_dir` to `work_dir/prepared` and apply its redo log there; the user's backup is only read.

    `use_memory` ("2G") is the buffer pool prepare may use: redo that does not fit is applied in several
    batches. `read_io_threads` / `write_io_threads` set --innodb-read-io-threads / --innodb-write-io-threads.
    Callbacks run on the calling thread: on_progress at most every 0.5 s, at each new recovery batch and at
    the end of each phase,
    on_log with every line of the tool, should_stop between files and every 0.25 s while the tool runs.
    On any failure or cancel the copy is removed, so nothing half-prepared is left looking usable.
    """
    _check_arguments(use_memory, read_io_threads, write_io_threads)
    checkpoints = read_checkpoints(backup_dir)
    check_restorable_kind(checkpoints)
    options = file_layout_options(backup_dir)
    check_files(backup_dir, checkpoints, options)
    command = tool_command(tool, binary)
    if tool == "xtrabackup":
        on_log(XTRABACKUP_UNTESTED)
    target = work_dir.absolute() / PREPARED_DIR_NAME
    source = backup_dir.absolute()
    if target.is_relative_to(source) or source.is_relative_to(target):
        # The copy would copy itself, or clearing an old copy would delete the backup.
        raise ValueError(f"the work directory {work_dir} and the backup {backup_dir} must not contain each other")
    try:
        copied, copy_seconds = _copy_backup(backup_dir, target, on_progress, should_stop)
        # XtraBackup reads backup-my.cnf itself at --prepare, and some of these names are not its options.
        layout = options if tool == "mariabackup" else {}
        log, prepare_seconds = _run_prepare(
            [*command, *_prepare_options(target, layout, use_memory, read_io_threads, write_io_threads)],
            checkpoints,
            popen,
            on_progress,
            on_log,
            should_stop,
        )
    except BaseException:
        shutil.rmtree(target, ignore_errors=True)
        raise
    return PrepareOutcome(
        target,
        log.start_lsn,
        log.end_of_log_lsn or log.end_lsn,
        log.batches,
        copy_seconds,
        prepare_seconds,
        copied,
        log.already_prepared,
        use_memory,
        log.warnings,
    )


def tool_command(tool: Tool, binary: str | None) -> list[str]:
    """The tool's path and --no-defaults: option files of the worker's machine must not change what it does."""
    names = ("mariabackup", "mariadb-backup") if tool == "mariabackup" else ("xtrabackup",)
    if binary:
        found = shutil.which(binary)
        if found is None:
            raise PhysicalBackupError(f"{binary} does not exist or is not executable: give the full path of {tool}")
        return [found, "--no-defaults"]
    try:
        return [find_tool(names), "--no-defaults"]
    except SandboxError:
        package = "mariadb-backup" if tool == "mariabackup" else "percona-xtrabackup"
        raise PhysicalBackupError(
            f"{tool} is not installed on this worker: install the {package} package (its version must match the "
            "server that made the backup)"
        ) from None


def _check_arguments(use_memory: str | None, read_io_threads: int | None, write_io_threads: int | None) -> None:
    if use_memory is not None and not _SIZE_OPTION.match(use_memory):
        raise ValueError(f"use_memory must be a size such as 512M or 2G, not {use_memory!r}")
    for name, value in (("read_io_threads", read_io_threads), ("write_io_threads", write_io_threads)):
        if value is not None and not 1 <= value <= 64:
            raise ValueError(f"{name} must be between 1 and 64, not {value}")


def _prepare_options(
    target: Path,
    options: dict[str, str],
    use_memory: str | None,
    read_io_threads: int | None,
    write_io_threads: int | None,
) -> list[str]:
    # The file layout comes from backup-my.cnf, passed option by option instead of reading the file as an
    # option file: it is part of the user's backup, and only these settings must match the data files.
    args = ["--prepare", f"--target-dir={target}"]
    args += [f"--{name.replace('_', '-')}={value}" for name, value in sorted(options.items())]
    if use_memory:
        args.append(f"--use-memory={use_memory}")
    if read_io_threads:
        args.append(f"--innodb-read-io-threads={read_io_threads}")
    if write_io_threads:
        args.append(f"--innodb-write-io-threads={write_io_threads}")
    return args


def _copy_backup(
    source: Path,
    target: Path,
    on_progress: Callable[[PrepareProgress], None],
    should_stop: Callable[[], bool],
) -> tuple[int, float]:
    """A full copy, never hard links: prepare writes the applied pages into ibdata1 and the .ibd files in
    place, rewrites ib_logfile0 and marks xtrabackup_checkpoints as prepared. A hard link shares the inode,
    so that would change the user's backup, and a failed or cancelled prepare would leave it half-applied.
    (A reflink copy would be as safe and cheaper on btrfs/XFS; shutil's sendfile copy works everywhere.)"""
    started = time.monotonic()
    total = sum(path.stat().st_size for path in source.rglob("*") if path.is_file())
    free = shutil.disk_usage(_existing_parent(target.parent)).free
    if total * _SPACE_MARGIN > free:
        raise PhysicalBackupError(
            f"not enough free space to prepare a copy of the backup in {target.parent}: it needs about "
            f"{total * _SPACE_MARGIN / (1 << 30):.1f} GiB and {free / (1 << 30):.1f} GiB are free; "
            "free some space or use a work directory on a larger disk"
        )
    shutil.rmtree(target, ignore_errors=True)  # a copy left by an earlier, interrupted run of this job
    target.parent.mkdir(parents=True, exist_ok=True)
    copied = 0
    next_report = time.monotonic()

    def copy_file(src: str, dst: str) -> str:
        nonlocal copied, next_report
        if should_stop():
            raise RestoreCancelled("the prepare was cancelled while copying the backup")
        result = shutil.copy2(src, dst)
        copied += Path(src).stat().st_size
        if time.monotonic() >= next_report:
            on_progress(PrepareProgress("copying", 100.0 * copied / total if total else 100.0, copied, total))
            next_report = time.monotonic() + PROGRESS_INTERVAL_SECONDS
        return str(result)

    try:
        shutil.copytree(source, target, copy_function=copy_file)
    except shutil.Error as error:
        raise DamagedBackupError(
            f"copying the backup {source} failed: {error}; check the files' permissions"
        ) from error
    on_progress(PrepareProgress("copying", 100.0, copied, total))
    return copied, time.monotonic() - started


def _existing_parent(path: Path) -> Path:
    while not path.exists():
        path = path.parent
    return path


def _run_prepare(
    args: list[str],
    checkpoints: Checkpoints,
    popen: Callable[..., subprocess.Popen[bytes]],
    on_progress: Callable[[PrepareProgress], None],
    on_log: Callable[[str], None],
    should_stop: Callable[[], bool],
) -> tuple[PrepareLog, float]:
    started = time.monotonic()
    log = PrepareLog(start_lsn=checkpoints.to_lsn, end_lsn=checkpoints.last_lsn)
    next_report = time.monotonic()

    def report() -> None:
        on_progress(
            PrepareProgress(
                "done" if log.completed else "applying redo",
                log.percent(),
                lsn=log.lsn,
                start_lsn=log.start_lsn,
                end_lsn=log.end_lsn,
                batches=log.batches,
            )
        )

    def on_line(line: str) -> None:
        nonlocal next_report
        on_log(line)
        batches = log.batches
        log.feed(line)
        # Every new batch is reported, however fast: the advisor reads how many there were and when.
        if log.batches != batches or time.monotonic() >= next_report:
            report()
            next_report = time.monotonic() + PROGRESS_INTERVAL_SECONDS

    report()
    try:
        run_tool(args, popen, on_line, should_stop)
    except ToolError as error:
        raise _prepare_error(args[0], log, str(error), backup_server_version(checkpoints.path.parent)) from error
    if not log.completed:
        raise PrepareError(f"{Path(args[0]).name} --prepare exited without saying 'completed OK!'; see the job log")
    _check_redo_was_applied(log, checkpoints)
    report()
    return log, time.monotonic() - started


def _check_redo_was_applied(log: PrepareLog, checkpoints: Checkpoints) -> None:
    # mariabackup 10.11 accepts a truncated ib_logfile0: it applies what is there, says "completed OK!" and
    # exits 0, leaving a backup that silently lacks the last changes. The LSN it found the log to end at
    # tells: it must reach the last_lsn the backup recorded.
    if log.already_prepared or log.end_of_log_lsn is None:
        return
    if log.end_of_log_lsn < checkpoints.last_lsn:
        raise DamagedBackupError(
            f"ib_logfile0 of the backup ends at LSN {log.end_of_log_lsn}, but {checkpoints.path.name} says the "
            f"redo log was copied up to LSN {checkpoints.last_lsn}: ib_logfile0 is truncated or damaged, and the "
            "restored data would lack the last changes; copy the backup again from its source, or take a new one"
        )


def _prepare_error(tool_path: str, log: PrepareLog, tool_error: str, server_version: str | None) -> PhysicalBackupError:
    said = " | ".join(log.errors[-5:]) if log.errors else tool_error
    if any("was not found" in error and "ib_logfile" in error for error in log.errors):
        return DamagedBackupError(
            f"the backup's redo log is missing ({said}); the backup is incomplete: take a new backup"
        )
    if any("is of a different size" in error or "did not exist" in error for error in log.errors):
        return DamagedBackupError(
            f"the backup's system tablespace does not match its backup-my.cnf ({said}); "
            "the backup is damaged: copy it again from its source, or take a new backup"
        )
    name = Path(tool_path).name
    made_by = f" ({server_version})" if server_version else ""
    return PrepareError(
        f"{name} --prepare failed: {said}; check that {name} has the same version as the server that made the "
        f"backup{made_by}, and see the job log for its full output"
    )
