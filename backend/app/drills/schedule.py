"""When a drill is due, and when one is overdue: pure functions of a cron expression read in a time zone.

A schedule is a five-field cron expression (minute hour day-of-month month day-of-week, as in crontab) read in
an IANA time zone, so "0 2 * * *" in Europe/Paris is 02:00 Paris time winter and summer. Across a DST change a
time that does not exist runs at the first minute after the gap, and a time that happens twice runs once, the
first time (as Debian's cron does; cronsim implements it).
"""

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError


class ScheduleError(ValueError):
    """The schedule cannot be used; the message says which part is wrong."""

    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class Schedule:
    cron: str
    zone: ZoneInfo

    def iterate(self, start: datetime, *, reverse: bool = False) -> CronSim:
        return CronSim(self.cron, start.astimezone(self.zone), reverse=reverse)


def parse_zone(timezone: str) -> ZoneInfo:
    try:
        return ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError):
        raise ScheduleError(
            f"unknown time zone '{timezone}': use an IANA name such as UTC, Europe/Paris or America/New_York",
            "drill_timezone",
        ) from None


def parse_schedule(cron: str, timezone: str) -> Schedule:
    """A schedule from its parts, or a ScheduleError naming the field ("drill_schedule" or "drill_timezone")."""
    zone = parse_zone(timezone)
    fields = cron.split()
    if len(fields) != 5:
        raise ScheduleError(
            f"'{cron}' has {len(fields)} fields; a schedule has five: minute hour day-of-month month day-of-week "
            "(e.g. '0 2 * * *' is every day at 02:00)",
            "drill_schedule",
        )
    normalized = " ".join(fields)
    try:
        schedule = Schedule(normalized, zone)
        next(schedule.iterate(datetime.now(UTC)))
    except CronSimError as error:
        raise ScheduleError(f"'{cron}' is not a valid schedule: {error}", "drill_schedule") from None
    except StopIteration:
        raise ScheduleError(f"'{cron}' never happens (no such date in the next 50 years)", "drill_schedule") from None
    return schedule


def describe(schedule: Schedule) -> str:
    """The schedule in words, e.g. "At 02:00 (Europe/Paris)"."""
    try:
        words = CronSim(schedule.cron, datetime.now(UTC)).explain()
    except (CronSimError, ValueError):  # explain() does not know every expression cronsim runs
        words = schedule.cron
    return f"{words} ({schedule.zone.key})"


def previous_slot(schedule: Schedule, at: datetime) -> datetime | None:
    """The latest time of the schedule at or before `at`, in UTC; None if there is none in the past 50 years."""
    # cronsim steps back a second before it looks, so start a second later to include `at` itself.
    start = at.replace(microsecond=0) + timedelta(seconds=1)
    try:
        return next(schedule.iterate(start, reverse=True)).astimezone(UTC)
    except StopIteration:
        return None


def next_slot(schedule: Schedule, after: datetime) -> datetime | None:
    """The first time of the schedule strictly after `after`, in UTC."""
    try:
        return next(schedule.iterate(after.replace(microsecond=0))).astimezone(UTC)
    except StopIteration:
        return None


def due_slot(schedule: Schedule, *, since: datetime, last_scheduled: datetime | None, now: datetime) -> datetime | None:
    """The slot a drill should start for now, if any: the latest slot so far, unless it came before the schedule
    was set (`since`) or it already has its drill. A scheduler that was down runs the latest missed slot once,
    never the ones before it."""
    slot = previous_slot(schedule, now)
    if slot is None or slot < since:
        return None
    if last_scheduled is not None and last_scheduled >= slot:
        return None
    return slot


def overdue_slot(
    schedule: Schedule, *, since: datetime, last_started: datetime | None, now: datetime, grace: timedelta
) -> datetime | None:
    """The slot whose drill is overdue, if any: the latest slot at least `grace` old with no drill started at or
    after it (a drill still queued because no worker is free has not started). Slots before the schedule was set
    (`since`) were never due."""
    slot = previous_slot(schedule, now - grace)
    if slot is None or slot < since:
        return None
    if last_started is not None and last_started >= slot:
        return None
    return slot
