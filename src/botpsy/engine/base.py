"""What every backend provides: token ids in, token ids out, with timings.

The agent keeps the conversation as token ids and only ever appends, so a backend that caches its
prefix (llama.cpp) prefills just the new tokens each turn. Backends report how many prompt tokens
they reused, which the trace and the benchmark turn into cache-hit shares.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from botpsy.protocol.formats import ChatFormat
from botpsy.protocol.messages import StepTiming


class EngineError(Exception):
    """A model that cannot be loaded or run; the message says what to do."""


@dataclass
class Generation:
    ids: list[int]  # generated ids, ending with the end-of-turn id (appended if the cap was hit)
    text: str  # the generated text without the end-of-turn marker
    stop: str  # "eos" or "length"
    timing: StepTiming = field(default_factory=StepTiming)


class Engine(Protocol):
    chat_format: ChatFormat
    name: str

    def tokenize(self, text: str) -> list[int]: ...

    def detokenize(self, ids: list[int]) -> str: ...

    def generate(
        self,
        prompt_ids: list[int],
        max_tokens: int = 512,
        temperature: float = 0.0,
        on_text: Callable[[str], None] | None = None,
    ) -> Generation: ...
