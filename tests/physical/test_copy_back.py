"""Copy-back of a prepared backup into a sandbox that is then started and checked table by table."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from app.sandboxes.options import ServerOptions
from tests.physical.conftest import FIXED_ROWS, MYISAM_ROWS, SourceBackup
from worker.process_group import ProcessGroup
from worker.runners.physical import (
    CopyBackProgress,
    PrepareOutcome,
    copy_back,
    prepare_backup,
    server_options_for_backup,
)
from worker.runners.physical.verify import verify_server
from worker.sandbox.binary import ServerBinary
from worker.sandbox.server import Sandbox

pytestmark = pytest.mark.integration

PAGE_SIZE = 16384


def _prepare(backup: Path, work: Path, processes: ProcessGroup) -> PrepareOutcome:
    return prepare_backup(backup, work, processes.popen, lambda _: None, lambda _: None, lambda: False)


def _sandbox(work: Path, prepared: Path, binary: ServerBinary, processes: ProcessGroup) -> Sandbox:
    return Sandbox(
        work, "restored", server_options_for_backup(prepared, ServerOptions()), binary, processes, lambda _: None
    )


def test_copy_back_starts_a_server_with_the_source_rows(
    source_backup: SourceBackup, tmp_path: Path, binary: ServerBinary
) -> None:
    processes = ProcessGroup()
    prepared = _prepare(source_backup.path, tmp_path, processes)
    progress: list[CopyBackProgress] = []
    with _sandbox(tmp_path, prepared.prepared_dir, binary, processes) as sandbox:
        check = copy_back(
            prepared.prepared_dir,
            sandbox,
            processes.popen,
            progress.append,
            lambda _: None,
            lambda: False,
            expected_rows={("loaddb", "fixed"): FIXED_ROWS, ("loaddb", "counters"): MYISAM_ROWS},
            move=True,
        )

        assert check.restorable, check.problems
        assert check.rows[("loaddb", "fixed")] == FIXED_ROWS
        # `t` was written during the backup: it holds a consistent point, whole INSERTs only.
        assert check.rows[("loaddb", "t")] in source_backup.t_counts_possible()
        assert sandbox.pid is not None
        assert [p.phase for p in progress][-1] == "done"
        assert {p.phase for p in progress} == {"copying back", "starting", "verifying", "done"}
        # --move-back: the files moved into the sandbox, and the job's spent prepared copy is gone.
        assert not prepared.prepared_dir.exists()
        # The source's root password is in the restored grant tables; the restored server skips them.
        with sandbox.connect() as connection, connection.cursor() as cursor:
            cursor.execute("SELECT COUNT(*) FROM loaddb.fixed")
            assert cursor.fetchone() == (FIXED_ROWS,)

        # Counts that differ from what the source had are what the user sees named.
        _rows, problems = verify_server(
            sandbox.connect, lambda _: None, lambda: False, expected_rows={("loaddb", "fixed"): FIXED_ROWS + 1}
        )
        assert problems == [
            f"`loaddb`.`fixed` has {FIXED_ROWS} rows after the restore, the source had {FIXED_ROWS + 1}"
        ]


def test_a_backup_with_a_damaged_page_is_flagged_not_restorable(
    source_backup: SourceBackup, tmp_path: Path, binary: ServerBinary
) -> None:
    processes = ProcessGroup()
    prepared = _prepare(source_backup.path, tmp_path, processes)
    # Damage a page of `fixed` after prepare (as bad storage would): prepare cannot notice, the restore must.
    ibd = prepared.prepared_dir / "loaddb" / "fixed.ibd"
    with ibd.open("r+b") as data_file:
        data_file.seek(4 * PAGE_SIZE + 200)
        data_file.write(os.urandom(8000))

    with _sandbox(tmp_path, prepared.prepared_dir, binary, processes) as sandbox:
        check = copy_back(
            prepared.prepared_dir, sandbox, processes.popen, lambda _: None, lambda _: None, lambda: False
        )

    assert not check.restorable
    # What the user sees: the table or the file at fault, from CHECK TABLE or the server's error log.
    assert any("fixed" in problem for problem in check.problems), check.problems
    assert any("corrupt" in problem.lower() for problem in check.problems), check.problems
