"""Pure rules of the capture: backend choice and fallback, AIO switching, lane roles, eBPF lines, inode paths."""

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.sandboxes.options import ServerOptions
from app.traces.operation import Operation
from app.traces.records import Lane
from worker.capture import ebpf, selection
from worker.capture.errors import CaptureUnavailable
from worker.capture.fds import FdPaths
from worker.capture.fuse import InodePaths
from worker.capture.lanes import LaneNamer, ServerThread, role_of
from worker.capture.selection import CapturePlan, adjust_sandbox_options, aio_mode_of, plan_capture


def test_auto_prefers_ebpf_and_none_means_none() -> None:
    assert plan_capture("auto", sandbox=True) == CapturePlan("auto", "ebpf")
    assert plan_capture("none", sandbox=True) == CapturePlan("none", "none")
    assert plan_capture("strace", sandbox=True) == CapturePlan("strace", "strace")


def test_auto_falls_back_with_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(selection.DISABLED_ENV, "ebpf")
    plan = plan_capture("auto", sandbox=True)
    assert plan.backend == "strace"
    assert plan.fallback_reason == "ebpf: ebpf capture is turned off on this worker (RESTORESCOPE_CAPTURE_DISABLED)"


def test_auto_with_nothing_left_records_every_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(selection.DISABLED_ENV, "ebpf,strace")
    plan = plan_capture("auto", sandbox=True)
    assert plan.backend == "none" and not plan.active
    assert plan.fallback_reason is not None
    assert plan.fallback_reason.startswith("no capture backend can run: ebpf: ebpf capture is turned off")
    assert "strace: strace capture is turned off" in plan.fallback_reason


def test_explicit_choice_that_cannot_run_fails_with_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(selection.DISABLED_ENV, "ebpf")
    with pytest.raises(CaptureUnavailable) as raised:
        plan_capture("ebpf", sandbox=True)
    assert str(raised.value) == (
        "capture with ebpf is not possible here: ebpf capture is turned off on this worker "
        "(RESTORESCOPE_CAPTURE_DISABLED)"
    )


@pytest.mark.parametrize(
    ("requested", "kwargs", "reason"),
    [
        ("fuse", {"sandbox": False}, "a saved target's datadir is not ours"),
        ("fuse", {"sandbox": True, "kept_sandbox": True}, "a kept sandbox outlives the job"),
        ("strace", {"sandbox": False, "target_problem": "the saved target runs on host 'db1'"}, "host 'db1'"),
        ("ebpf", {"sandbox": False, "target_problem": "the saved target runs on host 'db1'"}, "host 'db1'"),
    ],
)
def test_targets_a_backend_cannot_capture(requested: str, kwargs: dict[str, object], reason: str) -> None:
    with pytest.raises(CaptureUnavailable, match=reason):
        plan_capture(requested, **kwargs)  # type: ignore[arg-type]


def test_saved_target_elsewhere_turns_auto_capture_off() -> None:
    plan = plan_capture("auto", sandbox=False, target_problem="the saved target runs on host 'db1'")
    assert plan.backend == "none"
    assert plan.fallback_reason == (
        "no capture backend can run: ebpf: the saved target runs on host 'db1'; "
        "strace: the saved target runs on host 'db1'"
    )


@pytest.mark.parametrize(
    ("backend", "asked", "runs_with", "switched"),
    [
        ("strace", None, "aio", True),
        ("strace", "io_uring", "aio", True),
        ("strace", "aio", "aio", False),
        ("strace", "off", "off", False),
        ("ebpf", None, None, False),  # the server default, io_uring, is left alone
        ("ebpf", "aio", "io_uring", True),
        ("ebpf", "off", "off", False),
        ("fuse", None, None, False),
        ("fuse", "aio", "aio", False),
    ],
)
def test_each_backend_runs_innodb_with_an_aio_mode_it_sees(
    backend: str, asked: str | None, runs_with: str | None, switched: bool
) -> None:
    adjusted = adjust_sandbox_options(backend, ServerOptions.model_validate({"aio_mode": asked}))
    assert adjusted.options.aio_mode == runs_with
    assert adjusted.options.performance_schema is True  # roles of the server threads
    assert any(note.startswith("AIO switched from") for note in adjusted.notes) == switched
    assert adjusted.visibility


