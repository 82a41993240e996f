"""Server state: status rows to counter tracks, InnoDB status fallbacks, processlist states to spans."""

from typing import Any

import pytest

from app.traces.records import CounterSample, Span
from worker.capture.server_state import (
    ConnectionState,
    StateSpans,
    complete_status,
    counter_samples,
    parse_innodb_status,
    parse_status_rows,
    state_label,
)

# Excerpts of SHOW ENGINE INNODB STATUS as MariaDB 10.11 and MySQL 8.0 print them.
MARIADB_INNODB_STATUS = """
------------
TRANSACTIONS
------------
Trx id counter 1290
Purge done for trx's n:o < 1289 undo n:o < 0 state: running
History list length 17
---
LOG
---
Log sequence number 287364810
Log flushed up to   287364810
Pages flushed up to 265000000
Last checkpoint at  262144000
0 pending log flushes, 0 pending chkp writes
"""
MYSQL_INNODB_STATUS = """
History list length 0
---
LOG
---
Log sequence number          19317869
Log buffer assigned up to    19317869
Log buffer completed up to   19317869
Log written up to            19317869
Log flushed up to            19317869
Added dirty pages up to      19317869
Pages flushed up to          19317869
Last checkpoint at           19317000
"""


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (MARIADB_INNODB_STATUS, {"Innodb_checkpoint_age": 25220810, "Innodb_history_list_length": 17}),
        (MYSQL_INNODB_STATUS, {"Innodb_checkpoint_age": 869, "Innodb_history_list_length": 0}),
        ("not an innodb status at all", {}),
    ],
    ids=["mariadb", "mysql", "garbage"],
)
def test_parse_innodb_status(text: str, expected: dict[str, int]) -> None:
    assert parse_innodb_status(text) == expected


def test_parse_status_rows_keeps_numbers_only() -> None:
    rows: list[tuple[Any, ...]] = [("Handler_write", "12"), ("Innodb_buffer_pool_dump_status", "Dumping"), ("X", None)]
    assert parse_status_rows(rows) == {"Handler_write": 12}


@pytest.mark.parametrize(
    ("status", "innodb_status", "expected_age", "expected_history"),
    [
        ({"Innodb_checkpoint_age": 5, "Innodb_history_list_length": 3}, None, 5, 3),
        ({"Innodb_lsn_current": 900, "Innodb_lsn_last_checkpoint": 600}, None, 300, None),
        ({}, MYSQL_INNODB_STATUS, 869, 0),
        # The server's own status variable wins over anything derived.
        ({"Innodb_checkpoint_age": 5}, MYSQL_INNODB_STATUS, 5, 0),
    ],
    ids=["mariadb-status", "lsn-status", "innodb-status", "status-wins"],
)
def test_complete_status(
    status: dict[str, int], innodb_status: str | None, expected_age: int, expected_history: int | None
) -> None:
    completed = complete_status(status, innodb_status)
    assert completed["Innodb_checkpoint_age"] == expected_age
    assert completed.get("Innodb_history_list_length") == expected_history


def _by_track(samples: list[CounterSample]) -> dict[str, tuple[float, str]]:
    return {sample.track: (sample.value, sample.unit) for sample in samples}


MARIADB_BEFORE = {
    "Handler_write": 1000,
    "Innodb_buffer_pool_pages_dirty": 10,
    "Innodb_checkpoint_age": 2_000_000,
    "Innodb_buffer_pool_reads": 100,
    "Innodb_buffer_pool_read_requests": 5000,
    "Innodb_os_log_written": 10_000_000,
    "Innodb_history_list_length": 4,
    "Threads_running": 2,
}
MARIADB_AFTER = {
    **MARIADB_BEFORE,
    "Handler_write": 31000,
    "Innodb_buffer_pool_pages_dirty": 900,
    "Innodb_checkpoint_age": 52_500_000,
    "Innodb_buffer_pool_reads": 150,
    "Innodb_buffer_pool_read_requests": 405000,
    "Innodb_os_log_written": 20_000_000,
}


