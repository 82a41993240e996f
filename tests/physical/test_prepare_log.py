"""Reading mariabackup --prepare output: LSNs, batches, progress, errors. Pure, from lines.

MARIADB_10_11 is real output of this machine's mariabackup 10.11 with --use-memory=8M. The older-MariaDB and
XtraBackup lines are their sources' wording, UNTESTED against the real tools (they cannot be installed here)."""

from __future__ import annotations

import pytest

from worker.runners.physical.prepare_log import PrepareLog

MARIADB_10_11 = """\
[00] 2026-11-23 21:01:27 This target seems to be not prepared yet.
[00] 2026-11-23 21:01:27 Starting InnoDB instance for recovery.
2026-11-23 21:01:27 0 [Note] InnoDB: Starting crash recovery from checkpoint LSN=44878
2026-11-23 21:01:27 0 [Note] InnoDB: Multi-batch recovery needed at LSN 2815612
2026-11-23 21:01:27 0 [Note] InnoDB: End of log at LSN=15722067
2026-11-23 21:01:27 0 [Note] InnoDB: To recover: LSN 2815612/15722067; 177 pages
2026-11-23 21:01:27 0 [Note] InnoDB: To recover: LSN 6001028/15722067; 206 pages
2026-11-23 21:01:28 0 [Note] InnoDB: To recover: LSN 6001028/15722067; 190 pages
2026-11-23 21:01:28 0 [Note] InnoDB: To recover: LSN 9124484/15722067; 454 pages
2026-11-23 21:01:28 0 [Note] InnoDB: To recover: 643 pages
2026-11-23 21:01:29 0 [Note] InnoDB: To recover: 120 pages
2026-11-23 21:01:29 0 [Note] InnoDB: Starting shutdown...
[00] 2026-11-23 21:01:29 completed OK!""".splitlines()


def _fed(lines: list[str], start: int | None = 44894, end: int | None = 15722067) -> tuple[PrepareLog, list[float]]:
    log = PrepareLog(start_lsn=start, end_lsn=end)
    percents = []
    for line in lines:
        log.feed(line)
        percents.append(log.percent())
    return log, percents


def test_mariadb_10_11_batches_and_lsns() -> None:
    log, percents = _fed(MARIADB_10_11)
    # A batch repeated (its 15-second report) counts once; the final batch's reports count once too.
    assert log.batches == 4
    assert (log.start_lsn, log.end_of_log_lsn, log.end_lsn) == (44878, 15722067, 15722067)
    assert log.completed and not log.already_prepared and log.errors == []
    assert percents == sorted(percents) and percents[-1] == 100
    # Before "completed OK!" the tool may still be writing pages: never 100.
    assert percents[-2] == 99
    assert 17 < percents[3] < 18  # multi-batch at 2815612 of 44878..15722067


@pytest.mark.parametrize(
    ("line", "batches", "lsn"),
    [
        ("InnoDB: Starting a batch to recover 1200 pages from redo log", 1, None),  # MariaDB 10.2-10.5
        ("InnoDB: Starting final batch to recover 93 pages from redo log", 1, 2000),
        ("InnoDB: Starting an apply batch of log records to the database...", 1, None),  # MySQL 5.7, XtraBackup 2.4
        ("InnoDB: Doing recovery: scanned up to log sequence number 1500", 0, 1500),
        ("InnoDB: Read redo log up to LSN=1700", 0, 1700),
        ("InnoDB: Parsed redo log up to LSN=1800; to recover: 77 pages", 0, 1800),
    ],
)
def test_other_versions_wording(line: str, batches: int, lsn: int | None) -> None:
    log, _ = _fed([line], start=1000, end=2000)
    assert (log.batches, log.lsn) == (batches, lsn)


def test_xtrabackup_parse_start_gives_the_checkpoint() -> None:
    log, _ = _fed(["InnoDB: Starting to parse redo log at lsn = 1100, whereas checkpoint_lsn = 1050"], start=1000)
    assert log.start_lsn == 1050


def test_errors_and_warnings_are_kept_and_noise_is_not() -> None:
    log, _ = _fed(
        [
            "2026-11-23 21:02:31 0 [ERROR] InnoDB: File ./ib_logfile0 was not found",
            "[00] 2026-11-23 21:02:31 mariadb-backup: srv_start() returned 11 (Generic error).",
            "Error in my_thread_global_end(): 1 threads didn't exit",
            "mariabackup: error: The log was only applied up to LSN 5, instead of 9",
            "InnoDB: Tablespace 5 was not found at ./db/t.ibd when restoring a (partial?) backup. All redo log "
            "for this file will be ignored!",
        ]
    )
    assert log.errors == [
        "2026-11-23 21:02:31 0 [ERROR] InnoDB: File ./ib_logfile0 was not found",
        "mariabackup: error: The log was only applied up to LSN 5, instead of 9",
    ]
    assert len(log.warnings) == 1 and "./db/t.ibd" in log.warnings[0]


def test_no_lsn_range_means_no_percent_until_done() -> None:
    log, percents = _fed(["InnoDB: To recover: 5 pages"], start=None, end=None)
    assert percents == [0.0]
    log.feed("[00] completed OK!")
    assert log.percent() == 100
