"""TimePlugin: the current date and time, and date arithmetic.

`LOCALAGENT_TODAY` (an ISO date such as 2025-06-01) pins "today" so that tests and
benchmarks that depend on the date are reproducible.
"""

from __future__ import annotations

import datetime as dt
import os
from typing import Annotated

from localagent.tools.decorator import tool

TODAY_ENV = "LOCALAGENT_TODAY"


def today_date() -> dt.date:
    pinned = os.environ.get(TODAY_ENV)
    if pinned:
        try:
            return dt.date.fromisoformat(pinned.strip())
        except ValueError:
            raise ValueError(f"{TODAY_ENV}={pinned!r} is not an ISO date (YYYY-MM-DD)") from None
    return dt.date.today()


class TimePlugin:
    """Dates and times on this machine (local time)."""

    @tool
    def today(self) -> str:
        """Today's date as YYYY-MM-DD."""
        return today_date().isoformat()

    @tool
    def now(self) -> str:
        """The current local date and time as YYYY-MM-DDTHH:MM:SS."""
        now = dt.datetime.now().replace(microsecond=0)
        if os.environ.get(TODAY_ENV):
            now = dt.datetime.combine(today_date(), now.time())
        return now.isoformat()

    @tool
    def add_days(
        self,
        days: Annotated[int, "How many days to add (negative to go back)."],
        date: Annotated[str | None, "A date as YYYY-MM-DD; today when omitted."] = None,
    ) -> str:
        """The date a number of days after (or before) a date, as YYYY-MM-DD."""
        start = dt.date.fromisoformat(date) if date else today_date()
        if abs(days) > 3_650_000:
            raise ValueError("days must be within 10,000 years")
        return (start + dt.timedelta(days=days)).isoformat()
