"""The advisor for the API: a run's advice, a re-run with a suggestion's change, two runs compared, and the
score each suggestion keeps. Services flush; the caller's unit of work commits."""

from __future__ import annotations

import statistics
import threading
from collections import OrderedDict
from dataclasses import asdict
from typing import Any, Final

from pydantic import ValidationError
from sqlalchemy import select
from sqlalchemy.orm import Session

from app.advisor import compare, gather, rules, summary
from app.advisor.changes import ChangeNotApplicable, apply_settings, request_of
from app.advisor.evidence import Evidence
from app.advisor.suggestion import Suggestion
from app.core.config import Settings
from app.core.errors import Conflict, InvalidRequest, NotFound
from app.jobs import service as jobs
from app.jobs.log import add_log
from app.jobs.progress import to_public
from app.jobs.schemas import RestoreJobCreate
from app.models import AppliedSuggestion, Job, JobKind, JobStatus, Trace, User
from app.models.base import utcnow
from app.traces import stats
from app.traces.reader import open_trace_data
from app.traces.store import trace_dir
from app.traces.window import Filters

# A re-run at least this much faster (or slower) than its parent counts as helped (or slower); in between the
# change made no difference one run on a shared machine can show.
HELPED_SPEEDUP = 1.05
SLOWER_SPEEDUP = 0.95
RECENT_OUTCOMES = 10

# --- analysis, cached per state of the run ----------------------------------------------------------

_CACHE_ENTRIES: Final = 32
_cache: OrderedDict[tuple[Any, ...], tuple[Evidence | None, list[Suggestion]]] = OrderedDict()
_cache_lock = threading.Lock()


def _cache_key(session: Session, job: Job) -> tuple[Any, ...]:
    trace = session.scalar(select(Trace).where(Trace.job_id == job.id))
    # created_at too: SQLite hands a deleted job's id out again.
    return (
        job.id,
        job.created_at,
        job.status,
        job.finished_at,
        trace.status if trace else None,
        trace.finished_at if trace else None,
        trace.operations if trace else None,
    )


def analyse(session: Session, settings: Settings, job: Job) -> tuple[Evidence | None, list[Suggestion]]:
    """The run's evidence and every suggestion that fires, most to gain first (cached while the run is unchanged)."""
    key = _cache_key(session, job)
    with _cache_lock:
        if key in _cache:
            _cache.move_to_end(key)
            return _cache[key]
    evidence = gather.gather(session, settings, job)
    found = rules.advise(evidence) if evidence is not None else []
    with _cache_lock:
        _cache[key] = (evidence, found)
        while len(_cache) > _CACHE_ENTRIES:
            _cache.popitem(last=False)
    return evidence, found


# --- the score -------------------------------------------------------------------------------------


def _verdict(applied: AppliedSuggestion, child: Job | None) -> str:
    if child is None or child.status in (JobStatus.QUEUED, JobStatus.RUNNING):
        return "measuring"
    if child.status != JobStatus.SUCCEEDED or applied.speedup is None:
        return "failed"
    if applied.speedup >= HELPED_SPEEDUP:
        return "helped"
    if applied.speedup <= SLOWER_SPEEDUP:
        return "slower"
    return "no_effect"


def _outcome(applied: AppliedSuggestion, child: Job | None) -> dict[str, Any]:
    return {
        "rule": applied.rule,
        "title": str(applied.suggestion.get("title", applied.rule)),
        "parent_job_id": applied.parent_job_id,
        "child_job_id": applied.child_job_id,
        "child_status": child.status if child else "deleted",
        "phase": applied.phase,
        "expected_speedup": applied.expected_speedup,
        "parent_seconds": applied.parent_seconds,
        "child_seconds": applied.child_seconds,
        "speedup": applied.speedup,
        "verdict": _verdict(applied, child),
        "created_at": applied.created_at,
    }


def record_outcome(session: Session, job_id: int) -> AppliedSuggestion | None:
    """Called when a job ends: if it re-ran a suggestion, store the speedup it measured over its parent."""
    applied = session.scalar(select(AppliedSuggestion).where(AppliedSuggestion.child_job_id == job_id))
    if applied is None:
        return None
    child = session.get(Job, job_id)
    applied.measured_at = utcnow()
    if child is not None and child.status == JobStatus.SUCCEEDED:
        applied.child_seconds = gather.phase_seconds(child)
        if applied.parent_seconds and applied.child_seconds:
            applied.speedup = round(applied.parent_seconds / applied.child_seconds, 3)
    session.flush()
    return applied


