"""What every backend provides: token ids in, token ids out, with timings.

The agent keeps the conversation as token ids and only ever appends, so a backend that caches its
prefix (llama.cpp) prefills just the new tokens each turn. Backends report how many prompt tokens
they reused, which the trace and the benchmark turn into cache-hit shares.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from botpsy.protocol.formats import IM_END, ChatFormat
from botpsy.protocol.messages import StepTiming

# How a `--model` spec can be read (`engine.load.resolve_backend` says what each one means). Here,
# not in engine/load.py, so the CLI's parser offers them as choices without importing every backend.
BACKENDS = ("auto", "oracle", "llamacpp", "transformers", "openai")


class EngineError(Exception):
    """A model that cannot be loaded or run; the message says what to do."""


@dataclass
class Generation:
    ids: list[int]  # generated ids, ending with the end-of-turn id (appended if the cap was hit)
    text: str  # the generated text without the end-of-turn marker
    stop: str  # "eos", "length", or "stopped" (the caller's should_stop, where a backend takes one)
    timing: StepTiming = field(default_factory=StepTiming)


class TurnEnd:
    """Where a generated turn ends, for vocabularies with and without an <|im_end|> token.

    botpsy's chat format closes every turn with <|im_end|>. In a ChatML vocabulary that is one
    special token, and generation stops on it. A model of another family run in botpsy's format (a
    Gemma or Llama GGUF, or a base botpsy's SFT trained on its format) writes the marker as several
    ordinary tokens, which may merge with the text before it (Gemma 3 has one token for ".<"). There
    the turn ends once the decoded text holds the marker (`reached`), and `cut` gives back the
    content before it. Either way a Generation's ids decode to its text and then the marker: the
    model's own ids where they end with the marker, else the content's and the marker's own ids
    (what a turn cut at the token cap gets, and the agent strips again: `Agent._content_ids`).
    """

    def __init__(self, end_ids: list[int], eos_ids: Iterable[int]):
        self.ids = list(end_ids)
        self.textual = len(self.ids) > 1
        self.stop_ids = {i for i in eos_ids if i is not None}
        if len(self.ids) == 1:
            self.stop_ids.add(self.ids[0])

    def reached(self, out: list[int], detokenize: Callable[[list[int]], str]) -> bool:
        """Whether the generated `out` now holds a marker of several tokens (after each new token)."""
        return self.textual and IM_END in detokenize(out[-(len(self.ids) + 2) :])

    def cut(
        self, out: list[int], detokenize: Callable[[list[int]], str], tokenize: Callable[[str], list[int]]
    ) -> tuple[list[int], str]:
        """(ids, text): the content before the marker, and ids that decode to it plus the marker.

        Ids that end exactly with the marker are the model's own and stay as they are (a model
        trained in this format merges the marker's first characters as its training text did).
        Otherwise the marker's ids are appended; tokens it merged into, past its end, are dropped
        and the content they carried is tokenized again.
        """
        text = detokenize(out)
        if IM_END not in text:
            return list(out) + self.ids, text
        content = text[: text.index(IM_END)]
        if text == content + IM_END:
            return list(out), content
        ids = list(out)
        while ids and not content.startswith(detokenize(ids)):
            ids.pop()
        rest = content[len(detokenize(ids)) :]
        return ids + (tokenize(rest) if rest else []) + self.ids, content


def bos_ids(tokenizer) -> list[int]:
    """[bos] for a Hugging Face tokenizer that adds one to every text (Gemma), else []."""
    bos = getattr(tokenizer, "bos_token_id", None)
    return [bos] if getattr(tokenizer, "add_bos_token", False) and bos is not None else []


class Engine(Protocol):
    """Everything callers use of a backend. `EngineBase` gives the optional members their defaults,
    so every engine has all of them and no caller needs to probe with `getattr`."""

    name: str  # what results are filed under
    chat_format: ChatFormat
    thinking: bool  # whether the model opens assistant turns with <think> (template or manifest)
    n_ctx: int | None  # context window in tokens; None: not known here (a remote server)
    mode: str | None  # HTTP engines: "auto", "completions" or "chat" (the server renders); else None
    bos_ids: list[int]  # what opens a conversation where the vocabulary asks for it (Gemma's <bos>)

    @property
    def cheap_rollback(self) -> bool:
        """Whether dropping the last generated tokens keeps the engine's cache (False: hybrid models)."""
        ...

    def tokenize(self, text: str) -> list[int]: ...

    def detokenize(self, ids: list[int]) -> str: ...

    def count_tokens(self, text: str) -> int:
        """Tokens of `text` as this engine counts them (a server may count without tokenizing)."""
        ...

    def reset(self) -> None:
        """Forget any cached prefix: the next prompt is evaluated from scratch."""
        ...

    def close(self) -> None:
        """Free the model now (native memory, a server connection); the engine is not used after.
        Idempotent. Left to garbage collection at interpreter exit, llama.cpp's free can run after
        its library is unloaded and print a traceback."""
        ...

    def tool_grammar(self, tools: list[dict], max_calls: int = 8) -> Any | None:
        """A grammar constraining tool calls to `tools`, passed back to `generate`; None: not supported."""
        ...

    def copy_guide(
        self, sources: list[str], params: dict[str, dict] | None = None, prior: dict[str, float] | None = None
    ) -> Any | None:
        """A `engine.copy_guide.CopyGuide` over `sources` (the user's words; `params`: each tool's
        parameters schema, for enum arguments; `prior`: how well the request matches each tool,
        0 to 1), passed back to
        `generate` as `guide`; None: the engine picks its tokens itself."""
        ...

    def check_grammar(self, grammar: Any) -> None:
        """Raise ValueError now if the engine cannot run `grammar` (a GBNF text or object); nothing
        when it can, or when it takes no grammars. Lets a server refuse a request before generating."""
        ...

    def generate(
        self,
        prompt_ids: list[int],
        max_tokens: int = 512,
        temperature: float = 0.0,
        on_text: Callable[[str], None] | None = None,
    ) -> Generation: ...


class EngineBase:
    """The defaults of `Engine`'s optional members; every backend derives from it."""

    thinking: bool = True
    n_ctx: int | None = None
    mode: str | None = None
    bos_ids: list[int] = []  # noqa: RUF012 - read-only default; engines that need one set their own
    cheap_rollback: bool = True

    def tokenize(self, text: str) -> list[int]:
        raise NotImplementedError

    def count_tokens(self, text: str) -> int:
        return len(self.tokenize(text))

    def reset(self) -> None:
        """Nothing cached by default."""

    def close(self) -> None:
        """Nothing held by default."""

    def tool_grammar(self, tools: list[dict], max_calls: int = 8) -> Any | None:
        return None

    def copy_guide(
        self, sources: list[str], params: dict[str, dict] | None = None, prior: dict[str, float] | None = None
    ) -> Any | None:
        return None

    def check_grammar(self, grammar: Any) -> None:
        """No grammars, nothing to check."""