def test_aio_switch_note_shows_the_measured_cost(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = {
        "restore_seconds": {"io_uring": 50.0, "aio": 52.5, "off": 60.0},
        "dataset": "sysbench 4 x 1000000 rows",
        "measured_on": "2026-11-22",
    }
    measured = tmp_path / "aio_cost.json"
    measured.write_text(json.dumps({"runs": [run]}))
    monkeypatch.setattr(selection, "AIO_COST_FILE", measured)
    assert selection.aio_switch_note("strace", "io_uring", "aio") == (
        "AIO switched from io_uring to aio so strace can see page IO; on this machine that changed restore time "
        "by +5% (bench/capture_overhead.py, sysbench 4 x 1000000 rows, 2026-11-22)"
    )
    second = {**run, "restore_seconds": {"io_uring": 50.0, "aio": 40.0, "off": 50.0}}
    measured.write_text(json.dumps({"runs": [run, second]}))
    assert selection.aio_switch_note("strace", "io_uring", "aio") == (
        "AIO switched from io_uring to aio so strace can see page IO; on this machine that changed restore time "
        "by +5%, -20% in 2 measured runs (bench/capture_overhead.py, sysbench 4 x 1000000 rows, 2026-11-22; "
        "runs that disagree this much are within the machine's noise)"
    )
    monkeypatch.setattr(selection, "AIO_COST_FILE", tmp_path / "missing.json")
    assert selection.aio_switch_note("strace", "io_uring", "aio").endswith(
        "its effect on restore time has not been measured here yet (run bench/capture_overhead.py)"
    )


@pytest.mark.parametrize(
    ("variables", "mode"),
    [
        ({"innodb_use_native_aio": "ON", "innodb_linux_aio": "auto"}, "io_uring"),
        ({"innodb_use_native_aio": "ON", "innodb_linux_aio": "aio"}, "aio"),
        ({"innodb_use_native_aio": "OFF", "innodb_linux_aio": "aio"}, "off"),
    ],
)
def test_aio_mode_of_a_running_server(variables: dict[str, str], mode: str) -> None:
    assert aio_mode_of(variables) == mode


@pytest.mark.parametrize(
    ("comm", "process", "thread", "client_connection", "role"),
    [
        ("mariadbd", "mariadbd", ServerThread(1, "thread/sql/main", None), None, "main"),
        ("mariadbd", "mariadbd", ServerThread(2, "thread/innodb/page_cleaner_thread", None), None, "page cleaner"),
        ("mariadbd", "mariadbd", ServerThread(3, "thread/innodb/thread_pool_thread", None), None, "innodb worker"),
        (
            "mariadbd",
            "mariadbd",
            ServerThread(4, "thread/sql/one_connection", 8, "mysql"),
            None,
            "connection 8 (mysql)",
        ),
        ("mariadbd", "mariadbd", ServerThread(4, "thread/sql/one_connection", None), None, "idle connection thread"),
        ("mariadbd", "mariadbd", ServerThread(5, "thread/innodb/some_new_thread", None), None, "some new"),
        ("iou-wrk-1234", "mariadbd", None, None, "io_uring worker"),
        ("mariadbd", "mariadbd", None, None, "server thread"),
        ("mariadb", "mariadb", None, 12, "mysql client (connection 12)"),
        ("mysql", "mysql", None, None, "mysql client"),
        ("mariabackup", "mariabackup", None, None, "mariabackup"),
        ("worker", "mariabackup", None, None, "mariabackup: worker"),
    ],
)
def test_roles(comm: str, process: str, thread: ServerThread | None, client_connection: int | None, role: str) -> None:
    assert role_of(comm, process, thread, client_connection) == role


def test_iotrace_lines_become_operations() -> None:
    fds = FdPaths()
    fds.opened(100, 12, "/data/shop/orders.ibd")
    parser = ebpf.IotraceLineParser(offset_ns=1_000_000_000_000_000_000, fds=fds)
    lines = [
        "U 101 100 5000000 250000 2 12 49152 16384 16384",
        "S 102 100 6000000 3000 pwrite64 12 0 512 512",
        "S 102 100 7000000 1000 fdatasync 12 -1 -1 0",
        "O 102 100 8000000 2000 13 /data/shop/new.ibd",
        "S 102 100 9000000 4000 pread64 13 16384 16384 -2",
        "S 102 100 9500000 1000 close 13 -1 -1 0",
        "Lost 7 events",
        "garbage",
        "@stdin_reads[103]: 195000",
        "",
        "@stdin_bytes[103]: 798720000",
    ]
    operations = [op for line in lines for op in parser.feed(line)]
    base = 1_000_000_000_000_000
    assert operations == [
        Operation(base + 5000, 250, 101, "io_uring_writev", "write", "/data/shop/orders.ibd", 49152, 16384, "16384"),
        Operation(base + 6000, 3, 102, "pwrite64", "write", "/data/shop/orders.ibd", 0, 512, "512"),
        Operation(base + 7000, 1, 102, "fdatasync", "fsync", "/data/shop/orders.ibd", None, None, "0"),
        Operation(base + 8000, 2, 102, "openat", "open", "/data/shop/new.ibd", None, None, "13"),
        Operation(base + 9000, 4, 102, "pread64", "read", "/data/shop/new.ibd", 16384, 16384, "ENOENT"),
        Operation(base + 9500, 1, 102, "close", "close", "/data/shop/new.ibd", None, None, "0"),
    ]
    assert parser.lost_events == 7
    assert [(bad.line_no, bad.text) for bad in parser.malformed] == [(8, "garbage")]
    # The client's reads of its stdin are counted in the kernel and reported at the end, per thread.
    assert (parser.stdin_reads, parser.stdin_bytes) == ({103: 195000}, {103: 798720000})
    assert fds.path(100, 13) is None  # closed


def test_inode_paths_from_the_real_dir_and_from_the_log(tmp_path: Path) -> None:
    real, mount = tmp_path / "data.real", tmp_path / "data"
    (real / "shop").mkdir(parents=True)
    (real / "shop" / "orders.ibd").write_bytes(b"")
    inodes = InodePaths(real, mount)
    orders = (real / "shop" / "orders.ibd").stat().st_ino
    shop = (real / "shop").stat().st_ino
    assert inodes.path(f"inode:{orders}") == f"{mount}/shop/orders.ibd"
    assert inodes.path(f"inode:{shop}/items.ibd") == f"{mount}/shop/items.ibd"
    inodes.learn(f"2026.11.22 06:35:07.699183 [uid:0,gid:0,pid:7] create ({shop},new.ibd,0100660): (99999,[]) [fh:5]")
    assert inodes.path("inode:99999") == f"{mount}/shop/new.ibd"
    inodes.learn(f"2026.11.22 06:35:07.7 [uid:0,gid:0,pid:7] rename ({shop},new.ibd,{shop},final.ibd,0) - OK <0.1>")
    assert inodes.path("inode:99999") == f"{mount}/shop/final.ibd"
    assert inodes.path("inode:123456789") == "inode:123456789"  # unknown stays as the log says
    assert inodes.path(None) is None


class _Answers:
    """A DB-API connection that answers one query: enough for the pure decision in find_local_server_pid."""

    def __init__(self, row: tuple[str, str]) -> None:
        self.row = row

    def cursor(self) -> "_Answers":
        return self

    def __enter__(self) -> "_Answers":
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def execute(self, query: str) -> None:
        assert query == "SELECT @@hostname, @@pid_file"

    def fetchone(self) -> tuple[str, str]:
        return self.row


def test_a_saved_target_on_another_host_cannot_be_traced(tmp_path: Path) -> None:
    import socket

    from app.targets.locality import find_local_server_pid

    pid, reason = find_local_server_pid(_Answers(("db-prod-7", "/var/run/mysqld/mysqld.pid")))
    assert pid is None
    assert reason == (
        f"the saved target runs on host 'db-prod-7', not on this worker's host '{socket.gethostname()}': "
        "tracers can only follow a server process on their own host"
    )
    pid_file = tmp_path / "mysqld.pid"
    pid_file.write_text("1\n")
    pid, reason = find_local_server_pid(_Answers((socket.gethostname(), str(pid_file))))
    assert pid is None and reason is not None and "not a MariaDB/MySQL server" in reason


class _Lanes:
    def __init__(self) -> None:
        self.lanes: dict[int, Lane] = {}

    def set_lane(self, lane: Lane) -> None:
        self.lanes[lane.tid] = lane


def test_a_tool_is_not_named_after_the_tracer_that_forked_it() -> None:
    """Under strace a tool's pid carries the name "strace" from its fork to its exec; a lane named in that
    window would keep the name if the tool exited before the next refresh."""
    # Each line on its stdin becomes the child's name (only a process itself may rename itself).
    rename = "import sys\nfor name in sys.stdin:\n    open('/proc/self/comm', 'w').write(name.strip())\n"
    child = subprocess.Popen([sys.executable, "-c", rename], stdin=subprocess.PIPE, text=True, bufsize=1)
    assert child.stdin is not None
    sink = _Lanes()
    namer = LaneNamer(sink, lambda: [child.pid])  # type: ignore[arg-type]
    try:
        for name in ("strace", "mariabackup"):  # forked by strace, then exec'd
            child.stdin.write(name + "\n")
            deadline = time.monotonic() + 10
            while Path(f"/proc/{child.pid}/comm").read_text().strip() != name:
                assert time.monotonic() < deadline
                time.sleep(0.01)
            namer.refresh()
            assert {lane.process for lane in sink.lanes.values()} == ({"mariabackup"} if name != "strace" else set())
    finally:
        child.stdin.close()
        child.wait()
