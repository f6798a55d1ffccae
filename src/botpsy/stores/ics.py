"""The calendar's real store: one iCalendar file, read with `icalendar`, written atomically.

Guarantees, because this file is the user's calendar and other programs wrote most of it:
* a write changes only what the tools changed. The parsed `Calendar` is edited in place and
  serialised again, so every component and property botpsy does not model (VTODO, VALARM,
  VTIMEZONE, RRULE, EXDATE, CATEGORIES, X-WR-CALNAME, ATTENDEE parameters, X-… vendor fields)
  survives; rebuilding the file from the botpsy model, as this store once did, dropped them all;
* time zones are kept. The tools see local wall-clock minutes: an event in UTC or under a TZID is
  shown converted to this machine's local time (a TZID the file does not define stays as written),
  and a changed time is written back in the event's own zone. An untouched time is never rewritten;
* a file that cannot be parsed is never overwritten: it is copied aside as `NAME.corrupt-TIMESTAMP`
  and `StoreError` names both paths;
* the file is read as bytes (`icsraw`): Latin-1 text and UTF-8 characters split by line folding
  are read correctly, and a write re-serialises only the events that changed — every other byte
  stays as it was; when a changed event's text was Latin-1, the old file is copied aside first;
* writes go to a temporary file in the same folder, are fsynced, then renamed over the original
  (keeping its permission bits; a read-only file is refused, `botpsy.atomic`), so a crash or a
  full disk leaves either the old or the new calendar, never half;
* a `filelock` around load-modify-save keeps two botpsy processes from losing each other's edits.

Event ids are the UIDs. A UID seen twice (a recurring event's overrides share their series' UID)
gets `#` and its RECURRENCE-ID, so each id names one component. Events botpsy creates are floating
(no time zone), matching the tools. Recurrences are not expanded: a series is one event at its
first occurrence.
"""

from __future__ import annotations

import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import icalendar
from filelock import FileLock, Timeout

from botpsy.atomic import ReplaceError, write_atomic
from botpsy.stores import icsraw
from botpsy.stores.common import StoreError, copy_aside, os_error
from botpsy.tools.calendar import DT_FORMAT, CalendarState, Event


@dataclass
class _Loaded:
    """A parsed calendar, the state handed to the tools, and where each event came from."""

    cal: icalendar.Calendar
    state: CalendarState
    origin: dict[str, tuple[Event, icalendar.Component]] = field(
        default_factory=dict
    )  # id → (as loaded, VEVENT)
    source: icsraw.Source | None = None  # the file's bytes, for writing back only what changed
    vevents: list = field(default_factory=list)  # every VEVENT as loaded, in file order
    snapshots: list[bytes] | None = None  # their to_ical() at load (write transactions only)

    @classmethod
    def empty(cls) -> _Loaded:
        cal = icalendar.Calendar()
        cal.add("prodid", "-//botpsy//calendar//EN")
        cal.add("version", "2.0")
        return cls(cal, CalendarState())


def _is_day(value) -> bool:
    return isinstance(value, date) and not isinstance(value, datetime)


def _local(value) -> datetime:
    """A DTSTART/DTEND value as naive local wall-clock time."""
    if isinstance(value, datetime):
        return value.astimezone().replace(tzinfo=None) if value.tzinfo is not None else value
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day)
    raise ValueError(f"not a date: {value!r}")


def _address(attendee) -> str:
    return str(attendee).removeprefix("mailto:").removeprefix("MAILTO:")


def _as_list(value) -> list:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def _event(comp: icalendar.Component, eid: str) -> Event:
    start_prop = comp["DTSTART"]
    start = _local(start_prop.dt)
    if "DTEND" in comp:
        end = _local(comp["DTEND"].dt)
    elif "DURATION" in comp:
        end = _local(start_prop.dt + comp["DURATION"].dt)
    else:  # RFC 5545 §3.6.1: a day-long event without an end lasts the day, a timed one no time
        end = start + timedelta(days=1) if _is_day(start_prop.dt) else start
    return Event(
        id=eid,
        title=str(comp.get("SUMMARY", "")),
        start=start.strftime(DT_FORMAT),
        end=end.strftime(DT_FORMAT),
        location=str(comp.get("LOCATION", "")),
        attendees=[_address(a) for a in _as_list(comp.get("ATTENDEE"))],
        notes=str(comp.get("DESCRIPTION", "")),
    )


def _unique_id(comp: icalendar.Component, taken: set[str]) -> str:
    uid = str(comp.get("UID") or "").strip() or "event"
    if uid not in taken:
        return uid
    rec = comp.get("RECURRENCE-ID")
    base = f"{uid}#{_local(rec.dt).strftime(DT_FORMAT)}" if rec is not None else f"{uid}#2"
    eid, n = base, 2
    while eid in taken:
        n += 1
        eid = f"{base}-{n}"
    return eid


