"""The advisor's small pure parts: other backups of the same tables, a change applied to a job's request, two runs
compared, the headline, and numbers in sentences."""

from dataclasses import replace
from typing import Any

import pytest

from app.advisor import alternatives, changes, compare, summary, text
from app.advisor.suggestion import Setting
from tests.advisor.builders import lane, prepare, quiet

RUN_TABLES = {("sbtest", "sbtest1"), ("sbtest", "sbtest2")}


@pytest.mark.parametrize(
    ("backup_format", "names", "tables"),
    [
        (
            "mysqldump-tab",
            ["sbtest1.sql", "sbtest1.txt", "sbtest2.sql", "sbtest2.txt.zst"],
            {(None, "sbtest1"), (None, "sbtest2")},
        ),
        (
            "mysqlsh",
            [
                "@.json",
                "@.done.json",
                "sbtest.json",
                "sbtest@sbtest1.json",
                "sbtest@sbtest1@@0.tsv.zst",
                "my%40db@t%2E1.json",
            ],
            {("sbtest", "sbtest1"), ("my@db", "t.1")},
        ),
        (
            "mydumper",
            ["metadata", "sbtest-schema-create.sql", "sbtest.sbtest1-schema.sql.gz", "sbtest.sbtest1.00000.sql"],
            {("sbtest", "sbtest1")},
        ),
        ("mariabackup", ["xtrabackup_checkpoints"], None),
    ],
)
def test_tables_are_read_from_the_names_of_a_dump_directory(
    backup_format: str, names: list[str], tables: set[tuple[str | None, str]] | None
) -> None:
    assert alternatives.tables_in_names(backup_format, names) == tables


def test_a_tab_directory_holding_the_same_tables_is_restored_into_the_runs_database() -> None:
    assert alternatives.same_tables({(None, "sbtest1"), (None, "sbtest2")}, RUN_TABLES) == (True, "sbtest")
    assert alternatives.same_tables({(None, "sbtest1")}, RUN_TABLES) == (False, "sbtest")
    two_databases = RUN_TABLES | {("other", "t")}
    assert alternatives.same_tables({(None, "sbtest1"), (None, "sbtest2")}, two_databases) == (False, None)
    assert alternatives.same_tables(set(RUN_TABLES), RUN_TABLES) == (True, None)


def test_alternatives_are_the_other_backups_of_the_same_tables() -> None:
    listing = {
        "/b/sb-tab": ["sbtest1.sql", "sbtest1.txt", "sbtest2.sql", "sbtest2.txt"],
        "/b/other-tab": ["t.sql", "t.txt"],
        "/b/sb-dumper": ["sbtest.sbtest1-schema.sql", "sbtest.sbtest2-schema.sql", "sbtest.sbtest1.00000.sql"],
    }
    candidates: list[tuple[str, str, str | None, int, dict[str, Any]]] = [
        ("/b/sb.sql", "mysqldump", None, 100, {"databases": ["sbtest"]}),  # the run's own backup
        ("/b/sb.sql.zst", "mysqldump", "zstd", 40, {"databases": ["sbtest"]}),
        ("/b/other.sql.zst", "mysqldump", "zstd", 40, {"databases": ["sbtest"]}),
        ("/b/sb-tab", "mysqldump-tab", None, 90, {}),
        ("/b/other-tab", "mysqldump-tab", None, 90, {}),
        ("/b/sb-dumper", "mydumper", None, 100, {"load_data": False}),
        ("/b/gone", "mysqlsh", "zstd", 50, {}),
    ]
    found = alternatives.find_alternatives("/b/sb.sql", "mysqldump", ["sbtest"], RUN_TABLES, candidates, listing.get)
    assert [(a.path, a.delimited, a.database) for a in found] == [
        ("/b/sb.sql.zst", False, None),
        ("/b/sb-tab", True, "sbtest"),
        ("/b/sb-dumper", False, None),
    ]


def test_a_mydumper_directory_with_load_data_files_is_delimited() -> None:
    assert alternatives.is_delimited("mydumper", {"load_data": True})
    assert not alternatives.is_delimited("mydumper", {"load_data": False})
    assert alternatives.is_delimited("mysqlsh", {}) and not alternatives.is_delimited("mysqldump", {})


SANDBOX_PARAMETERS: dict[str, Any] = {
    "backup_path": "/b/sb.sql",
    "backup_format": "mysqldump",
    "target": {
        "kind": "sandbox",
        "preset": "server-defaults",
        "options": {"innodb_buffer_pool_size": None, "innodb_doublewrite": None, "extra": {}, "port": None},
        "keep": False,
    },
    "database": None,
    "verify": True,
    "checksum_source_id": None,
    "capture": "auto",
    "runner": "mysql",
    "threads": None,
    "chunk_size": 64 << 20,
}


def test_the_request_of_a_job_queues_the_same_restore() -> None:
    request = changes.request_of(SANDBOX_PARAMETERS)
    assert request == {
        "backup_path": "/b/sb.sql",
        "verify": True,
        "capture": "auto",
        "runner": "mysql",
        "chunk_size": 64 << 20,
        "target": {
            "kind": "sandbox",
            "preset": "server-defaults",
            "options": SANDBOX_PARAMETERS["target"]["options"],
            "keep": False,
        },
    }


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        ([Setting("runner", "loader"), Setting("threads", 2)], {"runner": "loader", "threads": 2}),
        ([Setting("target.options.innodb_doublewrite", False)], {"innodb_doublewrite": False}),
        ([Setting("target.options.extra.innodb_flush_neighbors", 0)], {"extra": {"innodb_flush_neighbors": "0"}}),
        ([Setting("backup_path", "/b/sb-tab"), Setting("database", "sbtest")], {"database": "sbtest"}),
    ],
)
def test_settings_apply_to_the_request(settings: list[Setting], expected: dict[str, Any]) -> None:
    request = changes.request_of(SANDBOX_PARAMETERS)
    changed = changes.apply_settings(request, settings)
    for name, value in expected.items():
        assert changed.get(name, changed["target"]["options"].get(name)) == value
    assert request == changes.request_of(SANDBOX_PARAMETERS)  # the original is left alone


