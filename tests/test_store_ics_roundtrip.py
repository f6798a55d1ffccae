"""Issue 14, item 4: one calendar write must not destroy what botpsy does not model.

The fixtures are hand-written in the shape real exports have (Google Calendar, Apple Calendar /
iCloud, Outlook): VTIMEZONE with DAYLIGHT/STANDARD, RRULE with EXDATE and an overridden
occurrence, VALARMs, VTODOs, X-WR-CALNAME, CATEGORIES, attendee parameters, vendor X- fields, UTC
and TZID times, a Windows zone name and an undefined one. Each edit goes through the workspace
tools; afterwards every component the edit did not touch must serialise exactly as before, the
edited one must differ only in what the tool changed, and the file's mode bits must be kept.

Local time is pinned to JST (UTC+9, no DST, a POSIX TZ string that needs no tzdata) so the
conversions below are exact.
"""

import json
import os
import shutil
import time
from pathlib import Path

import icalendar
import pytest

from botpsy.stores import ics
from botpsy.stores.workspace import Workspace

FIXTURES = Path(__file__).parent / "fixtures" / "ics"
GOOGLE_SERIES = "5h2kq0v1m7c3u9pb1c0e8l4f2a@google.com"
GOOGLE_UTC = "0a1b2c3d4e5f6g7h8i9j@google.com"
APPLE_DENTIST = "3F2504E0-4F89-41D3-9A0C-0305E82C3301"
APPLE_DINNER = "8D9E0F1A-2B3C-4D5E-6F70-8192A3B4C5D6"
OUTLOOK_BUDGET = "040000008200E00074C5B7101A82E00800000000B0C6D1E2F3A4D901000000000000000010000000A1B2C3D4E5F60718293A4B5C6D7E8F90"
OUTLOOK_CUSTOM = "040000008200E00074C5B7101A82E00800000000D1E8F3A4B5C6D90100000000000000001000000011223344556677889900AABBCCDDEEFF"
STAMPS = {"LAST-MODIFIED", "DTSTAMP", "SEQUENCE"}  # what any edit may bump


@pytest.fixture(autouse=True)
def jst(monkeypatch):
    monkeypatch.setenv("TZ", "JST-9")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def workspace(tmp_path, fixture: str, mode: int = 0o644) -> Workspace:
    path = tmp_path / "calendar.ics"
    shutil.copyfile(FIXTURES / fixture, path)
    path.chmod(mode)
    return Workspace(tmp_path, suites=["calendar"])


def call(ws: Workspace, name: str, **args) -> dict:
    out = json.loads(ws.call(name, args))
    assert "error" not in out, out
    return out


def parse(path: Path) -> icalendar.Calendar:
    return icalendar.Calendar.from_ical(path.read_bytes())


def key(comp) -> tuple:
    rec = comp.get("RECURRENCE-ID")
    return comp.name, str(comp.get("UID", comp.get("TZID", ""))), rec.to_ical() if rec is not None else b""


def components(cal) -> dict[tuple, bytes]:
    return {key(c): c.to_ical() for c in cal.subcomponents}


def props(comp, drop=()) -> dict[str, bytes]:
    return {k: (v.to_ical() if not isinstance(v, list) else b"|".join(x.to_ical() for x in v))
            for k, v in comp.items() if k not in drop}  # fmt: skip


def only_changed(before, after, changed: set[str]) -> None:
    """`after` equals `before` in every property but `changed` (and the stamps), and in every alarm."""
    drop = changed | STAMPS
    assert props(after, drop) == props(before, drop)
    assert [c.to_ical() for c in after.subcomponents] == [c.to_ical() for c in before.subcomponents]


EDITS = [
    # fixture, tool, arguments, the UID the edit touches (None: a new event), properties it changes
    ("google.ics", "create_event", {"title": "Dentist", "start": "2026-12-03T10:00"}, None, set()),
    ("google.ics", "update_event", {"event_id": GOOGLE_UTC, "title": "Q4 review"}, GOOGLE_UTC, {"SUMMARY"}),
    ("google.ics", "update_event", {"event_id": GOOGLE_SERIES, "location": "Room 5"}, GOOGLE_SERIES, {"LOCATION"}),
    ("google.ics", "delete_event", {"event_id": GOOGLE_UTC}, GOOGLE_UTC, set()),
    ("icloud.ics", "create_event", {"title": "Gym", "start": "2026-12-04T07:00"}, None, set()),
    ("icloud.ics", "update_event", {"event_id": APPLE_DENTIST, "title": "Dentist (Dr. Lee)"}, APPLE_DENTIST, {"SUMMARY"}),
    ("icloud.ics", "update_event", {"event_id": APPLE_DINNER, "start": "2026-12-06T10:00"}, APPLE_DINNER, {"DTSTART"}),
    ("icloud.ics", "delete_event", {"event_id": APPLE_DENTIST}, APPLE_DENTIST, set()),
    ("outlook.ics", "create_event", {"title": "Lunch", "start": "2026-12-08T12:00"}, None, set()),
    ("outlook.ics", "update_event", {"event_id": OUTLOOK_BUDGET, "start": "2026-12-08T23:00"}, OUTLOOK_BUDGET, {"DTSTART", "DTEND"}),
    ("outlook.ics", "delete_event", {"event_id": OUTLOOK_BUDGET}, OUTLOOK_BUDGET, set()),
]  # fmt: skip


