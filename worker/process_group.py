"""Every process a job starts lives in one process group that the worker owns.

Cancel signals the whole group at once (grandchildren included, such as the server a script forks),
and each process is started under `setpriv --pdeathsig KILL`, so if the worker itself dies (even by
SIGKILL) the kernel kills its direct children too. Nothing of a job outlives the worker.

The group stays in the worker's session on purpose: setpgid() can only join a group of the caller's own
session, so with start_new_session the later processes of the job could not join the first one's group.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import subprocess
from typing import Any

# setpriv arms the signal right after its exec: a worker killed in that sub-millisecond window leaves the
# child to reap_orphans. pdeathsig fires when the *thread* that forked the child exits, not only the process:
# start processes from a thread that lives as long as the job (the Celery task's own thread does).
_DEATH_SIGNAL_WRAPPER = ["setpriv", "--pdeathsig", "KILL", "--"]


class ProcessGroup:
    """The process groups of one job; normally a single one, more if it emptied between starts."""

    def __init__(self) -> None:
        self._pgids: list[int] = []

    @property
    def pgids(self) -> list[int]:
        return list(self._pgids)

    def popen(self, args: list[str], **kwargs: Any) -> subprocess.Popen[bytes]:
        """Start args in this job's group (creating it on first use), killed if the worker dies."""
        if "process_group" in kwargs or "start_new_session" in kwargs:
            raise ValueError("ProcessGroup chooses the process group itself: do not pass process_group")
        wrapped = [*_DEATH_SIGNAL_WRAPPER, *args]
        if self._pgids:
            try:
                return subprocess.Popen(wrapped, process_group=self._pgids[-1], **kwargs)
            except OSError as error:
                if not _is_group_gone(error):
                    raise
                # Every member of the group exited, so the group no longer exists: start a new one.
        process: subprocess.Popen[bytes] = subprocess.Popen(wrapped, process_group=0, **kwargs)
        # With process_group=0 the child's pgid is its own pid.
        self._pgids.append(process.pid)
        return process

    def popen_detached(self, args: list[str], **kwargs: Any) -> subprocess.Popen[bytes]:
        """Start args outside the job's group and without the death signal, for a process meant to outlive
        the job (a sandbox the user asked to keep). Whoever starts it must stop it by pid on failure."""
        return subprocess.Popen(args, start_new_session=True, **kwargs)

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Send sig to every group this job has used; groups already gone are skipped."""
        for pgid in self._pgids:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pgid, sig)


def _is_group_gone(error: OSError) -> bool:
    # setpgid() to a group with no members left fails with EPERM (no such group in our session).
    return error.errno in (errno.EPERM, errno.ESRCH)
