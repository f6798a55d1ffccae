"""Worlds: seeded state, generated tasks with gold actions, a scripted user and a state-hash checker.

A `Task` carries everything needed to run and judge one episode without a model: the initial
state, the user's first message, the gold conversation (whose tool calls are the gold actions),
the hash of the state those actions produce, the facts the final answer must contain, and the
scripted user's hidden reply for tasks that lack information.

Judging an agent (`check_trace`) multiplies criteria, as τ²-bench does: the final state must hash
to the expected one, every required fact must appear in the final answer, and the task kind adds
its own rule (no call for chit-chat; no mutating call before asking when information is missing).
`replay_gold` is the self-check: gold actions on a fresh state must reach the expected hash.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from pydantic import BaseModel

from botpsy.protocol.messages import Message, ToolCall, Trace
from botpsy.tools.base import Tool, Toolbox, ToolError

TASK_KINDS = ("single", "multi_step", "no_call", "missing_info", "impossible")


def state_hash(state: BaseModel) -> str:
    canonical = state.canonical() if hasattr(state, "canonical") else state.model_dump()
    blob = json.dumps(canonical, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def result_text(result: Any) -> str:
    return json.dumps(result, ensure_ascii=False, default=str)


def error_text(message: str) -> str:
    return json.dumps({"error": message}, ensure_ascii=False)


@dataclass
class Task:
    id: str
    domain: str
    kind: str
    split: str
    user: str  # the user's first message
    initial_state: dict[str, Any]
    gold: list[dict[str, Any]]  # the gold conversation after the first user message (Message dicts)
    expected_hash: str
    required_facts: list[list[str]] = field(default_factory=list)  # all groups, any alternative per group
    user_replies: list[str] = field(default_factory=list)  # what the scripted user says when asked
    system: str = ""  # context line for the system prompt (e.g. today's date)

    @property
    def gold_calls(self) -> list[ToolCall]:
        return [c for m in self.gold_messages() if m.role == "assistant" for c in m.tool_calls]

    def gold_messages(self) -> list[Message]:
        return [Message.from_dict(d) for d in self.gold]

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False)

    @classmethod
    def from_json(cls, line: str) -> Task:
        return cls(**json.loads(line))


class Domain(Protocol):
    name: str
    tools: list[Tool]
    state_type: type[BaseModel]
    system: str

    def generate(self, n: int, seed: int, split: str) -> list[Task]: ...


class World:
    """An in-memory environment: one domain's state, its tools, and a log of executed calls."""

    def __init__(self, tools: list[Tool], state: BaseModel):
        self.toolbox = Toolbox(tools)
        self.state = state
        self.calls: list[ToolCall] = []

    def call(self, name: str, arguments: dict[str, Any]) -> str:
        self.calls.append(ToolCall(name, dict(arguments)))
        if name not in self.toolbox:
            return error_text(f"there is no tool {name!r}; available: {', '.join(self.toolbox.names())}")
        try:
            return result_text(self.toolbox[name](self.state, **arguments))
        except ToolError as e:
            return error_text(str(e))

    def hash(self) -> str:
        return state_hash(self.state)


def make_world(domain: Domain, task: Task) -> World:
    return World(domain.tools, domain.state_type.model_validate(task.initial_state))


def replay_gold(domain: Domain, task: Task) -> tuple[bool, str]:
    """Run the gold actions on a fresh state; (reached expected hash, reason if not)."""
    world = make_world(domain, task)
    for call in task.gold_calls:
        out = world.call(call.name, call.arguments)
        if '"error"' in out[:10]:
            return False, f"gold call {call.name} failed: {out}"
    got = world.hash()
    return (
        got == task.expected_hash,
        "" if got == task.expected_hash else f"hash {got} != {task.expected_hash}",
    )


def facts_present(answer: str, facts: list[list[str]]) -> list[str]:
    """The fact groups (joined by '|') that no alternative of appears in the answer."""
    low = answer.casefold()
    return ["|".join(group) for group in facts if not any(alt.casefold() in low for alt in group)]


@dataclass
class Verdict:
    success: bool
    state_ok: bool
    facts_missing: list[str]
    rule_ok: bool
    reason: str = ""


def check_trace(task: Task, trace: Trace, final_hash: str, mutating: set[str]) -> Verdict:
    state_ok = final_hash == task.expected_hash
    missing = facts_present(trace.final_answer, task.required_facts)
    rule_ok, reason = True, ""
    calls = trace.tool_calls
    if task.kind == "no_call" and calls:
        rule_ok, reason = False, f"made {len(calls)} call(s) where none was needed"
    if task.kind == "missing_info":
        first = next((m for m in trace.messages if m.role == "assistant"), None)
        if first is not None and any(c.name in mutating for c in first.tool_calls):
            rule_ok, reason = False, "acted before asking for the missing information"
    if trace.stopped not in ("answer",):
        rule_ok, reason = False, f"episode ended by {trace.stopped or 'unknown'}"
    if not state_ok:
        reason = reason or f"final state {final_hash} != expected {task.expected_hash}"
    elif missing:
        reason = reason or f"answer lacks {missing}"
    return Verdict(state_ok and not missing and rule_ok, state_ok, missing, rule_ok, reason)


class ScriptedUser:
    """Answers the agent from the task's hidden facts, once per prepared reply, then stays silent."""

    def __init__(self, replies: list[str]):
        self.replies = list(replies)

    def respond(self, agent_text: str) -> str | None:
        return self.replies.pop(0) if self.replies else None


GoldBuilder = Callable[..., list[Message]]