@pytest.mark.parametrize("fixture,tool,args,uid,changed", EDITS)
def test_an_edit_keeps_every_untouched_component_property_and_the_mode(
    tmp_path, fixture, tool, args, uid, changed
):
    ws = workspace(tmp_path, fixture)
    before = parse(ws.calendar_path)
    call(ws, tool, **args)
    after = parse(ws.calendar_path)

    assert props(after) == props(before)  # X-WR-CALNAME, X-WR-TIMEZONE, METHOD, PRODID, vendor fields
    old, new = components(before), components(after)
    touched = {k for k in old if k[1] == uid and k[2] == b""}
    for k in old.keys() - touched:
        assert new.get(k) == old[k], f"{k} changed or vanished"
    assert sum(1 for c in after.walk() if c.name == "VTIMEZONE") == sum(
        1 for c in before.walk() if c.name == "VTIMEZONE"
    )
    if tool == "create_event":
        (added,) = new.keys() - old.keys()
        assert added[0] == "VEVENT"
    elif tool == "delete_event":
        assert touched and not (touched & new.keys())
    else:
        (k,) = touched
        pick = lambda cal: next(c for c in cal.subcomponents if key(c) == k)  # noqa: E731
        only_changed(pick(before), pick(after), changed)
        assert int(pick(after).get("SEQUENCE", 0)) == int(
            pick(before).get("SEQUENCE", -1)
        ) + 1 or "SEQUENCE" not in pick(before)
    assert (ws.calendar_path.stat().st_mode & 0o777) == 0o644


def test_times_are_shown_in_local_time_and_written_back_in_their_own_zone(tmp_path):
    ws = workspace(tmp_path, "google.ics")
    events = {e.id: e for e in ics.load(ws.calendar_path).events}
    assert events[GOOGLE_UTC].start == "2026-12-04T00:00"  # 15:00Z is midnight in Tokyo
    assert events[GOOGLE_SERIES].start == "2026-11-02T17:30"  # 09:30 CET
    call(ws, "update_event", event_id=GOOGLE_UTC, start="2026-12-04T01:00")
    call(ws, "update_event", event_id=GOOGLE_SERIES, start="2026-11-02T18:00")
    text = ws.calendar_path.read_bytes().replace(b"\r\n ", b"")
    assert (
        b"DTSTART:20261203T160000Z" in text and b"DTEND:20261203T170000Z" in text
    )  # still UTC, not floating
    assert b"DTSTART;TZID=Europe/Berlin:20261102T100000" in text
    assert b"RRULE:FREQ=WEEKLY" in text  # the series moved by 30 minutes, and its exceptions with it:
    assert (
        b"EXDATE;TZID=Europe/Berlin:20261225T100000" in text
        and b"EXDATE;TZID=Europe/Berlin:20261228T100000" in text
    )
    assert b"RECURRENCE-ID;TZID=Europe/Berlin:20261106T100000" in text
    assert b"DTSTART;TZID=Europe/Berlin:20261106T100000" in text  # the override itself stays where it was
    assert ics.load(ws.calendar_path).events[2].start == "2026-12-04T01:00"


def test_windows_and_undefined_zone_names_are_kept(tmp_path):
    ws = workspace(tmp_path, "outlook.ics")
    events = {e.id: e for e in ics.load(ws.calendar_path).events}
    assert events[OUTLOOK_BUDGET].start == "2026-12-08T22:00"  # 14:00 W. Europe (+1) is 22:00 JST
    assert events[OUTLOOK_CUSTOM].start == "2026-12-09T08:00"  # a zone the file does not define: as written
    call(ws, "update_event", event_id=OUTLOOK_BUDGET, start="2026-12-08T23:00")
    call(ws, "update_event", event_id=OUTLOOK_CUSTOM, start="2026-12-09T09:00")
    text = ws.calendar_path.read_bytes().replace(b"\r\n ", b"")
    assert b"DTSTART;TZID=W. Europe Standard Time:20261208T150000" in text
    assert b"DTSTART;TZID=Customized Time Zone:20261209T090000" in text
    assert b"X-ALT-DESC;FMTTYPE=text/html:" in text and b"CATEGORIES:Finance,Planning" in text


