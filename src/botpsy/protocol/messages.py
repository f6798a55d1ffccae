"""Messages, tool calls and traces: the one conversation type every part of botpsy shares.

The CLI prints a `Trace`, evaluation scores it, SFT data is built from it and RL rollouts are
stored as it. Besides the messages it keeps the exact token ids the model saw and produced (with a
mask of which ones the model generated), so training never re-tokenizes text the model read.
"""

from __future__ import annotations

import copy
import json
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Role = Literal["system", "user", "assistant", "tool"]


@dataclass
class ToolCall:
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)

    def key(self) -> str:
        """Canonical text of the call, for exact-match comparisons."""
        return json.dumps({"name": self.name, "arguments": self.arguments}, sort_keys=True, default=str)


@dataclass
class Message:
    role: Role
    content: str = ""
    reasoning: str | None = None  # the text inside <think>…</think> of an assistant turn
    tool_calls: list[ToolCall] = field(default_factory=list)
    name: str | None = None  # for role == "tool": which tool produced the content

    def to_openai(self) -> dict[str, Any]:
        """The dict shape `apply_chat_template` and OpenAI-compatible servers use."""
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.reasoning is not None:
            out["reasoning_content"] = self.reasoning
        if self.tool_calls:
            out["tool_calls"] = [
                {"type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in self.tool_calls
            ]
        if self.name is not None:
            out["name"] = self.name
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Message:
        calls = []
        for c in d.get("tool_calls") or []:
            fn = c.get("function", c)
            args = fn.get("arguments", {})
            if isinstance(args, str):
                args = json.loads(args or "{}")
            calls.append(ToolCall(fn["name"], copy.deepcopy(args)))  # never alias the source dict
        return cls(
            role=d["role"],
            content=d.get("content") or "",
            reasoning=d.get("reasoning") if "reasoning" in d else d.get("reasoning_content"),
            tool_calls=calls,
            name=d.get("name"),
        )


@dataclass
class StepTiming:
    prompt_tokens: int = 0  # tokens prefilled this step (new tokens only when the prefix was cached)
    cached_tokens: int = 0  # tokens reused from the cache
    generated_tokens: int = 0
    ttft_s: float = 0.0  # time from request to first generated token
    prefill_tok_s: float = 0.0
    decode_tok_s: float = 0.0
    total_s: float = 0.0


@dataclass
class Event:
    """One thing that happened in an episode, in order: a model step, a tool result, a refusal, a guard."""

    kind: Literal[
        "model",
        "tool",
        "confirm",
        "error",
        "user",
        "loop_guard",
        "phantom_guard",
        "claim_replaced",
        "tool_retrieval",
        "call_grace",
        "capabilities",
        "grounding_guard",
        "limits_guard",
        "limits_retry",
        "repeated_calls",
    ]
    data: dict[str, Any] = field(default_factory=dict)


@dataclass
class Trace:
    messages: list[Message] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    timings: list[StepTiming] = field(default_factory=list)
    token_ids: list[int] = field(default_factory=list)
    generated_mask: list[int] = field(default_factory=list)  # 1 where the model produced the token
    parse_errors: int = 0
    stopped: str = ""  # why the episode ended: answer | step_limit | token_cap | error
    # acting calls of the last request that were declined or failed and never made good: the
    # request was not (fully) carried out, whatever the answer says
    not_done: list[str] = field(default_factory=list)

    @property
    def tool_calls(self) -> list[ToolCall]:
        return [c for m in self.messages if m.role == "assistant" for c in m.tool_calls]

    @property
    def final_answer(self) -> str:
        for m in reversed(self.messages):
            if m.role == "assistant" and not m.tool_calls:
                return m.content
        return ""

    @property
    def assistant_turns(self) -> int:
        return sum(1 for m in self.messages if m.role == "assistant")

    def to_dict(self, with_tokens: bool = False) -> dict[str, Any]:
        d = {
            "messages": [m.to_openai() for m in self.messages],
            "tool_calls": [asdict(c) for c in self.tool_calls],
            "final_answer": self.final_answer,
            "events": [asdict(e) for e in self.events],
            "timings": [asdict(t) for t in self.timings],
            "parse_errors": self.parse_errors,
            "stopped": self.stopped,
            "not_done": self.not_done,
        }
        if with_tokens:
            d["token_ids"] = self.token_ids
            d["generated_mask"] = self.generated_mask
        return d
