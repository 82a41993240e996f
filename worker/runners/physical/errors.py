"""Errors of the physical-backup runner; each message names the file at fault and says what to do.

PhysicalBackupError         the backup cannot be prepared or copied back
 ├── NotABackupError        the directory is not an unpacked mariabackup/xtrabackup backup
 ├── UnsupportedBackupError a backup kind this runner does not handle (incremental, streamed, compressed)
 ├── DamagedBackupError     a file of the backup is missing, truncated or unreadable
 ├── NotPreparedError       copy-back was asked of a backup whose redo log was never applied
 └── PrepareError           `mariabackup --prepare` failed; its [ERROR] lines are quoted
RestoreCancelled (worker.runners.mysql_client): should_stop() asked to stop; not a fault of the backup.

A backup that prepares and copies back but whose server does not start or whose tables do not read is
not an error here: copy_back returns a RestoreCheck with restorable=False and the problems found.
"""


class PhysicalBackupError(Exception):
    """The physical backup could not be restored; `str(error)` is worded for the user."""


class NotABackupError(PhysicalBackupError):
    """The directory holds no xtrabackup_checkpoints / mariadb_backup_checkpoints."""


class UnsupportedBackupError(PhysicalBackupError):
    """An incremental, streamed (xbstream) or compressed backup: not handled by this runner."""


class DamagedBackupError(PhysicalBackupError):
    """A file the backup needs is missing or shorter than the backup's own metadata says."""


class NotPreparedError(PhysicalBackupError):
    """The backup's redo log has not been applied: its files are not consistent yet."""


class PrepareError(PhysicalBackupError):
    """The prepare tool failed."""
