"""Restore physical backups (mariabackup; xtrabackup UNTESTED): prepare a copy, copy it back into a sandbox,
start it and check it. The errors are drawn in worker.runners.physical.errors.

    outcome = prepare_backup(backup_dir, work_dir, popen, on_progress, on_log, should_stop, use_memory="1G")
    sandbox = Sandbox(..., server_options_for_backup(outcome.prepared_dir, options), ...)
    check = copy_back(outcome.prepared_dir, sandbox, popen, on_progress, on_log, should_stop)
    check.restorable, check.problems, check.rows
"""

from worker.runners.physical.copy_back import CopyBackProgress, RestoreCheck, copy_back, server_options_for_backup
from worker.runners.physical.errors import (
    DamagedBackupError,
    NotABackupError,
    NotPreparedError,
    PhysicalBackupError,
    PrepareError,
    UnsupportedBackupError,
)
from worker.runners.physical.prepare import PrepareOutcome, PrepareProgress, prepare_backup

__all__ = [
    "CopyBackProgress",
    "DamagedBackupError",
    "NotABackupError",
    "NotPreparedError",
    "PhysicalBackupError",
    "PrepareError",
    "PrepareOutcome",
    "PrepareProgress",
    "RestoreCheck",
    "UnsupportedBackupError",
    "copy_back",
    "prepare_backup",
    "server_options_for_backup",
]