def _read(path: Path, snapshot: bool = False) -> _Loaded:
    """The parsed file; `snapshot` records each VEVENT's serialisation, so a write can tell which
    events changed and keep the others' bytes."""
    path = Path(path)
    if not path.exists():
        return _Loaded.empty()
    try:
        raw = path.read_bytes()
        if not raw.strip():  # an empty file is an empty calendar, not a broken one
            return _Loaded.empty()
        source = icsraw.read(raw)  # decoded line by line: Latin-1 and split UTF-8 survive
        cal = icalendar.Calendar.from_ical(source.text)
        loaded = _Loaded(cal, CalendarState(), source=source, vevents=list(cal.walk("VEVENT")))
        if snapshot:
            loaded.snapshots = [c.to_ical() for c in loaded.vevents]
        for comp in cal.walk("VEVENT"):
            if "DTSTART" not in comp:  # allowed with METHOD (an invitation); kept, not shown
                continue
            ev = _event(comp, _unique_id(comp, set(loaded.origin)))
            loaded.state.events.append(ev)
            loaded.origin[ev.id] = (ev.model_copy(deep=True), comp)
    except Exception as e:  # icalendar raises ValueError, KeyError, IndexError… on broken input
        raise StoreError(
            f"cannot read calendar {path}: {type(e).__name__}: {e}. The file was left untouched "
            f"({copy_aside(path)}); fix or move it, then try again."
        ) from None
    return loaded


def load(path: Path) -> CalendarState:
    return _read(path).state


# ---- writing back: only what changed --------------------------------------------------------
def _utc_now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


def _time_like(value: datetime, like: icalendar.prop.vDDDTypes | None, as_day: bool):
    """`value` (local wall clock) as a property in the zone and form of `like`."""
    if as_day:
        return icalendar.vDDDTypes(value.date())
    old = like.dt if like is not None else None
    params = dict(like.params) if like is not None else {}
    params.pop("VALUE", None)
    if isinstance(old, datetime) and old.tzinfo is not None:
        prop = icalendar.vDDDTypes(value.astimezone(old.tzinfo))  # naive `value` is local time
    else:
        prop = icalendar.vDDDTypes(value)  # floating, or a TZID this file does not define
    if "TZID" in params and not prop.to_ical().endswith(b"Z"):
        prop.params["TZID"] = params["TZID"]  # the file's own name for its VTIMEZONE
    return prop


def _wall(value) -> datetime:
    """A date or date-time as naive wall-clock time in its own zone."""
    return (
        value.replace(tzinfo=None)
        if isinstance(value, datetime)
        else datetime(value.year, value.month, value.day)
    )


def _shifted(prop, delta: timedelta):
    """A date, date-time or list of them moved by `delta` of wall-clock time, in its own zone."""
    if isinstance(prop, icalendar.vDDDLists):
        out = icalendar.vDDDLists([d.dt + delta for d in prop.dts])
    else:
        out = icalendar.vDDDTypes(prop.dt + delta)
    out.params.update(prop.params)
    return out


def _shift_series(cal: icalendar.Calendar, comp: icalendar.Component, delta: timedelta) -> None:
    """A moved series keeps its exceptions: its EXDATEs and its overrides' RECURRENCE-IDs move too.

    Left alone, an excluded 09:30 occurrence of a series moved to 10:00 would come back, and an
    overridden one would be shown twice (its override and the series' new occurrence).
    """
    if not delta or "RRULE" not in comp or "RECURRENCE-ID" in comp:
        return
    if "EXDATE" in comp:
        ex = comp["EXDATE"]
        comp["EXDATE"] = [_shifted(p, delta) for p in ex] if isinstance(ex, list) else _shifted(ex, delta)
    uid = str(comp.get("UID", ""))
    for other in cal.walk("VEVENT"):
        if other is not comp and str(other.get("UID", "")) == uid and "RECURRENCE-ID" in other:
            other["RECURRENCE-ID"] = _shifted(other["RECURRENCE-ID"], delta)


def _set_times(cal: icalendar.Calendar, comp: icalendar.Component, new: Event) -> None:
    start_prop = comp["DTSTART"]
    begin, finish = new.start_dt(), new.end_dt()
    midnight = begin.time() == finish.time() == datetime.min.time()
    as_day = _is_day(start_prop.dt) and midnight
    comp["DTSTART"] = _time_like(begin, start_prop, as_day)
    _shift_series(cal, comp, _wall(comp["DTSTART"].dt) - _wall(start_prop.dt))
    if "DTEND" in comp:
        comp["DTEND"] = _time_like(finish, comp["DTEND"], as_day)
    elif "DURATION" in comp:
        comp["DURATION"] = icalendar.vDDDTypes(finish - begin)
    elif finish != begin + (timedelta(days=1) if as_day else timedelta(0)):
        comp.add("DTEND", _time_like(finish, start_prop, as_day))


def _set_text(comp: icalendar.Component, name: str, value: str) -> None:
    if value:
        comp[name] = icalendar.vText(value)  # replaces in place: the property keeps its position
    else:
        comp.pop(name, None)


def _set_attendees(comp: icalendar.Component, attendees: list[str]) -> None:
    known = {_address(a).casefold(): a for a in _as_list(comp.get("ATTENDEE"))}  # keeps CN, PARTSTAT…
    comp.pop("ATTENDEE", None)
    for a in attendees:
        comp.add("ATTENDEE", known.get(a.casefold()) or _new_address(a))


