"""The trace API through HTTP, on the real job store: what the browser and a DBA see."""

import gzip
import json
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from app.core.config import Settings, get_settings
from app.core.db import session_scope
from app.main import app
from app.models import Job, JobStatus
from app.traces.records import CounterSample, Lane, Span
from app.traces.service import open_job_trace
from tests.traces.conftest import make_job
from tests.traces.helpers import op

API = "/api/v1"
OLD = "2021.01.15 08:26:11.003330 [uid:0,gid:0,pid:4403] "  # JuiceFS before v1.2; ends at 1610699171003330 us
NEW = "2024.05.01 10:00:00.000100 [uid:0,gid:0,pid:77] "  # JuiceFS v1.2+; ends at 1714557600000100 us


def message(response: Any) -> str:
    return " | ".join(str(item["msg"]) for item in response.json()["detail"])


def fields(response: Any) -> list[str]:
    return [str(item["loc"][-1]) for item in response.json()["detail"]]


@pytest.fixture
def traced_job() -> int:
    job_id = make_job()
    writer = open_job_trace(job_id, backend="strace")
    writer.set_meta(aio_mode="aio", visibility="data page IO visible", fallback_reason="bpftrace not found")
    writer.set_lane(Lane(11, "connection 5", "thread/sql/one_connection", "mariadbd", 10, 5))
    writer.add_operations(
        [op(1_000 + i * 100, 40, tid=11 + i % 2, kind="read" if i % 2 else "write") for i in range(100)]
    )
    writer.add_spans([Span(11, 1_000, 5_000, "cpu", "running")])
    writer.add_counters([CounterSample("cpu.iowait", 1_000 + i * 100, float(i), "%") for i in range(100)])
    writer.close()
    return job_id


def test_trace_summary(client: TestClient, traced_job: int) -> None:
    body = client.get(f"{API}/jobs/{traced_job}/trace").json()
    assert body["source"] == "capture" and body["backend"] == "strace" and body["status"] == "complete"
    assert (body["aio_mode"], body["visibility"], body["fallback_reason"]) == (
        "aio",
        "data page IO visible",
        "bpftrace not found",
    )
    assert body["operations"] == 100 and body["malformed_lines"] == 0
    assert (body["t_min_us"], body["t_max_us"]) == (1_000, 1_000 + 99 * 100 + 40)
    assert body["kinds"] == {"read": 50, "write": 50, "fsync": 0, "open": 0, "close": 0, "other": 0}
    assert body["lanes"] == [
        {"tid": 11, "role": "connection 5", "name": "thread/sql/one_connection", "process": "mariadbd", "pid": 10,
         "connection_id": 5, "operations": 50, "busy_us": 2000},
        {"tid": 12, "role": "thread 12", "name": "", "process": "", "pid": None, "connection_id": None,
         "operations": 50, "busy_us": 2000},
    ]  # fmt: skip
    assert body["counters"] == [{"track": "cpu.iowait", "unit": "%"}]


def test_no_trace_is_a_clear_404(client: TestClient) -> None:
    job_id = make_job(JobStatus.SUCCEEDED)
    for path in ("trace", "trace/window", "trace/stats", "trace/operations", "trace/perfetto"):
        response = client.get(f"{API}/jobs/{job_id}/{path}")
        assert response.status_code == 404
        assert message(response) == (
            f"job {job_id} has no IO trace: it was run without capture, or it has not started recording yet"
        )
    response = client.get(f"{API}/jobs/987654/trace")
    assert response.status_code == 404 and message(response) == "no job with id 987654"


