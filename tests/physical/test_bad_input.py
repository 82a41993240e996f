"""Bad input gives a clear error naming the file and what to do, and leaves nothing that looks complete.

The messages quoted in the asserts are what the user sees on the failed job."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from app.sandboxes.options import ServerOptions
from tests.physical.conftest import SourceBackup, copy_of
from worker.process_group import ProcessGroup
from worker.runners.physical import (
    DamagedBackupError,
    NotABackupError,
    NotPreparedError,
    PhysicalBackupError,
    UnsupportedBackupError,
    copy_back,
    prepare_backup,
)
from worker.runners.physical.backup_dir import read_checkpoints
from worker.sandbox.binary import ServerBinary
from worker.sandbox.server import Sandbox

pytestmark = pytest.mark.integration


def _prepare(backup: Path, work: Path) -> None:
    prepare_backup(backup, work, ProcessGroup().popen, lambda _: None, lambda _: None, lambda: False)


def _fails(backup: Path, work: Path, error: type[PhysicalBackupError]) -> str:
    with pytest.raises(error) as raised:
        _prepare(backup, work)
    assert not (work / "prepared").exists()  # no half-prepared copy left behind
    return str(raised.value)


def test_a_directory_that_is_not_a_backup(tmp_path: Path) -> None:
    plain = tmp_path / "dumps"
    plain.mkdir()
    (plain / "shop.sql").write_text("CREATE TABLE t (id INT);\n")
    message = _fails(plain, tmp_path / "work", NotABackupError)
    assert message == (
        f"{plain} is not a mariabackup or xtrabackup backup: it has no xtrabackup_checkpoints or "
        "mariadb_backup_checkpoints file; give the directory that mariabackup --backup --target-dir wrote"
    )


def test_a_copied_datadir_is_told_apart(tmp_path: Path) -> None:
    datadir = tmp_path / "data"
    (datadir / "mysql").mkdir(parents=True)
    (datadir / "ibdata1").write_bytes(b"\0" * 16384)
    message = _fails(datadir, tmp_path / "work", NotABackupError)
    assert "it looks like a copy of a server's datadir, not a mariabackup backup" in message


@pytest.mark.parametrize(
    ("file_name", "said"),
    [
        ("full.xbstream", "holds a streamed backup (full.xbstream), not an unpacked one: unpack it first (mbstream -x"),
        ("ibdata1.qp", "holds compressed files (.qp/.zst/.lz4): decompress them first (mariabackup --decompress"),
    ],
)
def test_a_streamed_or_compressed_backup_must_be_unpacked_first(tmp_path: Path, file_name: str, said: str) -> None:
    backup = tmp_path / "nightly"
    backup.mkdir()
    (backup / file_name).write_bytes(b"XBSTCK01")
    message = _fails(backup, tmp_path / "work", UnsupportedBackupError)
    assert said in message


def test_a_tool_that_is_not_installed(source_backup: SourceBackup, tmp_path: Path) -> None:
    with pytest.raises(PhysicalBackupError) as raised:
        prepare_backup(
            source_backup.path,
            tmp_path,
            ProcessGroup().popen,
            lambda _: None,
            lambda _: None,
            lambda: False,
            binary="/nonexistent/mariabackup",
        )
    assert str(raised.value) == (
        "/nonexistent/mariabackup does not exist or is not executable: give the full path of mariabackup"
    )


def test_an_incremental_backup_is_refused(source_backup: SourceBackup, tmp_path: Path) -> None:
    backup = copy_of(source_backup.path, tmp_path)
    checkpoints = backup / "xtrabackup_checkpoints"
    checkpoints.write_text(
        checkpoints.read_text().replace("full-backuped", "incremental").replace("from_lsn = 0", "from_lsn = 100")
    )
    message = _fails(backup, tmp_path / "work", UnsupportedBackupError)
    assert "is an incremental backup" in message and "restore its full backup instead" in message


def test_a_missing_ibdata1(source_backup: SourceBackup, tmp_path: Path) -> None:
    backup = copy_of(source_backup.path, tmp_path)
    (backup / "ibdata1").unlink()
    message = _fails(backup, tmp_path / "work", DamagedBackupError)
    assert message.startswith(f"ibdata1 is missing from the backup {backup}: the backup is incomplete")


def test_a_truncated_ibdata1(source_backup: SourceBackup, tmp_path: Path) -> None:
    backup = copy_of(source_backup.path, tmp_path)
    with (backup / "ibdata1").open("r+b") as data_file:
        data_file.truncate(1 << 20)
    message = _fails(backup, tmp_path / "work", DamagedBackupError)
    assert message.startswith(
        f"ibdata1 in {backup} is truncated: it has 1.0 MiB, but innodb_data_file_path in backup-my.cnf says at "
        "least 12.0 MiB; the backup was damaged in transfer or storage"
    )


def test_a_missing_redo_log(source_backup: SourceBackup, tmp_path: Path) -> None:
    backup = copy_of(source_backup.path, tmp_path)
    (backup / "ib_logfile0").unlink()
    message = _fails(backup, tmp_path / "work", DamagedBackupError)
    assert message.startswith(f"ib_logfile0 is missing from the backup {backup}")


def test_a_redo_log_cut_short_of_its_lsn_range(source_backup: SourceBackup, tmp_path: Path) -> None:
    backup = copy_of(source_backup.path, tmp_path)
    checkpoints = read_checkpoints(backup)
    with (backup / "ib_logfile0").open("r+b") as redo:
        redo.truncate(100_000)
    message = _fails(backup, tmp_path / "work", DamagedBackupError)
    assert message.startswith(
        f"ib_logfile0 in {backup} is truncated: it has 100000 bytes, but xtrabackup_checkpoints says the redo "
        f"from LSN {checkpoints.to_lsn} to {checkpoints.last_lsn} was copied:"
    )


def test_a_redo_log_missing_only_its_last_records(source_backup: SourceBackup, tmp_path: Path) -> None:
    """Long enough for the size check, but the last records are gone: mariabackup applies what is there and
    says "completed OK!"; the end LSN it reports gives it away."""
    backup = copy_of(source_backup.path, tmp_path)
    checkpoints = read_checkpoints(backup)
    with (backup / "ib_logfile0").open("r+b") as redo:
        redo.truncate(checkpoints.last_lsn - checkpoints.to_lsn)  # the 12 KiB header and the last records cut
    message = _fails(backup, tmp_path / "work", DamagedBackupError)
    assert message.startswith("ib_logfile0 of the backup ends at LSN ")
    assert f"but xtrabackup_checkpoints says the redo log was copied up to LSN {checkpoints.last_lsn}" in message
    assert "ib_logfile0 is truncated or damaged, and the restored data would lack the last changes" in message


def test_an_unprepared_backup_is_not_copied_back(
    source_backup: SourceBackup, tmp_path: Path, binary: ServerBinary
) -> None:
    processes = ProcessGroup()
    sandbox = Sandbox(tmp_path, "restored", ServerOptions(), binary, processes, lambda _: None)
    with sandbox:
        with pytest.raises(NotPreparedError) as raised:
            copy_back(source_backup.path, sandbox, processes.popen, lambda _: None, lambda _: None, lambda: False)
        assert not sandbox.real_datadir.exists()
    assert str(raised.value) == (
        f"{source_backup.path} has not been prepared (xtrabackup_checkpoints says backup_type = full-backuped): "
        "its data files are an inconsistent copy until the redo log is applied; prepare it first "
        "(restorescope's prepare step, or mariabackup --prepare on a copy)"
    )


def test_bad_prepare_options_are_refused_before_anything_runs(source_backup: SourceBackup, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="use_memory must be a size such as 512M or 2G, not '2 GB'"):
        prepare_backup(
            source_backup.path,
            tmp_path,
            ProcessGroup().popen,
            lambda _: None,
            lambda _: None,
            lambda: False,
            use_memory="2 GB",
        )


@pytest.mark.skipif(shutil.which("xtrabackup") is not None, reason="xtrabackup is installed here")
def test_xtrabackup_missing_says_which_package(source_backup: SourceBackup, tmp_path: Path) -> None:
    with pytest.raises(PhysicalBackupError) as raised:
        prepare_backup(
            source_backup.path,
            tmp_path,
            ProcessGroup().popen,
            lambda _: None,
            lambda _: None,
            lambda: False,
            tool="xtrabackup",
        )
    assert str(raised.value).startswith(
        "xtrabackup is not installed on this worker: install the percona-xtrabackup package"
    )