def _new_address(who: str) -> icalendar.vCalAddress:
    return icalendar.vCalAddress(f"mailto:{who}" if "@" in who else who)


def _apply(cal: icalendar.Calendar, comp: icalendar.Component, old: Event, new: Event) -> None:
    if new.title != old.title:
        _set_text(comp, "SUMMARY", new.title)
    if new.location != old.location:
        _set_text(comp, "LOCATION", new.location)
    if new.notes != old.notes:
        _set_text(comp, "DESCRIPTION", new.notes)
    if new.attendees != old.attendees:
        _set_attendees(comp, new.attendees)
    if (new.start, new.end) != (old.start, old.end):
        _set_times(cal, comp, new)
    now = _utc_now()  # RFC 5545 §3.8.7: a changed event says when, and other clients see a new SEQUENCE
    comp["LAST-MODIFIED"] = icalendar.vDDDTypes(now)
    if "DTSTAMP" in comp:
        comp["DTSTAMP"] = icalendar.vDDDTypes(now)
    if "SEQUENCE" in comp:
        comp["SEQUENCE"] = icalendar.vInt(int(comp["SEQUENCE"]) + 1)


def _new_vevent(e: Event, uid: str) -> icalendar.Event:
    ev = icalendar.Event()
    ev.add("uid", uid)
    ev.add("dtstamp", _utc_now())
    ev.add("summary", e.title)
    ev.add("dtstart", e.start_dt())
    ev.add("dtend", e.end_dt())
    if e.location:
        ev.add("location", e.location)
    if e.notes:
        ev.add("description", e.notes)
    for a in e.attendees:
        ev.add("attendee", _new_address(a))
    return ev


def _merge(loaded: _Loaded, state: CalendarState) -> icalendar.Calendar:
    """Carry the tools' changes into the parsed calendar: edit, add and remove VEVENTs, touch nothing else."""
    cal, seen = loaded.cal, set()
    uids = {str(c.get("UID")) for c in cal.walk("VEVENT")}
    for e in state.events:
        hit = loaded.origin.get(e.id) if e.id not in seen else None
        seen.add(e.id)
        if hit is None:
            uid = e.id if e.id not in uids else f"{e.id}-{uuid.uuid4().hex[:8]}"
            uids.add(uid)
            cal.add_component(_new_vevent(e, uid))
        elif e != hit[0]:
            _apply(cal, hit[1], hit[0], e)
    gone = {id(comp) for eid, (_, comp) in loaded.origin.items() if eid not in seen}
    if gone:
        for parent in cal.walk():
            parent.subcomponents = [c for c in parent.subcomponents if id(c) not in gone]
    return cal


def dumps(state: CalendarState) -> bytes:
    """`state` as a new calendar file (a write to an existing file goes through `save`)."""
    return _merge(_Loaded.empty(), state).to_ical()


def _encode(loaded: _Loaded, state: CalendarState) -> tuple[bytes, bool]:
    """The new file, and whether it re-encodes text that was not UTF-8.

    The file is the old bytes with only changed events re-serialised (`icsraw.splice`); a changed
    event that held Latin-1 text is now UTF-8, and so is everything when the whole file must be
    re-serialised while some of it was Latin-1.
    """
    cal = _merge(loaded, state)
    src = loaded.source
    spliced = None
    if src is not None and loaded.snapshots is not None:
        spliced = icsraw.splice(src, loaded.vevents, loaded.snapshots, list(cal.walk("VEVENT")))
    if spliced is not None:
        return spliced
    return cal.to_ical(), src is not None and src.any_latin1


def _write(loaded: _Loaded, state: CalendarState, path: Path) -> None:
    """Replace the file. Before re-encoding, the old file is copied aside
    (`NAME.before-reencode-TIMESTAMP`): decoding a legacy file is a guess, and a guess must not cost
    the user their text. The copy is made inside the atomic write, after its checks (a read-only
    calendar gets no stray copy), and a copy that cannot be made stops the write."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise os_error("write to", path.parent, e) from None
    data, reencodes = _encode(loaded, state)

    def write(f) -> None:
        if reencodes and "no backup" in copy_aside(path, "before-reencode"):
            raise StoreError(
                f"cannot write {path}: the change re-encodes text that was not UTF-8, and no backup "
                "of the file could be written first; free some space or make the folder writable; "
                "nothing was changed"
            )
        f.write(data)

    try:
        write_atomic(path, write)
    except ReplaceError as e:
        raise os_error(e.action, e.where, e) from None


def save(state: CalendarState, path: Path) -> None:
    """Make the file hold `state`'s events, matched by id, keeping everything else in it."""
    path = Path(path)
    _write(_read(path, snapshot=True), state, path)


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
        loaded = _read(path, snapshot=True)
        before = loaded.state.model_dump()
        yield loaded.state
        if loaded.state.model_dump() != before:
            _write(loaded, loaded.state, path)
    finally:
        lock.release()