def test_counter_samples_rates_over_the_interval_and_gauges_as_read() -> None:
    samples = counter_samples((1_000_000, MARIADB_BEFORE), (1_500_000, MARIADB_AFTER))
    assert _by_track(samples) == {
        "server.rows_inserted": (60000.0, "rows/s"),
        "server.dirty_pages": (900, "pages"),
        "server.checkpoint_age": (52.5, "MB"),
        "server.bp_reads": (100.0, "reads/s"),
        "server.bp_read_requests": (800000.0, "reads/s"),
        "server.redo_written": (20.0, "MB/s"),
        "server.history_list_length": (4, "undo logs"),
        "server.threads_running": (2, "threads"),
    }
    assert {sample.t_us for sample in samples} == {1_500_000}


def test_counter_samples_first_reading_has_gauges_only() -> None:
    tracks = set(_by_track(counter_samples(None, (1, MARIADB_BEFORE))))
    assert tracks == {
        "server.dirty_pages",
        "server.checkpoint_age",
        "server.history_list_length",
        "server.threads_running",
    }


def test_counter_samples_prefer_innodb_rows_inserted_and_skip_resets() -> None:
    before = {"Innodb_rows_inserted": 10, "Handler_write": 10, "Innodb_os_log_written": 5_000_000}
    after = {"Innodb_rows_inserted": 110, "Handler_write": 9999, "Innodb_os_log_written": 1_000}
    # MySQL has Innodb_rows_inserted; a total that went down means the server restarted: no rate.
    assert _by_track(counter_samples((0, before), (1_000_000, after))) == {"server.rows_inserted": (100.0, "rows/s")}


@pytest.mark.parametrize(
    ("command", "state", "label"),
    [
        ("Query", "Update", "Update"),
        ("Query", "setting auto-inc lock", "setting auto-inc lock"),
        ("Sleep", "", "Sleep"),
        ("Sleep", None, "Sleep"),
        ("Query", "  Sending data ", "Sending data"),
        (None, None, "unknown"),
    ],
)
def test_state_label(command: str | None, state: str | None, label: str) -> None:
    assert state_label(command, state) == label


def test_state_spans_last_until_the_next_round_and_end_with_the_connection() -> None:
    spans = StateSpans()
    finished = spans.update(0, [ConnectionState(4, 100, "Update"), ConnectionState(5, 101, "Sleep")])
    finished += spans.update(200_000, [ConnectionState(4, 100, "Update"), ConnectionState(5, 101, "Sleep")])
    finished += spans.update(400_000, [ConnectionState(4, 100, "Commit")])  # connection 5 closed
    assert finished == [Span(101, 0, 400_000, "state", "Sleep")]
    finished = spans.update(600_000, [ConnectionState(4, 100, "Commit")])
    assert finished == [Span(100, 0, 400_000, "state", "Update")]
    assert spans.finish(700_000) == [Span(100, 400_000, 300_000, "state", "Commit")]


def test_state_spans_are_cut_at_the_maximum_length_so_they_show_while_the_job_runs() -> None:
    spans = StateSpans(max_span_us=1_000_000)
    finished: list[Span] = []
    for t_us in range(0, 2_000_001, 500_000):
        finished += spans.update(t_us, [ConnectionState(4, 100, "Update")])
    assert finished == [Span(100, 0, 1_000_000, "state", "Update"), Span(100, 1_000_000, 1_000_000, "state", "Update")]


def test_state_spans_a_lost_round_closes_what_was_open() -> None:
    spans = StateSpans()
    spans.update(0, [ConnectionState(4, 100, "Update")])
    spans.update(500_000, [ConnectionState(4, 100, "Update")])
    assert spans.forget_round() == [Span(100, 0, 500_000, "state", "Update")]
    assert spans.update(3_000_000, [ConnectionState(4, 100, "Update")]) == []
    assert spans.finish(3_500_000) == [Span(100, 3_000_000, 500_000, "state", "Update")]
