"""iotrace, the eBPF capture's probes, on real processes: what it records, what it counts, what it leaves out."""

import os
import signal
import subprocess
import sys
from pathlib import Path

from worker.capture import ebpf

# Writes 4 KiB at offset 8192 of the file named by argv[1], then reads its stdin to the end.
WRITER = """
import os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
os.pwrite(fd, b"x" * 4096, 8192)
os.fsync(fd)
os.close(fd)
while os.read(0, 4096):
    pass
"""


def run_writer(target: Path, **popen: object) -> int:
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(target)], stdin=subprocess.PIPE, **popen)  # type: ignore[call-overload]
    writer.communicate(b"y" * 40_000)
    assert writer.returncode == 0
    return int(writer.pid)


def test_records_the_processes_of_its_group_and_counts_their_stdin_reads(tmp_path: Path) -> None:
    iotrace = subprocess.Popen(
        [str(ebpf.IOTRACE)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, process_group=0
    )  # a process group of its own, as the job's
    assert iotrace.stdout is not None
    assert iotrace.stdout.readline() == b"READY\n"
    inside = run_writer(tmp_path / "inside.ibd", process_group=iotrace.pid)
    outside = run_writer(tmp_path / "outside.ibd")
    iotrace.send_signal(signal.SIGINT)
    out, err = iotrace.communicate(timeout=30)
    assert iotrace.returncode == 0, err
    lines = out.decode().splitlines()

    opened = [line.split(" ", 6) for line in lines if line.startswith("O ")]
    assert any(fields[2] == str(inside) and fields[6] == str(tmp_path / "inside.ibd") for fields in opened)
    # Nothing of a process outside the job's group.
    assert not [line for line in lines if line.split(" ")[2:3] == [str(outside)]]
    assert str(tmp_path / "outside.ibd") not in out.decode()

    calls = [line.split(" ") for line in lines if line.startswith("S ") and line.split(" ")[2] == str(inside)]
    pwrites = [fields for fields in calls if fields[5] == "pwrite64"]
    assert [(fields[7], fields[8], fields[9]) for fields in pwrites] == [("8192", "4096", "4096")]
    assert [fields for fields in calls if fields[5] == "fsync"]
    # Reads of stdin are counted per thread in the kernel, never one line each.
    assert not [fields for fields in calls if fields[5] == "read" and fields[6] == "0"]
    assert f"@stdin_bytes[{inside}]: 40000" in lines
    reads = [line for line in lines if line.startswith(f"@stdin_reads[{inside}]: ")]
    assert reads and int(reads[0].rsplit(" ", 1)[1]) >= 10  # 40000 bytes, at most 4096 per read, and the EOF


def test_watches_the_pids_it_is_given(tmp_path: Path) -> None:
    ready_r, ready_w = os.pipe()
    # Started before iotrace, in a session of its own, as a server the worker did not launch would be.
    writer = subprocess.Popen(
        [sys.executable, "-c", f"import os; os.read({ready_r}, 1)\n" + WRITER, str(tmp_path / "given.ibd")],
        stdin=subprocess.DEVNULL,
        pass_fds=(ready_r,),
        start_new_session=True,
    )
    iotrace = subprocess.Popen([str(ebpf.IOTRACE), str(writer.pid)], stdout=subprocess.PIPE, start_new_session=True)
    assert iotrace.stdout is not None
    assert iotrace.stdout.readline() == b"READY\n"
    os.write(ready_w, b"go")
    assert writer.wait(30) == 0
    iotrace.send_signal(signal.SIGINT)
    out, _ = iotrace.communicate(timeout=30)
    pwrites = [
        line for line in out.decode().splitlines() if line.startswith(f"S {writer.pid} ") and " pwrite64 " in line
    ]
    assert len(pwrites) == 1 and pwrites[0].endswith(" 8192 4096 4096")


def test_a_pid_that_is_not_a_number_is_refused() -> None:
    result = subprocess.run([str(ebpf.IOTRACE), "12x"], capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 2
    assert "not a process id: 12x" in result.stderr