def _outcomes(session: Session, **where: Any) -> list[dict[str, Any]]:
    query = select(AppliedSuggestion)
    for column, value in where.items():
        query = query.where(getattr(AppliedSuggestion, column) == value)
    rows = list(session.scalars(query.order_by(AppliedSuggestion.id.desc())))
    children = {job.id: job for job in session.scalars(select(Job).where(Job.id.in_([r.child_job_id for r in rows])))}
    return [_outcome(row, children.get(row.child_job_id)) for row in rows]


def _record(outcomes: list[dict[str, Any]]) -> dict[str, Any]:
    measured = [o["speedup"] for o in outcomes if o["speedup"] is not None]
    return {
        "applied": len(outcomes),
        "measured": len(measured),
        "helped": sum(1 for speedup in measured if speedup >= HELPED_SPEEDUP),
        "median_speedup": round(statistics.median(measured), 3) if measured else None,
        "recent": outcomes[:RECENT_OUTCOMES],
    }


# --- advice ----------------------------------------------------------------------------------------


def _suggestion_public(
    suggestion: Suggestion, reruns: list[dict[str, Any]], record: list[dict[str, Any]]
) -> dict[str, Any]:
    return {
        "rule": suggestion.rule,
        "title": suggestion.title,
        "seen": suggestion.seen,
        "numbers": [{"label": label, "value": value} for label, value in suggestion.numbers],
        "where": {
            "lanes": list(suggestion.where.lanes),
            "ranges": [{"t0_us": r.t0_us, "t1_us": r.t1_us} for r in suggestion.where.ranges],
        },
        "change": {
            "settings": [asdict(s) for s in suggestion.change.settings],
            "rerun": suggestion.change.rerun,
            "note": suggestion.change.note,
        },
        "expected": suggestion.expected,
        "expected_gain": round(suggestion.expected_gain, 4),
        "expected_speedup": round(suggestion.expected_speedup, 3),
        "caveat": suggestion.caveat,
        "minor": suggestion.expected_gain < rules.MIN_GAIN,
        "reruns": [o for o in reruns if o["rule"] == suggestion.rule],
        "record": _record([o for o in record if o["rule"] == suggestion.rule]),
    }


def _unavailable(job: Job, state: str, note: str) -> dict[str, Any]:
    return {
        "job_id": job.id,
        "state": state,
        "note": note,
        "phase": None,
        "phase_s": None,
        "t0_us": None,
        "t1_us": None,
        "headline": None,
        "notes": [],
        "suggestions": [],
        "rules_checked": 0,
        "applied_from": None,
    }


def read_advice(session: Session, settings: Settings, job_id: int) -> dict[str, Any]:
    job = jobs.get_job(session, job_id)
    applied_from = next(iter(_outcomes(session, child_job_id=job.id)), None)
    if job.kind == JobKind.BACKUP:
        return _unavailable(job, "unavailable", "The advisor reads restores, prepares and imported traces.")
    if not JobStatus(job.status).is_final:
        pending = _unavailable(job, "pending", "The advisor reads the run once it has ended.")
        return {**pending, "applied_from": applied_from}
    evidence, found = analyse(session, settings, job)
    if evidence is None:
        note = "The run ended before its restore (or prepare) began: there is nothing to read."
        return {**_unavailable(job, "unavailable", note), "applied_from": applied_from}
    reruns = _outcomes(session, parent_job_id=job.id)
    rule_ids = sorted({s.rule for s in found})
    record = [o for rule in rule_ids for o in _outcomes(session, rule=rule)]
    return {
        "job_id": job.id,
        "state": "ready",
        "note": None,
        "phase": evidence.phase,
        "phase_s": round(evidence.seconds, 3),
        "t0_us": evidence.t0_us,
        "t1_us": evidence.t1_us,
        "headline": summary.headline(evidence),
        "notes": summary.notes(evidence),
        "suggestions": [_suggestion_public(s, reruns, record) for s in found],
        "rules_checked": len(rules.RULES),
        "applied_from": applied_from,
    }


# --- re-run ----------------------------------------------------------------------------------------


