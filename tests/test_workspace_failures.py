"""Every tool failure inside `Workspace.call` and `World.call` is a tool error the model reads.

Pins issue 14 item 3: these inputs used to raise out of the call (and end the session): a folded
Subject header in a reply or forward (ValueError from the email package), `attendees=[null]`
(AttributeError), `amount=1e308` (decimal.InvalidOperation), `start=9999-12-31T23:59`
(OverflowError), a JSON column that is not JSON (JSONDecodeError, and no backup made), a missing
workspace on a read-only file system (OSError), and a tool that raises something unforeseen.
A world call is all or nothing: a tool that changes the state and then fails leaves no half change.
"""

from __future__ import annotations

import errno
import json
import mailbox
import pathlib
import sqlite3
from datetime import datetime
from typing import Any

import pytest
from pydantic import BaseModel

from botpsy.stores.workspace import Workspace, seed_workspace
from botpsy.tools.base import Toolbox, ToolError, tool
from botpsy.worlds.base import World

CLOCK = lambda: datetime(2026, 12, 2, 8, 30)  # noqa: E731


def error_of(text: str) -> str:
    out = json.loads(text)
    assert isinstance(out, dict) and "error" in out, out
    return out["error"]


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """A workspace seeded with the suites these tests call (≈0.2 s once per module)."""
    root = tmp_path_factory.mktemp("failures") / "ws"
    seed_workspace(root, seed=4, suites=["calendar", "email", "banking", "notes", "device"])
    return root


@pytest.fixture
def ws(tmp_path, template):
    import shutil

    shutil.copytree(template, tmp_path / "ws")
    return Workspace(tmp_path / "ws", clock=CLOCK, me="alex.doe@example.com")


@pytest.mark.parametrize(
    "name,arguments,expected",
    [
        ("create_event", {"title": "x", "start": "2026-12-03T10:00", "attendees": [None]}, "null"),
        ("create_event", {"title": "x", "start": "9999-12-31T23:59"}, "year"),
        ("create_event", {"title": "x", "start": "2026-12-03T10:00", "end": "9999-12-31T23:59"}, "year"),
        ("create_event", {"title": "x", "start": "0001-01-01T00:00"}, "year"),
        ("transfer_money", {"from_account": "acc-1", "to": "acc-2", "amount": 1e308}, "at most"),
        (
            "transfer_money",
            {"from_account": "acc-1", "to": "acc-2", "amount": "1E+999999999"},
            "expected number",
        ),
        (
            "transfer_money",
            {"from_account": "acc-1", "to": "acc-2", "amount": float("inf")},
            "expected number",
        ),
        ("set_budget", {"category": "food", "amount": 1e308}, "at most"),
        ("list_events", {"date": "9999-12-31"}, "year"),
        ("send_email", {"to": ["a@b.cc", None], "subject": "s", "body": "b"}, "null"),
        ("set_alarm", {"time": "07:30", "days": [None]}, "null"),
    ],
)
def test_odd_arguments_are_tool_errors_and_change_nothing(ws, name, arguments, expected):
    if name not in ws.toolbox:
        pytest.skip(f"{name} is not installed")
    before = {p: p.read_bytes() for p in ws.root.rglob("*") if p.is_file() and p.name != "journal.jsonl"}
    assert expected in error_of(ws.call(name, arguments))
    assert {
        p: p.read_bytes() for p in ws.root.rglob("*") if p.is_file() and p.name != "journal.jsonl"
    } == before
    assert not ws.store_errors


def _add_folded(ws: Workspace) -> str:
    """A foreign mail whose long Subject is folded over three lines, as mail clients write it."""
    raw = (
        b"From: Zoe <zoe@example.net>\r\nTo: alex.doe@example.com\r\n"
        b"Subject: Quarterly planning offsite: agenda, travel arrangements\r\n and the dinner\r\n\tvenue\r\n"
        b"Date: Mon, 30 Nov 2026 10:00:00 +0000\r\nMessage-ID: <folded@example.net>\r\n\r\nSee you there.\r\n"
    )
    mailbox.Maildir(ws.mail_path).add(mailbox.MaildirMessage(raw))
    hits = json.loads(ws.call("search_emails", {"query": "zoe"}))["emails"]
    assert len(hits) == 1
    assert (
        hits[0]["subject"] == "Quarterly planning offsite: agenda, travel arrangements and the dinner venue"
    )
    return hits[0]["id"]


