"""The gold oracle: a backend that answers with a task's gold assistant turns.

It proves the evaluation path end to end — rendering, parsing, tool execution, the scripted user
and the checker — independently of any model: through the same loop, the oracle must score 100%.
Token ids are UTF-8 bytes, so it needs no tokenizer files.
"""

from __future__ import annotations

from collections.abc import Callable

from botpsy.engine.base import Generation
from botpsy.protocol.formats import IM_END, ChatFormat
from botpsy.protocol.messages import Message, StepTiming


class OracleEngine:
    name = "oracle"

    def __init__(self, gold: list[Message], chat_format: str = "qwen35"):
        self.chat_format = ChatFormat(chat_format)  # type: ignore[arg-type]
        self.turns = [m for m in gold if m.role == "assistant"]
        self.thinking = True

    def tokenize(self, text: str) -> list[int]:
        return list(text.encode())

    def detokenize(self, ids: list[int]) -> str:
        return bytes(ids).decode("utf-8", errors="replace")

    def generate(
        self,
        prompt_ids: list[int],
        max_tokens: int = 512,
        temperature: float = 0.0,
        on_text: Callable[[str], None] | None = None,
    ) -> Generation:
        if not self.turns:
            text = "I have nothing more to add."
        else:
            text = self.chat_format.completion(self.turns.pop(0), thinking=True).removesuffix(IM_END)
        if on_text:
            on_text(text)
        ids = self.tokenize(text)
        return Generation(ids + self.tokenize(IM_END), text, "eos", StepTiming(generated_tokens=len(ids)))
