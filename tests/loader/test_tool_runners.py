"""The DBA tools as runners: myloader 0.10 on a real mydumper dump, mysqlimport on a real --tab dump, both
into a sandbox, with the rows the files hold as the verification oracle."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest

from tests.loader.conftest import SCHEMA, Dumps, Server
from tests.loader.test_formats import EXPECTED_ROWS
from worker.runners.myloader import restore_with_myloader
from worker.runners.mysql_client import RestoreCancelled, RestoreProgress
from worker.runners.mysqlimport import restore_with_mysqlimport

pytestmark = pytest.mark.integration


def popen(args: list[str], **kwargs: Any) -> subprocess.Popen[bytes]:
    return subprocess.Popen(args, **kwargs)


def test_myloader_restores_a_mydumper_dump(dumps: Dumps, source: Server, target: Server) -> None:
    progress: list[RestoreProgress] = []
    log: list[str] = []

    outcome = restore_with_myloader(
        dumps.mydumper_010, target.client_args(), popen, progress.append, log.append, lambda: False, threads=2
    )

    assert outcome.expected_rows == {(SCHEMA, table): rows for table, rows in EXPECTED_ROWS.items()}
    fingerprint, expected = target.fingerprint(SCHEMA), source.fingerprint(SCHEMA)
    for key in expected:
        if key.startswith(("rows ", "checksum ")):
            assert fingerprint[key] == expected[key], key
    assert any("restoring `shop`.`events_log` part" in line for line in log)
    assert progress[-1].bytes_done == progress[-1].bytes_total


def test_mysqlimport_restores_a_tab_dump_with_triggers_after_the_rows(
    dumps: Dumps, source: Server, target: Server
) -> None:
    progress: list[RestoreProgress] = []
    outcome = restore_with_mysqlimport(
        dumps.tab, target.client_args(), popen, progress.append, lambda _line: None, lambda: False, database=SCHEMA
    )

    assert outcome.expected_rows == {(SCHEMA, table): rows for table, rows in EXPECTED_ROWS.items()}
    assert target.fingerprint(SCHEMA) == source.fingerprint(SCHEMA)
    assert progress[-1].bytes_done == progress[-1].bytes_total


def test_cancel_stops_myloader(dumps: Dumps, target: Server) -> None:
    calls = 0

    def stop_soon() -> bool:
        nonlocal calls
        calls += 1
        return calls > 2

    with pytest.raises(RestoreCancelled, match="myloader was stopped"):
        restore_with_myloader(
            dumps.mydumper_010, target.client_args(), popen, lambda _p: None, lambda _l: None, stop_soon
        )
