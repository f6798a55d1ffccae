"""The conversation as the model reads it, built one way for the runtime and for training.

A `Transcript` holds the token ids, the mask of the ids the model generated, and the blocks they
came from (system, request, tool results, completion, the separator after a completion, a forced
`</think>`). The agent appends to one as the conversation goes (`agent.loop.Agent.transcript`,
whose lists are the trace's `token_ids` and `generated_mask`); SFT builds one from a gold
conversation with `Transcript.of_messages`, which opens each turn with the same `open_turn` the
agent calls. So what training shows the model and what the runtime feeds it are one construction,
not two that a test must keep in step (issue 34; `tests/test_transcript_parity.py` still checks
them token for token on every world and both call formats).

Text goes through the engine's or the tokenizer's `tokenize`, which reads the `Block`s the chat
format renders (`protocol.blocks`): data pieces never become special tokens.
"""

from __future__ import annotations

from collections.abc import Callable

from botpsy.protocol.formats import ChatFormat
from botpsy.protocol.messages import Message

Tokenize = Callable[[str], list[int]]

# Block kinds. "request" opens a user turn the agent may later drop (agent/history.py).
KINDS = ("bos", "system", "request", "results", "completion", "separator", "forced", "answer")


class Transcript:
    def __init__(
        self,
        tokenize: Tokenize,
        bos: list[int] | tuple[int, ...] = (),
        ids: list[int] | None = None,
        mask: list[int] | None = None,
    ):
        self.tokenize = tokenize
        self.bos = list(bos)
        # Lists the caller may share (the agent's trace holds the same two objects).
        self.ids: list[int] = ids if ids is not None else []
        self.mask: list[int] = mask if mask is not None else []
        self.blocks: list[tuple[int, str]] = []  # (offset of the block's first id, kind)

    def add(self, piece: str | list[int], kind: str, generated: bool = False) -> list[int]:
        """Append a block (text to tokenize, or ids); <bos> first where the vocabulary asks for it."""
        if kind not in KINDS:
            raise ValueError(f"unknown block kind {kind!r}; expected one of {', '.join(KINDS)}")
        ids = self.tokenize(piece) if isinstance(piece, str) else list(piece)
        if not self.ids and self.bos:
            self.blocks.append((0, "bos"))
            self.ids.extend(self.bos)
            self.mask.extend([0] * len(self.bos))
        self.blocks.append((len(self.ids), kind))
        self.ids.extend(ids)
        self.mask.extend([int(generated)] * len(ids))
        return ids

    def open_turn(
        self, fmt: ChatFormat, block: str, kind: str, thinking: bool, after_completion: bool
    ) -> int:
        """A user-side block (request or tool results) and the assistant's generation prompt, after
        the separator a completion leaves; returns the offset where the block itself starts.

        The separator is its own piece: every block opens with a special token (<|im_start|>),
        where every tokenizer splits, so apart or together the ids are the same."""
        if after_completion:
            self.add("\n", "separator")
        start = len(self.ids)
        self.add(block + fmt.generation_prompt(thinking), kind)
        return start

    def turns(self) -> list[tuple[int, int]]:
        """Per request: (where its turn starts, the separator before it included; where its block starts)."""
        out, prev = [], None
        for offset, kind in self.blocks:
            if kind == "request":
                out.append((prev[0] if prev and prev[1] == "separator" else offset, offset))
            prev = (offset, kind)
        return out

    def cut(self, n: int) -> None:
        """Keep the first `n` ids (a rollback)."""
        del self.ids[n:]
        del self.mask[n:]
        self.blocks = [b for b in self.blocks if b[0] < n]

    def drop(self, lo: int, hi: int) -> None:
        """Remove ids [lo, hi) (old turns leaving the window); later blocks move back."""
        del self.ids[lo:hi]
        del self.mask[lo:hi]
        shift = hi - lo
        self.blocks = [(o, k) for o, k in self.blocks if o < lo] + [
            (o - shift, k) for o, k in self.blocks if o >= hi
        ]

    def example(self) -> dict[str, list[int]]:
        """The SFT row: `input_ids` and `assistant_masks` (1 on what the model must produce)."""
        return {"input_ids": list(self.ids), "assistant_masks": list(self.mask)}

    @classmethod
    def of_messages(
        cls,
        messages: list[Message],
        tools: list[dict] | None,
        fmt: ChatFormat,
        tokenize: Tokenize,
        bos: list[int] | tuple[int, ...] = (),
    ) -> Transcript:
        """A gold conversation built as the agent builds it: the system block, then each user
        message or run of tool results opened as a turn, each assistant message a completion
        (thinking on: stored turns always carry their think block)."""
        t = cls(tokenize, bos)
        system_text = messages[0].content if messages and messages[0].role == "system" else ""
        rest = messages[1:] if messages and messages[0].role == "system" else messages
        t.add(fmt.system(tools, system_text), "system")
        t.extend(rest, fmt, thinking=True, after_completion=False, generated=True)
        return t

    def extend(
        self,
        messages: list[Message],
        fmt: ChatFormat,
        thinking: bool,
        after_completion: bool,
        generated: bool,
    ) -> bool:
        """Append user, assistant and tool messages as turns: each user message or run of tool
        results opened as a turn (`open_turn`), each assistant message a completion, masked as
        `generated`. Returns whether the last block is a completion (the next turn's separator)."""
        i = 0
        while i < len(messages):
            m = messages[i]
            if m.role == "assistant":
                self.add(fmt.completion(m, thinking), "completion", generated=generated)
                after_completion, i = True, i + 1
                continue
            if m.role == "user":
                block, kind, i = fmt.user(m.content), "request", i + 1
            elif m.role == "tool":
                results = []
                while i < len(messages) and messages[i].role == "tool":
                    results.append(messages[i].content)
                    i += 1
                block, kind = fmt.tool_results(results), "results"
            else:
                raise ValueError(f"a {m.role!r} message can only come first")
            self.open_turn(fmt, block, kind, thinking, after_completion)
            after_completion = False
        return after_completion
