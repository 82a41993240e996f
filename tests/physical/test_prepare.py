"""mariabackup --prepare of a real backup taken under writes: on a copy, with progress from the LSNs it prints."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from tests.physical.conftest import SourceBackup
from worker.process_group import ProcessGroup
from worker.runners.mysql_client import RestoreCancelled
from worker.runners.physical import PrepareProgress, prepare_backup
from worker.runners.physical.backup_dir import read_checkpoints

pytestmark = pytest.mark.integration


def _fingerprint(directory: Path) -> dict[str, str]:
    return {
        str(path.relative_to(directory)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(directory.rglob("*"))
        if path.is_file()
    }


def test_prepare_applies_the_redo_in_batches_with_progress(source_backup: SourceBackup, tmp_path: Path) -> None:
    before = _fingerprint(source_backup.path)
    checkpoints = read_checkpoints(source_backup.path)
    progress: list[PrepareProgress] = []
    log: list[str] = []
    processes = ProcessGroup()

    # 8M of buffer pool holds a fraction of the redo: several batches, each one reported.
    outcome = prepare_backup(
        source_backup.path,
        tmp_path,
        processes.popen,
        progress.append,
        log.append,
        lambda: False,
        use_memory="8M",
        read_io_threads=2,
        write_io_threads=2,
    )

    assert outcome.start_lsn is not None and outcome.start_lsn <= checkpoints.to_lsn
    assert outcome.end_lsn == checkpoints.last_lsn
    assert outcome.redo_bytes is not None and outcome.redo_bytes > 8 << 20  # more than --use-memory holds
    assert outcome.batches >= 2, [line for line in log if "recover" in line]
    assert outcome.use_memory == "8M"
    assert not outcome.already_prepared and outcome.warnings == []
    assert read_checkpoints(outcome.prepared_dir).backup_type == "log-applied"
    # The user's backup was only read.
    assert _fingerprint(source_backup.path) == before
    # Progress: the copy, then the redo from the checkpoint LSN to the end LSN, never going back, to 100%.
    phases = [p.phase for p in progress]
    assert phases[0] == "copying" and phases[-1] == "done"
    applying = [p.percent for p in progress if p.phase != "copying"]
    assert applying == sorted(applying)
    assert any(0 < percent < 100 for percent in applying), progress
    assert progress[-1].percent == 100 and progress[-1].lsn == checkpoints.last_lsn
    assert progress[-1].batches == outcome.batches
    assert any("--use-memory" not in line and "InnoDB: To recover" in line for line in log)


def test_a_prepared_backup_is_prepared_again_as_a_no_op(source_backup: SourceBackup, tmp_path: Path) -> None:
    processes = ProcessGroup()
    first = prepare_backup(
        source_backup.path, tmp_path / "one", processes.popen, lambda _: None, lambda _: None, lambda: False
    )
    again = prepare_backup(
        first.prepared_dir, tmp_path / "two", processes.popen, lambda _: None, lambda _: None, lambda: False
    )
    assert again.already_prepared and again.batches == 0


def test_a_cancelled_prepare_leaves_no_copy(source_backup: SourceBackup, tmp_path: Path) -> None:
    calls = 0

    def stop_after_a_few_files() -> bool:
        nonlocal calls
        calls += 1
        return calls > 3

    with pytest.raises(RestoreCancelled):
        prepare_backup(
            source_backup.path, tmp_path, ProcessGroup().popen, lambda _: None, lambda _: None, stop_after_a_few_files
        )
    assert not (tmp_path / "prepared").exists()


def test_a_prepare_cancelled_while_mariabackup_runs_leaves_no_copy(source_backup: SourceBackup, tmp_path: Path) -> None:
    recovering = False

    def on_log(line: str) -> None:
        nonlocal recovering
        recovering = recovering or "Multi-batch recovery needed" in line

    processes = ProcessGroup()
    with pytest.raises(RestoreCancelled):
        prepare_backup(
            source_backup.path,
            tmp_path,
            processes.popen,
            lambda _: None,
            on_log,
            lambda: recovering,
            use_memory="8M",
        )
    assert recovering
    assert not (tmp_path / "prepared").exists()
