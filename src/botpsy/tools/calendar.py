"""Calendar suite: list, find, create, update and delete events, and find free slots.

The state is a typed model (`CalendarState`). The assistant loads it from an iCalendar file
(`botpsy.stores.ics`) and a world seeds it in memory; the tools below are the same in both.
Times are local wall-clock minutes ("2026-12-03T10:00"): a personal calendar on one device does
not need time zones to answer "what am I doing on Thursday". The iCalendar store shows zoned times in
local time and writes a changed time back in its event's own zone; events created here are floating.
"""

from __future__ import annotations

from datetime import date, datetime, time, timedelta

from pydantic import BaseModel, Field

from botpsy.tools.base import ToolError, suite, tool

DT_FORMAT = "%Y-%m-%dT%H:%M"


class Event(BaseModel):
    id: str
    title: str
    start: str  # "YYYY-MM-DDTHH:MM"
    end: str
    location: str = ""
    attendees: list[str] = Field(default_factory=list)
    notes: str = ""

    def start_dt(self) -> datetime:
        return datetime.strptime(self.start, DT_FORMAT)

    def end_dt(self) -> datetime:
        return datetime.strptime(self.end, DT_FORMAT)

    def summary(self) -> dict:
        return self.model_dump(exclude_defaults=True)


class CalendarState(BaseModel):
    events: list[Event] = Field(default_factory=list)

    def new_id(self) -> str:
        taken = {e.id for e in self.events}
        n = len(self.events) + 1
        while f"evt-{n}" in taken:
            n += 1
        return f"evt-{n}"

    def get(self, event_id: str) -> Event:
        for e in self.events:
            if e.id == event_id:
                return e
        known = ", ".join(e.id for e in self.events[:8]) or "none"
        raise ToolError(f"no event with id {event_id!r} (known ids: {known}); use find_events to look it up")

    def canonical(self) -> list[dict]:
        """The comparable content of the calendar: order-free, titles case- and space-normalised."""
        rows = []
        for e in self.events:
            d = e.model_dump()
            d["title"] = " ".join(e.title.split()).casefold()
            d["location"] = " ".join(e.location.split()).casefold()
            d["attendees"] = sorted(a.strip().casefold() for a in e.attendees)
            rows.append(d)
        return sorted(rows, key=lambda d: (d["start"], d["title"], d["id"]))


# Dates a tool accepts. Python's datetime ends at 9999-12-31, so a start near the end overflows
# when a duration is added (OverflowError); no personal calendar needs years outside these.
MIN_YEAR, MAX_YEAR = 1000, 9000


def _in_range(d: date, field: str, value: str) -> None:
    if not MIN_YEAR <= d.year <= MAX_YEAR:
        raise ToolError(f"{field}: expected a year from {MIN_YEAR} to {MAX_YEAR}, got {value!r}")


def parse_datetime(value: str, field: str) -> datetime:
    """Accept ISO date-times with 'T' or a space, with or without seconds."""
    text = value.strip().replace(" ", "T")
    for fmt in ("%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H"):
        try:
            parsed = datetime.strptime(text, fmt)
        except ValueError:
            continue
        _in_range(parsed, field, value)
        return parsed
    raise ToolError(f"{field}: expected a date and time like 2026-12-03T10:00, got {value!r}")


def parse_date(value: str, field: str) -> date:
    text = value.strip()
    try:
        parsed = datetime.strptime(text[:10], "%Y-%m-%d").date()
    except ValueError:
        raise ToolError(f"{field}: expected a date like 2026-12-03, got {value!r}") from None
    _in_range(parsed, field, value)
    return parsed


def parse_clock(value: str, field: str) -> time:
    try:
        return datetime.strptime(value.strip(), "%H:%M").time()
    except ValueError:
        raise ToolError(f"{field}: expected a time like 09:00, got {value!r}") from None


def _fmt(dt: datetime) -> str:
    return dt.strftime(DT_FORMAT)


@tool()
def list_events(state: CalendarState, date: str, end_date: str | None = None) -> dict:
    """List events on a day or range of days.

    Args:
        date: YYYY-MM-DD
        end_date: YYYY-MM-DD, last day of a range
    """
    first = parse_date(date, "date")
    last = parse_date(end_date, "end_date") if end_date else first
    if last < first:
        raise ToolError(f"end_date {end_date} is before date {date}")
    hits = [e for e in state.events if first <= e.start_dt().date() <= last]
    hits.sort(key=lambda e: e.start)
    return {"events": [e.summary() for e in hits]}


@tool()
def find_events(state: CalendarState, query: str, date: str | None = None) -> dict:
    """Find events by words in their title, place or attendees.

    Args:
        query: words to look for
        date: YYYY-MM-DD, only that day
    """
    # A word that names the event's day also matches it ("Thursday 2026-12-03"): models put the day
    # into the query. The schema keeps its old wording, which the embedded model was trained on.
    words = query.casefold().replace(",", " ").split()
    if not words:
        raise ToolError("query: give at least one word to look for")
    day = parse_date(date, "date") if date else None
    hits = []
    for e in state.events:
        hay = " ".join([e.title, e.location, *e.attendees]).casefold()
        start = e.start_dt().date()
        if all(w in hay or _names_day(w, start) for w in words) and (day is None or start == day):
            hits.append(e)
    hits.sort(key=lambda e: e.start)
    return {"events": [e.summary() for e in hits]}


WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


def _names_day(word: str, day: date) -> bool:
    """Whether a query word is that day's ISO date or its weekday ("thursday", "thu")."""
    if word == day.isoformat():
        return True
    name = WEEKDAYS[day.weekday()]
    return len(word) >= 3 and name.startswith(word)


@tool(mutates=True)
def create_event(
    state: CalendarState,
    title: str,
    start: str,
    end: str | None = None,
    duration_minutes: int = 60,
    location: str = "",
    attendees: list[str] | None = None,
) -> dict:
    """Create an event.

    Args:
        title: event name
        start: YYYY-MM-DDTHH:MM
        end: YYYY-MM-DDTHH:MM
        duration_minutes: length if no end (default 60)
        location: place
        attendees: people invited
    """
    if not title.strip():
        raise ToolError("title: must not be empty")
    begin = parse_datetime(start, "start")
    if end:
        finish = parse_datetime(end, "end")
    else:
        if duration_minutes <= 0 or duration_minutes > 24 * 60 * 14:
            raise ToolError(f"duration_minutes: expected 1 to 20160, got {duration_minutes}")
        finish = begin + timedelta(minutes=duration_minutes)
    if finish <= begin:
        raise ToolError(f"end {_fmt(finish)} must be after start {_fmt(begin)}")
    event = Event(
        id=state.new_id(),
        title=title.strip(),
        start=_fmt(begin),
        end=_fmt(finish),
        location=location.strip(),
        attendees=[a.strip() for a in attendees or [] if a.strip()],
    )
    state.events.append(event)
    return {"created": event.summary()}


@tool(mutates=True)
def update_event(
    state: CalendarState,
    event_id: str,
    title: str | None = None,
    start: str | None = None,
    end: str | None = None,
    location: str | None = None,
) -> dict:
    """Change an event; a new start keeps its length.

    Args:
        event_id: id from find_events or list_events
        title: new name
        start: YYYY-MM-DDTHH:MM
        end: YYYY-MM-DDTHH:MM
        location: new place
    """
    event = state.get(event_id)
    if all(v is None for v in (title, start, end, location)):
        raise ToolError("update_event: give at least one of title, start, end, location to change")
    begin, finish = event.start_dt(), event.end_dt()
    if start is not None:
        new_begin = parse_datetime(start, "start")
        finish = new_begin + (finish - begin)
        begin = new_begin
    if end is not None:
        finish = parse_datetime(end, "end")
    if finish <= begin:
        raise ToolError(f"end {_fmt(finish)} must be after start {_fmt(begin)}")
    if title is not None:
        if not title.strip():
            raise ToolError("title: must not be empty")
        event.title = title.strip()
    if location is not None:
        event.location = location.strip()
    event.start, event.end = _fmt(begin), _fmt(finish)
    return {"updated": event.summary()}


@tool(mutates=True, sensitive=True)
def delete_event(state: CalendarState, event_id: str) -> dict:
    """Delete an event.

    Args:
        event_id: id from find_events or list_events
    """
    event = state.get(event_id)
    state.events.remove(event)
    return {"deleted": event.summary()}


@tool()
def find_free_slots(
    state: CalendarState,
    date: str,
    duration_minutes: int = 60,
    day_start: str = "09:00",
    day_end: str = "18:00",
) -> dict:
    """Find free time on a day.

    Args:
        date: YYYY-MM-DD
        duration_minutes: minutes needed (default 60)
        day_start: HH:MM, earliest (default 09:00)
        day_end: HH:MM, latest (default 18:00)
    """
    day = parse_date(date, "date")
    lo = datetime.combine(day, parse_clock(day_start, "day_start"))
    hi = datetime.combine(day, parse_clock(day_end, "day_end"))
    if duration_minutes <= 0:
        raise ToolError(f"duration_minutes: expected a positive number, got {duration_minutes}")
    if hi <= lo:
        raise ToolError(f"day_end {day_end} must be after day_start {day_start}")
    busy = sorted((e.start_dt(), e.end_dt()) for e in state.events if e.end_dt() > lo and e.start_dt() < hi)
    slots, cursor = [], lo
    for b, f in busy:
        if b - cursor >= timedelta(minutes=duration_minutes):
            slots.append({"start": _fmt(cursor), "end": _fmt(b)})
        cursor = max(cursor, f)
    if hi - cursor >= timedelta(minutes=duration_minutes):
        slots.append({"start": _fmt(cursor), "end": _fmt(hi)})
    return {"free": slots}


TOOLS = suite(
    "calendar", [list_events, find_events, create_event, update_event, delete_event, find_free_slots]
)
