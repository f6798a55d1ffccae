"""Grounding guard: a tool call whose number appears nowhere in the conversation, or whose required
argument is empty, is not run.

A small model that finds no fitting tool often calls the nearest one anyway and makes up its
numbers: asked about the weather with only a triangle-area tool installed, it calls
`area(base=10, height=5)`. On BFCL's irrelevance category most of the embedded model's wrong
calls were of that kind, and on the user's own data an invented number is worse than no call:
a transfer of an amount nobody said, a thermostat set to a value nobody asked for.

So before the agent runs a step's calls it checks every number in their required arguments
against the numbers the conversation holds: the system prompt, the user's turns (with the
resolved-dates line the agent adds, so "2 hours" is grounded as 120 minutes and "2pm" as 14) and
the tool results. A number is grounded when it is written there as digits ("1,200", "3.5", "-4",
"1e-9", "5k"), as a percentage ("15%" is 15 and 0.15), as a common English number, month or unit
word ("two", "a dozen", "third", "halfway" as 0.5 and 50, "February" as 2, "minutes" as 60), or
is one step of arithmetic on two different stated numbers, or when the called tool states it
itself: its defaults, enum values, bounds, or a number its description names ("how many results,
10 by default"). Only numbers are checked: names and strings may be paraphrased, case-changed or
translated legitimately, a number rarely is. A string that is a number and nothing else ("2014")
is checked as that number: the schema wanted a string, the model still chose a number.

A required argument left empty (`[]`, `{}`, `""`, `[{}]`, null) is held the same way: the model
filled the slot with nothing because nobody gave it a value ("Find me restaurants in London" with a
points-of-interest tool became `find_pois(location="London", category=[])`). So is one whose text
only names its own parameter (`reserve_book(book_id="book_id")`, `patient_id="patient_id"`), unless
the user wrote that text: a slot filled with its label, not with data. Optional arguments are not
checked; an empty one leaves the tool's default in force.

When a call holds an ungrounded number, none of the step's calls runs: each gets a tool response
saying so (the record the model and the trace keep), and the agent asks the user for the
missing values in code's words, ending the turn. A request that did lack a value gets the
question it needed; a request no tool fits gets a question rather than a made-up action.

No library: this is a set lookup over a few regular expressions (number parsers such as
`word2number` read one phrase at a time and would still need the scanning done here).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from botpsy.agent.dates import MONTHS
from botpsy.protocol.formats import tojson
from botpsy.protocol.messages import Message, ToolCall

_WORDS = {
    "zero": 0,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "thirteen": 13,
    "fourteen": 14,
    "fifteen": 15,
    "sixteen": 16,
    "seventeen": 17,
    "eighteen": 18,
    "nineteen": 19,
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "fifty": 50,
    "sixty": 60,
    "seventy": 70,
    "eighty": 80,
    "ninety": 90,
    "hundred": 100,
    "thousand": 1000,
    "million": 1_000_000,
    "billion": 1_000_000_000,
    "dozen": 12,
    "half": 0.5,
    "halfway": 0.5,
    "quarter": 0.25,
    "once": 1,
    "twice": 2,
    "single": 1,
    "double": 2,
    "triple": 3,
    "couple": 2,
    "pair": 2,
    "first": 1,
    "second": 2,
    "third": 3,
    "fourth": 4,
    "fifth": 5,
    "sixth": 6,
    "seventh": 7,
    "eighth": 8,
    "ninth": 9,
    "tenth": 10,
    "pi": math.pi,
    "decade": 10,
    "century": 100,
    "percent": 0.01,
    "quarterly": 4,
    "monthly": 12,
}
# Units a request names, as the numbers a tool in another unit multiplies by: "3 minutes" is 180
# seconds (3 said, times 60), "a week" is 7 days; singular and plural alike.
_UNITS = {"minute": 60, "hour": (60, 3600), "day": 24, "week": 7, "year": (12, 365)}
_WORDS.update({form: v for unit, v in _UNITS.items() for form in (unit, unit + "s")})
_WORDS.update({m: n for m, n in MONTHS.items() if len(m) > 3 or m == "may"})  # "February" is month 2

# Digits with optional thousands separators and decimals, a leading sign, and a trailing % or
# magnitude suffix ("5k"); digits inside words and ids ("A12", "2026-12-04") count too, since
# an id's number copied into an integer argument is grounded.
_NUMBER = re.compile(
    r"(?<![\d.])([-+−]?)(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?(?:[eE]([-+−]?\d+))?(\s*%|k\b|K\b|M\b|B\b|bn\b)?"
)
_SCALE = {"k": 1e3, "K": 1e3, "M": 1e6, "B": 1e9, "bn": 1e9}
_WORD = re.compile(r"\b[a-z]+\b")
_ARTICLE = re.compile(r"\b(?:a|an)\b", re.I)


def numbers_in(text: str, articles: bool = True) -> set[float]:
    """Every number `text` states, as floats (see the module doc for what counts); with
    `articles`, "a"/"an" state 1 ("a pizza": quantity one)."""
    found: set[float] = {1.0} if articles and _ARTICLE.search(text) else set()
    for m in _NUMBER.finditer(text):
        sign, whole, frac, exp, suffix = m.groups()
        value = float(whole.replace(",", "") + (f".{frac}" if frac else "") + (f"e{exp}" if exp else ""))
        found.add(value)
        if sign in ("-", "−"):
            found.add(-value)
        if suffix and suffix.strip() == "%":
            found.add(value / 100)
        elif suffix:
            found.add(value * _SCALE[suffix])
    words = _WORD.findall(text.lower())
    for i, w in enumerate(words):
        if w not in _WORDS:
            continue
        values = _WORDS[w] if isinstance(_WORDS[w], tuple) else (_WORDS[w],)
        found.update(float(v) for v in values)
        n = values[0]
        if n < 1 and w != "percent":  # "half" / "a quarter" of a level or a position: also a percentage
            found.add(n * 100)
        # "twenty five", "two hundred", "three thousand": one step of composition
        nxt = _WORDS.get(words[i + 1]) if i + 1 < len(words) else None
        if not isinstance(nxt, int | float) or w in ("a", "an"):
            continue
        if 20 <= n < 100 and n % 10 == 0 and 0 < nxt < 10:
            found.add(float(n + nxt))
        if nxt in (100, 1000, 1_000_000, 1_000_000_000) and n < 1000:
            found.add(float(n * nxt))
    return found


# A string argument that is a number and nothing else ("2014", "-3.5", "1,200"): the model wrote a
# number, in quotes because the schema asks for a string, and it is checked as one.
_NUMERIC_STRING = re.compile(r"[-+−]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?")


def _numbers(value: Any, strings: bool = False) -> Iterable[float]:
    """The numeric leaves of an argument value (booleans are not numbers here); with `strings`,
    also its strings that are a number and nothing else (`_NUMERIC_STRING`)."""
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, int | float):
        if math.isfinite(value):
            yield float(value)
    elif isinstance(value, str):
        text = value.strip()
        if strings and _NUMERIC_STRING.fullmatch(text):
            yield float(text.replace(",", "").replace("−", "-"))
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _numbers(v, strings)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _numbers(v, strings)


def empty(value: Any) -> bool:
    """Whether an argument holds no value at all: None, a blank string, or a list or object of
    nothing but such (`[]`, `{}`, `[{}]`, `[""]`). Zero and False are values."""
    if value is None:
        return True
    if isinstance(value, str):
        return not value.strip()
    if isinstance(value, list | tuple):
        return all(empty(v) for v in value)
    if isinstance(value, dict):
        return all(empty(v) for v in value.values())
    return False


def _key(value: float) -> float:
    """A number as the guard compares it: unsigned, to 5 significant digits ("2 pi" written as
    6.2832, a sum's float noise), so that set lookups do the matching."""
    return float(f"{abs(value):.5g}")


def _keys(values: Iterable[float]) -> set[float]:
    return {_key(v) for v in values}


def _grounded(value: float, known: set[float] | frozenset[float]) -> bool:
    return _key(value) in known


@dataclass(frozen=True)
class ToolNumbers:
    """What the guard needs of one tool: the numbers it states itself, and its required parameters."""

    offered: frozenset[float]
    required: frozenset[str]


def tool_numbers(schema: dict[str, Any], defaults: dict[str, Any] | None = None) -> ToolNumbers:
    """A tool's `ToolNumbers` from its function schema (the one the prompt shows) and the defaults
    it keeps outside the schema (`Tool.defaults`). Offered: every number in the schema (its
    description and parameter docs, defaults, enums, bounds) and in those defaults."""
    fn = schema.get("function", schema)
    offered = numbers_in(json.dumps(schema, ensure_ascii=False)) | set(
        _numbers(list((defaults or {}).values()))
    )
    required = (fn.get("parameters") or {}).get("required") or ()
    return ToolNumbers(frozenset(_keys(offered)), frozenset(required))


_ALNUM = re.compile(r"[^a-z0-9]")


def placeholder(key: str, value: Any, said: str = "") -> bool:
    """Whether `value` holds a text that only names its own parameter ("book_id" for `book_id`,
    "Team1" for `team1`, inside objects and lists too) and that the user's words (`said`, lower
    case) do not hold: a slot filled with its label, not with data."""
    if isinstance(value, str):
        text = _ALNUM.sub("", value.lower())
        return bool(text) and text == _ALNUM.sub("", key.lower()) and value.strip().lower() not in said
    if isinstance(value, dict):
        return any(placeholder(k, v, said) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(placeholder(key, v, said) for v in value)
    return False


def _unstated(value: Any, known: set[float], offered: frozenset[float]) -> bool:
    """Whether `value` holds a number (a string that is only one counts) that neither the
    conversation (`known`) nor the tool (`offered`) states."""
    return any(not _grounded(v, known) and not _grounded(v, offered) for v in _numbers(value, strings=True))


def ungrounded(
    call: ToolCall, known: set[float], tool: ToolNumbers | None = None, said: str = ""
) -> list[tuple[str, Any]]:
    """(parameter, value) for every required argument of `call` that is empty (`empty`) or holds a
    number (a string that is only a number counts) that neither the conversation (`known`) nor the
    tool states; without a `tool`, every argument is checked.

    Optional parameters are not checked: the tool has a default for them, so a value there
    refines the action the user asked for ("the latest 3 emails") rather than making one up."""
    offered = tool.offered if tool is not None else frozenset()
    out = []
    for name, value in call.arguments.items():
        if tool is not None and name not in tool.required:
            continue
        if empty(value) or placeholder(name, value, said) or _unstated(value, known, offered):
            out.append((name, value))
    return out


def missing_paths(
    name: str, value: Any, known: set[float], tool: ToolNumbers | None = None, said: str = ""
) -> list[str]:
    """Where inside a held argument the missing values are: "location.latitude" and
    "location.longitude" for `location={"latitude": 40.1, "longitude": -74.0}` with neither number
    stated, "dates[1]" for an empty second item; the argument's own name when it is empty as a whole
    or a number itself."""
    offered = tool.offered if tool is not None else frozenset()

    def walk(v: Any, path: str, key: str) -> Iterable[str]:
        if empty(v) or (isinstance(v, str) and placeholder(key, v, said)):
            yield path
        elif isinstance(v, dict):
            for k, x in v.items():
                yield from walk(x, f"{path}.{k}", k)
        elif isinstance(v, list | tuple):
            for i, x in enumerate(v):
                yield from walk(x, f"{path}[{i}]", key)
        elif _unstated(v, known, offered):
            yield path

    return list(walk(value, name, name)) or [name]


# Above this many stated numbers (long tool results), the arithmetic step takes one operand from
# the user's words only, so the set stays small (pairs grow as the square).
ALL_PAIRS_UP_TO = 150


def known_numbers(messages: Iterable[Message]) -> set[float]:
    """The numbers a conversation states (as `_key`s): system prompt, user turns and tool
    results (not the model's own words, where an invented number would ground itself), and one
    step of arithmetic on two different ones (the articles' 1 aside): "another €100" on a €400
    budget is 500, "double it" is 2 times the current value, the card's share of a €375 fare
    after a €128 gift card is 247."""
    stated: set[float] = set()
    operands: set[float] = set()  # without the articles' 1, which every sentence would spread
    said: set[float] = set()
    for m in messages:
        if m.role in ("system", "user", "tool"):
            stated |= numbers_in(m.content)
            found = numbers_in(m.content, articles=False)
            operands |= found
            if m.role == "user":
                said |= found
    known = _keys(stated)
    for u in operands if len(operands) <= ALL_PAIRS_UP_TO else said:
        for k in operands:
            if k != u:  # two numbers: "k - k = 0" would ground every zero
                known.update(_keys((k + u, k - u, k * u)))
    return known


class Held(dict):
    """`held_calls`' answer: call key -> the [(argument, value)] it lacks; `paths`: call key ->
    where inside those arguments the values nobody gave are (`missing_paths`)."""

    paths: dict[str, list[str]]


def held_calls(
    calls: list[ToolCall], tools: dict[str, ToolNumbers], messages: Iterable[Message], said: str | None = None
) -> Held:
    """The calls of one step that must not run, keyed by `ToolCall.key()`, with their ungrounded
    arguments; empty when every number is grounded. `tools`: tool name -> `tool_numbers(...)`;
    `said`: the user's words as they wrote them, for `placeholder` (default: the user's turns)."""
    messages = list(messages)
    known = known_numbers(messages)
    said = (said if said is not None else "\n".join(m.content for m in messages if m.role == "user")).lower()
    out = Held()
    out.paths = {}
    for c in calls:
        missing = ungrounded(c, known, tools.get(c.name), said)
        if missing:
            out[c.key()] = missing
            out.paths[c.key()] = [
                p for k, v in missing for p in missing_paths(k, v, known, tools.get(c.name), said)
            ]
    return out


def held_result(call: ToolCall, missing: list[tuple[str, Any]] | None) -> str:
    """The tool response of a call not run: why, or that another call of the step held it."""
    if missing:
        said = ", ".join(f"{k}={tojson(v)}" for k, v in missing)
        error = f"not run: {said} appears nowhere in the conversation; ask the user instead of guessing"
        if all(empty(v) for _, v in missing):
            error = f"not run: {said} is empty, a value the user never gave; ask the user instead of guessing"
    else:
        error = "not run: another call of this step used a value the user never gave"
    return tojson({"error": error, "kind": "ungrounded"})


def ask_for(held: dict[str, list[tuple[str, Any]]], calls: list[ToolCall]) -> str:
    """The question the agent asks the user for the values its held calls lacked."""
    parts = []
    for c in calls:
        missing = held.get(c.key())
        if missing:
            names = [k.replace("_", " ") for k, _ in missing]
            listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
            part = f"the {listed} for {c.name}"
            if part not in parts:  # three calls of one tool lacking one value: asked once
                parts.append(part)
    return f"I don't have {'; '.join(parts)}: you haven't said, and I won't guess. What should I use?"
