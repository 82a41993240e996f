from typing import Annotated, Any, Literal

from fastapi import APIRouter, Query, Request, status
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response, StreamingResponse
from pydantic_core import to_json
from starlette.concurrency import run_in_threadpool

from app.api.deps import OperatorUser, SessionDep, SettingsDep
from app.traces import importer, perfetto, service
from app.traces.schemas import OperationsPublic, StatsPublic, TraceImportPublic, TracePublic, WindowPublic
from app.traces.store import KINDS
from app.traces.window import Filters

router = APIRouter(tags=["traces"])

T0 = Annotated[int | None, Query(description="Window start, us since the epoch; default: the trace's start")]
T1 = Annotated[int | None, Query(description="Window end (exclusive); default: the trace's end")]
Tids = Annotated[str | None, Query(description="Comma-separated thread ids", examples=["4051,4052"])]
Kinds = Annotated[str | None, Query(description=f"Comma-separated kinds: {', '.join(KINDS)}")]
Roles = Annotated[str | None, Query(description="Comma-separated lane roles")]
PathPart = Annotated[str | None, Query(description="Only operations whose path contains this text")]


def _invalid(field: str, message: str, value: object) -> RequestValidationError:
    return RequestValidationError([{"loc": ("query", field), "msg": message, "type": "value_error", "input": value}])


def _csv(text: str | None) -> list[str] | None:
    if text is None or not text.strip():
        return None
    return [item.strip() for item in text.split(",") if item.strip()]


def _filters(tids: str | None, kinds: str | None, roles: str | None = None, path: str | None = None) -> Filters:
    tid_set = None
    if (items := _csv(tids)) is not None:
        try:
            tid_set = frozenset(int(item) for item in items)
        except ValueError as error:
            raise _invalid("tids", "tids must be comma-separated integers", tids) from error
    kind_set = None
    if (items := _csv(kinds)) is not None:
        unknown = sorted(set(items) - set(KINDS))
        if unknown:
            raise _invalid("kinds", f"unknown kind {', '.join(unknown)}; choose from {', '.join(KINDS)}", kinds)
        kind_set = frozenset(items)
    role_set = frozenset(items) if (items := _csv(roles)) is not None else None
    return Filters(tids=tid_set, kinds=kind_set, roles=role_set, path=path or None)


def _check_window(t0_us: int | None, t1_us: int | None) -> None:
    if t0_us is not None and t1_us is not None and t1_us <= t0_us:
        raise _invalid("t1_us", f"t1_us ({t1_us}) must be greater than t0_us ({t0_us})", t1_us)


def _json(value: Any) -> Response:
    # A window can hold a hundred thousand items: encoding the plain result in pydantic-core's Rust
    # encoder is several times faster than validating it into models first; the models document the shape.
    return Response(to_json(value), media_type="application/json")


@router.get("/jobs/{job_id}/trace", operation_id="traces-read_trace")
def read_trace(session: SessionDep, settings: SettingsDep, job_id: int) -> TracePublic:
    """A job's IO trace: how it was captured, its counts, lanes and counter tracks."""
    return TracePublic.model_validate(service.read_trace(session, settings, job_id))


@router.get("/jobs/{job_id}/trace/window", operation_id="traces-read_window", response_model=WindowPublic)
def read_window(
    session: SessionDep,
    settings: SettingsDep,
    job_id: int,
    t0_us: T0 = None,
    t1_us: T1 = None,
    width_px: Annotated[int, Query(ge=1, le=10_000, description="Pixels across the window")] = 1600,
    tids: Tids = None,
    kinds: Kinds = None,
    roles: Roles = None,
    path: PathPart = None,
    layout: Annotated[
        Literal["rows", "columns"],
        Query(
            description="columns: each lane's buckets, operations and spans as {field: [values]} instead of a "
            "list of objects; the same data, several times cheaper to build, send and parse when zoomed out"
        ),
    ] = "rows",
) -> Response:
    """What the timeline draws for a window: per lane, buckets or raw operations, spans; counters."""
    _check_window(t0_us, t1_us)
    filters = _filters(tids, kinds, roles, path)
    encoded = service.read_window(
        session,
        settings,
        job_id,
        t0_us=t0_us,
        t1_us=t1_us,
        width_px=width_px,
        filters=filters,
        columns=layout == "columns",
    )
    return Response(encoded, media_type="application/json")


@router.get("/jobs/{job_id}/trace/stats", operation_id="traces-read_stats", response_model=StatsPublic)
def read_stats(
    session: SessionDep,
    settings: SettingsDep,
    job_id: int,
    t0_us: T0 = None,
    t1_us: T1 = None,
    tids: Tids = None,
    kinds: Kinds = None,
    path: PathPart = None,
) -> Response:
    """Counts, throughput, latency percentiles and histograms, busy threads, files, access pattern."""
    _check_window(t0_us, t1_us)
    filters = _filters(tids, kinds, path=path)
    return _json(service.read_stats(session, settings, job_id, t0_us=t0_us, t1_us=t1_us, filters=filters))


@router.get("/jobs/{job_id}/trace/operations", operation_id="traces-read_operations", response_model=OperationsPublic)
def read_operations(
    session: SessionDep,
    settings: SettingsDep,
    job_id: int,
    t0_us: T0 = None,
    t1_us: T1 = None,
    tids: Tids = None,
    kinds: Kinds = None,
    path: PathPart = None,
    offset: Annotated[int, Query(ge=0)] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> Response:
    """A page of raw operations by start time, filtered."""
    _check_window(t0_us, t1_us)
    filters = _filters(tids, kinds, path=path)
    return _json(
        service.read_operations(
            session, settings, job_id, t0_us=t0_us, t1_us=t1_us, filters=filters, offset=offset, limit=limit
        )
    )


@router.get(
    "/jobs/{job_id}/trace/perfetto",
    operation_id="traces-export_perfetto",
    response_class=StreamingResponse,
    responses={200: {"content": {"application/json": {}}, "description": "Chrome Trace Event JSON"}},
)
def export_perfetto(session: SessionDep, settings: SettingsDep, job_id: int) -> StreamingResponse:
    """The trace as Chrome Trace Event JSON, for ui.perfetto.dev or chrome://tracing."""
    data = service.open_data(session, settings, job_id)
    return StreamingResponse(
        perfetto.stream_events(data, job_id),
        media_type="application/json",
        headers={"Content-Disposition": f'attachment; filename="job-{job_id}-trace.json"'},
    )


_IMPORT_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "required": ["file"],
                    "properties": {
                        "file": {
                            "type": "string",
                            "format": "binary",
                            "description": "A JuiceFS access log or strace -f -tt -T output (text)",
                        },
                        "name": {"type": "string", "description": "A name for the import"},
                    },
                }
            }
        },
    }
}


@router.post(
    "/traces/import",
    status_code=status.HTTP_201_CREATED,
    operation_id="traces-import_trace",
    openapi_extra=_IMPORT_BODY,
)
async def import_trace(
    request: Request, session: SessionDep, settings: SettingsDep, user: OperatorUser
) -> TraceImportPublic:
    """Upload a trace log (multipart field "file"): it becomes an "import" job with a trace like a captured one
    (operator)."""
    upload = await importer.receive_upload(request, settings)
    try:
        result = await run_in_threadpool(importer.import_trace, session, settings, upload, user)
    finally:
        upload.path.unlink(missing_ok=True)
    return TraceImportPublic.model_validate(result)