def test_window_stats_and_operations(client: TestClient, traced_job: int) -> None:
    window = client.get(f"{API}/jobs/{traced_job}/trace/window", params={"width_px": 10}).json()
    assert window["t0_us"] == 1_000 and window["bucket_us"] == 994  # ceil((10_940 - 1_000) / 10)
    lanes = {lane["tid"]: lane for lane in window["lanes"]}
    assert lanes[11]["detail"] == "buckets" and sum(b["count"] for b in lanes[11]["buckets"]) == 50
    assert lanes[11]["spans"] == [{"start_us": 1_000, "duration_us": 5_000, "track": "cpu", "label": "running"}]
    assert window["counters"][0]["track"] == "cpu.iowait" and len(window["counters"][0]["points"]) <= 20
    raw = client.get(
        f"{API}/jobs/{traced_job}/trace/window",
        params={"t0_us": 1_000, "t1_us": 2_000, "width_px": 100, "kinds": "read", "tids": "12"},
    ).json()
    assert [lane["tid"] for lane in raw["lanes"]] == [12]
    assert [o["start_us"] for o in raw["lanes"][0]["operations"]] == [1_100, 1_300, 1_500, 1_700, 1_900]
    columns = client.get(f"{API}/jobs/{traced_job}/trace/window", params={"width_px": 10, "layout": "columns"}).json()
    assert columns["lanes"][0]["buckets"]["count"] == [b["count"] for b in lanes[11]["buckets"]]
    stats = client.get(f"{API}/jobs/{traced_job}/trace/stats").json()
    assert {k["kind"]: k["count"] for k in stats["by_kind"]} == {"read": 50, "write": 50}
    assert stats["threads"][0]["cpu_pct"] is not None
    page = client.get(f"{API}/jobs/{traced_job}/trace/operations", params={"limit": 2, "offset": 1, "kinds": "read"})
    assert page.json()["total"] == 50
    assert [(i["tid"], i["start_us"]) for i in page.json()["items"]] == [(12, 1_300), (12, 1_500)]


