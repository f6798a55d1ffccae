"""Every suite's tools in one place: what `botpsy tools list` prints and what MCP serves.

`SUITES` maps a suite name to its `Suite` record: its tools, state model, store and policy, its
user-side tools (the telecom customer's phone: the assistant never calls them, a simulated user
does) and what the assistant can do with it, in one line. It is the one record of a suite: the
workspace, MCP and `botpsy tools list` read it, and each suite's world (`botpsy.worlds`, a layer
above) takes its name, tools, state type and capability from it rather than restating them;
`worlds.suite_world(name)` gives the world of a suite. Tool names are unique across suites (a test
pins that), so a call can be routed by name alone.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from botpsy.tools import (
    banking,
    calendar,
    contacts,
    device,
    files,
    mail,
    messages,
    notes,
    retail,
    shopping,
    telecom,
    travel,
    vehicle,
    web,
)
from botpsy.tools.base import Tool


@dataclass(frozen=True)
class Suite:
    name: str
    tools: list[Tool]
    state_type: type[BaseModel]
    store: str  # where the workspace keeps it: ics | maildir | sqlite | folder
    # What the assistant can do with it, one verb phrase after "I can": the answer to "What can you
    # do?" (`agent.capabilities`), the world's refusals and its training answers.
    capability: str
    policy: str = ""  # written policy the agent must follow (support suites)
    user_tools: list[Tool] = field(default_factory=list)  # what the simulated user runs on their side


SUITES: dict[str, Suite] = {
    s.name: s
    for s in [
        Suite(
            "calendar",
            calendar.TOOLS,
            calendar.CalendarState,
            "ics",
            "list, find, create, move and delete events, and find free time in your calendar",
        ),
        Suite(
            "email",
            mail.TOOLS,
            mail.EmailState,
            "maildir",
            "read, search, send, reply to, forward, archive and delete your email",
        ),
        Suite(
            "messages",
            messages.TOOLS,
            messages.MessagesState,
            "sqlite",
            "read, search, send and delete your text messages",
        ),
        Suite(
            "contacts",
            contacts.TOOLS,
            contacts.ContactsState,
            "sqlite",
            "look up, add, update and delete your contacts",
        ),
        Suite(
            "files",
            files.TOOLS,
            files.FilesState,
            "folder",
            "list, read, search, write, move and delete files in your files folder",
        ),
        Suite(
            "notes",
            notes.TOOLS,
            notes.NotesState,
            "sqlite",
            "find, write and delete notes, and manage your reminders",
        ),
        Suite(
            "device",
            device.TOOLS,
            device.DeviceState,
            "sqlite",
            "change wifi, bluetooth, volume, brightness, do-not-disturb and alarms on this device",
        ),
        Suite(
            "vehicle",
            vehicle.TOOLS,
            vehicle.VehicleState,
            "sqlite",
            "lock and unlock your car, set its climate and windows, navigate and manage charging",
        ),
        Suite(
            "shopping",
            shopping.TOOLS,
            shopping.ShoppingState,
            "sqlite",
            "search the shop, manage your cart, place orders and return items",
        ),
        Suite(
            "banking",
            banking.TOOLS,
            banking.BankingState,
            "sqlite",
            "check balances and transactions, transfer money, pay bills and set budgets",
        ),
        Suite(
            "travel",
            travel.TOOLS,
            travel.TravelState,
            "sqlite",
            "search, book, change and cancel flights and hotels",
        ),
        Suite(
            "web",
            web.TOOLS,
            web.WebState,
            "sqlite",
            "search the web (a local index on this device) and read pages",
        ),
        Suite(
            "retail",
            retail.TOOLS,
            retail.RetailState,
            "sqlite",
            "help with Northwind Goods orders: status, cancellations, address changes, returns and exchanges",
            retail.POLICY,
        ),
        Suite(
            "telecom",
            telecom.TOOLS,
            telecom.TelecomState,
            "sqlite",
            "help with your Telly Mobile line: connection problems, data packs, bills and plans",
            telecom.POLICY,
            telecom.USER_TOOLS,
        ),
    ]
}
USER_SIDE: dict[str, list[Tool]] = {"telecom_phone": SUITES["telecom"].user_tools}


def all_tools() -> list[Tool]:
    return [t for s in SUITES.values() for t in s.tools]


def tools_by_name() -> dict[str, Tool]:
    return {t.name: t for t in all_tools()}


def suite_of(tool_name: str) -> Suite:
    for s in SUITES.values():
        if any(t.name == tool_name for t in s.tools):
            return s
    raise KeyError(f"no tool named {tool_name!r}")


# The reasoning of the capability answer's turn: the worlds train on it and the agent writes it when
# code answers, so the history holds the same tokens in training and at run time (issue 34).
CAPABILITY_REASONING = "A question about me; no tool is needed."


def capability_answer(tools: Iterable[Tool]) -> str | None:
    """What the installed suites let the assistant do, in their records' words and installed order:
    the runtime's answer to "What can you do?" (`agent.capabilities`) and the worlds' in training.
    None when a tool belongs to no suite (code cannot say what it does) or none is installed."""
    owner = {t.name: s for s in SUITES.values() for t in s.tools}
    lines: list[str] = []
    for t in tools:
        suite = owner.get(t.name)
        if suite is None:
            return None
        if suite.capability not in lines:
            lines.append(suite.capability)
    if not lines:
        return None
    if len(lines) == 1:
        return f"I can {lines[0]}."
    return "I can:\n" + "\n".join(f"- {line}" for line in lines)


def tool_record(t: Tool, side: str = "assistant") -> dict[str, Any]:
    return {
        "name": t.name,
        "suite": t.suite,
        "description": t.description,
        "labels": t.labels.as_dict(),
        "parameters": t.parameters,
        "side": side,
    }


def tools_json(include_user_side: bool = True) -> dict[str, Any]:
    """The object `botpsy tools list --json` prints: every tool with its suite, schema and labels."""
    tools = [tool_record(t) for t in all_tools()]
    if include_user_side:
        tools += [tool_record(t, "user") for ts in USER_SIDE.values() for t in ts]
    return {"suites": list(SUITES), "tools": tools}


def tools_table() -> list[tuple[str, str, str, str]]:
    """Rows (suite, name, labels, description) for the plain `botpsy tools list`."""
    rows = []
    for t in all_tools():
        labels = ",".join(k for k, v in t.labels.as_dict().items() if v) or "read"
        rows.append((t.suite, t.name, labels, t.description))
    return rows
