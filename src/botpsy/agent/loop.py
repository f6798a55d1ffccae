"""The agent loop: request → model → parsed calls → confirmation → tools → results → … → answer.

The conversation lives as token ids and only grows (`Agent.ids`), so each model step prefills just
the blocks appended since the last one. Every step is recorded in a `Trace`: the messages, the
exact ids with a mask of the generated ones, timings, parse errors and confirmation decisions.

Bad model output never ends a session: parse errors and refused calls go back to the model as
`<tool_response>` errors and count against the step limit.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from botpsy.engine.base import Engine, EngineError
from botpsy.protocol.messages import Event, Message, ToolCall, Trace
from botpsy.tools.base import Tool, Toolbox


class Environment(Protocol):
    toolbox: Toolbox

    def call(self, name: str, arguments: dict[str, Any]) -> str: ...


ConfirmFn = Callable[[ToolCall, Tool], bool]


def approve_all(call: ToolCall, tool: Tool) -> bool:
    return True


def decline_all(call: ToolCall, tool: Tool) -> bool:
    return False


@dataclass(frozen=True)
class AgentConfig:
    max_steps: int = 8  # model steps per user message before giving up
    max_tokens: int = 384  # generated tokens per model step (the token cap)
    temperature: float = 0.0
    thinking: bool = True  # open every assistant turn with <think>


class Agent:
    def __init__(
        self,
        engine: Engine,
        env: Environment,
        system: str = "",
        config: AgentConfig = AgentConfig(),
        confirm: ConfirmFn = approve_all,
        on_event: Callable[[Event], None] | None = None,
        on_text: Callable[[str], None] | None = None,
    ):
        self.engine, self.env, self.config, self.confirm = engine, env, config, confirm
        self.fmt = engine.chat_format
        self.on_event, self.on_text = on_event, on_text
        self.tools = {t.name: t.parameters for t in env.toolbox}
        self.trace = Trace(messages=[Message("system", system)] if system else [])
        self._append(self.fmt.system(env.toolbox.schemas(), system), generated=False)
        self._after_completion = False

    def _append(self, text_or_ids: str | list[int], generated: bool) -> None:
        ids = self.engine.tokenize(text_or_ids) if isinstance(text_or_ids, str) else text_or_ids
        self.trace.token_ids.extend(ids)
        self.trace.generated_mask.extend([int(generated)] * len(ids))

    def _emit(self, kind: str, **data: Any) -> None:
        ev = Event(kind, data)  # type: ignore[arg-type]
        self.trace.events.append(ev)
        if self.on_event:
            self.on_event(ev)

    def _open_turn(self, block: str) -> None:
        lead = "\n" if self._after_completion else ""
        self._append(lead + block + self.fmt.generation_prompt(self.config.thinking), generated=False)
        self._after_completion = False

    def send(self, user_text: str) -> Trace:
        """Add a user message and run until the model answers without calling a tool."""
        self.trace.messages.append(Message("user", user_text))
        self._emit("user", text=user_text)
        self._open_turn(self.fmt.user(user_text))
        for _ in range(self.config.max_steps):
            try:
                gen = self.engine.generate(
                    self.trace.token_ids,
                    self.config.max_tokens,
                    self.config.temperature,
                    on_text=self.on_text,
                )
            except EngineError as e:
                self._emit("error", message=str(e))
                self.trace.stopped = "error"
                return self.trace
            self._append(gen.ids, generated=True)
            self._after_completion = True
            self.trace.timings.append(gen.timing)
            parsed = self.fmt.parse(gen.text, self.tools, thinking=self.config.thinking)
            msg = parsed.message()
            self.trace.messages.append(msg)
            self._emit(
                "model",
                text=gen.text,
                stop=gen.stop,
                calls=[c.key() for c in parsed.calls],
                errors=[e.message for e in parsed.errors],
            )
            if parsed.errors:
                self.trace.parse_errors += 1
                results = [e.as_tool_result() for e in parsed.errors]
                for r in results:
                    self.trace.messages.append(Message("tool", r, name="parser"))
                self._open_turn(self.fmt.tool_results(results))
                continue
            if not parsed.calls:
                self.trace.stopped = "token_cap" if gen.stop == "length" else "answer"
                return self.trace
            results = [self._execute(c) for c in parsed.calls]
            for c, r in zip(parsed.calls, results, strict=True):
                self.trace.messages.append(Message("tool", r, name=c.name))
            self._open_turn(self.fmt.tool_results(results))
        self.trace.stopped = "step_limit"
        self._emit("error", message=f"no answer after {self.config.max_steps} model steps")
        return self.trace

    def _execute(self, call: ToolCall) -> str:
        tool = self.env.toolbox[call.name]
        if tool.labels.needs_confirmation:
            approved = self.confirm(call, tool)
            self._emit("confirm", call=call.key(), approved=approved, labels=tool.labels.as_dict())
            if not approved:
                return json.dumps(
                    {"error": f"the user declined {call.name}; do not retry it, say so instead"}
                )
        result = self.env.call(call.name, call.arguments)
        self._emit("tool", name=call.name, result=result[:2000])
        return result
