"""The backup's own metadata: checkpoints, backup-my.cnf, the sizes its files must have. Pure file reading."""

from __future__ import annotations

from pathlib import Path

import pytest

from worker.runners.physical.backup_dir import data_files, file_layout_options, read_checkpoints
from worker.runners.physical.errors import DamagedBackupError


@pytest.mark.parametrize(
    ("path", "files"),
    [
        ("ibdata1:12M:autoextend", [("ibdata1", 12 << 20)]),
        ("ibdata1:12M;ibdata2:1G:autoextend", [("ibdata1", 12 << 20), ("ibdata2", 1 << 30)]),
        ("ibdata1:768K", [("ibdata1", 768 << 10)]),
        ("", []),
        ("ibdata1", []),
    ],
)
def test_data_files(path: str, files: list[tuple[str, int]]) -> None:
    assert data_files(path) == files


def test_checkpoints_of_both_names(tmp_path: Path) -> None:
    (tmp_path / "mariadb_backup_checkpoints").write_text(
        "backup_type = full-backuped\nfrom_lsn = 0\nto_lsn = 44894\nlast_lsn = 15722067\n"
    )
    checkpoints = read_checkpoints(tmp_path)
    assert (checkpoints.backup_type, checkpoints.to_lsn, checkpoints.last_lsn) == ("full-backuped", 44894, 15722067)
    assert not checkpoints.prepared


def test_damaged_checkpoints_name_the_file(tmp_path: Path) -> None:
    (tmp_path / "xtrabackup_checkpoints").write_text("backup_type = full-backuped\nto_lsn = twelve\n")
    with pytest.raises(DamagedBackupError, match=r"xtrabackup_checkpoints is damaged: it must hold backup_type"):
        read_checkpoints(tmp_path)


def test_layout_options_keep_only_what_the_files_depend_on(tmp_path: Path) -> None:
    (tmp_path / "backup-my.cnf").write_text(
        "# generated\n[mysqld]\ninnodb_checksum_algorithm=crc32\ninnodb_data_file_path=ibdata1:12M:autoextend\n"
        "innodb_log_file_size=100663296\ninnodb-page-size=65536\ninnodb_undo_directory=/var/lib/mysql-undo\n"
        "innodb_undo_tablespaces=3\n"
    )
    assert file_layout_options(tmp_path) == {
        "innodb_data_file_path": "ibdata1:12M:autoextend",
        "innodb_page_size": "65536",
        "innodb_undo_tablespaces": "3",
    }
    assert file_layout_options(tmp_path / "missing") == {}