@pytest.mark.parametrize(
    ("parameters", "setting", "message"),
    [
        (
            {**SANDBOX_PARAMETERS, "target": {"kind": "saved", "target_id": 3}},
            Setting("target.options.innodb_doublewrite", False),
            "a re-run into a saved server cannot change it",
        ),
        (SANDBOX_PARAMETERS, Setting("backup.tool", "mysqldump-tab"), "is not a setting of a restore job"),
    ],
)
def test_a_change_a_rerun_cannot_make_is_refused(parameters: dict[str, Any], setting: Setting, message: str) -> None:
    with pytest.raises(changes.ChangeNotApplicable, match=message):
        changes.apply_settings(changes.request_of(parameters), [setting])


def test_settings_of_two_runs_are_compared_option_by_option() -> None:
    a = compare.flatten_settings(SANDBOX_PARAMETERS, {"threads": 1})
    b_parameters = {**SANDBOX_PARAMETERS, "runner": "loader", "threads": 2}
    b_parameters["target"] = {
        **SANDBOX_PARAMETERS["target"],
        "options": {**SANDBOX_PARAMETERS["target"]["options"], "extra": {"innodb_flush_neighbors": "0"}},
    }
    b = compare.flatten_settings(b_parameters, {"threads": 2})
    assert compare.setting_differences(a, b) == [
        {"option": "runner", "a": "mysql", "b": "loader"},
        {"option": "target.options.extra.innodb_flush_neighbors", "a": None, "b": "0"},
        {"option": "threads", "a": 1, "b": 2},
    ]


def _row(op: str, count: int, p95: int, kind: str = "write") -> dict[str, Any]:
    return {
        "op": op,
        "kind": kind,
        "count": count,
        "bytes": count * 10,
        "mb_per_s": 1.0,
        "latency_us": {"p50": 1, "p95": p95, "p99": p95, "max": p95},
    }


def test_operations_of_two_runs_are_joined_with_their_changes() -> None:
    rows = compare.compare_rows(
        [_row("pwrite64", 100, 20), _row("fsync", 10, 400, "fsync")],
        [_row("pwrite64", 50, 30), _row("io_uring", 300, 5, "other")],
        "op",
    )
    assert [(r["op"], r["count_change_pct"], r["p95_change_pct"]) for r in rows] == [
        ("io_uring", None, None),
        ("pwrite64", -50.0, 50.0),
        ("fsync", None, None),
    ]
    assert rows[0]["a"] is None and rows[2]["b"] is None
    assert rows[1]["b"] == {"count": 50, "bytes": 500, "mb_per_s": 1.0, "p50_us": 1, "p95_us": 30, "p99_us": 30}


def test_the_headline_names_what_held_the_run_back() -> None:
    cpu_bound = quiet(lanes=(lane(1, running=60, runnable=30),))
    assert summary.headline(cpu_bound).startswith("CPU: the 1 loading thread wanted 0.9 of the host's 2 cores")
    disk_bound = quiet(lanes=(lane(1, running=20, io_wait=50), lane(2, running=20, io_wait=50)))
    assert summary.headline(disk_bound) == "The storage: the 2 loading threads waited on the disk 50% of their time."
    waiting = quiet(lanes=(lane(1, running=20, blocked=80),))
    assert summary.headline(waiting).startswith("Waiting: the 1 loading thread was off the CPU 80% of its time")
    assert summary.headline(replace(quiet(), has_cpu=False)).startswith("The 100 s restoring phase has no CPU samples")
    assert summary.headline(prepare(3)).startswith(
        "CPU: the prepare's busiest thread (mariabackup 50) wanted 0.8 of the host's 2 cores"
    )
    idle_io_thread = lane(51, group="tool", role="io_uring worker", running=0.0, blocked=100.0)
    with_idle = replace(prepare(3), lanes=(*prepare(3).lanes, idle_io_thread))
    assert summary.headline(with_idle) == summary.headline(prepare(3))


def test_a_shared_host_is_noted() -> None:
    shared = quiet(lanes=(lane(1, running=40, runnable=40),), busy_cores=2.0)
    assert any(note.startswith("The host was shared") for note in summary.notes(shared))
    assert summary.notes(quiet(lanes=(lane(1, running=90),), busy_cores=1.0)) == []


@pytest.mark.parametrize(
    ("value", "expected"),
    [(0.4312, "43%"), (0.004, "0.4%"), (0.0, "0%"), (1.0, "100%")],
)
def test_percentages(value: float, expected: str) -> None:
    assert text.pct(value) == expected


@pytest.mark.parametrize(
    ("size", "expected"), [(96 << 20, "96M"), (1 << 30, "1G"), (1536 << 20, "1536M"), (4 << 30, "4G"), (1000, "1M")]
)
def test_sizes_as_options(size: int, expected: str) -> None:
    assert text.size_option(size) == expected


@pytest.mark.parametrize(("seconds", "expected"), [(4.25, "4.2 s"), (54.7, "55 s"), (600, "10.0 min")])
def test_seconds(seconds: float, expected: str) -> None:
    assert text.secs(seconds) == expected
