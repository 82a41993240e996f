"""What the advisor needs to know of the host a job ran on: CPUs, memory, and the disk under the work root.

Read by the worker, because the API may run on another machine; stored with the job (`jobs.run_facts`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from worker.capture.machine import device_holding


def parse_meminfo_total(text: str) -> int | None:
    """MemTotal of /proc/meminfo in bytes ("MemTotal:       24577356 kB")."""
    for line in text.splitlines():
        if line.startswith("MemTotal:"):
            fields = line.split()
            if len(fields) >= 2 and fields[1].isdigit():
                return int(fields[1]) * (1024 if len(fields) < 3 or fields[2].lower() == "kb" else 1)
    return None


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity: a container pinned to 2 of 64 cores has 2)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def _rotational(device: str) -> bool | None:
    """Whether the disk spins (/sys/block/X/queue/rotational); a partition asks its parent disk."""
    for candidate in (Path("/sys/class/block") / device / "queue", Path("/sys/class/block") / device / ".." / "queue"):
        flag = candidate / "rotational"
        if flag.exists():
            text = _read(str(flag)).strip()
            return text == "1" if text in ("0", "1") else None
    return None


def host_facts(work_root: Path) -> dict[str, Any]:
    """{"cpus", "memory_bytes", "disk_device", "disk_rotational"}; what cannot be read is None."""
    device = None
    try:
        work_root.mkdir(parents=True, exist_ok=True)
        device = device_holding(work_root, _read("/proc/diskstats"), _read("/proc/self/mountinfo"))
    except OSError:
        device = None
    return {
        "cpus": usable_cpus(),
        "memory_bytes": parse_meminfo_total(_read("/proc/meminfo")),
        "disk_device": device,
        "disk_rotational": _rotational(device) if device else None,
    }
