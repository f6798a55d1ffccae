"""New users' phrasings: requests as people type them to `botpsy run --suites all`, checked by the
first tool the assistant reaches for.

    botpsy eval phrasings --model embedded --json

The worlds' requests come from botpsy's own templates; these come from trying botpsy as a new user
would (issue 36): "What do I have tomorrow?" was refused 4 of 4 times while "What is on my calendar
tomorrow?" worked, and a contacts question and a files question each started a flight search. Each
item runs once through the agent exactly as the CLI does — every suite installed in a seeded
workspace, `tool_top_k="auto"` retrieval, today's date line, actions declined (nothing is written)
— and passes when the first call names one of the expected tools (or, for a request no installed
tool serves, when no call is made). This is an evaluation set: its requests are never training data.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from datetime import date
from typing import Any

from botpsy.agent.loop import Agent, AgentConfig, decline_all
from botpsy.engine.base import Engine, EngineError
from botpsy.protocol.prompt import runtime_system
from botpsy.stores.workspace import seed_workspace

# (request, tools any of which is a right first call; () = no call is right)
ITEMS: list[tuple[str, tuple[str, ...]]] = [
    ("What do I have tomorrow?", ("list_events", "find_events")),
    ("What is on my calendar tomorrow?", ("list_events", "find_events")),
    ("Am I free on Friday afternoon?", ("list_events", "find_events", "find_free_slots")),
    ("What's Anna's phone number?", ("find_contacts",)),
    ("Do I have a contact called Tom?", ("find_contacts",)),
    ("Which files are in my Documents folder?", ("list_files", "search_files")),
    ("Open the file notes.txt", ("read_file", "list_files", "search_files")),
    ("Any unread email?", ("list_emails", "search_emails")),
    ("Did Tom text me?", ("list_conversations", "read_messages", "search_messages")),
    ("How much is in my checking account?", ("list_accounts",)),
    ("What bills are due?", ("list_bills",)),
    ("Remind me to call mum at 6pm", ("add_reminder",)),
    ("Turn on do not disturb", ("set_do_not_disturb",)),
    ("Is the car locked?", ("get_vehicle_status",)),
    ("What's in my notes about the trip?", ("find_notes",)),
    ("Look up pasta recipes", ("search_web",)),
    ("Where is my order?", ("list_orders", "get_order", "find_customer")),
    ("What's the weather in Oslo tomorrow?", ()),
]


@dataclass
class PhrasingResult:
    request: str
    expected: tuple[str, ...]
    first_call: str | None
    ok: bool
    answer: str
    error: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "expected": list(self.expected)}


def run_item(engine: Engine, request: str, expected: tuple[str, ...], config: AgentConfig) -> PhrasingResult:
    with tempfile.TemporaryDirectory(prefix="botpsy-phrasing-") as tmp:
        ws = seed_workspace(tmp, 0)
        engine.reset()
        agent = Agent(engine, ws, runtime_system(date.today()), config, decline_all, today=date.today())
        try:
            trace = agent.send(request)
        except EngineError as e:
            return PhrasingResult(request, expected, None, False, "", str(e))
    calls = [json.loads(c)["name"] for e in trace.events if e.kind == "model" for c in e.data["calls"]]
    first = calls[0] if calls else None
    ok = first in expected if expected else first is None
    return PhrasingResult(request, expected, first, ok, trace.final_answer[:200])


def evaluate_phrasings(engine: Engine, config: AgentConfig | None = None, progress=None) -> dict[str, Any]:
    config = config or AgentConfig(tool_top_k="auto", thinking=engine.thinking)
    results = []
    for request, expected in ITEMS:
        r = run_item(engine, request, expected, config)
        results.append(r)
        if progress:
            progress(r)
    passed = sum(r.ok for r in results)
    return {
        "suite": "phrasings",
        "model": engine.name,
        "n": len(results),
        "passed": passed,
        "accuracy": round(passed / len(results), 4),
        "items": [r.to_dict() for r in results],
    }
