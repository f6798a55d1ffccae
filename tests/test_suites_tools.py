"""Every suite's tools refuse bad input with a clear ToolError and leave the state untouched.

Two layers: a table of specific refusals the issue names (unknown id, malformed date, insufficient
funds, path outside the sandbox, ...), and a deterministic fuzz over every tool of every suite:
hostile values for every parameter must end in success or ToolError — never another exception —
and a refused call must not have changed the state (worlds keep no transaction to roll back).
"""

import itertools
import json
import random

import pytest

from botpsy.tools.base import ToolError
from botpsy.tools.registry import SUITES
from botpsy.worlds import DOMAINS
from botpsy.worlds.base import state_hash
from botpsy.worlds.calendar import seed_state


def seeded(suite: str, seed: int = 5):
    rng = random.Random(f"test:{suite}:{seed}")
    return seed_state(rng) if suite == "calendar" else DOMAINS[suite].seed(rng)


def tool(suite: str, name: str):
    return next(t for t in SUITES[suite].tools if t.name == name)


REFUSALS = [
    ("contacts", "update_contact", {"contact_id": "c-404", "phone": "+15550001111"}, "no contact with id"),
    ("contacts", "add_contact", {"name": "Zed"}, "phone or an email"),
    ("contacts", "add_contact", {"name": "Zed", "email": "not-an-email"}, "expected an email"),
    ("messages", "send_message", {"to": "Nobody Known", "text": "hi"}, "no conversation"),
    ("messages", "send_message", {"to": "+15550001111", "text": "   "}, "must not be empty"),
    ("notes", "add_reminder", {"text": "x", "due": "tomorrow-ish"}, "expected a date and time"),
    ("notes", "complete_reminder", {"reminder_id": "r-99"}, "no reminder"),
    ("device", "set_volume", {"level": 140}, "expected 0 to 100"),
    ("device", "set_alarm", {"time": "25:61"}, "expected a time"),
    ("device", "set_wifi", {"on": True, "network": "Evil Twin"}, "not a known network"),
    ("vehicle", "set_climate", {"temperature": 40}, "16 to 28"),
    ("vehicle", "navigate_to", {"destination": "Atlantis"}, "does not know"),
    (
        "banking",
        "transfer_money",
        {"from_account": "acc-1", "to": "acc-2", "amount": 99_999},
        "insufficient funds",
    ),
    ("banking", "transfer_money", {"from_account": "acc-1", "to": "acc-2", "amount": -5}, "positive"),
    ("banking", "transfer_money", {"from_account": "acc-1", "to": "acc-2", "amount": 1.234}, "two decimals"),
    (
        "banking",
        "transfer_money",
        {"from_account": "acc-1", "to": "Mallory", "amount": 5},
        "neither an account",
    ),
    ("banking", "pay_bill", {"bill_id": "bill-9", "from_account": "acc-1"}, "no bill"),
    ("shopping", "place_order", {"payment_method": "bitcoin"}, "payment_method"),
    ("shopping", "add_to_cart", {"product_id": "P999"}, "no product"),
    (
        "travel",
        "search_flights",
        {"origin": "Gotham", "destination": "BER", "date": "2026-12-05"},
        "unknown airport",
    ),
    (
        "travel",
        "search_hotels",
        {"city": "Rome", "check_in": "2026-12-09", "check_out": "2026-12-08"},
        "after",
    ),
    ("web", "open_page", {"url": "https://evil.example/"}, "not in the local corpus"),
    ("web", "search_web", {"query": '"*:-'}, "at least one word"),
    ("email", "send_email", {"to": ["bob"], "subject": "s", "body": "b"}, "expected an email"),
    ("email", "move_email", {"email_id": "m-1", "folder": "spam-folder"}, "no folder"),
    ("files", "read_file", {"path": "../../etc/passwd"}, "leaves your files folder"),
    ("files", "read_file", {"path": "/etc/passwd"}, "absolute path"),
    ("files", "read_file", {"path": "C:/Windows/win.ini"}, "absolute path"),
    ("files", "write_file", {"path": "Notes/todo.txt", "text": "x"}, "overwrite"),
    ("files", "read_file", {"path": "Photos/beach.jpg"}, "binary"),
    ("retail", "cancel_order", {"order_id": "W9999", "reason": "no longer needed"}, "no order"),
    ("retail", "find_customer", {"name": "Ann"}, "full name together with a zip"),
    ("telecom", "find_line", {"phone_number": "12"}, "expected a phone number"),
    ("telecom", "add_data_pack", {"line_id": "L001", "gigabytes": 2}, "expected one of"),
    ("calendar", "create_event", {"title": "x", "start": "next tuesday"}, "expected a date"),
]


