"""ProcessGroup: one group per job that cancel can kill, and nothing outlives a killed worker."""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from worker.process_group import ProcessGroup

REPO_ROOT = Path(__file__).resolve().parent.parent


def _is_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state in ("Z", "X")  # exited, waiting only to be collected by its new parent


def _wait_gone(pid: int, timeout_s: float = 3) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if _is_gone(pid):
            return True
        time.sleep(0.05)
    return False


def test_later_processes_join_the_first_ones_group() -> None:
    group = ProcessGroup()
    first = group.popen(["sleep", "30"])
    second = group.popen(["sleep", "30"])
    try:
        assert group.pgids == [first.pid]
        assert os.getpgid(second.pid) == first.pid
        assert os.getsid(second.pid) == os.getsid(0)  # same session as the worker, not a new one
    finally:
        group.kill()
        first.wait()
        second.wait()


def test_kill_reaches_grandchildren() -> None:
    group = ProcessGroup()
    shell = group.popen(["sh", "-c", "sleep 100 & echo $!; wait"], stdout=subprocess.PIPE)
    assert shell.stdout is not None
    grandchild = int(shell.stdout.readline())
    group.kill()
    shell.wait()
    shell.stdout.close()
    assert shell.returncode == -signal.SIGKILL
    assert _wait_gone(grandchild), "the grandchild survived ProcessGroup.kill()"


def test_a_new_group_is_started_when_the_old_one_is_empty() -> None:
    group = ProcessGroup()
    group.popen(["true"]).wait()
    later = group.popen(["sleep", "30"])
    try:
        assert group.pgids[1] == later.pid
        assert len(group.pgids) == 2
    finally:
        group.kill()
        later.wait()


def test_kill_of_groups_already_gone_is_quiet() -> None:
    group = ProcessGroup()
    group.popen(["true"]).wait()
    group.kill()
    group.kill(signal.SIGTERM)


def test_choosing_the_group_yourself_is_refused() -> None:
    with pytest.raises(ValueError, match="process_group"):
        ProcessGroup().popen(["true"], process_group=0)


def test_children_die_when_the_worker_is_killed() -> None:
    worker_code = textwrap.dedent(
        """
        import time
        from worker.process_group import ProcessGroup
        child = ProcessGroup().popen(["sleep", "100"])
        print(child.pid, flush=True)
        time.sleep(100)
        """
    )
    worker = subprocess.Popen(
        [sys.executable, "-c", worker_code], cwd=REPO_ROOT, stdout=subprocess.PIPE, env=_env_with_repo_path()
    )
    assert worker.stdout is not None
    sleeper = int(worker.stdout.readline())
    # setpriv arms the death signal just after its own exec: kill the parent only once it has exec'd sleep.
    # (A worker killed inside that sub-millisecond window leaves the child to the orphan reaper instead.)
    deadline = time.monotonic() + 5
    while not Path(f"/proc/{sleeper}/cmdline").read_bytes().startswith(b"sleep") and time.monotonic() < deadline:
        time.sleep(0.01)
    worker.kill()
    worker.wait()
    worker.stdout.close()
    assert _wait_gone(sleeper, timeout_s=2), "the child outlived its SIGKILLed parent: pdeathsig did not work"


def _env_with_repo_path() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": f"{REPO_ROOT / 'backend'}:{REPO_ROOT}"}