@pytest.mark.parametrize(
    "name,extra,prefix",
    [
        ("reply_to_email", {"body": "Count me in."}, "Re: "),
        ("forward_email", {"to": ["sam@example.org"], "note": "FYI"}, "Fwd: "),
    ],
)
def test_folded_subject_is_unfolded_in_replies_and_forwards(ws, name, extra, prefix):
    mail_id = _add_folded(ws)
    out = json.loads(ws.call(name, {"email_id": mail_id, **extra}))
    assert "error" not in out, out
    sent = mailbox.Maildir(ws.mail_path).get_folder("Sent")
    mine = [m for m in sent if m["X-Botpsy-Id"] == out["sent"]["id"]]
    assert len(mine) == 1
    subject = " ".join(str(mine[0]["Subject"]).split())
    assert subject == prefix + "Quarterly planning offsite: agenda, travel arrangements and the dinner venue"


def test_a_subject_with_a_line_break_from_the_model_is_sent_on_one_line(ws):
    out = json.loads(
        ws.call("send_email", {"to": ["bob@example.com"], "subject": "Hi\r\nBcc: x@y.zz", "body": "b"})
    )
    assert "error" not in out, out
    sent = [
        m for m in mailbox.Maildir(ws.mail_path).get_folder("Sent") if m["X-Botpsy-Id"] == out["sent"]["id"]
    ]
    assert sent[0]["Bcc"] is None and sent[0]["Subject"] == "Hi Bcc: x@y.zz"


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE banking_settings SET value = '{not json' WHERE key = (SELECT key FROM banking_settings LIMIT 1)",
        "INSERT OR REPLACE INTO banking_settings (key, value) VALUES ('budgets', '[[[')",
    ],
)
def test_bad_json_in_the_database_is_a_store_error_with_a_backup(ws, sql):
    con = sqlite3.connect(ws.db_path)
    con.execute(sql)
    con.commit()
    con.close()
    before = ws.db_path.read_bytes()
    message = error_of(ws.call("list_accounts", {}))
    assert "malformed" in message and "left untouched" in message and "a copy is at" in message
    assert ws.store_errors and ws.db_path.read_bytes() == before
    backups = list(ws.root.glob("botpsy.db.corrupt-*"))
    assert len(backups) == 1 and backups[0].read_bytes() == before


def test_bad_json_in_a_record_column_is_a_store_error(ws):
    ws.call("set_alarm", {"time": "07:30", "days": ["mon"]})
    con = sqlite3.connect(ws.db_path)
    con.execute("UPDATE device_alarms SET days = '{oops'")
    con.commit()
    con.close()
    assert "malformed" in error_of(ws.call("get_device_status", {}))
    assert list(ws.root.glob("botpsy.db.corrupt-*"))


@pytest.mark.parametrize(
    "name,arguments",
    [
        ("create_note", {"title": "x"}),
        ("create_event", {"title": "x", "start": "2026-12-03T10:00"}),
        ("send_email", {"to": ["a@b.cc"], "subject": "s", "body": "b"}),
    ],
)
def test_a_missing_workspace_on_a_read_only_file_system_is_a_clear_error(
    tmp_path, monkeypatch, name, arguments
):
    def read_only(self, *a, **k):
        raise OSError(errno.EROFS, "Read-only file system", str(self))

    monkeypatch.setattr(pathlib.Path, "mkdir", read_only)
    ws = Workspace(tmp_path / "nowhere" / "ws", clock=CLOCK)
    message = error_of(ws.call(name, arguments))
    assert "read-only" in message.lower(), message
    assert ws.store_errors


# ---- an unforeseen exception in any tool ---------------------------------------------------------


@tool()
def explode(state, n: int) -> dict:
    """Fail in a way no validation foresaw.

    Args:
        n: anything
    """
    return {"ratio": 1 / (n - n)}


@tool()
def huge(state, n: int = 1) -> dict:
    """Return what JSON cannot write.

    Args:
        n: unused
    """
    return {"n": 10**5000}


