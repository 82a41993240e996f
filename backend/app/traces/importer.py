"""Import an uploaded JuiceFS access log or strace log as a job with a trace.

The upload is streamed to a file under ``{data_dir}/uploads`` as it arrives (never held in memory) and
refused with 413 as soon as it passes ``settings.trace_upload_max_bytes``. Then it is read one line at a
time through the format's streaming parser into a TraceWriter, like a live capture. Lines that cannot
be read are counted with their numbers and never stop the import.
"""

import codecs
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from fastapi import Request
from python_multipart.multipart import MultipartParser, parse_options_header
from sqlalchemy.orm import Session

from app.audit.service import record
from app.core.config import Settings
from app.core.errors import DomainError
from app.models import AuditAction, Job, JobKind, JobPhase, JobStatus, User
from app.models.base import utcnow
from app.models.trace import TraceSource
from app.traces import juicefs_log
from app.traces.formats import UnknownTraceFormat, open_trace
from app.traces.operation import Operation
from app.traces.records import Lane
from app.traces.service import start_trace_row, store_summary
from app.traces.store import TraceWriter, trace_dir

BATCH: Final = 50_000
SNIFF_BYTES: Final = 64 * 1024
FILE_FIELD: Final = "file"

# Magic numbers of what people upload by mistake, and what to tell them.
_SIGNATURES: Final = (
    (b"\x1f\x8b", "a gzip-compressed file: decompress it first (gunzip) and upload the text log"),
    (b"\x28\xb5\x2f\xfd", "a zstd-compressed file: decompress it first (zstd -d) and upload the text log"),
    (b"BZh", "a bzip2-compressed file: decompress it first (bunzip2) and upload the text log"),
    (b"\xfd7zXZ\x00", "an xz-compressed file: decompress it first (unxz) and upload the text log"),
    (b"PK\x03\x04", "a zip archive: extract the log from it and upload the text log"),
)


class UploadRejected(DomainError):
    """400: the upload is not a trace log we can read."""


class UploadTooLarge(DomainError):
    status_code = 413


@dataclass
class Upload:
    path: Path
    file_name: str
    size: int
    name: str | None = None


def _too_large(settings: Settings) -> UploadTooLarge:
    limit = settings.trace_upload_max_bytes
    return UploadTooLarge(
        f"the upload is larger than the limit of {limit} bytes ({limit / 2**20:.0f} MiB); "
        f"split the log or raise RESTORESCOPE_TRACE_UPLOAD_MAX_BYTES",
        field="file",
    )


async def receive_upload(request: Request, settings: Settings) -> Upload:
    """Stream the multipart body's "file" part to disk; the optional "name" field is kept too."""
    limit = settings.trace_upload_max_bytes
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit + 64 * 1024:
        raise _too_large(settings)  # say so before reading a byte of it
    content_type, options = parse_options_header(request.headers.get("content-type", ""))
    boundary = options.get(b"boundary")
    if content_type != b"multipart/form-data" or not boundary:
        raise UploadRejected("send the log as multipart/form-data with the file in a field named 'file'", "file")
    folder = settings.data_dir / "uploads"
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{uuid.uuid4().hex}.upload"
    state: dict[str, Any] = {"field": None, "file_name": None, "size": 0, "name": b"", "header": b"", "seen": False}
    headers: dict[bytes, bytes] = {}
    sink = target.open("wb")

    def on_header_field(data: bytes, start: int, end: int) -> None:
        state["header"] += data[start:end]

    def on_header_value(data: bytes, start: int, end: int) -> None:
        key = state["header"].lower()
        headers[key] = headers.get(key, b"") + data[start:end]

    def on_header_end() -> None:
        state["header"] = b""

    def on_headers_finished() -> None:
        _, params = parse_options_header(headers.get(b"content-disposition", b""))
        state["field"] = params.get(b"name", b"").decode("utf-8", "replace")
        if state["field"] == FILE_FIELD:
            state["seen"] = True
            state["file_name"] = params.get(b"filename", b"upload.log").decode("utf-8", "replace")
        headers.clear()

    def on_part_data(data: bytes, start: int, end: int) -> None:
        if state["field"] == FILE_FIELD:
            state["size"] += end - start
            if state["size"] > limit:
                raise _too_large(settings)
            sink.write(data[start:end])
        elif state["field"] == "name" and len(state["name"]) < 1024:
            state["name"] += data[start:end]

    parser = MultipartParser(
        boundary,
        {
            "on_header_field": on_header_field,
            "on_header_value": on_header_value,
            "on_header_end": on_header_end,
            "on_headers_finished": on_headers_finished,
            "on_part_data": on_part_data,
        },
    )
    try:
        async for chunk in request.stream():
            parser.write(chunk)
        parser.finalize()
    except BaseException:
        sink.close()
        target.unlink(missing_ok=True)
        raise
    sink.close()
    if not state["seen"]:
        target.unlink(missing_ok=True)
        raise UploadRejected("no file in the upload: send it in a multipart field named 'file'", "file")
    name = state["name"].decode("utf-8", "replace").strip() or None
    return Upload(target, str(state["file_name"]), int(state["size"]), name)


