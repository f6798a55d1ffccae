"""Every suite's tools in one place: what `botpsy tools list` prints and what MCP serves.

`SUITES` maps a suite name to its `Suite` record: its tools, state model, store and policy, and its
user-side tools (the telecom customer's phone: the assistant never calls them, a simulated user
does). It is the one record of a suite: the workspace, MCP and `botpsy tools list` read it, and
each suite's world (`botpsy.worlds`, a layer above) takes its name, tools and state type from it
rather than restating them; `worlds.suite_world(name)` gives the world of a suite. Tool names are
unique across suites (a test pins that), so a call can be routed by name alone.
"""

from __future__ import annotations

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
    policy: str = ""  # written policy the agent must follow (support suites)
    user_tools: list[Tool] = field(default_factory=list)  # what the simulated user runs on their side


SUITES: dict[str, Suite] = {
    s.name: s
    for s in [
        Suite("calendar", calendar.TOOLS, calendar.CalendarState, "ics"),
        Suite("email", mail.TOOLS, mail.EmailState, "maildir"),
        Suite("messages", messages.TOOLS, messages.MessagesState, "sqlite"),
        Suite("contacts", contacts.TOOLS, contacts.ContactsState, "sqlite"),
        Suite("files", files.TOOLS, files.FilesState, "folder"),
        Suite("notes", notes.TOOLS, notes.NotesState, "sqlite"),
        Suite("device", device.TOOLS, device.DeviceState, "sqlite"),
        Suite("vehicle", vehicle.TOOLS, vehicle.VehicleState, "sqlite"),
        Suite("shopping", shopping.TOOLS, shopping.ShoppingState, "sqlite"),
        Suite("banking", banking.TOOLS, banking.BankingState, "sqlite"),
        Suite("travel", travel.TOOLS, travel.TravelState, "sqlite"),
        Suite("web", web.TOOLS, web.WebState, "sqlite"),
        Suite("retail", retail.TOOLS, retail.RetailState, "sqlite", retail.POLICY),
        Suite("telecom", telecom.TOOLS, telecom.TelecomState, "sqlite", telecom.POLICY, telecom.USER_TOOLS),
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
