"""Real sandbox servers under a temporary work root: start, settings, ports, orphans, demo dumps."""

import gzip
import json
import os
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import zstandard

from app.sandboxes.options import ServerOptions
from worker import demo
from worker.process_group import ProcessGroup
from worker.sandbox import server
from worker.sandbox.binary import ServerBinary, detect_server_binary
from worker.sandbox.server import PortInUseError, Sandbox, reap_orphans

REPO_ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def binary() -> ServerBinary:
    return detect_server_binary()


def _sandbox(work_root: Path, name: str, options: ServerOptions, binary: ServerBinary) -> Sandbox:
    return Sandbox(work_root, name, options, binary, ProcessGroup(), lambda line: None)


@pytest.fixture
def listening_port() -> Iterator[int]:
    """A port some other program is listening on."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        yield taken.getsockname()[1]


def _pid_gone(pid: int, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            if state in ("Z", "X"):
                return True
        except (ProcessLookupError, FileNotFoundError):
            return True
        time.sleep(0.05)
    return False


def _dead_pid() -> int:
    finished = subprocess.Popen(["true"])
    finished.wait()
    return finished.pid


def test_default_sandbox_runs_with_compiled_in_defaults(tmp_path: Path, binary: ServerBinary) -> None:
    with _sandbox(tmp_path, "defaults", ServerOptions(), binary) as sandbox:
        sandbox.start()
        variables = sandbox.snapshot()["variables"]
        assert variables["innodb_doublewrite"] == "ON"
        assert variables["innodb_flush_log_at_trx_commit"] == "1"
        assert variables["log_bin"] == "OFF"
        assert variables["port"] == str(sandbox.port)
        assert variables["socket"] == str(sandbox.socket_path)
        assert "Uptime" in sandbox.snapshot()["status"]
        owner = json.loads((sandbox.root_dir / "owner.json").read_text())
        assert owner["worker_pid"] == os.getpid()
        assert owner["server_pid"] == sandbox.pid
        assert (sandbox.datadir / "mysql").is_dir()

        client = subprocess.run(
            ["mysql", "--no-defaults", *sandbox.client_args(), "-N", "-e", "SELECT 40 + 2"],
            capture_output=True,
            text=True,
            check=True,
        )
        assert client.stdout.strip() == "42"

        connection = sandbox.connect()
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT @@local_infile")
                assert cursor.fetchone() == (1,)
                # Its own tmpdir: sandboxes made at the same time do not delete each other's temporary tables.
                cursor.execute("SELECT @@tmpdir")
                assert cursor.fetchone() == (str(sandbox.root_dir / "tmp"),)
        finally:
            connection.close()

        server_pid = sandbox.pid
        assert server_pid is not None
        sandbox.stop()
        sandbox.stop()  # idempotent
        assert sandbox.pid is None
        assert _pid_gone(server_pid, timeout_s=1)
    assert not sandbox.root_dir.exists()


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (
            ServerOptions(
                innodb_doublewrite=False,
                innodb_flush_log_at_trx_commit=0,
                innodb_autoinc_lock_mode=2,
                aio_mode="off",
                innodb_buffer_pool_size="256M",
                innodb_log_file_size="64M",
                log_bin=True,
                extra={"max_connections": "77"},
            ),
            {
                "innodb_doublewrite": "OFF",
                "innodb_flush_log_at_trx_commit": "0",
                "innodb_autoinc_lock_mode": "2",
                "innodb_use_native_aio": "OFF",
                "innodb_buffer_pool_size": str(256 * 1024 * 1024),
                "innodb_log_file_size": str(64 * 1024 * 1024),
                "log_bin": "ON",
                "max_connections": "77",
            },
        ),
        (
            ServerOptions(
                innodb_flush_log_at_trx_commit=2,
                aio_mode="aio",
                innodb_flush_method="fsync",
                innodb_io_capacity=1000,
                performance_schema=True,
            ),
            {
                "innodb_flush_log_at_trx_commit": "2",
                "innodb_use_native_aio": "ON",
                "innodb_linux_aio": "aio",
                "innodb_flush_method": "fsync",
                "innodb_io_capacity": "1000",
                "performance_schema": "ON",
            },
        ),
    ],
    ids=["fast-restore-like", "aio-and-performance-schema"],
)
def test_server_options_reach_the_server(
    tmp_path: Path, binary: ServerBinary, options: ServerOptions, expected: dict[str, str]
) -> None:
    with _sandbox(tmp_path, "tuned", options, binary) as sandbox:
        sandbox.start()
        variables = sandbox.snapshot()["variables"]
    assert {name: variables[name] for name in expected} == expected


def test_a_long_work_root_puts_the_socket_under_tmp(tmp_path: Path, binary: ServerBinary) -> None:
    deep_root = tmp_path / ("long-directory-name-" * 5)
    with _sandbox(deep_root, "socket", ServerOptions(), binary) as sandbox:
        assert len(os.fsencode(sandbox.root_dir / "mysqld.sock")) > 107
        assert sandbox.socket_path.parent.parent == Path("/tmp")
        sandbox.start()
        sandbox.connect().close()
        socket_dir = sandbox.socket_path.parent
    assert not socket_dir.exists()
    assert not sandbox.root_dir.exists()


def test_a_taken_port_is_refused_with_advice(tmp_path: Path, binary: ServerBinary, listening_port: int) -> None:
    sandbox = _sandbox(tmp_path, "taken", ServerOptions(port=listening_port), binary)
    with pytest.raises(PortInUseError) as raised:
        sandbox.start()
    assert str(raised.value) == (
        f"port {listening_port} is already in use on 127.0.0.1: choose another port, "
        "or leave the port empty to let restorescope pick a free one"
    )
    assert sandbox.root_dir.exists()
    sandbox.remove()
    assert not sandbox.root_dir.exists()


def test_the_servers_own_bind_failure_is_a_port_in_use_error_and_picked_ports_are_retried(
    tmp_path: Path, binary: ServerBinary, listening_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Let the taken port through our own check, as when another program grabs it in the meantime.
    monkeypatch.setattr(server, "_require_free_port", lambda port: None)
    with (
        _sandbox(tmp_path, "race", ServerOptions(port=listening_port), binary) as sandbox,
        pytest.raises(PortInUseError, match=f"port {listening_port} is already in use"),
    ):
        sandbox.start()

    free_ports = iter([listening_port, server._pick_free_port()])
    monkeypatch.setattr(server, "_pick_free_port", lambda: next(free_ports))
    with _sandbox(tmp_path, "retry", ServerOptions(), binary) as sandbox:
        sandbox.start()
        assert sandbox.port != listening_port
        sandbox.connect().close()


def test_a_bad_option_fails_with_the_error_log_tail(tmp_path: Path, binary: ServerBinary) -> None:
    options = ServerOptions(extra={"no-such-option": "1"})
    with (
        _sandbox(tmp_path, "bad", options, binary) as sandbox,
        pytest.raises(server.SandboxError, match="unknown variable 'no-such-option=1'"),
    ):
        sandbox.start()


def test_reap_orphans_removes_the_sandbox_of_a_killed_worker(tmp_path: Path) -> None:
    worker_code = textwrap.dedent(
        f"""
        import time
        from pathlib import Path
        from app.sandboxes.options import ServerOptions
        from worker.process_group import ProcessGroup
        from worker.sandbox.binary import detect_server_binary
        from worker.sandbox.server import Sandbox
        sandbox = Sandbox(Path({str(tmp_path)!r}), "orphan", ServerOptions(), detect_server_binary(),
                          ProcessGroup(), lambda line: None)
        sandbox.start()
        print(sandbox.pid, flush=True)
        time.sleep(600)
        """
    )
    worker = subprocess.Popen(
        [sys.executable, "-c", worker_code],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": f"{REPO_ROOT / 'backend'}:{REPO_ROOT}"},
    )
    assert worker.stdout is not None
    server_pid = int(worker.stdout.readline())
    worker.kill()
    worker.wait()
    worker.stdout.close()
    assert _pid_gone(server_pid, timeout_s=3), "mariadbd outlived its SIGKILLed worker: pdeathsig did not work"

    live_owner = _fake_sandbox_dir(tmp_path / "live", worker_pid=os.getpid())
    kept = _fake_sandbox_dir(tmp_path / "kept", worker_pid=_dead_pid())
    (kept / "keep").touch()
    (tmp_path / "not-a-sandbox").mkdir()

    messages: list[str] = []
    assert reap_orphans(tmp_path, messages.append) == [tmp_path / "orphan"]
    assert not (tmp_path / "orphan").exists()
    assert live_owner.exists()
    assert kept.exists()
    assert (tmp_path / "not-a-sandbox").exists()
    assert any("orphan" in message for message in messages)


def test_reap_orphans_kills_a_server_still_running(tmp_path: Path, binary: ServerBinary) -> None:
    with _sandbox(tmp_path, "stray", ServerOptions(), binary) as sandbox:
        sandbox.start()
        server_pid = sandbox.pid
        assert server_pid is not None
        # Pretend the worker that started it has died (pdeathsig normally takes the server along).
        owner_file = sandbox.root_dir / "owner.json"
        owner = json.loads(owner_file.read_text())
        owner_file.write_text(json.dumps({**owner, "worker_pid": _dead_pid()}))

        assert reap_orphans(tmp_path, lambda line: None) == [sandbox.root_dir]
        assert _pid_gone(server_pid, timeout_s=3)
        assert not sandbox.root_dir.exists()


def test_a_kept_sandbox_survives_the_context(tmp_path: Path, binary: ServerBinary) -> None:
    sandbox = _sandbox(tmp_path, "kept", ServerOptions(), binary)
    try:
        with sandbox:
            sandbox.start()
            sandbox.keep = True
        assert sandbox.pid is not None
        assert (sandbox.root_dir / "keep").exists()
    finally:
        sandbox.remove()
    assert not sandbox.root_dir.exists()


def test_make_demo_dumps(tmp_path: Path) -> None:
    paths = demo.make_demo_dumps(tmp_path / "out", tmp_path / "work", rows=200, log=lambda line: None)
    plain, gzipped, zstd, without_database = paths
    assert [path.name for path in paths] == ["shop.sql", "shop.sql.gz", "shop.sql.zst", "shop-nodb.sql"]
    dump = plain.read_bytes()
    for table in ("customers", "products", "orders", "order_items", "notes"):
        assert f"INSERT INTO `{table}` VALUES".encode() in dump
    assert b"CREATE TABLE `returns`" in dump
    assert b"INSERT INTO `returns`" not in dump
    assert b"CREATE DATABASE" in dump
    assert b"'values),(look like a row separator'" in dump
    assert "ünïcødé".encode() in dump
    assert gzip.decompress(gzipped.read_bytes()) == dump
    assert zstandard.ZstdDecompressor().decompress(zstd.read_bytes()) == dump
    nodb = without_database.read_bytes()
    assert b"CREATE DATABASE" not in nodb
    assert b"\nUSE " not in nodb
    assert b"INSERT INTO `customers` VALUES" in nodb
    assert list((tmp_path / "work").iterdir()) == []


def _fake_sandbox_dir(path: Path, worker_pid: int) -> Path:
    path.mkdir()
    owner = {"worker_pid": worker_pid, "hostname": socket.gethostname(), "server_pid": None, "created_at": ""}
    (path / "owner.json").write_text(json.dumps(owner))
    return path
