"""Drill schedules: cron in a time zone, due slots and overdue slots, DST included. Pure, table-driven."""

from datetime import UTC, datetime, timedelta

import pytest

from app.drills.schedule import (
    ScheduleError,
    describe,
    due_slot,
    next_slot,
    overdue_slot,
    parse_schedule,
    previous_slot,
)


def utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


@pytest.mark.parametrize(
    ("cron", "zone", "at", "previous", "following"),
    [
        # Exactly on a slot: that slot is the previous one, the next is a day later.
        ("0 2 * * *", "UTC", "2026-03-10T02:00:00", "2026-03-10T02:00:00", "2026-03-11T02:00:00"),
        ("0 2 * * *", "UTC", "2026-03-10T01:59:59", "2026-03-09T02:00:00", "2026-03-10T02:00:00"),
        # Paris is UTC+1 in winter, UTC+2 in summer: 02:30 local moves in UTC.
        ("30 2 * * *", "Europe/Paris", "2026-01-15T12:00:00", "2026-01-15T01:30:00", "2026-01-16T01:30:00"),
        ("30 2 * * *", "Europe/Paris", "2026-07-15T12:00:00", "2026-07-15T00:30:00", "2026-07-16T00:30:00"),
        # 29 March 2026: 02:30 does not exist in Paris; the drill runs at 03:00 (01:00 UTC) once.
        ("30 2 * * *", "Europe/Paris", "2026-03-29T12:00:00", "2026-03-29T01:00:00", "2026-03-30T00:30:00"),
        # 25 October 2026: 02:30 happens twice; the drill runs the first time only (00:30 UTC).
        ("30 2 * * *", "Europe/Paris", "2026-10-25T12:00:00", "2026-10-25T00:30:00", "2026-10-26T01:30:00"),
        ("0 9 * * 1-5", "America/New_York", "2026-06-13T12:00:00", "2026-06-12T13:00:00", "2026-06-15T13:00:00"),
        ("*/15 * * * *", "UTC", "2026-06-13T12:07:30", "2026-06-13T12:00:00", "2026-06-13T12:15:00"),
    ],
)
def test_slots_around_a_moment(cron: str, zone: str, at: str, previous: str, following: str) -> None:
    schedule = parse_schedule(cron, zone)
    assert previous_slot(schedule, utc(at)) == utc(previous)
    assert next_slot(schedule, utc(at)) == utc(following)


@pytest.mark.parametrize(
    ("cron", "zone", "field", "message"),
    [
        ("61 * * * *", "UTC", "drill_schedule", "'61 * * * *' is not a valid schedule: Bad minute"),
        ("0 2 * *", "UTC", "drill_schedule", "'0 2 * *' has 4 fields; a schedule has five"),
        ("0 0 2 * * *", "UTC", "drill_schedule", "has 6 fields"),
        ("0 0 30 2 *", "UTC", "drill_schedule", "Bad day-of-month"),
        ("every night", "UTC", "drill_schedule", "has 2 fields"),
        ("0 2 * * *", "Mars/Olympus", "drill_timezone", "unknown time zone 'Mars/Olympus'"),
        ("0 2 * * *", "../../etc/passwd", "drill_timezone", "unknown time zone"),
        ("0 2 * * *", "", "drill_timezone", "unknown time zone"),
    ],
)
def test_a_bad_schedule_names_its_field(cron: str, zone: str, field: str, message: str) -> None:
    with pytest.raises(ScheduleError) as caught:
        parse_schedule(cron, zone)
    assert caught.value.field == field
    assert message in str(caught.value)


def test_extra_spaces_are_normalised_and_the_schedule_reads_in_words() -> None:
    schedule = parse_schedule("  0   2 * *  * ", "Europe/Paris")
    assert schedule.cron == "0 2 * * *"
    assert describe(schedule) == "At 02:00 every day (Europe/Paris)"


DAILY = parse_schedule("0 2 * * *", "UTC")


@pytest.mark.parametrize(
    ("since", "last_scheduled", "now", "due"),
    [
        # The slot has come and has no drill yet.
        ("2026-03-01T00:00:00", None, "2026-03-10T02:00:05", "2026-03-10T02:00:00"),
        ("2026-03-01T00:00:00", "2026-03-09T02:00:00", "2026-03-10T02:00:05", "2026-03-10T02:00:00"),
        # It already has its drill.
        ("2026-03-01T00:00:00", "2026-03-10T02:00:00", "2026-03-10T09:00:00", None),
        # The schedule was set after today's slot: the first drill is tomorrow's.
        ("2026-03-10T08:00:00", None, "2026-03-10T09:00:00", None),
        ("2026-03-10T08:00:00", None, "2026-03-11T02:00:00", "2026-03-11T02:00:00"),
        # A scheduler down for three days runs the latest missed slot once, not the three.
        ("2026-03-01T00:00:00", "2026-03-06T02:00:00", "2026-03-09T12:00:00", "2026-03-09T02:00:00"),
    ],
)
def test_due_slot(since: str, last_scheduled: str | None, now: str, due: str | None) -> None:
    found = due_slot(
        DAILY, since=utc(since), last_scheduled=utc(last_scheduled) if last_scheduled else None, now=utc(now)
    )
    assert found == (utc(due) if due else None)


@pytest.mark.parametrize(
    ("since", "last_started", "now", "overdue"),
    [
        # Within the hour of grace: not overdue yet.
        ("2026-03-01T00:00:00", "2026-03-09T02:00:10", "2026-03-10T02:59:59", None),
        # The grace is over and today's drill has not started.
        ("2026-03-01T00:00:00", "2026-03-09T02:00:10", "2026-03-10T03:00:00", "2026-03-10T02:00:00"),
        # It started (late, but within the grace, or even after it): not overdue.
        ("2026-03-01T00:00:00", "2026-03-10T02:40:00", "2026-03-10T09:00:00", None),
        ("2026-03-01T00:00:00", "2026-03-10T05:00:00", "2026-03-10T09:00:00", None),
        # Never any drill: overdue since the latest slot past its grace.
        ("2026-03-01T00:00:00", None, "2026-03-10T09:00:00", "2026-03-10T02:00:00"),
        # The schedule is newer than that slot: nothing was due.
        ("2026-03-10T08:00:00", None, "2026-03-10T09:00:00", None),
        # A run started before the slot does not count for it.
        ("2026-03-01T00:00:00", "2026-03-10T01:59:00", "2026-03-10T03:30:00", "2026-03-10T02:00:00"),
    ],
)
def test_overdue_slot(since: str, last_started: str | None, now: str, overdue: str | None) -> None:
    found = overdue_slot(
        DAILY,
        since=utc(since),
        last_started=utc(last_started) if last_started else None,
        now=utc(now),
        grace=timedelta(hours=1),
    )
    assert found == (utc(overdue) if overdue else None)