def check_text(path: Path, size: int) -> None:
    """Refuse empty, compressed and binary files with a message saying what they are."""
    if size == 0:
        raise UploadRejected("the file is empty: nothing to import", "file")
    with path.open("rb") as stream:
        head = stream.read(SNIFF_BYTES)
    for magic, what in _SIGNATURES:
        if head.startswith(magic):
            raise UploadRejected(f"the file is {what}", "file")
    if b"\x00" in head:
        raise UploadRejected("the file is binary (it contains NUL bytes), not a text log", "file")
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        decoder.decode(head, final=False)
    except UnicodeDecodeError as error:
        raise UploadRejected(
            f"the file is not UTF-8 text (undecodable byte at offset {error.start}): not a JuiceFS or strace log",
            "file",
        ) from error


def _lines(path: Path) -> Iterator[str]:
    with path.open(encoding="utf-8", errors="replace", newline="") as stream:
        yield from stream


def _role(trace_format: str, tid: int) -> Lane:
    if trace_format == juicefs_log.FORMAT:
        if tid == 0:
            return Lane(0, "juicefs background (pid 0)", process="juicefs")
        return Lane(tid, f"pid {tid}", pid=tid)
    return Lane(tid, f"thread {tid}")


def import_trace(session: Session, settings: Settings, upload: Upload, actor: User) -> dict[str, Any]:
    """Parse the spooled upload into a new "import" job's trace; returns what the API reports."""
    check_text(upload.path, upload.size)
    try:
        parser, lines = open_trace(_lines(upload.path))
    except UnknownTraceFormat as error:
        raise UploadRejected(str(error), "file") from error
    now = utcnow()
    job = Job(
        kind=JobKind.IMPORT,
        status=JobStatus.SUCCEEDED,
        phase=JobPhase.DONE,
        parameters={"file_name": upload.file_name, "format": parser.format, "name": upload.name},
        started_by=actor.username,
        phase_times={},
        created_at=now,
        started_at=now,
        bytes_total=upload.size,
        bytes_done=upload.size,
    )
    session.add(job)
    session.flush()
    start_trace_row(session, job.id, source=TraceSource.IMPORT, backend=parser.format)
    writer = TraceWriter(trace_dir(settings, job.id))
    writer.set_meta(backend=parser.format, format=parser.format, file_name=upload.file_name)
    tids: set[int] = set()
    try:
        batch: list[Operation] = []
        for line in lines:
            batch.extend(parser.feed(line))
            if len(batch) >= BATCH:
                tids.update(operation.tid for operation in batch)
                writer.add_operations(batch)
                batch = []
                writer.add_malformed(parser.malformed)  # drained as it goes: a file of garbage stays small
                parser.malformed.clear()
        parser.finish()
        tids.update(operation.tid for operation in batch)
        writer.add_operations(batch)
        writer.add_malformed(parser.malformed)
        for tid in sorted(tids):
            writer.set_lane(_role(parser.format, tid))
        summary = writer.close()
    except BaseException:
        writer.close(status="failed")
        raise
    job.finished_at = utcnow()
    store_summary(session, job.id, summary)
    record(
        session,
        AuditAction.TRACE_IMPORT,
        actor,
        object_type="job",
        object_id=job.id,
        detail=f"{upload.file_name} ({parser.format}, {upload.size} bytes, {summary.operations} operations)",
    )
    return {
        "job_id": job.id,
        "format": parser.format,
        "operations": summary.operations,
        "lanes": len(summary.lane_totals),
        "malformed_lines": summary.malformed_lines,
        "malformed": summary.malformed,
    }
