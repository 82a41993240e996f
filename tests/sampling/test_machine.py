"""Whole-machine CPU and disk counters: /proc/stat and /proc/diskstats deltas, and finding the datadir's disk."""

import os
import time
from pathlib import Path

import pytest

from app.traces.records import CounterSample
from worker.capture.cpu_sampler import MalformedProcFile
from worker.capture.machine import (
    CpuTimes,
    DiskCounters,
    MachineSampler,
    cpu_counters,
    device_holding,
    disk_counters,
    parse_diskstats,
    parse_proc_stat,
)

PROC_STAT = """cpu  10883 5 4213 167306 706 10 292 26 0 0
cpu0 3554 0 1462 86366 39 0 129 15 0 0
cpu1 7328 5 2750 80940 666 10 162 10 0 0
intr 1234 5 6
ctxt 99
"""


def test_parse_proc_stat() -> None:
    assert parse_proc_stat(PROC_STAT) == CpuTimes(10883, 5, 4213, 167306, 706, 10, 292, 26, cores=2)


@pytest.mark.parametrize("text", ["", "intr 1 2\n", "cpu0 1 2 3 4\n"])
def test_parse_proc_stat_needs_the_aggregate_line(text: str) -> None:
    with pytest.raises(MalformedProcFile):
        parse_proc_stat(text)


def _times(user: int = 0, system: int = 0, idle: int = 0, iowait: int = 0, steal: int = 0, **other: int) -> CpuTimes:
    return CpuTimes(
        user, other.get("nice", 0), system, idle, iowait, other.get("irq", 0), other.get("softirq", 0), steal, 2
    )


@pytest.mark.parametrize(
    ("after", "expected"),
    [
        # One of two cores busy in user space for the interval: the second core idle.
        (_times(user=100, idle=100), {"user": 50.0, "system": 0.0, "iowait": 0.0, "steal": 0.0, "busy_cores": 1.0}),
        # nice counts as user, irq and softirq as system; iowait is idle time, not busy.
        (
            _times(user=30, nice=10, system=20, irq=5, softirq=5, iowait=50, idle=70, steal=10),
            {"user": 20.0, "system": 15.0, "iowait": 25.0, "steal": 5.0, "busy_cores": 0.8},
        ),
        (_times(idle=200), {"user": 0.0, "system": 0.0, "iowait": 0.0, "steal": 0.0, "busy_cores": 0.0}),
    ],
    ids=["one-core-of-two", "every-column", "idle"],
)
def test_cpu_counters(after: CpuTimes, expected: dict[str, float]) -> None:
    samples = cpu_counters(_times(), after, t_us=5)
    assert {sample.track.removeprefix("cpu."): sample.value for sample in samples} == expected
    assert {sample.unit for sample in samples if sample.track != "cpu.busy_cores"} == {"%"}
    assert all(sample.t_us == 5 for sample in samples)


def test_cpu_counters_need_time_to_pass() -> None:
    assert cpu_counters(_times(user=5), _times(user=5), t_us=1) == []


DISKSTATS = """   7       0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0
 254       0 vda 64812 14452 3440058 13447 44244 23134 4313288 17554 0 11016 35034 11959 95 851816 1781 8699 2251
 254       1 vda1 100 0 2000 10 50 0 4000 20 0 10 30
 259       0 nvme0n1 5 0 40 1 6 0 48 2 0 3 3
"""


@pytest.mark.parametrize(
    ("device", "expected"),
    [
        ("vda", DiskCounters(64812, 3440058, 44244, 4313288)),
        ("vda1", DiskCounters(100, 2000, 50, 4000)),
        ("sdz", None),
    ],
)
def test_parse_diskstats(device: str, expected: DiskCounters | None) -> None:
    assert parse_diskstats(DISKSTATS, device) == expected


def test_disk_counters_are_rates_in_mb_and_requests_per_second() -> None:
    before = DiskCounters(reads=100, sectors_read=0, writes=10, sectors_written=0)
    after = DiskCounters(reads=300, sectors_read=2 * 1953125, writes=60, sectors_written=1953125)
    # 2 s; 1953125 sectors of 512 bytes are exactly 1000 MB.
    assert disk_counters(before, after, 2.0, t_us=9) == [
        CounterSample("disk.read_mb_s", 9, 1000.0, "MB/s"),
        CounterSample("disk.write_mb_s", 9, 500.0, "MB/s"),
        CounterSample("disk.read_iops", 9, 100.0, "IO/s"),
        CounterSample("disk.write_iops", 9, 25.0, "IO/s"),
    ]
    assert disk_counters(before, after, 0.0, t_us=9) == []


def _numbers_line(path: Path, name: str) -> str:
    device = path.stat().st_dev
    return f" {os.major(device)} {os.minor(device)} {name} 1 0 8 1 1 0 8 1 0 1 1\n"


def test_device_holding_uses_the_device_number(tmp_path: Path) -> None:
    assert device_holding(tmp_path, _numbers_line(tmp_path, "data0"), mountinfo="") == "data0"


def test_device_holding_falls_back_to_the_mount_source(tmp_path: Path) -> None:
    # As on btrfs or overlay: st_dev is an anonymous number, diskstats only knows the real disk.
    mountinfo = (
        "22 1 0:21 / / rw,relatime - ext4 /dev/vdb rw\n"
        f"23 22 0:45 / {tmp_path.parent} rw,relatime - btrfs /dev/vdc rw\n"
        "24 22 0:46 / /other rw - tmpfs tmpfs rw\n"
    )
    diskstats = " 254 16 vdb 1 0 8 1 1 0 8 1 0 1 1\n 254 32 vdc 1 0 8 1 1 0 8 1 0 1 1\n"
    assert device_holding(tmp_path, diskstats, mountinfo) == "vdc"
    # A mount whose source is not a block device (tmpfs) gives no disk counters.
    tmpfs_only = f"24 22 0:46 / {tmp_path.parent} rw - tmpfs tmpfs rw\n"
    assert device_holding(tmp_path, diskstats, tmpfs_only) is None


def test_machine_sampler_on_this_machine(tmp_path: Path) -> None:
    device = device_holding(tmp_path, Path("/proc/diskstats").read_text(), Path("/proc/self/mountinfo").read_text())
    sampler = MachineSampler(device)
    assert sampler.sample(1_000_000) == []  # the first reading is only a baseline
    time.sleep(0.1)  # /proc/stat counts in 10 ms ticks
    samples = sampler.sample(1_250_000)
    tracks = {sample.track for sample in samples}
    assert {"cpu.user", "cpu.system", "cpu.iowait", "cpu.steal", "cpu.busy_cores"} <= tracks
    if device is not None:
        assert {"disk.read_mb_s", "disk.write_mb_s", "disk.read_iops", "disk.write_iops"} <= tracks
    assert all(sample.value >= 0 for sample in samples)