BAD_QUERIES = [
    ("t1 before t0", "window", {"t0_us": 5_000, "t1_us": 4_000}, "t1_us",
     "t1_us (4000) must be greater than t0_us (5000)"),
    ("empty window", "stats", {"t0_us": 5_000, "t1_us": 5_000}, "t1_us",
     "t1_us (5000) must be greater than t0_us (5000)"),
    ("no pixels", "window", {"width_px": 0}, "width_px", "Input should be greater than or equal to 1"),
    ("too many pixels", "window", {"width_px": 10_001}, "width_px", "Input should be less than or equal to 10000"),
    ("unknown kind", "window", {"kinds": "read,sync"}, "kinds",
     "unknown kind sync; choose from read, write, fsync, open, close, other"),
    ("unknown kind in stats", "stats", {"kinds": "bogus"}, "kinds",
     "unknown kind bogus; choose from read, write, fsync, open, close, other"),
    ("tids not numbers", "operations", {"tids": "1,x"}, "tids", "tids must be comma-separated integers"),
    ("page too big", "operations", {"limit": 5_000}, "limit", "Input should be less than or equal to 1000"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("path", "params", "field", "text"), [c[1:] for c in BAD_QUERIES], ids=[c[0] for c in BAD_QUERIES]
)
def test_bad_queries_name_their_field(
    client: TestClient, traced_job: int, path: str, params: dict[str, Any], field: str, text: str
) -> None:
    response = client.get(f"{API}/jobs/{traced_job}/trace/{path}", params=params)
    assert response.status_code == 422
    assert fields(response) == [field] and message(response) == text


def test_recording_trace_grows_and_a_dead_worker_reads_failed(client: TestClient) -> None:
    job_id = make_job(JobStatus.RUNNING)
    writer = open_job_trace(job_id, backend="ebpf", flush_every_s=0.1)
    writer.add_operations([op(i * 10) for i in range(10)])
    writer.flush()
    body = client.get(f"{API}/jobs/{job_id}/trace").json()
    assert body["status"] == "recording" and body["operations"] == 10
    window = client.get(f"{API}/jobs/{job_id}/trace/window", params={"t0_us": 0, "t1_us": 2_000})
    assert len(window.json()["lanes"][0]["operations"]) == 10
    writer.add_operations([op(1_000 + i * 10) for i in range(5)])
    writer.flush()
    assert client.get(f"{API}/jobs/{job_id}/trace/stats").json()["by_kind"][0]["count"] == 15
    window = client.get(f"{API}/jobs/{job_id}/trace/window", params={"t0_us": 0, "t1_us": 2_000})
    assert len(window.json()["lanes"][0]["operations"]) == 15, "the same question about a grown trace"
    # The worker dies here (the writer is never closed) and the sweep fails the job.
    with session_scope() as session:
        job = session.get(Job, job_id)
        assert job is not None
        job.status = JobStatus.FAILED
    body = client.get(f"{API}/jobs/{job_id}/trace").json()
    assert body["status"] == "failed" and body["operations"] == 15
    assert client.get(f"{API}/jobs/{job_id}/trace/window").status_code == 200


def test_perfetto_download(client: TestClient, traced_job: int) -> None:
    response = client.get(f"{API}/jobs/{traced_job}/trace/perfetto")
    assert response.status_code == 200
    assert response.headers["content-disposition"] == f'attachment; filename="job-{traced_job}-trace.json"'
    events = json.loads(response.text)["traceEvents"]
    assert sum(1 for e in events if e["ph"] == "X" and e.get("cat") in ("read", "write")) == 100


# --- import --------------------------------------------------------------------------------------


def upload(client: TestClient, content: bytes, file_name: str = "access.log", **form: str) -> Any:
    return client.post(f"{API}/traces/import", files={"file": (file_name, content, "text/plain")}, data=form)


def test_import_juicefs_both_generations(client: TestClient) -> None:
    log = "\n".join(
        [
            OLD + "write (17669,8666,4993160): OK <0.000010>",
            OLD + "read (17669,4096,0): OK (100) <0.000010>",
            "2021.01.15 08:26:11.003330 [uid:0,gid:0,pid:0] write (5,4096,0): OK <0.000020>",
            NEW + "write (5,16384,49152,12) - OK <0.000050>",
            NEW + "fsync (17669,0) - input/output error <1.500000>",
        ]
    )
    response = upload(client, log.encode(), "juicefs-access.log", name="prod restore")
    assert response.status_code == 201, response.text
    body = response.json()
    assert {k: body[k] for k in ("format", "operations", "lanes", "malformed_lines", "malformed")} == {
        "format": "juicefs",
        "operations": 5,
        "lanes": 3,
        "malformed_lines": 0,
        "malformed": [],
    }
    job = client.get(f"{API}/jobs/{body['job_id']}").json()
    assert (job["kind"], job["status"]) == ("import", "succeeded")
    assert job["parameters"]["file_name"] == "juicefs-access.log" and job["parameters"]["format"] == "juicefs"
    assert job["parameters"]["name"] == "prod restore"
    trace = client.get(f"{API}/jobs/{body['job_id']}/trace").json()
    assert trace["source"] == "import" and trace["backend"] == "juicefs" and trace["status"] == "complete"
    assert [(lane["tid"], lane["role"]) for lane in trace["lanes"]] == [
        (0, "juicefs background (pid 0)"),
        (77, "pid 77"),
        (4403, "pid 4403"),
    ]
    # The log's time is when the call ended: the 1.5 s fsync started 1.5 s before its line's time.
    operations = client.get(f"{API}/jobs/{body['job_id']}/trace/operations", params={"kinds": "fsync"}).json()
    assert operations["items"][0]["start_us"] == 1_714_557_600_000_100 - 1_500_000
    assert operations["items"][0]["result"] == "EIO"


def test_import_strace_with_malformed_lines_reported_by_number(client: TestClient) -> None:
    lines = [
        '[pid 12345] 12:00:00.123456 pwrite64(12</var/lib/mysql/ibdata1>, "\\0"..., 16384, 49152) = 16384 <0.000031>',
        "[pid 12345] 12:00:00.200000 this is not a call",
        '[pid 12346] 12:00:00.300000 pread64(13</var/lib/mysql/t.ibd>, ""..., 16384, 0) = 16384',
        "[pid 12346] 12:00:00.400000 fdatasync(13</var/lib/mysql/t.ibd>) = 0 <0.000400>",
    ]
    lines += [f"[pid 12345] 12:00:01.{i:06d} garbage {i}" for i in range(150)]
    body = upload(client, "\n".join(lines).encode(), "restore.strace").json()
    assert body["format"] == "strace" and body["operations"] == 2 and body["lanes"] == 2
    assert body["malformed_lines"] == 152 and len(body["malformed"]) == 100
    assert body["malformed"][0] == {
        "line_no": 2,
        "reason": "missing duration '<seconds>' at the end (was strace run with -T?)",
        "text": "[pid 12345] 12:00:00.200000 this is not a call",
    }
    assert body["malformed"][1]["line_no"] == 3 and "missing duration" in body["malformed"][1]["reason"]
    assert [bad["line_no"] for bad in body["malformed"][2:4]] == [5, 6]
    trace = client.get(f"{API}/jobs/{body['job_id']}/trace").json()
    assert trace["malformed_lines"] == 152 and trace["malformed"][0]["line_no"] == 2
    assert [(lane["tid"], lane["role"]) for lane in trace["lanes"]] == [
        (12345, "thread 12345"),
        (12346, "thread 12346"),
    ]


REJECTED = [
    ("empty", b"", "the file is empty: nothing to import"),
    ("gzip", gzip.compress(b"hello"),
     "the file is a gzip-compressed file: decompress it first (gunzip) and upload the text log"),
    ("zstd", b"\x28\xb5\x2f\xfd" + b"x" * 20,
     "the file is a zstd-compressed file: decompress it first (zstd -d) and upload the text log"),
    ("binary", b"ELF\x00\x01\x02" * 10, "the file is binary (it contains NUL bytes), not a text log"),
    ("latin-1", "café au lait\n".encode("latin-1") * 3,
     "the file is not UTF-8 text (undecodable byte at offset 3): not a JuiceFS or strace log"),
    ("unknown text", b"hello\nworld\n",
     "this file is neither a JuiceFS access log nor an strace -f -tt -T log: the first lines do not parse as either; "
     "see the import page for the expected formats"),
]  # fmt: skip


@pytest.mark.parametrize(("content", "text"), [c[1:] for c in REJECTED], ids=[c[0] for c in REJECTED])
def test_import_rejects_what_it_cannot_read(client: TestClient, content: bytes, text: str) -> None:
    response = upload(client, content)
    assert response.status_code == 400
    assert message(response) == text and fields(response) == ["file"]
    with session_scope() as session:
        assert session.scalars(select(Job)).all() == [], "a rejected upload leaves no job behind"


@pytest.fixture
def small_upload_limit() -> Iterator[None]:
    app.dependency_overrides[get_settings] = lambda: Settings(trace_upload_max_bytes=1000)
    yield
    app.dependency_overrides.clear()


def test_import_too_large_is_413_saying_the_limit(client: TestClient, small_upload_limit: None) -> None:
    line = OLD + "write (17669,8666,4993160): OK <0.000010>\n"
    response = upload(client, (line * 30).encode())
    assert response.status_code == 413
    assert message(response) == (
        "the upload is larger than the limit of 1000 bytes (0 MiB); split the log or raise "
        "RESTORESCOPE_TRACE_UPLOAD_MAX_BYTES"
    )
    assert upload(client, (line * 5).encode()).status_code == 201


def test_import_without_a_file_field(client: TestClient) -> None:
    response = client.post(f"{API}/traces/import", files={"log": ("a.log", b"x", "text/plain")})
    assert response.status_code == 400 and message(response).startswith("no file in the upload")