def test_world_call_turns_any_exception_into_a_tool_error():
    world = World([explode, huge], state=None)
    assert "ZeroDivisionError" in error_of(world.call("explode", {"n": 3}))
    assert "huge could not run" in error_of(world.call("huge", {}))


class Shelf(BaseModel):
    items: list[str] = []
    count: int = 0
    nested: dict[str, list[int]] = {}


@tool(mutates=True)
def stock(state: Shelf, item: str, fail: str = "") -> dict:
    """Add an item, then fail half-way when told to.

    Args:
        item: what to add
        fail: "tool" raises a ToolError after the change, "crash" a ZeroDivisionError, "interrupt" Ctrl-C
    """
    state.items.append(item)
    state.nested.setdefault("a", []).append(len(state.items))
    state.count += 1
    if fail == "tool":
        raise ToolError(f"{item} does not fit")
    if fail == "crash":
        return {"ratio": 1 / 0}
    if fail == "interrupt":
        raise KeyboardInterrupt
    return {"ok": True}


class HookedShelf(Shelf):
    hook: Any = None  # a value pickle cannot hold: the snapshot falls back to a deep copy


@pytest.mark.parametrize("fail", ["tool", "crash", "interrupt"])
@pytest.mark.parametrize("kind", [Shelf, HookedShelf])
def test_a_tool_that_changes_the_state_and_then_fails_changes_nothing(fail, kind):
    """A failed call left its half change in the world: in the state hash, and in what the model read."""
    shelf = kind(items=["tea"], count=1, nested={"a": [1]})
    if kind is HookedShelf:
        shelf.hook = lambda: 0
    world = World([stock], shelf)
    before = world.hash()
    if fail == "interrupt":
        with pytest.raises(KeyboardInterrupt):
            world.call("stock", {"item": "jam", "fail": fail})
    else:
        error_of(world.call("stock", {"item": "jam", "fail": fail}))
    assert world.state is shelf  # restored in place: builders hold this object
    assert (shelf.items, shelf.count, shelf.nested) == (["tea"], 1, {"a": [1]}) and world.hash() == before
    assert "ok" in json.loads(world.call("stock", {"item": "jam"}))  # a good call still applies
    assert shelf.items == ["tea", "jam"] and shelf.count == 2 and shelf.nested == {"a": [1, 2]}


def test_workspace_call_and_execute_turn_any_exception_into_a_tool_error(tmp_path):
    ws = Workspace(tmp_path, suites=["notes"], extra_tools=[explode, huge])
    assert "ZeroDivisionError" in error_of(ws.call("explode", {"n": 3}))
    assert "huge could not run" in error_of(ws.call("huge", {}))
    with pytest.raises(ToolError, match="ZeroDivisionError"):
        ws.execute("explode", {"n": 3})


def test_a_5000_digit_integer_is_refused_with_a_short_message(tmp_path):
    ws = Workspace(tmp_path, suites=["notes"], extra_tools=[explode])
    message = error_of(ws.call("explode", {"n": 10**5000}))
    assert "at most 19 digits" in message and len(message) < 200
    assert Toolbox([explode])["explode"].name == "explode"


@pytest.mark.parametrize("step", ["_load", "_save"])
def test_a_store_failure_is_not_blamed_on_the_arguments(tmp_path, monkeypatch, step):
    """Issue 36 item 3: an unexpected exception while reading or saving the user's data is a store
    error for the user, not "could not run with these arguments" (which made the model retry)."""
    from email.errors import HeaderParseError

    from botpsy.stores.maildir import MaildirStore

    ws = seed_workspace(tmp_path / "ws", seed=4, suites=["email"])

    def broken(*a, **k):
        raise HeaderParseError("Base64 decoding error")

    monkeypatch.setattr(MaildirStore, step, broken)
    message = error_of(ws.call("send_email", {"to": ["a@b.cc"], "subject": "s", "body": "b"}))
    assert "could not run with these arguments" not in message, message
    assert "email data could not be used" in message and "HeaderParseError" in message
    assert ws.store_errors and "nothing was changed" in ws.store_errors[-1]