@pytest.mark.parametrize(
    ("suite", "name", "args", "match"), REFUSALS, ids=[f"{r[1]}-{i}" for i, r in enumerate(REFUSALS)]
)
def test_refusal_is_clear_and_changes_nothing(suite, name, args, match):
    state = seeded(suite)
    before = state_hash(state)
    with pytest.raises(ToolError, match=match):
        tool(suite, name)(state, **args)
    assert state_hash(state) == before


def test_symlink_entries_are_not_followed():
    from botpsy.tools.files import Entry, FilesState

    state = FilesState(
        entries={
            "out": Entry(kind="link", target="/etc", escapes=True),
            "docs": Entry(kind="dir"),
            "docs/a.txt": Entry(kind="file", content="a", size=1),
        }
    )
    for name, args in [
        ("read_file", {"path": "out/passwd"}),
        ("list_files", {"folder": "out"}),
        ("write_file", {"path": "out/x", "text": "x"}),
        ("read_file", {"path": "out"}),
    ]:
        with pytest.raises(ToolError, match="link"):
            tool("files", name)(state, **args)
    # the link itself may be removed: that never touches its target
    tool("files", "delete_file")(state, path="out")
    assert "out" not in state.entries


def test_unknown_and_missing_arguments_are_refused_before_the_tool_runs():
    state = seeded("banking")
    t = tool("banking", "transfer_money")
    with pytest.raises(ToolError, match="missing required"):
        t(state, from_account="acc-1")
    with pytest.raises(ToolError, match="unknown argument"):
        t(state, from_account="acc-1", to="acc-2", amount=5, currency="BTC")


HOSTILE = [
    "",
    " ",
    "zzz",
    "../../x",
    "/etc/passwd",
    "2026-13-45",
    "25:99",
    "-1",
    "1e309",
    "nan",
    "Robert'); DROP TABLE--",
    "\x00",
    "ü" * 3000,
    -1,
    0,
    10**12,
    3.5,
    True,
    [],
    ["a", 1],
    {"k": "v"},
    None,
]


def _cases(t, rng):
    names = list(t.parameters["properties"])
    for _ in range(12):
        yield {n: rng.choice(HOSTILE) for n in names if n in t.parameters["required"] or rng.random() < 0.5}


@pytest.mark.parametrize("suite", list(SUITES))
def test_fuzz_every_tool_refuses_cleanly(suite):
    rng = random.Random(f"fuzz:{suite}")
    state = seeded(suite)
    for t in SUITES[suite].tools:
        for args in itertools.chain([{}], _cases(t, rng)):
            before = json.dumps(state.canonical(), sort_keys=True, default=str)
            try:
                t(state, **args)
            except ToolError as e:
                assert str(e), t.name
                after = json.dumps(state.canonical(), sort_keys=True, default=str)
                assert after == before, f"{t.name}({args!r}) changed the state before refusing: {e}"
            except Exception as e:  # pragma: no cover - the failure message is the point
                pytest.fail(f"{t.name}({args!r}) raised {type(e).__name__}: {e}")


def test_find_events_matches_a_day_named_in_the_query():
    """A model that puts the day into the query ("Thursday 2026-12-03") still finds that day's events."""
    from botpsy.tools.calendar import CalendarState, create_event, find_events

    state = CalendarState()
    create_event(state, title="Dentist", start="2026-12-03T10:00")  # a Thursday
    create_event(state, title="Standup", start="2026-12-04T09:00", location="Room 2")

    def titles(query, **kw):
        return [e["title"] for e in find_events(state, query=query, **kw)["events"]]

    assert titles("Thursday 2026-12-03") == ["Dentist"]
    assert titles("fri") == ["Standup"] and titles("2026-12-04, standup") == ["Standup"]
    assert titles("dentist friday") == [] and titles("th") == []  # every word must match; no stubs
    assert titles("room", date="2026-12-03") == [] and titles("room") == ["Standup"]
