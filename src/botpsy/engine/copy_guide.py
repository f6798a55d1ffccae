"""Copy guidance: a tool call's text value that has begun to copy the user's words goes on copying them.

Why: a small model reads a request right and still garbles the words it copies into a call. The
embedded 135M model wrote "LOS LAH" for "Los Angeles" and "Naml" for "Nashville" on BFCL; such
value errors were the largest class of its failures there (12 of 30 in simple_python). The
request holds the right spelling, one token away. Measured (`reports/copy-guide/`): on 150 BFCL
items it corrected the value in the 6 it steered and changed no verdict (those items fail on other
values); on 190 world tasks it steered nothing. Most of the model's wrong values are not garbled
copies, and some garbles are not steered at margin 8 ("Naml" for "Nashville" stays).

What it does, token by token, while the model writes a text value inside a tool call (a string in
the hermes JSON; in the qwen35 format a one-line value, or a string inside an array or object
parameter's JSON):
* the value so far (`open_value`) is looked up in the user's words, ignoring case;
* if it is found, and the model's top token neither ends the value nor continues one of the places
  it was found, the token that continues the user's words there is chosen instead, provided the
  model gives it a logit within `margin` of its top one.

Enum arguments (a top-level argument whose schema lists its allowed text values): when the user's
words name exactly one of the allowed values (a whole word, case aside), and the model's best
allowed token leaves that value, the token that goes on writing it is chosen instead, within the
same margin. The grammar lets the model pick any allowed value; the embedded model picked "svi"
for "the Ethernet interface" and "active" for "which orders are still pending" by a logit or two.
With none or several named, or a value already departed from, the model chooses; when enum
guidance does not choose, the text-value rule above still applies. Measured
(`reports/enum-values/`): BFCL live_simple 54 → 57 of 258 (3 wins, 0 losses); irrelevance, the
worlds' 190 tasks and 150 other BFCL items unchanged.

The model still decides where a value starts, where it ends (a closing quote or `</parameter>` is
never overridden) and what it composes beyond the user's words (a confident departure is above
the margin). Only the user's own words are sources: a tool result, which may carry planted text, is
never one. The grammar, applied after, still holds every call to its schema (`engine.grammar`).

Why not a library: llama.cpp's grammars are hard constraints, and "a substring of the request,
else anything" is not a rule one can write without forbidding every value the model composes;
copy mechanisms in the literature live inside the model. This is a small logits rule over the
text generated so far, kept engine-agnostic (plain numpy, a tokenizer and a piece function).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

CALL_OPEN, CALL_CLOSE = "<tool_call>", "</tool_call>"
PARAM_OPEN, PARAM_CLOSE = "<parameter=", "</parameter>"
MIN_CHARS = 2  # a value shorter than this says too little about where it copies from
LOOKAHEAD = 32  # characters of the user's words tokenized to find the continuing token
MARGIN = 8.0  # logits below the model's top token a continuation may lie and still be chosen
TOP_K = 16  # the model's best tokens also checked as continuations (a tokenization may differ)


def _hermes_value(call: str) -> tuple[str, str | None] | None:
    """(the open string inside the call's arguments object (JSON), the argument's name when it is
    a top-level argument's whole value), or None: not inside one.

    A string is a value when it follows `:` in an object or sits in an array; the call's own
    `"name"` (depth 1) is not an argument and is never guided."""
    stack: list[str] = []
    expect_key = in_str = escaped = is_key = False
    buf: list[str] = []
    key = None  # the last key closed: the name of the member whose value follows
    clean = True  # no escape sequence in the value (its text would differ from the user's)
    for ch in call:
        if in_str:
            if escaped:
                escaped, clean = False, False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_str = False
                if is_key:
                    key = "".join(buf)
            else:
                buf.append(ch)
            continue
        if ch == '"':
            in_str, buf, clean = True, [], True
            is_key = bool(stack) and stack[-1] == "{" and expect_key
        elif ch in "{[":
            stack.append(ch)
            expect_key = ch == "{"
        elif ch in "}]":
            if stack:
                stack.pop()
            expect_key = False
        elif ch == ":":
            expect_key = False
        elif ch == ",":
            expect_key = bool(stack) and stack[-1] == "{"
    if not in_str or is_key or escaped or not clean or len(stack) < 2:
        return None
    return "".join(buf), key if stack == ["{", "{"] else None


def open_value(text: str, fmt: str) -> str | None:
    """The text value the model is writing inside a tool call at the end of `text`, or None."""
    found = _open(text, fmt)
    return found[0] if found else None


def open_argument(text: str, fmt: str) -> tuple[str, str] | None:
    """(function, parameter) when the value open at the end of `text` is a top-level argument's
    whole value (not a string inside an array or object), else None."""
    found = _open(text, fmt)
    return found[2] if found else None


def _open(text: str, fmt: str) -> tuple[str, bool, tuple[str, str] | None] | None:
    """(the open value, whether it is a JSON string, (function, parameter) when it is a top-level
    argument's whole value) at the end of `text`, or None."""
    start = text.rfind(CALL_OPEN)
    if start < 0 or text.rfind(CALL_CLOSE) > start:
        return None
    call = text[start + len(CALL_OPEN) :]
    if fmt != "qwen35":
        found = _hermes_value(call)
        if found is None:
            return None
        name = re.match(r'\s*\{\s*"name"\s*:\s*"([^"\\]+)"', call)
        return found[0], True, (name.group(1), found[1]) if name and found[1] is not None else None
    p = call.rfind(PARAM_OPEN)
    if p < 0 or call.rfind(PARAM_CLOSE) > p:
        return None
    head_end = call.find(">\n", p)
    if head_end < 0:
        return None  # still writing the parameter's name
    value = call[head_end + 2 :]
    if value[:1] in ("[", "{"):
        # an array or object parameter is JSON: the strings inside it are values as in hermes (the
        # brace stands in for the arguments object around them)
        inner = _hermes_value("{" + value)
        return None if inner is None else (inner[0], True, None)
    if "\n" in value:
        return None  # more than one line: not a copied phrase
    name = re.match(r"\s*<function=([^>\n]+)>", call)
    return value, False, (name.group(1), call[p + len(PARAM_OPEN) : head_end]) if name else None


def _ends_value(piece: str, json_string: bool) -> bool:
    if json_string:
        return '"' in piece or "\\" in piece
    return piece.startswith("\n") or "<" in piece


class CopyGuide:
    """Steers one generation's text values toward the user's words (module doc).

    `sources`: the user's messages; `tokenize(text)` gives plain-text ids (no markup, no BOS);
    `piece(id)` one token's text; `fmt` the chat format's name ("hermes" or "qwen35"); `params`
    each tool's parameters schema (for the allowed values of enum arguments)."""

    def __init__(
        self,
        sources: Sequence[str],
        tokenize: Callable[[str], list[int]],
        piece: Callable[[int], str],
        fmt: str,
        margin: float | None = None,
        params: Mapping[str, Any] | None = None,
    ):
        self.sources = [s for s in sources if s]
        self._lower = [s.lower() for s in self.sources]
        self.params = dict(params or {})  # tool name -> its parameters' JSON schema
        self._named: dict[tuple[str, str], tuple[list[str], str | None]] = {}
        self._tokenize, self._piece_of, self.fmt = tokenize, piece, fmt
        self.margin = MARGIN if margin is None else margin
        self._pieces: dict[int, str] = {}
        self._first: dict[str, int | None] = {}
        self.steered = 0  # tokens chosen by the guide in this generation

    def _piece(self, tok: int) -> str:
        if tok not in self._pieces:
            self._pieces[tok] = self._piece_of(tok)
        return self._pieces[tok]

    def _continuations(self, value: str) -> list[str]:
        """What follows each place `value` occurs in the user's words (cut before characters a
        value would have to escape)."""
        low, out = value.lower(), []
        for src, src_low in zip(self.sources, self._lower, strict=True):
            at = src_low.find(low)
            while at >= 0:
                rest = src[at + len(value) : at + len(value) + LOOKAHEAD]
                for stop in ('"', "\\", "\n"):
                    rest = rest.split(stop, 1)[0]
                if rest:
                    out.append(rest)
                at = src_low.find(low, at + 1)
        return out

    def _first_token(self, text: str) -> int | None:
        if text not in self._first:
            ids = self._tokenize(text)
            self._first[text] = ids[0] if ids else None
        return self._first[text]

    def steer(self, text: str, logits: np.ndarray) -> int | None:
        """The token to choose instead of the model's top one at the end of `text`, or None."""
        if not self.sources:
            return None
        found = _open(text, self.fmt)
        if found is None:
            return None
        value, json_string, argument = found
        if argument is not None:
            members, named = self._enum(argument)
            if (
                members
                and (choice := self._steer_enum(value, members, named, json_string, logits)) is not None
            ):
                return choice
        if len(value.strip()) < MIN_CHARS or not any(c.isalpha() for c in value):
            return None
        rests = self._continuations(value)
        if not rests:
            return None  # not copying the user's words (or copied to their end)
        lowered = [r.lower() for r in rests]

        def continues(piece: str) -> bool:
            return bool(piece) and any(r.startswith(piece.lower()) for r in lowered)

        top = int(np.argmax(logits))
        top_piece = self._piece(top)
        if not top_piece or _ends_value(top_piece, json_string):
            return None  # the model ends the value: its decision
        if continues(top_piece):
            return None  # already continuing the user's words
        # The token that starts each continuation, and the model's best tokens (a tokenization of
        # the user's words may differ from the one the model would write here).
        k = min(TOP_K, logits.shape[0] - 1)
        candidates = {self._first_token(r) for r in rests} | {
            int(t) for t in np.argpartition(logits, -k)[-k:]
        }
        valid = [
            t
            for t in candidates
            if t is not None and continues(p := self._piece(t)) and not _ends_value(p, json_string)
        ]
        if not valid:
            return None
        floor = float(logits[top]) - self.margin
        # None: the model departs from the user's words with confidence
        return self._take([t for t in valid if float(logits[t]) >= floor], logits)

    def _take(self, near: list[int], logits: np.ndarray) -> int | None:
        """The longest piece among `near` (the most of the user's words per step: a one-letter
        piece such as " A" for " Angeles" leaves the model mid-word, where it garbles again), or
        None when there is none."""
        if not near:
            return None
        best = max(near, key=lambda t: (len(self._piece(t)), float(logits[t])))
        self.steered += 1
        return best

    def _enum(self, argument: tuple[str, str]) -> tuple[list[str], str | None]:
        """(the allowed text values of the argument, [] when it is not a text enum; the one of them
        the user's words name, or None: none or several are named)."""
        if argument not in self._named:
            fn, name = argument
            schema = (self.params.get(fn) or {}).get("properties", {}).get(name)
            enum = schema.get("enum") if isinstance(schema, dict) else None
            members = [m for m in enum if isinstance(m, str)] if isinstance(enum, list) else []
            if len(members) != len(enum or []):
                members = []  # numbers among the values: the grammar pins them, nothing to copy
            named = [
                m
                for m in members
                if len(m) >= MIN_CHARS
                and any(
                    re.search(rf"(?<![^\W_]){re.escape(m.lower())}(?![^\W_])", low) for low in self._lower
                )
            ]
            self._named[argument] = (members, named[0] if len(named) == 1 else None)
        return self._named[argument]

    def _steer_enum(
        self, value: str, members: list[str], named: str | None, json_string: bool, logits: np.ndarray
    ) -> int | None:
        """Within an enum argument whose allowed values the user's words name exactly one of, the
        token that goes on writing that one when the model's best allowed token leaves it, provided
        its logit is within `margin` of that token's."""
        if named is None or not named.startswith(value) or value == named:
            return None  # nothing named, the model already departed from it, or it is complete
        end = '"' if json_string else "\n"
        rests = [m[len(value) :] + end for m in members if m.startswith(value)]
        target = named[len(value) :] + end

        def allowed(piece: str) -> bool:
            return bool(piece) and any(r.startswith(piece) for r in rests)

        k = min(TOP_K, logits.shape[0] - 1)
        candidates = {int(t) for t in np.argpartition(logits, -k)[-k:]} | {
            t for r in rests if (t := self._first_token(r[:-1])) is not None
        }
        valid = [t for t in candidates if allowed(self._piece(t))]
        if not valid:
            return None
        best = max(valid, key=lambda t: float(logits[t]))
        if target.startswith(self._piece(best)):
            return None  # the model's choice already writes the named value
        floor = float(logits[best]) - self.margin
        return self._take(
            [t for t in valid if target.startswith(self._piece(t)) and float(logits[t]) >= floor], logits
        )
