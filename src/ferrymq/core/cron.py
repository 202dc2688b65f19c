"""Cron entries for ``AMQ_SCHEDULED_CRON``: the classic five fields, evaluated in UTC.

``minute hour day-of-month month day-of-week``, each ``*``, a number, a range ``a-b``, a list
``a,b``, or a step ``*/n`` / ``a-b/n``; day-of-week 0-7 with 0 and 7 both Sunday.  As in Vixie
cron, when both day fields are restricted a time matches if either one does.  Times are UTC
(ActiveMQ uses the broker's default time zone; a broker fleet spread over zones would disagree,
so FerryMQ fixes one).  Pure: no clock, the caller passes "now".
"""

from __future__ import annotations

import calendar
import datetime as dt
from dataclasses import dataclass

_FIELDS = (
    ("minute", 0, 59),
    ("hour", 0, 23),
    ("day of month", 1, 31),
    ("month", 1, 12),
    ("day of week", 0, 7),
)
MAX_YEARS_AHEAD = 5
"""An entry that never matches (30 February) is refused rather than searched for ever."""


class CronError(ValueError):
    """A cron entry that cannot be used; the message names the field."""


@dataclass(frozen=True, slots=True)
class CronSchedule:
    text: str
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]
    """0-6, Monday = 0 (Python's numbering)."""
    days_restricted: bool
    weekdays_restricted: bool

    def next_after(self, after_ms: int) -> int:
        """The first matching minute strictly after ``after_ms`` (epoch ms, UTC), in epoch ms."""
        moment = dt.datetime.fromtimestamp(after_ms / 1000, tz=dt.UTC).replace(
            second=0, microsecond=0
        ) + dt.timedelta(minutes=1)
        limit = moment.year + MAX_YEARS_AHEAD
        while moment.year <= limit:
            if moment.month not in self.months:
                moment = _first_of_next_month(moment)
                continue
            if not self._day_matches(moment):
                moment = (moment + dt.timedelta(days=1)).replace(hour=0, minute=0)
                continue
            if moment.hour not in self.hours:
                moment = (moment + dt.timedelta(hours=1)).replace(minute=0)
                continue
            if moment.minute not in self.minutes:
                moment += dt.timedelta(minutes=1)
                continue
            return int(calendar.timegm(moment.timetuple())) * 1000
        raise CronError(f"cron entry {self.text!r} never matches")

    def _day_matches(self, moment: dt.datetime) -> bool:
        day_ok = moment.day in self.days
        weekday_ok = moment.weekday() in self.weekdays
        if self.days_restricted and self.weekdays_restricted:
            return day_ok or weekday_ok
        return day_ok and weekday_ok


def _first_of_next_month(moment: dt.datetime) -> dt.datetime:
    year, month = (moment.year + 1, 1) if moment.month == 12 else (moment.year, moment.month + 1)
    return moment.replace(year=year, month=month, day=1, hour=0, minute=0)


def parse_cron(text: str) -> CronSchedule:
    parts = text.split()
    if len(parts) != 5:
        raise CronError(
            f"cron entry {text!r} has {len(parts)} fields; expected 5 "
            "(minute hour day-of-month month day-of-week)"
        )
    values: list[frozenset[int]] = []
    for part, (name, low, high) in zip(parts, _FIELDS, strict=True):
        values.append(_parse_field(part, name, low, high, text))
    minutes, hours, days, months, raw_weekdays = values
    # Cron's 0 and 7 are Sunday; Python's Monday is 0.
    weekdays = frozenset((d - 1) % 7 for d in raw_weekdays)
    schedule = CronSchedule(
        text,
        minutes,
        hours,
        days,
        months,
        weekdays,
        days_restricted=parts[2] != "*",
        weekdays_restricted=parts[4] != "*",
    )
    schedule.next_after(0)  # refuse entries that can never match
    return schedule


def _parse_field(part: str, name: str, low: int, high: int, text: str) -> frozenset[int]:
    found: set[int] = set()
    for item in part.split(","):
        body, slash, step_text = item.partition("/")
        try:
            step = int(step_text) if slash else 1
            if body == "*":
                start, end = low, high
            elif "-" in body:
                first, last = body.split("-", 1)
                start, end = int(first), int(last)
            else:
                start = end = int(body)
                if slash:
                    end = high
        except ValueError:
            raise CronError(f"cron entry {text!r}: {name} field {part!r} is not valid") from None
        if step <= 0 or start < low or end > high or start > end:
            raise CronError(
                f"cron entry {text!r}: {name} field {part!r} is out of range {low}-{high}"
            )
        found.update(range(start, end + 1, step))
    return frozenset(found)
