"""Messages suite: text conversations (SMS/chat) kept per phone number.

A conversation is every message with one number; its display name comes from the messages
themselves (what the phone showed), so the suite works without the contacts suite. Sending is
egress: the text leaves the device. Incoming texts are untrusted data.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from botpsy.tools.base import ToolError, suite, tool
from botpsy.tools.common import (
    PHONE_RE,
    clip,
    int_range,
    matches,
    next_id,
    norm,
    phone_arg,
    query_arg,
    text_arg,
)


class Text(BaseModel):
    id: str
    number: str  # the other party, normalised
    name: str = ""  # display name, if known
    direction: Literal["in", "out"]
    text: str
    time: str  # YYYY-MM-DDTHH:MM
    read: bool = True

    def summary(self) -> dict:
        d = {
            "id": self.id,
            "from" if self.direction == "in" else "to": self.name or self.number,
            "text": self.text,
            "time": self.time,
        }
        if not self.read:
            d["unread"] = True
        return d


class MessagesState(BaseModel):
    messages: list[Text] = Field(default_factory=list)
    now: str = "2026-12-01T09:00"  # the device clock; stamps sent messages

    def canonical(self) -> list[dict]:
        rows = [
            {**m.model_dump(), "name": norm(m.name), "text": " ".join(m.text.split())} for m in self.messages
        ]
        return sorted(rows, key=lambda r: (r["time"], r["id"]))

    def resolve(self, who: str, field: str) -> tuple[str, str]:
        """(number, name) of a conversation partner given a number or a name seen in the messages."""
        who = who.strip()
        if not who:
            raise ToolError(f"{field}: give a phone number or a name")
        if PHONE_RE.match(who):
            number = phone_arg(who, field)
            name = next((m.name for m in self.messages if m.number == number and m.name), "")
            return number, name
        numbers = {m.number: m.name for m in self.messages if m.name and norm(who) in norm(m.name)}
        if len(numbers) == 1:
            return next(iter(numbers.items()))
        if numbers:
            shown = ", ".join(f"{n} ({num})" for num, n in numbers.items())
            raise ToolError(f"{field}: {who!r} matches several people: {shown}; give the number")
        raise ToolError(
            f"{field}: no conversation with {who!r}; give a phone number (find it with find_contacts)"
        )


@tool()
def list_conversations(state: MessagesState) -> dict:
    """List conversations, newest first, with their last message."""
    last: dict[str, Text] = {}
    unread: dict[str, int] = {}
    for m in state.messages:
        if m.number not in last or m.time >= last[m.number].time:
            last[m.number] = m
        unread[m.number] = unread.get(m.number, 0) + (m.direction == "in" and not m.read)
    rows = sorted(last.values(), key=lambda m: m.time, reverse=True)
    return {
        "conversations": [
            {
                "with": m.name or m.number,
                "number": m.number,
                "last": clip(m.text, 80),
                "time": m.time,
                **({"unread": unread[m.number]} if unread[m.number] else {}),
            }
            for m in rows[:20]
        ]
    }


@tool()
def read_messages(state: MessagesState, contact: str, limit: int = 10) -> dict:
    """Read the latest messages with someone.

    Args:
        contact: name or phone number
        limit: how many (default 10)
    """
    int_range(limit, "limit", 1, 50)
    number, name = state.resolve(contact, "contact")
    thread = sorted((m for m in state.messages if m.number == number), key=lambda m: (m.time, m.id))
    return {"with": name or number, "number": number, "messages": [m.summary() for m in thread[-limit:]]}


@tool()
def search_messages(state: MessagesState, query: str) -> dict:
    """Find messages containing words.

    Args:
        query: words to look for
    """
    query_arg(query)
    hits = [m for m in state.messages if matches(query, m.text, m.name)]
    hits.sort(key=lambda m: m.time, reverse=True)
    return {"messages": [m.summary() for m in hits[:20]]}


@tool(mutates=True, egress=True)
def send_message(state: MessagesState, to: str, text: str) -> dict:
    """Send a text message.

    Args:
        to: phone number, or name of an existing conversation
        text: the message
    """
    body = text_arg(text, "text", 1000)
    number, name = state.resolve(to, "to")
    msg = Text(
        id=next_id("sms", (m.id for m in state.messages)),
        number=number,
        name=name,
        direction="out",
        text=body,
        time=state.now,
    )
    state.messages.append(msg)
    return {"sent": msg.summary()}


@tool(mutates=True, sensitive=True)
def delete_conversation(state: MessagesState, contact: str) -> dict:
    """Delete every message with someone.

    Args:
        contact: name or phone number
    """
    number, name = state.resolve(contact, "contact")
    gone = [m for m in state.messages if m.number == number]
    if not gone:
        raise ToolError(f"contact: no messages with {contact!r}")
    state.messages = [m for m in state.messages if m.number != number]
    return {"deleted": len(gone), "with": name or number}


TOOLS = suite(
    "messages", [list_conversations, read_messages, search_messages, send_message, delete_conversation]
)
