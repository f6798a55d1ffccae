"""The calendar's real store: one iCalendar file, read with `icalendar`, written atomically.

Guarantees, because this file is the user's calendar:
* a file that cannot be parsed is never overwritten: `load` copies it aside as
  `NAME.corrupt-TIMESTAMP` and raises `StoreError` naming both paths;
* writes go to a temporary file in the same folder, are fsynced, then `os.replace`d over the
  original, so a crash or a full disk leaves either the old or the new calendar, never half;
* a `filelock` around load-modify-save keeps two botpsy processes from losing each other's edits.
Events that botpsy did not create keep their UID as the event id; times are stored floating
(no time zone), matching the calendar tools.
"""

from __future__ import annotations

import shutil
import time
from contextlib import contextmanager
from datetime import date, datetime
from pathlib import Path

import icalendar
from filelock import FileLock, Timeout

from botpsy.tools.calendar import DT_FORMAT, CalendarState, Event


class StoreError(Exception):
    """A store that cannot be read or written; the message says what to do."""


def _as_datetime(value) -> datetime:
    dt = value.dt if hasattr(value, "dt") else value
    if isinstance(dt, datetime):
        return dt.replace(tzinfo=None)
    if isinstance(dt, date):
        return datetime(dt.year, dt.month, dt.day)
    raise ValueError(f"not a date: {value!r}")


def load(path: Path) -> CalendarState:
    path = Path(path)
    if not path.exists():
        return CalendarState()
    try:
        raw = path.read_bytes()
        cal = icalendar.Calendar.from_ical(raw)
        events = []
        for comp in cal.walk("VEVENT"):
            start = _as_datetime(comp["DTSTART"])
            end = _as_datetime(comp["DTEND"]) if "DTEND" in comp else start
            attendees = comp.get("ATTENDEE", [])
            if not isinstance(attendees, list):
                attendees = [attendees]
            events.append(
                Event(
                    id=str(comp.get("UID")),
                    title=str(comp.get("SUMMARY", "")),
                    start=start.strftime(DT_FORMAT),
                    end=end.strftime(DT_FORMAT),
                    location=str(comp.get("LOCATION", "")),
                    attendees=[str(a).removeprefix("mailto:") for a in attendees],
                    notes=str(comp.get("DESCRIPTION", "")),
                )
            )
    except Exception as e:  # icalendar raises ValueError, KeyError, IndexError… on broken input
        backup = path.with_name(f"{path.name}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}")
        try:
            shutil.copy2(path, backup)
            where = f"a copy is at {backup}"
        except OSError:
            where = "no backup could be written"
        raise StoreError(
            f"cannot read calendar {path}: {type(e).__name__}: {e}. The file was left untouched ({where}); "
            "fix or move it, then try again."
        ) from None
    return CalendarState(events=events)


def dumps(state: CalendarState) -> bytes:
    cal = icalendar.Calendar()
    cal.add("prodid", "-//botpsy//calendar//EN")
    cal.add("version", "2.0")
    for e in state.events:
        ev = icalendar.Event()
        ev.add("uid", e.id)
        ev.add("summary", e.title)
        ev.add("dtstart", e.start_dt())
        ev.add("dtend", e.end_dt())
        ev.add("dtstamp", datetime(2000, 1, 1))
        if e.location:
            ev.add("location", e.location)
        if e.notes:
            ev.add("description", e.notes)
        for a in e.attendees:
            ev.add("attendee", a)
        cal.add_component(ev)
    return cal.to_ical()


def save(state: CalendarState, path: Path) -> None:
    from botpsy.stores.common import atomic_write, os_error  # common imports StoreError from here

    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise os_error("write to", path.parent, e) from None
    atomic_write(path, dumps(state))


@contextmanager
def transaction(path: Path, timeout: float = 10.0):
    """Load under a file lock, yield the state, save it if the block finishes without error."""
    path = Path(path)
    lock = FileLock(str(path) + ".lock", timeout=timeout)
    try:
        lock.acquire()
    except Timeout:
        raise StoreError(f"{path} is locked by another botpsy process; try again in a moment") from None
    except OSError as e:
        raise StoreError(f"cannot lock {path}: {e.strerror}; is the workspace writable?") from None
    try:
        state = load(path)
        before = dumps(state)
        yield state
        if dumps(state) != before:
            save(state, path)
    finally:
        lock.release()
