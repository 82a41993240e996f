"""Whole-machine CPU (from /proc/stat) and the throughput of the disk holding the datadir (/proc/diskstats).

Counter tracks, each reading covering the interval since the one before:
    cpu.user, cpu.system, cpu.iowait, cpu.steal   % of all cores (user includes nice; system includes
                                                  irq and softirq), so 50 on two cores is one full core
    cpu.busy_cores                                 cores in use (neither idle nor iowait): 1.0 on a
                                                  two-core machine means the second core is free
    disk.read_mb_s, disk.write_mb_s                MB/s (10^6 bytes; diskstats sectors are 512 bytes)
    disk.read_iops, disk.write_iops                completed requests per second
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from app.traces.records import CounterSample
from worker.capture.cpu_sampler import MalformedProcFile

_SECTOR_BYTES = 512


@dataclass(frozen=True, slots=True)
class CpuTimes:
    """The aggregate "cpu" line of /proc/stat, in clock ticks since boot."""

    user: int
    nice: int
    system: int
    idle: int
    iowait: int
    irq: int
    softirq: int
    steal: int
    cores: int

    @property
    def total(self) -> int:
        # guest and guest_nice are already counted inside user and nice.
        return self.user + self.nice + self.system + self.idle + self.iowait + self.irq + self.softirq + self.steal


def parse_proc_stat(text: str) -> CpuTimes:
    aggregate: list[int] | None = None
    cores = 0
    for line in text.splitlines():
        if line.startswith("cpu "):
            aggregate = [int(value) for value in line.split()[1:9]]
        elif line.startswith("cpu"):
            cores += 1
    if aggregate is None or len(aggregate) < 4:
        raise MalformedProcFile("/proc/stat has no aggregate 'cpu' line")
    user, nice, system, idle, iowait, irq, softirq, steal = (aggregate + [0] * 8)[:8]
    return CpuTimes(user, nice, system, idle, iowait, irq, softirq, steal, max(cores, 1))


def cpu_counters(previous: CpuTimes, current: CpuTimes, t_us: int) -> list[CounterSample]:
    total = current.total - previous.total
    if total <= 0:
        return []

    def share(delta: int) -> float:
        return round(100.0 * max(delta, 0) / total, 2)

    idle = (current.idle - previous.idle) + (current.iowait - previous.iowait)
    return [
        CounterSample("cpu.user", t_us, share(current.user + current.nice - previous.user - previous.nice), "%"),
        CounterSample(
            "cpu.system",
            t_us,
            share(current.system + current.irq + current.softirq - previous.system - previous.irq - previous.softirq),
            "%",
        ),
        CounterSample("cpu.iowait", t_us, share(current.iowait - previous.iowait), "%"),
        CounterSample("cpu.steal", t_us, share(current.steal - previous.steal), "%"),
        CounterSample("cpu.busy_cores", t_us, round(current.cores * max(total - idle, 0) / total, 3), "cores"),
    ]


@dataclass(frozen=True, slots=True)
class DiskCounters:
    reads: int
    sectors_read: int
    writes: int
    sectors_written: int


def parse_diskstats(text: str, device: str) -> DiskCounters | None:
    """The counters of `device` (a name such as "vda" or "nvme0n1p2"), or None if it is not listed."""
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 10 and fields[2] == device:
            return DiskCounters(int(fields[3]), int(fields[5]), int(fields[7]), int(fields[9]))
    return None


def disk_counters(previous: DiskCounters, current: DiskCounters, seconds: float, t_us: int) -> list[CounterSample]:
    if seconds <= 0:
        return []

    def rate(delta: int, scale: float = 1.0) -> float:
        return round(max(delta, 0) * scale / seconds, 2)

    megabytes = _SECTOR_BYTES / 1e6
    return [
        CounterSample("disk.read_mb_s", t_us, rate(current.sectors_read - previous.sectors_read, megabytes), "MB/s"),
        CounterSample(
            "disk.write_mb_s", t_us, rate(current.sectors_written - previous.sectors_written, megabytes), "MB/s"
        ),
        CounterSample("disk.read_iops", t_us, rate(current.reads - previous.reads), "IO/s"),
        CounterSample("disk.write_iops", t_us, rate(current.writes - previous.writes), "IO/s"),
    ]


def device_holding(path: Path, diskstats: str, mountinfo: str) -> str | None:
    """The diskstats name of the block device that holds `path`.

    Its st_dev names the device directly for ext4/xfs on a disk or partition. Filesystems with anonymous
    device numbers (btrfs, overlay) do not: then the source of the mount holding `path` is used.
    """
    st_dev = path.stat().st_dev
    by_number = {(int(f[0]), int(f[1])): f[2] for f in (line.split() for line in diskstats.splitlines()) if len(f) > 2}
    name = by_number.get((os.major(st_dev), os.minor(st_dev)))
    if name is not None:
        return name
    source = _mount_source(path.resolve(), mountinfo)
    if source is None or not source.startswith("/dev/"):
        return None
    candidate = Path(source).resolve().name
    return candidate if candidate in by_number.values() else None


def _mount_source(path: Path, mountinfo: str) -> str | None:
    best: tuple[int, str] | None = None
    for line in mountinfo.splitlines():
        before, _, after = line.partition(" - ")
        fields, tail = before.split(), after.split()
        if len(fields) < 5 or len(tail) < 2:
            continue
        mount_point = Path(fields[4].replace("\\040", " "))
        if (path == mount_point or mount_point in path.parents) and (best is None or len(mount_point.parts) >= best[0]):
            best = (len(mount_point.parts), tail[1])
    return None if best is None else best[1]


class MachineSampler:
    """Reads /proc/stat and /proc/diskstats each round and returns the counters since the round before."""

    def __init__(self, disk_device: str | None, proc_root: Path = Path("/proc")) -> None:
        self.disk_device = disk_device
        self._stat_path = proc_root / "stat"
        self._diskstats_path = proc_root / "diskstats"
        self._cpu: CpuTimes | None = None
        self._disk: DiskCounters | None = None
        self._last_us = 0

    def sample(self, t_us: int) -> list[CounterSample]:
        cpu = parse_proc_stat(self._stat_path.read_text())
        disk = None
        if self.disk_device is not None:
            disk = parse_diskstats(self._diskstats_path.read_text(), self.disk_device)
        samples: list[CounterSample] = []
        if self._cpu is not None:
            samples += cpu_counters(self._cpu, cpu, t_us)
        if self._disk is not None and disk is not None:
            samples += disk_counters(self._disk, disk, (t_us - self._last_us) / 1e6, t_us)
        self._cpu, self._disk, self._last_us = cpu, disk, t_us
        return samples
