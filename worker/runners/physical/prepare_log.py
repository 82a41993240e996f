"""Read the output of `mariabackup --prepare` line by line: the LSNs recovery goes through, the recovery
batches, errors and warnings. Pure: fed lines, no process.

What MariaDB 10.11 prints (tested here, from its log0recv.cc):
    InnoDB: Starting crash recovery from checkpoint LSN=44878
    InnoDB: Multi-batch recovery needed at LSN 2815612       (redo does not fit in --use-memory)
    InnoDB: Read redo log up to LSN=...                      (every 15 s while scanning)
    InnoDB: Parsed redo log up to LSN=...; to recover: N pages   (every 15 s while parsing)
    InnoDB: End of log at LSN=15722067
    InnoDB: To recover: LSN 2815612/15722067; 177 pages      (a batch that is not the last one; repeated
                                                               every 15 s inside a long batch)
    InnoDB: To recover: 643 pages                            (the last batch; repeated every 15 s too)
    completed OK!
So a batch is one distinct "To recover: LSN X/..." value, plus the final "To recover: N pages".

Older MariaDB (10.2-10.5) and Percona XtraBackup / MySQL word it differently; those lines are matched from
their sources but are UNTESTED here (neither can be installed on this machine):
    Starting to parse redo log at lsn = X, whereas checkpoint_lsn = Y      (XtraBackup 8.0)
    Doing recovery: scanned up to log sequence number X                   (MySQL 5.7/8.0, MariaDB <= 10.4)
    Starting a batch to recover N pages from redo log                     (MariaDB 10.2-10.5)
    Starting final batch to recover N pages from redo log                 (MariaDB 10.2-10.5)
    Starting an apply batch of log records to the database...             (MySQL 5.7, XtraBackup 2.4)
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_CHECKPOINT = re.compile(r"Starting crash recovery from checkpoint LSN=(\d+)")
_PARSE_START = re.compile(r"Starting to parse redo log at lsn = (\d+), whereas checkpoint_lsn = (\d+)")
_SCANNED = re.compile(
    r"(?:Read redo log up to LSN=|Parsed redo log up to LSN=|Multi-batch recovery needed at LSN |"
    r"Doing recovery: scanned up to log sequence number )(\d+)"
)
_END_OF_LOG = re.compile(r"End of log at LSN=(\d+)")
_BATCH_WITH_LSN = re.compile(r"To recover: LSN (\d+)/(\d+); (\d+) pages")
_FINAL_BATCH = re.compile(r"InnoDB: To recover: (\d+) pages")
_OLD_BATCH = re.compile(r"Starting (a|final) batch to recover (\d+) pages from redo log")
_MYSQL_BATCH = re.compile(r"Starting an apply batch of log records to the database")
_ALREADY_PREPARED = "This target seems to be already prepared"
_COMPLETED = "completed OK!"
_ERROR = re.compile(r"\[ERROR\]|\berror:", re.IGNORECASE)
# Warnings worth showing to the user: a tablespace whose redo was ignored is data the restore will lack.
_WARNING = re.compile(
    r"was not found at .* when restoring a \(partial\?\) backup|\[Warning\] InnoDB: .*(corrupt|ignor)"
)


@dataclass
class PrepareLog:
    """State of a prepare, from the checkpoints file first and then from the tool's lines."""

    start_lsn: int | None = None  # the checkpoint recovery starts from
    end_lsn: int | None = None  # where the redo log ends
    lsn: int | None = None  # how far recovery has got (parsed, or the end of the batch being applied)
    batches: int = 0
    pages: int = 0  # pages to recover in the latest batch
    end_of_log_lsn: int | None = None  # where the tool found the redo log to end
    already_prepared: bool = False
    completed: bool = False
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    _batch_lsns: set[int] = field(default_factory=set)
    _final_batch: bool = False
    _percent: float = 0.0

    def feed(self, line: str) -> None:
        if _COMPLETED in line:
            self.completed = True
        elif _ALREADY_PREPARED in line:
            self.already_prepared = True
        elif _ERROR.search(line):
            self.errors.append(line.strip())
        elif _WARNING.search(line):
            self.warnings.append(line.strip())
        self._feed_recovery(line)

    def percent(self) -> float:
        """(lsn - start) / (end - start) in percent, never going back; 100 once the tool said it completed."""
        if self.completed:
            return 100.0
        if self.lsn is not None and self.start_lsn is not None and self.end_lsn is not None:
            span = self.end_lsn - self.start_lsn
            done = (self.lsn - self.start_lsn) / span if span > 0 else 1.0
            # The tool has not exited yet: the last batch still has pages to write, so never claim 100.
            self._percent = max(self._percent, min(max(done * 100, 0.0), 99.0))
        return self._percent

    def _feed_recovery(self, line: str) -> None:
        if match := _CHECKPOINT.search(line):
            self.start_lsn = self.lsn = int(match[1])
        elif match := _PARSE_START.search(line):
            self.start_lsn = self.lsn = int(match[2])
        elif match := _BATCH_WITH_LSN.search(line):
            batch_lsn = int(match[1])
            if batch_lsn not in self._batch_lsns:
                self._batch_lsns.add(batch_lsn)
                self.batches += 1
            self.lsn, self.pages = batch_lsn, int(match[3])
            self.end_lsn = self.end_lsn or int(match[2])
        elif match := _FINAL_BATCH.search(line):
            self._start_final_batch(int(match[1]))
        elif match := _OLD_BATCH.search(line):
            if match[1] == "final":
                self._start_final_batch(int(match[2]))
            else:
                self.batches += 1
                self.pages = int(match[2])
        elif _MYSQL_BATCH.search(line):
            self.batches += 1
        elif match := _END_OF_LOG.search(line):
            self.end_of_log_lsn = int(match[1])
            self.end_lsn = self.end_lsn or self.end_of_log_lsn
        elif match := _SCANNED.search(line):
            self.lsn = max(self.lsn or 0, int(match[1]))

    def _start_final_batch(self, pages: int) -> None:
        if not self._final_batch:
            self._final_batch = True
            self.batches += 1
        self.pages = pages
        self.lsn = self.end_of_log_lsn or self.end_lsn or self.lsn
