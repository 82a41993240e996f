"""Capture: record every read, write and fsync of every thread of a job, for the per-thread IO timeline.

Backends (chosen per job, see selection.py):
    strace   ptrace; attaches to the server, wraps the processes the job launches (strace.py)
    ebpf     our probes on syscall and io_uring tracepoints: see io_uring page IO natively (ebpf.py, iotrace/)
    fuse     oplogfs, a logging passthrough file system over the sandbox datadir (fuse.py, oplogfs/)

Each turns what it sees into app.traces Operation records and writes them to a TraceSink in batches
(stream.py); lanes.py names the threads by role. session.py ties one job's capture together.
"""
