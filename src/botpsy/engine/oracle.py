"""Backends without a model: scripted replies, and the gold oracle.

The oracle answers with a task's gold assistant turns. It proves the evaluation path end to end —
rendering, parsing, tool execution, the scripted user and the checker — independently of any
model: through the same loop, the oracle must score 100%. Token ids are UTF-8 bytes, so neither
needs tokenizer files.
"""

from __future__ import annotations

from collections.abc import Callable

from botpsy.engine.base import EngineBase, EngineError, Generation
from botpsy.protocol.formats import IM_END, ChatFormat
from botpsy.protocol.messages import Message, StepTiming


class ScriptedEngine(EngineBase):
    """Replies with fixed completion texts in order (None raises EngineError: a backend that dies).

    Useful to test tools, policies and servers without a model; it records every prompt it saw.
    """

    name = "scripted"

    def __init__(self, texts: list[str | None], chat_format: str = "qwen35"):
        self.chat_format = ChatFormat(chat_format)  # type: ignore[arg-type]
        self.texts = list(texts)
        self.prompts: list[str] = []
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
        self.prompts.append(self.detokenize(prompt_ids))
        text = self.texts.pop(0) if self.texts else "done\n</think>\n\nI have nothing more to add."
        if text is None:
            raise EngineError("the backend stopped responding")
        if on_text:
            on_text(text)
        ids = self.tokenize(text)
        return Generation(ids + self.tokenize(IM_END), text, "eos", StepTiming(generated_tokens=len(ids)))


class OracleEngine(ScriptedEngine):
    name = "oracle"

    def __init__(self, gold: list[Message], chat_format: str = "qwen35"):
        fmt = ChatFormat(chat_format)  # type: ignore[arg-type]
        turns = [fmt.completion(m, thinking=True).removesuffix(IM_END) for m in gold if m.role == "assistant"]
        super().__init__(turns, chat_format)
