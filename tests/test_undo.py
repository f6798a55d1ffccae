"""Undo (issue 38): every mutating tool of every suite, called on a real workspace, then undone.

The calls come from the worlds' gold tasks (the first task whose gold conversation uses the
tool, its earlier gold calls applied first), so they are the calls the model is trained to make,
with ids that exist. After `undo`, the store holds what it held before the call: the parsed state
always, and the bytes where the store is a file (calendar.ics, the files sandbox, each Maildir
folder's message files). A call that
cannot be undone (it sent something off the device) is refused with the reason, and so is an
undo after the record changed since.
"""

from __future__ import annotations

import json
from datetime import datetime
from functools import cache

import pytest

from botpsy.stores.common import CLOCK_FIELDS
from botpsy.stores.undo import UndoError, undo
from botpsy.stores.workspace import Workspace, seed_workspace
from botpsy.tools.registry import SUITES
from botpsy.worlds.tasks import generate_tasks

CLOCK = datetime(2026, 12, 2, 9, 0)
MUTATING = [(s, t.name) for s, suite in SUITES.items() for t in suite.tools if t.labels.mutates]


@cache
def tasks(suite: str):
    return generate_tasks(suite, 150, 0, "train")


def gold_cases(suite: str, name: str):
    """(initial state, calls before the target, the target call), from each gold task using it."""
    for task in tasks(suite):
        calls = task.gold_calls
        for i, c in enumerate(calls):
            if c.name == name:
                yield task.initial_state, calls[:i], c
                break


def gold_case(suite: str, name: str):
    return next(gold_cases(suite, name), None)


def parsed(ws: Workspace, suite: str) -> dict:
    """The parsed state. SQLite keeps rows in rowid order and a restored row is inserted anew (at
    the end), so its tables compare by key; every other store compares in order."""
    data = {k: v for k, v in ws.read(suite).model_dump().items() if k not in CLOCK_FIELDS}
    if SUITES[suite].store == "sqlite":
        for k, v in data.items():
            if isinstance(v, list) and v and isinstance(v[0], dict):
                key = next(x for x in ("id", "url", "product_id", "name") if x in v[0])
                data[k] = sorted(v, key=lambda r: str(r[key]))
    return data


def raw(ws: Workspace, suite: str) -> dict:
    kind = SUITES[suite].store
    if kind == "ics":
        return {"calendar.ics": ws.calendar_path.read_bytes()}
    if kind == "folder":
        return {
            str(p.relative_to(ws.root)): p.read_bytes()
            for p in sorted(ws.files_path.rglob("*"))
            if p.is_file()
        }
    if kind == "maildir":  # each mail folder's message files, by content (names carry flags)
        boxes: dict[str, list[bytes]] = {}
        for p in ws.mail_path.rglob("*"):
            if p.is_file() and p.parent.name in ("cur", "new"):
                boxes.setdefault(str(p.parent.parent.relative_to(ws.mail_path)), []).append(p.read_bytes())
        return {k: sorted(v) for k, v in boxes.items()}
    return {}


def workspace_for(tmp_path, suite: str, state: dict) -> Workspace:
    ws = Workspace(tmp_path / "ws", suites=[suite], clock=lambda: CLOCK)
    ws.write(suite, SUITES[suite].state_type.model_validate(state))
    return ws


def ok(text: str) -> dict:
    body = json.loads(text)
    assert not (isinstance(body, dict) and "error" in body), body
    return body


@pytest.mark.parametrize("suite,name", MUTATING, ids=[n for _, n in MUTATING])
def test_call_then_undo_restores_the_store(tmp_path, suite, name):
    if gold_case(suite, name) is None:
        pytest.skip(f"no gold task uses {name}: covered by test_undo_extra.py")
    # The first gold call that changes the store (one may set what is already set).
    for n, (state, earlier, call) in enumerate(gold_cases(suite, name)):
        ws = workspace_for(tmp_path / str(n), suite, state)
        for c in earlier:
            ws.call(c.name, c.arguments)
        before_parsed, before_raw = parsed(ws, suite), raw(ws, suite)
        ok(ws.call(call.name, call.arguments))
        if parsed(ws, suite) != before_parsed or raw(ws, suite) != before_raw:
            break
    else:
        pytest.fail(f"no gold call of {name} changed the store")
    tool = ws.toolbox[name]
    if tool.labels.egress:
        with pytest.raises(UndoError, match="cannot be undone: .*sent data off the device"):
            undo(ws)
        return
    done = undo(ws)
    assert done.tool == name and done.records
    assert parsed(ws, suite) == before_parsed
    assert raw(ws, suite) == before_raw
    with pytest.raises(UndoError, match="nothing to undo|undone already"):
        undo(ws, done.of)


def test_every_mutating_tool_is_covered_here_or_in_the_extra_cases():
    from test_undo_extra import EXTRA

    missing = [n for s, n in MUTATING if gold_case(s, n) is None and n not in EXTRA]
    assert not missing


def test_undo_refuses_when_the_record_changed_since(tmp_path):
    ws = seed_workspace(tmp_path / "ws", seed=1, suites=["notes"])
    created = ok(ws.call("create_note", {"title": "Groceries", "body": "milk"}))["created"]
    ok(ws.call("append_to_note", {"note_id": created["id"], "text": "eggs"}))
    first = ws.control.journal.read().records[-2]
    with pytest.raises(UndoError, match=f"notes/{created['id']} changed since"):
        undo(ws, first["id"])
    assert [n.id for n in ws.read("notes").notes].count(created["id"]) == 1  # nothing was restored
    undo(ws)  # the append, then the create: newest first works
    undo(ws)
    assert created["id"] not in [n.id for n in ws.read("notes").notes]


def test_calendar_undo_is_byte_exact_and_the_journal_says_so(tmp_path):
    ws = seed_workspace(tmp_path / "ws", seed=2, suites=["calendar"])
    before = ws.calendar_path.read_bytes()
    event = ws.read("calendar").events[0]
    ok(ws.call("update_event", {"event_id": event.id, "title": "Moved dentist"}))
    ok(ws.call("delete_event", {"event_id": event.id}))
    assert undo(ws).exact_bytes and undo(ws).exact_bytes
    assert ws.calendar_path.read_bytes() == before
    kinds = [r.get("kind") for r in ws.control.journal.read().records]
    assert kinds == ["call", "call", "undo", "undo"]


def test_only_the_newest_calendar_copies_are_kept_and_older_actions_still_undo(tmp_path):
    from botpsy.stores.control import KEPT_FILES

    ws = seed_workspace(tmp_path / "ws", seed=2, suites=["calendar"])
    first = ok(ws.call("create_event", {"title": "first", "start": "2026-12-20T10:00"}))["created"]["id"]
    for i in range(KEPT_FILES + 3):
        ok(ws.call("create_event", {"title": f"e{i}", "start": "2026-12-21T10:00"}))
    assert len(list((ws.root / "undo").iterdir())) == KEPT_FILES
    first_id = ws.control.journal.read().records[0]["id"]
    done = undo(ws, first_id)
    assert not done.exact_bytes and first not in [e.id for e in ws.read("calendar").events]
