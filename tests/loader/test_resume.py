"""Cancel or kill a load midway, then resume it: every row arrives exactly once (table checksums equal the
source's), whatever was in flight when it stopped."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.loader.conftest import SCHEMA, Dumps, Recorder, Server, restore
from worker.runners.loader import LoaderProgress, ResumeMismatchError
from worker.runners.mysql_client import RestoreCancelled

pytestmark = pytest.mark.integration

SMALL_CHUNKS = 64 << 10


def chunks_done(recorder: Recorder) -> int:
    last = recorder.progress[-1] if recorder.progress else None
    return last.chunks_done if isinstance(last, LoaderProgress) else 0


def events_log_partly_loaded(target: Server) -> bool:
    """True once some (not all) rows of the biggest table are committed: the load is checked after every
    chunk, so it stops with that table half loaded and chunks in flight."""
    rows = target.query(
        "SELECT COALESCE(SUM(rows_loaded), 0) FROM _restorescope.chunks_done WHERE chunk LIKE 'shop.events\\_log#%'"
    )
    return int(rows[0][0]) >= 2000


def markers_state(target: Server) -> tuple[str, str | None]:
    ((status, message),) = target.query("SELECT status, message FROM _restorescope.state")
    return status, message


@pytest.mark.parametrize("dump", ["sql", "tab", "mysqlsh", "mydumper_010"])
def test_cancel_then_resume_loads_every_row_once(dump: str, dumps: Dumps, source: Server, target: Server) -> None:
    """--tab and MySQL Shell: events_log (AUTO_INCREMENT) is loaded by one connection at a time, one LOAD DATA
    per chunk; .sql and mydumper: by both connections with INSERTs."""
    path = getattr(dumps, dump)
    database = SCHEMA if dump == "tab" else None
    recorder = Recorder()

    with pytest.raises(RestoreCancelled):
        restore(
            target,
            path,
            database=database,
            chunk_size=SMALL_CHUNKS,
            recorder=recorder,
            should_stop=lambda: events_log_partly_loaded(target),
        )

    assert markers_state(target) == ("failed", "cancelled")  # the target says its restore is unfinished
    loaded = target.query("SELECT COUNT(*) FROM shop.events_log")[0][0]
    assert 2000 <= loaded < 20_000

    outcome = restore(target, path, database=database, chunk_size=SMALL_CHUNKS)

    assert outcome.resumed
    assert target.fingerprint(SCHEMA) == source.fingerprint(SCHEMA)
    assert target.query("SHOW DATABASES LIKE '\\_restorescope'") == []


CHILD = """
import json, sys
from pathlib import Path
import pymysql
from worker.runners.loader import restore_with_loader

socket, dump = sys.argv[1], Path(sys.argv[2])
def connect():
    return pymysql.connect(unix_socket=socket, user="root", autocommit=True, local_infile=True)
def progress(p):
    print(json.dumps({"chunks": p.chunks_done}), flush=True)
restore_with_loader(dump, connect, None, progress, lambda line: None, lambda: False, threads=2, chunk_size=65536)
"""


@pytest.mark.parametrize("dump", ["sql_zst", "mysqlsh"])
def test_kill_9_midway_then_resume_loads_every_row_once(
    dump: str, dumps: Dumps, source: Server, target: Server
) -> None:
    """The worker dies by SIGKILL while chunks are in flight; the server rolls those back, the resume loads them."""
    path = getattr(dumps, dump)
    with subprocess.Popen(
        [sys.executable, "-c", CHILD, str(target.sandbox.socket_path), str(path)],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": f"{REPO / 'backend'}:{REPO}"},
        stdout=subprocess.PIPE,
        text=True,
    ) as child:
        assert child.stdout is not None
        for _line in child.stdout:
            if events_log_partly_loaded(target):
                child.send_signal(signal.SIGKILL)
                break
        child.wait()
    assert child.returncode == -signal.SIGKILL
    assert markers_state(target)[0] == "loading"  # killed: nobody could say why, but it is not finished

    outcome = restore(target, path, chunk_size=SMALL_CHUNKS)

    assert outcome.resumed
    assert target.fingerprint(SCHEMA) == source.fingerprint(SCHEMA)


def test_a_target_with_another_unfinished_restore_is_refused(dumps: Dumps, target: Server) -> None:
    recorder = Recorder()
    with pytest.raises(RestoreCancelled):
        restore(
            target,
            dumps.sql,
            chunk_size=SMALL_CHUNKS,
            recorder=recorder,
            should_stop=lambda: chunks_done(recorder) >= 2,
        )

    with pytest.raises(ResumeMismatchError) as caught:
        restore(target, dumps.mysqlsh)

    assert str(caught.value).startswith(f"the target server holds an unfinished restore of {dumps.sql.resolve()}")
    assert "drop its databases and the schema `_restorescope` to start over" in str(caught.value)


def test_progress_file_is_written(dumps: Dumps, target: Server, tmp_path: Path) -> None:
    from worker.runners.loader import restore_with_loader

    progress_file = tmp_path / "progress.json"
    restore_with_loader(
        dumps.mysqlsh,
        target.connect,
        None,
        lambda _p: None,
        lambda _l: None,
        lambda: False,
        progress_file=progress_file,
    )
    record = json.loads(progress_file.read_text())
    assert record["phase"] == "done"
    assert record["rows_done"] == 26_802
