"""The user of ACEBench's agent multi-turn items: an LLM simulator, or a script.

ACEBench plays the user with an LLM given the item's instruction and rules: one line at a time,
only what the current step needs, nothing invented, and the line "finish conversation" once the
task is done. `ChatUser` does that against any OpenAI-compatible `/chat/completions` endpoint
(`botpsy serve`, llama.cpp's server, vLLM), with a prompt in botpsy's words; `ScriptedUser` states
the task once and then ends it (the oracle's user, and the tests').
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Protocol

from botpsy.engine.base import EngineError

FINISH = "finish conversation"  # how ACEBench's user simulator ends an episode


# ---- the user simulator ----------------------------------------------------------------------------
class UserSimulator(Protocol):
    def start(self, instruction: str) -> str: ...
    def reply(self, agent_text: str) -> str: ...


USER_PROMPT = (
    "You play a user talking to an assistant. Your task:\n{instruction}\n\n"
    "Write one short line per message, as this user would. Give only what the assistant needs for the "
    "current step, and never invent facts the task does not give you (say you do not know). Confirm "
    "only what the task wants done. When everything in the task is done, reply with the single line "
    f"'{FINISH}'."
)
GREETING = "Hello, what can I do for you today?"


@dataclass
class ChatUser:
    """The user simulator: an LLM behind an OpenAI-compatible `/chat/completions` endpoint."""

    url: str  # http://HOST:PORT/v1
    model: str = "user"
    temperature: float = 0.0
    timeout_s: float = 120.0
    messages: list[dict[str, str]] = field(default_factory=list)

    def _ask(self) -> str:
        body = json.dumps(
            {
                "model": self.model,
                "messages": self.messages,
                "temperature": self.temperature,
                "max_tokens": 256,
            }
        )
        req = urllib.request.Request(
            self.url.rstrip("/") + "/chat/completions", body.encode(), {"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as r:
                text = json.loads(r.read())["choices"][0]["message"]["content"] or ""
        except (urllib.error.URLError, TimeoutError, ConnectionError, KeyError, json.JSONDecodeError) as e:
            raise EngineError(f"the user simulator at {self.url} failed: {e}") from None
        text = re.sub(r"<think>.*?</think>", "", text, flags=re.S).strip()
        self.messages.append({"role": "assistant", "content": text})
        return text

    def start(self, instruction: str) -> str:
        self.messages = [
            {"role": "system", "content": USER_PROMPT.format(instruction=instruction)},
            {"role": "user", "content": GREETING},
        ]
        return self._ask()

    def reply(self, agent_text: str) -> str:
        self.messages.append({"role": "user", "content": agent_text or "…"})
        return self._ask()


class ScriptedUser:
    """States the task once, then ends the conversation (the oracle's user, and tests')."""

    def start(self, instruction: str) -> str:
        return instruction

    def reply(self, agent_text: str) -> str:
        return FINISH