def rerun_with_suggestion(session: Session, settings: Settings, job_id: int, rule: str, actor: User | None) -> Job:
    """Queue a child of the job with the suggestion's change, and keep the suggestion to score it later.

    `actor` launches the child (it is audited as their launch); None for a re-run the app starts itself."""
    parent = jobs.get_job(session, job_id)
    if parent.kind != JobKind.RESTORE:
        raise Conflict(f"job {job_id} is a {parent.kind} job: only restores can be re-run with a change")
    if not JobStatus(parent.status).is_final:
        raise Conflict(f"job {job_id} is still {parent.status}: its advice comes when it has ended")
    _evidence, found = analyse(session, settings, parent)
    suggestion = next((s for s in found if s.rule == rule), None)
    if suggestion is None:
        known = ", ".join(s.rule for s in found) or "none"
        raise NotFound(f"job {job_id} has no suggestion '{rule}' (its suggestions: {known})")
    if not suggestion.change.rerun:
        raise Conflict(suggestion.change.note or f"a re-run of job {job_id} cannot apply '{rule}'")
    try:
        request = request_of(parent.parameters)
        request = apply_settings(request, suggestion.change.settings)
        data = RestoreJobCreate.model_validate(request)
    except ChangeNotApplicable as error:
        raise Conflict(str(error)) from error
    except ValidationError as error:
        raise InvalidRequest(f"the changed parameters are not a valid restore: {error.errors()[0]['msg']}") from error
    child = jobs.create_restore_job(session, data, settings, actor)
    child.parent_id = parent.id
    public = _suggestion_public(suggestion, [], [])
    session.add(
        AppliedSuggestion(
            parent_job_id=parent.id,
            child_job_id=child.id,
            rule=suggestion.rule,
            suggestion={key: public[key] for key in ("title", "seen", "numbers", "change", "expected", "caveat")},
            expected_speedup=round(suggestion.expected_speedup, 3),
            phase=gather.main_phase(parent),
            parent_seconds=gather.phase_seconds(parent),
        )
    )
    changes = ", ".join(f"{s.option} {s.previous} -> {s.value}" for s in suggestion.change.settings)
    add_log(
        session, child.id, f"re-run of job {parent.id} with the advisor's suggestion '{suggestion.title}': {changes}"
    )
    session.flush()
    return child


# --- comparison ------------------------------------------------------------------------------------


def _side(session: Session, settings: Settings, job: Job) -> tuple[dict[str, Any], dict[str, Any] | None]:
    window = gather.phase_window(job, session.scalar(select(Trace).where(Trace.job_id == job.id)))
    phase_s = (window[1] - window[0]) / 1e6 if window else None
    trace_stats = None
    data = open_trace_data(trace_dir(settings, job.id))
    if data is not None and window is not None and data.summary.operations > 0:
        trace_stats = stats.read_stats(data, t0=window[0], t1=window[1], filters=Filters())
    side = {
        "job": to_public(job, utcnow()),
        "phase": gather.main_phase(job),
        "phase_s": round(phase_s, 3) if phase_s else None,
        "t0_us": window[0] if window else None,
        "t1_us": window[1] if window else None,
        "mb_per_s": round(job.bytes_total / 1e6 / phase_s, 3) if phase_s and job.bytes_total else None,
        "rows_per_s": round(job.rows_done / phase_s, 1) if phase_s and job.rows_done else None,
        "has_trace": trace_stats is not None,
    }
    return side, trace_stats


def compare_runs(session: Session, settings: Settings, a_id: int, b_id: int) -> dict[str, Any]:
    a, b = jobs.get_job(session, a_id), jobs.get_job(session, b_id)
    for job in (a, b):
        if job.kind == JobKind.BACKUP:
            raise InvalidRequest(f"job {job.id} is a backup: compare restores, prepares or imported traces")
    side_a, stats_a = _side(session, settings, a)
    side_b, stats_b = _side(session, settings, b)
    applied = next(
        (o for o in _outcomes(session, child_job_id=b.id) if o["parent_job_id"] == a.id),
        None,
    )
    return {
        "a": side_a,
        "b": side_b,
        "speedup": round(side_a["phase_s"] / side_b["phase_s"], 3) if side_a["phase_s"] and side_b["phase_s"] else None,
        "settings": compare.setting_differences(
            compare.flatten_settings(a.parameters, a.run_facts or {}),
            compare.flatten_settings(b.parameters, b.run_facts or {}),
        ),
        "kinds": compare.compare_rows(
            stats_a["by_kind"] if stats_a else [], stats_b["by_kind"] if stats_b else [], "kind"
        ),
        "ops": compare.compare_rows(stats_a["by_op"] if stats_a else [], stats_b["by_op"] if stats_b else [], "op"),
        "applied": applied,
    }
