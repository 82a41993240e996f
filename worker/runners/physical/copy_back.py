"""Put a prepared backup into a fresh sandbox's datadir (mariabackup --move-back / --copy-back), start the
sandbox on it and check that what it serves is readable.

The sandbox must not have been started: Sandbox.start() creates a datadir only when there is none, so the
restored files are put where it will look (`Sandbox.real_datadir`, which is right under a FUSE capture
layer too) and start() then reuses them. Build it with `server_options_for_backup(...)` so the server's
page size and system tablespace files match the backup's.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from app.sandboxes.options import ServerOptions
from worker.runners.dump_stream import TableKey
from worker.runners.physical.backup_dir import (
    check_files,
    check_restorable_kind,
    file_layout_options,
    read_checkpoints,
    require_prepared,
)
from worker.runners.physical.errors import PhysicalBackupError
from worker.runners.physical.prepare import XTRABACKUP_UNTESTED, Tool, tool_command
from worker.runners.physical.verify import VerifyProgress, error_log_problems, verify_server
from worker.runners.tool_process import ToolError, run_tool
from worker.sandbox.errors import PortInUseError, SandboxError
from worker.sandbox.server import Sandbox

Phase = Literal["copying back", "starting", "verifying", "done"]
_FILE_LINE_PREFIXES = ("Copying ", "Moving ")


@dataclass
class CopyBackProgress:
    phase: Phase
    files_done: int = 0
    files_total: int = 0
    tables_done: int = 0
    tables_total: int = 0


@dataclass
class RestoreCheck:
    """What a server started on the restored files showed. `restorable` is False when it did not start or
    a check failed; `problems` says what, in words for the user."""

    problems: list[str]
    rows: dict[TableKey, int] = field(default_factory=dict)
    copy_seconds: float = 0.0
    start_seconds: float = 0.0
    verify_seconds: float = 0.0

    @property
    def restorable(self) -> bool:
        return not self.problems


# The restored grant tables hold the source's users and passwords, which restorescope does not know, so the
# server skips them (it listens on 127.0.0.1 and its own socket only). Replication and the event scheduler
# stay off: a backup of a replica must not reconnect to its primary, and the source's events must not change
# the restored data while it is checked (skip-grant-tables turns events off too; said twice on purpose).
RESTORED_SERVER_OPTIONS = {"skip-grant-tables": "ON", "skip-slave-start": "ON", "event-scheduler": "DISABLED"}


def server_options_for_backup(prepared_dir: Path, options: ServerOptions) -> ServerOptions:
    """`options` plus what a server on the restored files needs: the backup's innodb_page_size,
    innodb_data_file_path and innodb_undo_tablespaces (from its backup-my.cnf; a server started with other
    values refuses the files), and RESTORED_SERVER_OPTIONS. Both win over the same names in options.extra."""
    extra = {**options.extra, **file_layout_options(prepared_dir), **RESTORED_SERVER_OPTIONS}
    return options.model_copy(update={"extra": extra})


def copy_back(
    prepared_dir: Path,
    sandbox: Sandbox,
    popen: Callable[..., subprocess.Popen[bytes]],
    on_progress: Callable[[CopyBackProgress], None],
    on_log: Callable[[str], None],
    should_stop: Callable[[], bool],
    *,
    expected_rows: dict[TableKey, int] | None = None,
    check_tables: bool = True,
    move: bool = False,
    tool: Tool = "mariabackup",
    binary: str | None = None,
    start_timeout_s: float = 300,
) -> RestoreCheck:
    """Restore the prepared backup into `sandbox` (not started yet), start it, and check it.

    Raises NotPreparedError (and the other PhysicalBackupErrors) for input that cannot be copied back, and
    RestoreCancelled on should_stop(); a backup that is copied back but does not start or does not read
    is returned as a RestoreCheck with restorable=False. `move=True` moves the files out of `prepared_dir`
    and then removes it (no second copy): pass it for prepare_backup's copy, never for a user's directory.
    The sandbox must have been built with server_options_for_backup(prepared_dir, ...).
    """
    checkpoints = read_checkpoints(prepared_dir)
    check_restorable_kind(checkpoints)
    require_prepared(checkpoints)
    options = file_layout_options(prepared_dir)
    check_files(prepared_dir, checkpoints, options)
    command = tool_command(tool, binary)
    if tool == "xtrabackup":
        on_log(XTRABACKUP_UNTESTED)
    datadir = sandbox.real_datadir
    if datadir.exists() and any(datadir.iterdir()):
        raise PhysicalBackupError(
            f"the sandbox's datadir {datadir} already holds files: restore a physical backup into a new sandbox"
        )
    sandbox.claim()
    datadir.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    _put_files(
        [
            *command,
            "--move-back" if move else "--copy-back",
            f"--target-dir={prepared_dir.absolute()}",
            f"--datadir={datadir}",
            *(f"--{name.replace('_', '-')}={value}" for name, value in sorted(options.items())),
        ],
        datadir,
        _count_files(prepared_dir),
        popen,
        on_progress,
        on_log,
        should_stop,
    )
    if move:
        shutil.rmtree(prepared_dir, ignore_errors=True)  # spent: only its metadata files were left in it
    check = RestoreCheck([], copy_seconds=time.monotonic() - started)
    on_progress(CopyBackProgress("starting"))
    started = time.monotonic()
    try:
        sandbox.start(timeout_s=start_timeout_s)
    except PortInUseError:
        raise  # the job's port setting, not the backup, is at fault
    except SandboxError as error:
        check.start_seconds = time.monotonic() - started
        # The sandbox's message ends with the error log's tail (a crash's stack trace, often) and a hint about
        # server settings; with restored files the corruption lines before the trace are what matter.
        first_line = str(error).splitlines()[0].split("; its error log")[0].rstrip(";: ")
        check.problems.append(f"the server did not start on the restored files: {first_line}")
        check.problems += error_log_problems(sandbox.root_dir / "error.log")
        return check
    check.start_seconds = time.monotonic() - started
    started = time.monotonic()

    def on_verify(progress: VerifyProgress) -> None:
        on_progress(CopyBackProgress("verifying", tables_done=progress.tables_done, tables_total=progress.tables_total))

    check.rows, check.problems = verify_server(
        sandbox.connect, on_verify, should_stop, expected_rows=expected_rows, check_tables=check_tables
    )
    check.problems += error_log_problems(sandbox.root_dir / "error.log")
    check.verify_seconds = time.monotonic() - started
    on_progress(CopyBackProgress("done", tables_done=len(check.rows), tables_total=len(check.rows)))
    return check


def _put_files(
    args: list[str],
    datadir: Path,
    files_total: int,
    popen: Callable[..., subprocess.Popen[bytes]],
    on_progress: Callable[[CopyBackProgress], None],
    on_log: Callable[[str], None],
    should_stop: Callable[[], bool],
) -> None:
    files_done = 0
    errors: list[str] = []

    def on_line(line: str) -> None:
        nonlocal files_done
        on_log(line)
        text = line.split(" ", 3)[-1] if line.startswith("[") else line
        if text.startswith(_FILE_LINE_PREFIXES):
            files_done += 1
            on_progress(CopyBackProgress("copying back", min(files_done, files_total), files_total))
        elif "error" in line.lower():
            errors.append(line.strip())

    on_progress(CopyBackProgress("copying back", 0, files_total))
    try:
        run_tool(args, popen, on_line, should_stop)
    except ToolError as error:
        shutil.rmtree(datadir, ignore_errors=True)  # half a datadir must not be started later by mistake
        said = " | ".join(errors[-5:]) or str(error)
        raise PhysicalBackupError(
            f"copying the prepared backup into the sandbox failed: {said}; check the free space of the "
            "work directory and see the job log"
        ) from error
    except BaseException:
        shutil.rmtree(datadir, ignore_errors=True)
        raise
    on_progress(CopyBackProgress("copying back", files_total, files_total))  # the metadata files stay behind


def _count_files(directory: Path) -> int:
    return sum(1 for path in directory.rglob("*") if path.is_file())
