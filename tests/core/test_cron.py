"""Cron entries for AMQ_SCHEDULED_CRON."""

from __future__ import annotations

import calendar
import datetime as dt

import pytest

from ferrymq.core.cron import CronError, parse_cron


def _ms(text: str) -> int:
    moment = dt.datetime.fromisoformat(text).replace(tzinfo=dt.UTC)
    return calendar.timegm(moment.timetuple()) * 1000


def _iso(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.UTC).strftime("%Y-%m-%d %H:%M")


@pytest.mark.parametrize(
    ("entry", "after", "expected"),
    [
        ("* * * * *", "2026-11-22 10:15:30", "2026-11-22 10:16"),
        ("0 * * * *", "2026-11-22 10:15:00", "2026-11-22 11:00"),
        ("*/15 * * * *", "2026-11-22 10:15:00", "2026-11-22 10:30"),
        ("30 2 * * *", "2026-11-22 10:15:00", "2026-11-23 02:30"),
        ("0 9 * * 1-5", "2026-11-21 10:00:00", "2026-11-23 09:00"),  # Saturday -> Monday
        ("0 0 1 1 *", "2026-11-22 00:00:00", "2027-01-01 00:00"),
        ("0 0 29 2 *", "2026-03-01 00:00:00", "2028-02-29 00:00"),
        ("0 12 13 * 5", "2026-11-22 00:00:00", "2026-11-27 12:00"),  # Friday or the 13th
        ("5,10 8 * * 0", "2026-11-22 08:07:00", "2026-11-22 08:10"),  # 2026-11-22 is a Sunday
        ("0 0 * * 7", "2026-11-22 00:00:00", "2026-11-29 00:00"),  # 7 is Sunday too
    ],
)
def test_next_after(entry: str, after: str, expected: str) -> None:
    assert _iso(parse_cron(entry).next_after(_ms(after))) == expected


@pytest.mark.parametrize(
    ("entry", "complaint"),
    [
        ("* * * *", "4 fields"),
        ("60 * * * *", "minute"),
        ("* 24 * * *", "hour"),
        ("* * 0 * *", "day of month"),
        ("* * * 13 *", "month"),
        ("* * * * 8", "day of week"),
        ("*/0 * * * *", "minute"),
        ("a * * * *", "minute"),
        ("0 0 30 2 *", "never matches"),
    ],
)
def test_bad_entries_name_the_field(entry: str, complaint: str) -> None:
    with pytest.raises(CronError, match=complaint):
        parse_cron(entry)