def test_all_day_and_duration_events_keep_their_form(tmp_path):
    ws = workspace(tmp_path, "icloud.ics")
    dinner = next(e for e in ics.load(ws.calendar_path).events if e.id == APPLE_DINNER)
    assert (dinner.start, dinner.end) == ("2026-12-06T09:00", "2026-12-06T11:30")  # 19:00 EST + PT2H30M
    call(ws, "update_event", event_id=APPLE_DINNER, start="2026-12-06T10:00")
    comp = next(c for c in parse(ws.calendar_path).walk("VEVENT") if str(c["UID"]) == APPLE_DINNER)
    assert "DTEND" not in comp and comp["DURATION"].to_ical() == b"PT2H30M"
    assert (
        comp["DTSTART"].to_ical() == b"20261205T200000"
        and comp["DTSTART"].params["TZID"] == "America/New_York"
    )

    ws = workspace(tmp_path, "google.ics")
    call(ws, "update_event", event_id="7q8w9e0r1t2y3u4i5o6p@google.com", title="Mum's 70th birthday")
    text = ws.calendar_path.read_bytes()
    assert b"DTSTART;VALUE=DATE:20261210" in text and b"RRULE:FREQ=YEARLY" in text


def test_an_overridden_occurrence_has_its_own_id_and_deleting_it_keeps_the_series(tmp_path):
    ws = workspace(tmp_path, "google.ics")
    ids = [e.id for e in ics.load(ws.calendar_path).events]
    assert len(ids) == len(set(ids)) == 4
    override = next(i for i in ids if i.startswith(GOOGLE_SERIES + "#"))
    call(ws, "delete_event", event_id=override)
    series = [c for c in parse(ws.calendar_path).walk("VEVENT") if str(c["UID"]) == GOOGLE_SERIES]
    assert len(series) == 1 and "RECURRENCE-ID" not in series[0] and "RRULE" in series[0]
    assert [a["TRIGGER"].to_ical() for a in series[0].walk("VALARM")] == [b"-PT10M"]


def test_vtodos_and_their_alarms_survive_a_write(tmp_path):
    ws = workspace(tmp_path, "icloud.ics")
    call(ws, "create_event", title="Gym", start="2026-12-04T07:00")
    todos = parse(ws.calendar_path).walk("VTODO")
    assert [str(t["SUMMARY"]) for t in todos] == ["Renew passport", "Book flights"]
    assert todos[0].walk("VALARM")[0]["TRIGGER"].to_ical() == b"20261204T140000Z"


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o664, 0o600])
def test_the_file_mode_is_kept(tmp_path, mode):
    ws = workspace(tmp_path, "google.ics", mode=mode)
    call(ws, "create_event", title="Dentist", start="2026-12-03T10:00")
    assert (ws.calendar_path.stat().st_mode & 0o777) == mode


def test_a_new_calendar_gets_the_umask_default_and_a_symlink_stays_a_symlink(tmp_path):
    old = os.umask(0o022)
    try:
        ws = Workspace(tmp_path / "new", suites=["calendar"])
        call(ws, "create_event", title="Dentist", start="2026-12-03T10:00")
        assert (ws.calendar_path.stat().st_mode & 0o777) == 0o644
    finally:
        os.umask(old)
    real = tmp_path / "synced" / "family.ics"
    real.parent.mkdir()
    shutil.copyfile(FIXTURES / "google.ics", real)
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "calendar.ics").symlink_to(real)
    ws = Workspace(tmp_path / "ws", suites=["calendar"])
    call(ws, "create_event", title="Dentist", start="2026-12-03T10:00")
    assert ws.calendar_path.is_symlink() and b"Dentist" in real.read_bytes()


def test_an_empty_file_is_an_empty_calendar(tmp_path):
    (tmp_path / "calendar.ics").write_bytes(b"")
    ws = Workspace(tmp_path, suites=["calendar"])
    call(ws, "create_event", title="Dentist", start="2026-12-03T10:00")
    assert [e.title for e in ics.load(ws.calendar_path).events] == ["Dentist"]
