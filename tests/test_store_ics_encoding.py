"""Calendar text under hostile bytes (issue 36 item 5): a write keeps every untouched event's bytes.

Before: icalendar decoded the whole file with U+FFFD replacement as soon as one byte was not
UTF-8, so one Latin-1 event, or a UTF-8 character split by a 75-byte fold, turned every non-ASCII
character in the calendar into U+FFFD on the next write, with no backup.
"""

from __future__ import annotations

import pytest

from botpsy.stores import ics
from botpsy.tools.calendar import create_event, delete_event

HEAD = b"BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//Vendor//Old App//EN\r\nX-WR-CALNAME:Caf\xe9\r\n"
LATIN1 = (
    b"BEGIN:VEVENT\r\nUID:latin1@x\r\nDTSTART:20261203T100000\r\nDTEND:20261203T110000\r\n"
    b"SUMMARY:Caf\xe9 cr\xe8me\r\nLOCATION:Z\xfcrich\r\nEND:VEVENT\r\n"
)
TITLE = "Geburtstagsfeier für Jürgen und Zoë"


def _split_fold() -> bytes:
    """A SUMMARY folded in the middle of the two bytes of 'ü', as 75-byte folding writers do."""
    line = ("SUMMARY:" + TITLE).encode()
    cut = line.index("ü".encode()) + 1
    return (
        b"BEGIN:VEVENT\r\nUID:folded@x\r\nDTSTART:20261204T100000\r\nDTEND:20261204T110000\r\n"
        + line[:cut]
        + b"\r\n "
        + line[cut:]
        + b"\r\nEND:VEVENT\r\n"
    )


@pytest.fixture
def calendar(tmp_path):
    path = tmp_path / "calendar.ics"
    raw = HEAD + LATIN1 + _split_fold() + b"END:VCALENDAR\r\n"
    path.write_bytes(raw)
    return path, raw


def test_latin1_and_split_folds_are_read_as_text(calendar):
    path, _ = calendar
    events = {e.id: e for e in ics.load(path).events}
    assert events["latin1@x"].title == "Café crème" and events["latin1@x"].location == "Zürich"
    assert events["folded@x"].title == TITLE


@pytest.mark.parametrize("newline", [b"\r\n", b"\n"])
def test_a_write_keeps_every_untouched_byte(calendar, newline):
    path, raw = calendar
    raw = raw.replace(b"\r\n", newline)
    path.write_bytes(raw)
    with ics.transaction(path) as st:
        create_event(st, title="Zahnarzt", start="2026-12-05T09:00")
    new = path.read_bytes()
    body = raw[: raw.index(b"END:VCALENDAR")]
    assert new.startswith(body), "an event the write never touched changed its bytes"
    assert b"\xef\xbf\xbd" not in new  # no U+FFFD anywhere
    if newline == b"\n":
        assert b"\r\n" not in new  # the new event follows the file's own line endings
    titles = {e.title for e in ics.load(path).events}
    assert titles == {"Café crème", TITLE, "Zahnarzt"}
    assert not list(path.parent.glob("calendar.ics.before-reencode-*"))  # nothing was re-encoded


def test_deleting_one_event_keeps_the_others_bytes(calendar):
    path, raw = calendar
    with ics.transaction(path) as st:
        delete_event(st, event_id="folded@x")
    assert path.read_bytes() == HEAD + LATIN1 + b"END:VCALENDAR\r\n"


def test_changing_a_latin1_event_keeps_a_backup_first(calendar):
    path, raw = calendar
    with ics.transaction(path) as st:
        next(e for e in st.events if e.id == "latin1@x").title = "Café noir"
    events = {e.id: e for e in ics.load(path).events}
    assert events["latin1@x"].title == "Café noir" and events["latin1@x"].location == "Zürich"
    assert events["folded@x"].title == TITLE
    (backup,) = path.parent.glob("calendar.ics.before-reencode-*")
    assert backup.read_bytes() == raw  # the guess (Latin-1) can be undone
    assert _split_fold() in path.read_bytes()  # the untouched event is byte for byte the same


def test_a_read_only_latin1_calendar_gets_neither_a_write_nor_a_stray_copy(calendar):
    path, raw = calendar
    path.chmod(0o444)
    with pytest.raises(ics.StoreError, match="read-only"):
        with ics.transaction(path) as st:
            next(e for e in st.events if e.id == "latin1@x").title = "Café noir"
    assert path.read_bytes() == raw
    assert sorted(p.name for p in path.parent.iterdir()) == ["calendar.ics", "calendar.ics.lock"]
