"""The iCalendar store: round trip, atomic writes, corrupt files, locks, read-only folders."""

import multiprocessing as mp
import os
from pathlib import Path

import pytest

from botpsy.stores import ics
from botpsy.tools.calendar import CalendarState, create_event


def test_round_trip(tmp_path):
    st = CalendarState()
    create_event(st, title="Dentist", start="2026-12-03T10:00", location="Main St", attendees=["Ann"])
    path = tmp_path / "calendar.ics"
    ics.save(st, path)
    assert b"BEGIN:VCALENDAR" in path.read_bytes()
    assert ics.load(path) == st


def test_foreign_ics_is_read(tmp_path):
    path = tmp_path / "c.ics"
    path.write_text(
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//x//y//EN\r\nBEGIN:VEVENT\r\nUID:abc@x\r\n"
        "SUMMARY:Holiday\r\nDTSTART;VALUE=DATE:20261224\r\nDTEND;VALUE=DATE:20261226\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
    )
    ev = ics.load(path).events[0]
    assert (ev.id, ev.title, ev.start, ev.end) == ("abc@x", "Holiday", "2026-12-24T00:00", "2026-12-26T00:00")


def test_corrupt_file_is_backed_up_and_never_overwritten(tmp_path):
    path = tmp_path / "calendar.ics"
    junk = b"BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nDTSTART:notadate\r\n"
    path.write_bytes(junk)
    with pytest.raises(ics.StoreError, match="left untouched"):
        with ics.transaction(path) as st:
            create_event(st, title="x", start="2026-12-03T10:00")
    assert path.read_bytes() == junk
    backups = list(tmp_path.glob("calendar.ics.corrupt-*"))
    assert len(backups) == 1 and backups[0].read_bytes() == junk


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores folder permissions")
def test_read_only_workspace_gives_clear_error(tmp_path):
    path = tmp_path / "calendar.ics"
    ics.save(CalendarState(), path)
    before = path.read_bytes()
    tmp_path.chmod(0o500)
    try:
        with pytest.raises(ics.StoreError):
            with ics.transaction(path) as st:
                create_event(st, title="x", start="2026-12-03T10:00")
    finally:
        tmp_path.chmod(0o700)
    assert path.read_bytes() == before


def test_failed_write_keeps_previous_version(tmp_path, monkeypatch):
    path = tmp_path / "calendar.ics"
    st = CalendarState()
    create_event(st, title="Keep me", start="2026-12-03T10:00")
    ics.save(st, path)
    before = path.read_bytes()

    def boom(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", boom)
    create_event(st, title="Lost", start="2026-12-04T10:00")
    with pytest.raises(ics.StoreError, match="nothing was changed"):
        ics.save(st, path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["calendar.ics"]  # no temp file left behind


def _add_many(path: str, who: str, n: int) -> None:
    for i in range(n):
        with ics.transaction(Path(path), timeout=30) as st:
            create_event(st, title=f"{who}-{i}", start=f"2026-12-{i + 1:02d}T10:00")


def test_concurrent_writers_lose_nothing(tmp_path):
    path = tmp_path / "calendar.ics"
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_add_many, args=(str(path), w, 8)) for w in ("a", "b")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
    titles = sorted(e.title for e in ics.load(path).events)
    assert len(titles) == 16 and len(set(titles)) == 16


def test_unwritable_folder_gives_clear_error_even_as_root(tmp_path):
    path = tmp_path / "calendar.ics"
    ics.save(CalendarState(), path)
    before = path.read_bytes()
    tmp_path.chmod(0o555)  # root could write here; the missing write bits say it must not
    try:
        with pytest.raises(ics.StoreError, match="read-only|writable"):
            with ics.transaction(path) as st:
                create_event(st, title="x", start="2026-12-03T10:00")
    finally:
        tmp_path.chmod(0o755)
    assert path.read_bytes() == before
    assert {p.name for p in tmp_path.iterdir()} <= {"calendar.ics", "calendar.ics.lock"}
