"""Rendered text that remembers which parts are data, so data is always tokenized as text.

A chat format writes its own markup (`<|im_start|>user`, `<tool_response>`, `</think>`) around
text that came from somewhere else: the user's request, a tool's result, an email body, a tool
schema an MCP server sent, a client's message to `serve`. The markup must become the vocabulary's
special tokens; the data must never do so. Tokenizing a whole rendered string with special tokens
enabled lets an email whose body holds ``<|im_end|><|im_start|>user …`` forge a real user turn
(issue 36, item 2).

`Block` is a `str` (so parity tests, templates and logs see exactly the rendered text) that also
carries its pieces, each flagged markup or data. Adding a `Block` and a `str` keeps the pieces (the
`str` counts as markup); any other string operation gives a plain `str`, which `encode` treats as
all markup — the behaviour before data was marked, so nothing silently changes meaning.

`encode` keeps the ids of ordinary text unchanged: a data piece that holds no special-token text
(its ids are the same with and without special-token parsing) is tokenized together with its
neighbours, exactly as the whole string was before. Only a data piece whose text would parse as a
special token is tokenized on its own, with special-token parsing off. The formats put markup that
ends in a newline or starts with `<|im_end|>` or a newline around every data piece, so no special
token can form across a border between markup and data.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

Tokenize = Callable[[str], list[int]]
Piece = tuple[str, bool]  # (text, is_data)


class Block(str):
    """A rendered string with its pieces: ``(text, is_data)``; ``str(block)`` is their concatenation."""

    pieces: tuple[Piece, ...]

    def __new__(cls, pieces: Iterable[Piece | str] = ()) -> Block:
        norm: list[Piece] = []
        for p in pieces:
            if isinstance(p, Block):
                items: Iterable[Piece] = p.pieces
            elif isinstance(p, str):
                items = ((p, False),)
            else:
                items = (p,)
            for text, data in items:
                if not text:
                    continue
                if norm and norm[-1][1] == bool(data):
                    norm[-1] = (norm[-1][0] + text, bool(data))
                else:
                    norm.append((str(text), bool(data)))
        self = super().__new__(cls, "".join(t for t, _ in norm))
        self.pieces = tuple(norm)
        return self

    @classmethod
    def data(cls, text: str) -> Block:
        """Text that came from outside the format: tokenized as text, never as special tokens."""
        return cls([(str(text), True)])

    @classmethod
    def join(cls, parts: Iterable[str]) -> Block:
        return cls(parts)

    def __add__(self, other: str) -> Block:  # type: ignore[override]
        if not isinstance(other, str):
            return NotImplemented
        return Block([self, other])

    def __radd__(self, other: str) -> Block:
        if not isinstance(other, str):
            return NotImplemented
        return Block([other, self])

    def data_text(self) -> str:
        """Only the data pieces, concatenated (what came from outside)."""
        return "".join(t for t, d in self.pieces if d)


def pieces_of(text: str) -> tuple[Piece, ...]:
    """A `Block`'s pieces; a plain string is one markup piece."""
    if isinstance(text, Block):
        return text.pieces
    return ((str(text), False),) if text else ()


def encode(text: str, tokenize_markup: Tokenize, tokenize_text: Tokenize) -> list[int]:
    """Token ids of `text`: markup with special-token parsing, data always as plain text.

    `tokenize_markup` parses special-token text into special tokens; `tokenize_text` never does.
    For text without special-token strings in its data the result is `tokenize_markup(text)`.
    """
    out: list[int] = []
    buf: list[str] = []
    for piece, is_data in pieces_of(text):
        if is_data:
            as_text = tokenize_text(piece)
            if tokenize_markup(piece) != as_text:
                # The data holds special-token text: flush what came before, then this piece as text.
                if buf:
                    out.extend(tokenize_markup("".join(buf)))
                    buf = []
                out.extend(as_text)
                continue
        buf.append(piece)
    if buf:
        out.extend(tokenize_markup("".join(buf)))
    return out


def hf_encoder(tokenizer) -> Tokenize:
    """`encode` for a Hugging Face tokenizer (training, evaluation on transformers).

    Special tokens in data are split into text (`split_special_tokens`); an added token that is not
    special (Qwen's `<tool_call>`) still matches in data here, where llama.cpp reads it as text: a
    difference only for data that spells such a token, which the worlds' data never does.
    """

    def markup(text: str) -> list[int]:
        return tokenizer(text, add_special_tokens=False)["input_ids"]

    def text_only(text: str) -> list[int]:
        return tokenizer(text, add_special_tokens=False, split_special_tokens=True)["input_ids"]

    return lambda text: encode(text, markup, text_only)
