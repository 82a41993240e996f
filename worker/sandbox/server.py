"""Scratch MariaDB servers ("sandboxes") that a job restores into, and the sweep of orphaned ones.

A sandbox lives in `work_root/name/`:
    data/         the datadir, made by mariadb-install-db
    data.real/    with a datadir layer (the FUSE capture): the real files, while data/ is the layer's mount
    mysqld.sock   the unix socket (or under /tmp when this path would be too long for a socket)
    mysqld.pid    the server's pid file
    error.log     the server's error log; its tail goes into error messages
    install.log   output of mariadb-install-db
    tmp/          the server's tmpdir: concurrent bootstraps in a shared /tmp delete each other's temporary tables
    owner.json    which worker (host and pid) owns the sandbox, and the server pid, for reap_orphans
    keep          present when the user asked to keep the sandbox: never reaped, never removed on exit
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol

import pymysql
import pymysql.connections

from app.sandboxes.options import ServerOptions
from worker.process_group import ProcessGroup
from worker.sandbox.binary import ServerBinary, find_tool
from worker.sandbox.errors import PortInUseError, SandboxError
from worker.sandbox.flags import server_flags
from worker.sandbox.mounts import unmount_all_under

__all__ = ["DatadirLayer", "PortInUseError", "Sandbox", "SandboxError", "ServerLauncher", "reap_orphans"]

OWNER_FILE = "owner.json"
KEEP_MARKER = "keep"
# sockaddr_un.sun_path is 108 bytes including the terminating NUL.
_MAX_SOCKET_PATH = 107
_ERROR_LOG_TAIL_LINES = 20
_AUTO_PORT_ATTEMPTS = 3
_BIND_IN_USE = "Address already in use"
_SERVER_NAMES = ("mariadbd", "mysqld")
_INSTALL_ERROR = re.compile(r"error|fail|cannot|can't", re.IGNORECASE)


class ServerLauncher(Protocol):
    """Something the server is started through, which keeps the server the process started (strace -D)."""

    def server_command(self, command: list[str]) -> list[str]:
        """The command that runs `command` as the same process, e.g. under a tracer."""


class DatadirLayer(Protocol):
    """Something mounted over the datadir between install and start (the FUSE capture's oplogfs)."""

    def attach(self, real_dir: Path, mount_dir: Path) -> None:
        """Make mount_dir show real_dir; the server will use mount_dir as its datadir."""

    def detach(self) -> None:
        """Undo attach once the server has stopped; called on every stop, also after a kill."""


def _port_in_use_message(port: int) -> str:
    return (
        f"port {port} is already in use on 127.0.0.1: choose another port, "
        "or leave the port empty to let restorescope pick a free one"
    )


class Sandbox:
    """One scratch server. Use as a context manager: on exit it is stopped and removed unless kept."""

    def __init__(
        self,
        work_root: Path,
        name: str,
        options: ServerOptions,
        binary: ServerBinary,
        processes: ProcessGroup,
        log: Callable[[str], None],
        *,
        outlive_job: bool = False,
        datadir_layer: DatadirLayer | None = None,
        launcher: ServerLauncher | None = None,
    ) -> None:
        self._root_dir = work_root.absolute() / name
        # A sandbox the user will keep must survive the end of the job and of its worker.
        self._outlive_job = outlive_job
        self._options = options
        self._binary = binary
        self._processes = processes
        self._log = log
        self._socket_path = _socket_path_for(self._root_dir)
        self._server: subprocess.Popen[bytes] | None = None
        self._port: int | None = None
        self._datadir_layer = datadir_layer
        self._layer_attached = False
        self._launcher = launcher

    # --- where things are -------------------------------------------------------------------------

    @property
    def root_dir(self) -> Path:
        return self._root_dir

    @property
    def datadir(self) -> Path:
        """The datadir the server uses (a layer's mount point when there is a layer)."""
        return self._root_dir / "data"

    @property
    def binary(self) -> ServerBinary:
        return self._binary

    @property
    def real_datadir(self) -> Path:
        """Where the files really are: data.real/ under a layer, else the datadir itself."""
        return self._root_dir / "data.real" if self._datadir_layer is not None else self.datadir

    @property
    def socket_path(self) -> Path:
        return self._socket_path

    @property
    def port(self) -> int:
        if self._port is None:
            raise SandboxError(f"sandbox {self._root_dir.name} has not been started: it has no port yet")
        return self._port

    @property
    def pid(self) -> int | None:
        """The server's pid while it runs, else None."""
        if self._server is None or self._server.poll() is not None:
            return None
        return self._server.pid

    @property
    def keep(self) -> bool:
        return (self._root_dir / KEEP_MARKER).exists()

    @keep.setter
    def keep(self, value: bool) -> None:
        # A file, not only an attribute, so reap_orphans also leaves a kept sandbox alone.
        marker = self._root_dir / KEEP_MARKER
        if value:
            self._root_dir.mkdir(parents=True, exist_ok=True)
            marker.touch()
        else:
            marker.unlink(missing_ok=True)

    # --- lifecycle --------------------------------------------------------------------------------

    def start(self, timeout_s: float = 120) -> None:
        """Create the datadir and start the server; returns once it accepts connections."""
        deadline = time.monotonic() + timeout_s
        self.claim()
        if self._options.port is not None:
            _require_free_port(self._options.port)
        self._install_datadir(deadline)
        if self._datadir_layer is not None and not self._layer_attached:
            self._datadir_layer.attach(self.real_datadir, self.datadir)
            self._layer_attached = True
        if self._options.port is not None:
            self._launch_and_wait(self._options.port, deadline)
            return
        self._launch_on_a_free_port(deadline)

    def stop(self, timeout_s: float = 60) -> None:
        """SIGTERM the server and wait for a clean shutdown; SIGKILL it after timeout_s. Idempotent.
        A datadir layer is detached afterwards, whether the server stopped or had already died."""
        try:
            self._stop_server(timeout_s)
        finally:
            if self._layer_attached and self._datadir_layer is not None:
                self._layer_attached = False
                self._datadir_layer.detach()

    def _stop_server(self, timeout_s: float) -> None:
        server, self._server = self._server, None
        if server is None or server.poll() is not None:
            return
        self._log(f"stopping sandbox server (pid {server.pid})")
        server.terminate()
        try:
            server.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self._log(f"sandbox server did not stop within {timeout_s:.0f} s: killing it")
            server.kill()
            server.wait()

    def remove(self) -> None:
        """Stop the server if it runs and delete everything the sandbox wrote."""
        try:
            self.stop()
        finally:
            # Never rmtree through a mount (it would delete the layer's source through it, or fail on a dead one).
            for problem in unmount_all_under(self._root_dir):
                self._log(problem)
            shutil.rmtree(self._root_dir, ignore_errors=True)
        _remove_short_socket_dir(self._root_dir)

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self.keep:
            self._log(f"keeping sandbox {self._root_dir} as asked (server pid {self.pid})")
            return
        self.remove()

    # --- using it ---------------------------------------------------------------------------------

    def connect(
        self, database: str | None = None, program_name: str | None = None
    ) -> pymysql.connections.Connection[Any]:
        """A root connection over the unix socket, with autocommit and LOAD DATA LOCAL allowed. `program_name`
        is what the server's session attributes (and so the timeline's lane of the connection) call it."""
        return pymysql.connect(
            unix_socket=str(self._socket_path),
            user="root",
            password="",
            database=database,
            local_infile=True,
            autocommit=True,
            charset="utf8mb4",
            connect_timeout=5,
            program_name=program_name,
        )

    def client_args(self) -> list[str]:
        """Arguments that make the mysql/mysqldump clients reach this server (put after --no-defaults)."""
        return [f"--socket={self._socket_path}", "--user=root"]

    def snapshot(self) -> dict[str, dict[str, str]]:
        """The server's global variables and status counters, as text."""
        connection = self.connect()
        try:
            return {
                "variables": _name_value_rows(connection, "SHOW GLOBAL VARIABLES"),
                "status": _name_value_rows(connection, "SHOW GLOBAL STATUS"),
            }
        finally:
            connection.close()

    # --- start, step by step ----------------------------------------------------------------------

    def claim(self) -> None:
        """Create the sandbox's directory and mark it as this worker's, so the sweep removes it if the worker dies.
        start() does it; call it first when files go into the datadir before start() (a physical restore)."""
        self._root_dir.mkdir(parents=True, exist_ok=True)
        (self._root_dir / "tmp").mkdir(mode=0o700, exist_ok=True)
        if self._socket_path.parent != self._root_dir:
            _make_private_dir(self._socket_path.parent)
        self._write_owner(server_pid=None)

    def _write_owner(self, server_pid: int | None) -> None:
        owner = {
            "worker_pid": os.getpid(),
            "worker_start_ticks": _process_start_ticks(os.getpid()),
            "hostname": socket.gethostname(),
            "server_pid": server_pid,
            "socket_path": str(self._socket_path),
            "created_at": datetime.now(UTC).isoformat(),
        }
        temporary = self._root_dir / f"{OWNER_FILE}.tmp"
        temporary.write_text(json.dumps(owner, indent=2))
        temporary.replace(self._root_dir / OWNER_FILE)

    def _install_datadir(self, deadline: float) -> None:
        if (self.real_datadir / "mysql").is_dir():
            self._log(f"reusing the existing datadir {self.real_datadir}")
            return
        self._log(f"creating datadir {self.real_datadir}")
        install_log = self._root_dir / "install.log"
        with install_log.open("wb") as output:
            process = self._processes.popen(self._install_command(), stdout=output, stderr=subprocess.STDOUT)
        try:
            returncode = process.wait(timeout=max(deadline - time.monotonic(), 1))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            raise SandboxError(
                f"creating the sandbox datadir timed out; the output was:\n{_tail(install_log)}"
            ) from None
        if returncode != 0:
            raise SandboxError(
                f"creating the sandbox datadir failed (exit code {returncode}); the output was:\n"
                f"{_install_problem(install_log)}"
            )

    def _install_command(self) -> list[str]:
        datadir = f"--datadir={self.real_datadir}"
        if self._binary.flavour == "mysql":  # UNTESTED: see worker.sandbox.flags.MYSQL_SUPPORT_NOTE
            return [self._binary.path, "--no-defaults", "--initialize-insecure", "--user=root", datadir]
        install_db = find_tool(("mariadb-install-db", "mysql_install_db"), near=self._binary.path)
        return [
            install_db,
            "--no-defaults",
            "--user=root",
            datadir,
            "--auth-root-authentication-method=normal",
            "--skip-test-db",
            f"--tmpdir={self._root_dir / 'tmp'}",  # passed on to the bootstrap server
        ]

    def _launch_on_a_free_port(self, deadline: float) -> None:
        # Another process may take the port between our probe and the server's bind: try again.
        for attempt in range(1, _AUTO_PORT_ATTEMPTS + 1):
            port = _pick_free_port()
            try:
                self._launch_and_wait(port, deadline)
                return
            except PortInUseError:
                if attempt == _AUTO_PORT_ATTEMPTS:
                    raise
                self._log(f"port {port} was taken before the server could bind it: trying another one")

    def _launch_and_wait(self, port: int, deadline: float) -> None:
        error_log = self._root_dir / "error.log"
        log_offset = error_log.stat().st_size if error_log.exists() else 0
        self._log(f"starting {self._binary.flavour} {self._binary.version} on port {port}")
        start = self._processes.popen_detached if self._outlive_job else self._processes.popen
        command = self._server_command(port)
        if self._launcher is not None:
            command = self._launcher.server_command(command)
        self._server = start(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self._port = port
        self._write_owner(server_pid=self._server.pid)
        self._wait_until_ready(port, error_log, log_offset, deadline)
        self._log(f"sandbox server is up (pid {self._server.pid}, socket {self._socket_path})")

    def _server_command(self, port: int) -> list[str]:
        return [
            self._binary.path,
            "--no-defaults",
            "--user=root",
            f"--datadir={self.datadir}",
            f"--socket={self._socket_path}",
            f"--port={port}",
            "--bind-address=127.0.0.1",
            f"--pid-file={self._root_dir / 'mysqld.pid'}",
            f"--log-error={self._root_dir / 'error.log'}",
            f"--tmpdir={self._root_dir / 'tmp'}",
            *server_flags(self._options, self._binary),
        ]

    def _wait_until_ready(self, port: int, error_log: Path, log_offset: int, deadline: float) -> None:
        server = self._server
        assert server is not None
        while time.monotonic() < deadline:
            if server.poll() is not None:
                self._server = None
                raise _early_exit_error(port, server.returncode, _tail(error_log, log_offset))
            if self._accepts_connections():
                return
            time.sleep(0.1)
        self.stop(timeout_s=5)
        raise SandboxError(
            "the sandbox server did not accept connections in time; its error log ends with:\n"
            f"{_tail(error_log, log_offset)}\nGive it a longer start timeout, or check the settings above."
        )

    def _accepts_connections(self) -> bool:
        if not self._socket_path.exists():
            return False
        # PyMySQL does not close its socket when the unix-socket connect itself is refused (the server has made the
        # socket file but does not listen yet): the leaked socket's ResourceWarning then fails whichever test is
        # running when it is collected. A socket of our own, closed either way, asks first.
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            probe.settimeout(1)
            try:
                probe.connect(str(self._socket_path))
            except OSError:
                return False
        try:
            self.connect().close()
        except pymysql.err.OperationalError:
            return False
        return True


# --- reaping sandboxes of dead workers -------------------------------------------------------------


def reap_orphans(work_root: Path, log: Callable[[str], None]) -> list[Path]:
    """Kill the servers and delete the dirs of sandboxes whose worker (on this host) has died."""
    if not work_root.is_dir():
        return []
    removed = []
    for sandbox_dir in sorted(path for path in work_root.iterdir() if path.is_dir()):
        owner = _read_owner(sandbox_dir)
        if owner is None or (sandbox_dir / KEEP_MARKER).exists() or not _is_orphan(owner):
            continue
        log(f"reaping sandbox {sandbox_dir}: its worker (pid {owner.get('worker_pid')}) is gone")
        server_pid = owner.get("server_pid")
        if isinstance(server_pid, int):
            _kill_server_if_ours(server_pid, sandbox_dir, log)
        for problem in unmount_all_under(sandbox_dir):  # a FUSE capture's mount, its daemon dead with the worker
            log(problem)
        shutil.rmtree(sandbox_dir, ignore_errors=True)
        _remove_short_socket_dir(sandbox_dir.absolute())
        removed.append(sandbox_dir)
    return removed


def _read_owner(sandbox_dir: Path) -> dict[str, Any] | None:
    try:
        owner = json.loads((sandbox_dir / OWNER_FILE).read_text())
    except (OSError, ValueError):
        # No owner file: not a sandbox, or one still being created. Leave it alone.
        return None
    return owner if isinstance(owner, dict) else None


def _is_orphan(owner: dict[str, Any]) -> bool:
    worker_pid = owner.get("worker_pid")
    if owner.get("hostname") != socket.gethostname() or not isinstance(worker_pid, int):
        return False  # another host's worker: only that host can tell whether it is alive
    if not _pid_alive(worker_pid):
        return True
    # The pid is in use, but by the same process only if it started at the same time (pids are reused).
    recorded_start = owner.get("worker_start_ticks")
    return recorded_start is not None and recorded_start != _process_start_ticks(worker_pid)


def _kill_server_if_ours(server_pid: int, sandbox_dir: Path, log: Callable[[str], None]) -> None:
    command_line = _command_line(server_pid)
    if not any(name in command_line for name in _SERVER_NAMES) or sandbox_dir.name not in command_line:
        return  # gone, or the pid now belongs to an unrelated process
    log(f"killing orphaned sandbox server pid {server_pid}")
    with contextlib.suppress(ProcessLookupError):
        os.kill(server_pid, signal.SIGKILL)
    _wait_for_exit(server_pid, timeout_s=10)


# --- small helpers ---------------------------------------------------------------------------------


def _socket_path_for(root_dir: Path) -> Path:
    preferred = root_dir / "mysqld.sock"
    if len(os.fsencode(preferred)) <= _MAX_SOCKET_PATH:
        return preferred
    return _short_socket_dir(root_dir) / "mysqld.sock"


def _short_socket_dir(root_dir: Path) -> Path:
    # Derived from the sandbox path, so remove() and reap_orphans find it without any record. The name
    # is predictable, so _make_private_dir refuses one that someone else created first.
    digest = hashlib.sha256(os.fsencode(root_dir)).hexdigest()[:16]
    return Path("/tmp") / f"restorescope-sock-{digest}"  # noqa: S108


def _make_private_dir(path: Path) -> None:
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    status = path.lstat()
    if path.is_symlink() or status.st_uid != os.getuid() or status.st_mode & 0o077:
        raise SandboxError(
            f"{path} (for the sandbox's socket) exists but is not a private directory of this user: "
            "remove it, or use a shorter sandbox work directory so the socket can live inside it"
        )


def _remove_short_socket_dir(root_dir: Path) -> None:
    shutil.rmtree(_short_socket_dir(root_dir), ignore_errors=True)


def _require_free_port(port: int) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        # The server binds with SO_REUSEADDR too, so a port in TIME_WAIT counts as free, as for it.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            raise PortInUseError(_port_in_use_message(port)) from None


def _pick_free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _early_exit_error(port: int, returncode: int | None, log_tail: str) -> SandboxError:
    if _BIND_IN_USE in log_tail and "port" in log_tail.lower():
        return PortInUseError(_port_in_use_message(port))
    return SandboxError(
        f"the sandbox server exited while starting (exit code {returncode}); its error log ends with:\n"
        f"{log_tail}\nCheck the server settings of this job: an unknown option or a bad value is the usual cause."
    )


def _tail(path: Path, offset: int = 0, lines: int = _ERROR_LOG_TAIL_LINES) -> str:
    try:
        with path.open("rb") as log_file:
            log_file.seek(offset)
            text = log_file.read().decode(errors="replace")
    except OSError:
        return f"({path} could not be read)"
    return "\n".join(text.splitlines()[-lines:]) or f"({path} is empty)"


def _install_problem(install_log: Path) -> str:
    """The error lines of mariadb-install-db's output: its tail is a generic help text that hides them."""
    try:
        lines = install_log.read_text(errors="replace").splitlines()
    except OSError:
        return f"({install_log} could not be read)"
    errors = [line for line in lines if _INSTALL_ERROR.search(line)][:_ERROR_LOG_TAIL_LINES]
    return "\n".join(errors) if errors else _tail(install_log)


def _name_value_rows(connection: pymysql.connections.Connection[Any], query: str) -> dict[str, str]:
    with connection.cursor() as cursor:
        cursor.execute(query)
        return {str(name): "" if value is None else str(value) for name, value in cursor.fetchall()}


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie has exited; only its parent has not collected it yet.
    return _process_state(pid) not in ("Z", "X", None)


def _process_stat_fields(pid: int) -> list[str] | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may contain spaces and parentheses: split after its closing one.
    return stat[stat.rfind(")") + 2 :].split()


def _process_state(pid: int) -> str | None:
    fields = _process_stat_fields(pid)
    return fields[0] if fields else None


def _process_start_ticks(pid: int) -> int | None:
    fields = _process_stat_fields(pid)
    # starttime is field 22 of /proc/PID/stat, i.e. index 19 after the state (field 3).
    return int(fields[19]) if fields and len(fields) > 19 else None


def _command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _wait_for_exit(pid: int, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while _pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
