"""Limits guard: a call whose value breaks a limit its tool declares is not run.

A tool's schema can say more than a value's type: a pattern ("^[A-Z]{1,4}$" for a ticker), bounds
(minimum, maximum and their exclusive forms, multipleOf), the length of a text or a list, a format
(date, time, email, an IP address). `protocol.arguments.check_arguments` converts and checks the
types and enums; these limits are checked here, before the agent runs a step's calls, by
`jsonschema` (the reference implementation of JSON Schema's keywords; its format checks are the
ones it can make without optional packages). Only the limit keywords of each value's own schema
are given to it, walking `properties` and `items` as botpsy's converted arguments have them:
tool schemas from other people say "dict" or "float" where JSON Schema says "object" or "number",
and the type check is `check_arguments`'s.

What becomes of a call that breaks a limit depends on whose value it is:

* the user's own (written as such in one of the user's turns: "ticker 'Goog'", "on 12-Feb-2021",
  "event ID event123"): none of the step's calls runs, and the agent tells the user which value
  the tool does not take and why, in code's words, and asks for another. Mending the user's value
  quietly (upper-casing an ID, rewriting a date) would act on a value nobody gave.
* the model's (a value no user turn holds): the error goes back to the model as the calls'
  result, as a wrongly typed value's does, and it gets another step to correct it.

A value counts as the user's when the user's own words hold it: a number among the numbers the
user wrote, a text (of two characters or more) found in a user turn as a whole word, ignoring case.
The user's words are their requests as they typed them (`Agent.users_words`): the resolved-dates
line and the tools' note the agent adds to a user turn are not.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from botpsy.agent.grounding import numbers_in
from botpsy.protocol.formats import tojson
from botpsy.protocol.messages import ToolCall

LIMIT_KEYWORDS = (
    "pattern",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "format",
)
# The formats checked: those whose standard form people write too. JSON Schema's "time" is RFC
# 3339's, seconds and zone included, and tools that declare it take "08:00" (ACEBench's answers do).
FORMATS = ("date", "email", "ipv4", "ipv6", "uuid")


@dataclass(frozen=True)
class Broken:
    """One value of a call that breaks a limit of its tool."""

    path: str  # "ticker", "location.latitude", "dates[0]"
    value: Any
    rule: str  # what the tool takes, in words: "text matching ^[A-Z]+$", "at least 1"
    said: Any = None  # the value as the user wrote it ("Goog" for the model's "goog"); None: the model's

    @property
    def users(self) -> bool:
        """Whether the value is the user's own (written in a user turn), not the model's."""
        return self.said is not None


def _rule(schema: dict[str, Any], keyword: str) -> str:
    limit = schema.get(keyword)
    words = {
        "pattern": f"text matching {limit}",
        "minimum": f"at least {limit}",
        "maximum": f"at most {limit}",
        "exclusiveMinimum": f"more than {limit}",
        "exclusiveMaximum": f"less than {limit}",
        "multipleOf": f"a multiple of {limit}",
        "minLength": f"at least {limit} characters",
        "maxLength": f"at most {limit} characters",
        "minItems": f"at least {limit} items",
        "maxItems": f"at most {limit} items",
        "format": f"a {limit} in its standard form",
    }
    return words.get(keyword, keyword)


def declared_limits(schema: dict[str, Any]) -> dict[str, Any]:
    """The limit keywords of one value's schema (not its children's)."""
    return {k: schema[k] for k in LIMIT_KEYWORDS if k in schema}


@functools.cache
def _formats() -> Any:
    # jsonschema is imported where a schema first declares a limit: botpsy's own tools declare none,
    # and `botpsy run` does not pay for the import on every start.
    from jsonschema import FormatChecker

    return FormatChecker(FORMATS)


def _first_broken(limits: dict[str, Any], value: Any) -> str:
    """The first limit keyword `value` breaks, or ""; one is enough to say."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    try:
        for e in Draft202012Validator(limits, format_checker=_formats()).iter_errors(value):
            if isinstance(e.validator, str) and e.validator in limits:
                return e.validator
    except (SchemaError, TypeError, ValueError, re.error):
        pass  # a limit that is not a valid one (a broken pattern) limits nothing
    return ""


def _walk(value: Any, schema: Any, path: str) -> Iterable[tuple[str, Any, str]]:
    """(path, value, rule) for each value under `value` that breaks a limit of its schema."""
    if not isinstance(schema, dict):
        return
    limits = declared_limits(schema)
    keyword = _first_broken(limits, value) if limits else ""
    if keyword:
        yield path, value, _rule(schema, keyword)
    if isinstance(value, dict) and isinstance(schema.get("properties"), dict):
        for k, v in value.items():
            yield from _walk(v, schema["properties"].get(k), f"{path}.{k}")
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, v in enumerate(value):
            yield from _walk(v, schema["items"], f"{path}[{i}]")


def _breaks(call: ToolCall, parameters: dict[str, Any]) -> list[tuple[str, Any, str]]:
    """(path, value, rule) for each value of `call` that breaks a limit its `parameters` declare."""
    props = parameters.get("properties") if isinstance(parameters, dict) else None
    if not isinstance(props, dict):
        return []
    return [found for key, value in call.arguments.items() for found in _walk(value, props.get(key), key)]


def trim(calls: list[ToolCall], schemas: dict[str, dict[str, Any]]) -> list[str]:
    """Take off the spaces around a text value where they alone break a limit of its tool
    ("2023-01-01 " for a date, " AAPL" for ^[A-Z]+$): the model padded the value it meant, and
    nobody wrote the padding, so the call runs with the value inside. Changes the calls in place;
    returns the paths trimmed. Any other broken value stays for `step_broken`."""
    out: list[str] = []
    for c in calls:
        props = schemas.get(c.name, {}).get("properties")
        if isinstance(props, dict):
            for key, value in c.arguments.items():
                c.arguments[key] = _trimmed(value, props.get(key), key, out)
    return out


def _trimmed(value: Any, schema: Any, path: str, out: list[str]) -> Any:
    if not isinstance(schema, dict):
        return value
    if isinstance(value, str):
        limits = declared_limits(schema)
        inner = value.strip()
        if limits and inner != value and _first_broken(limits, value) and not _first_broken(limits, inner):
            out.append(path)
            return inner
        return value
    if isinstance(value, dict) and isinstance(schema.get("properties"), dict):
        return {k: _trimmed(v, schema["properties"].get(k), f"{path}.{k}", out) for k, v in value.items()}
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [_trimmed(v, schema["items"], f"{path}[{i}]", out) for i, v in enumerate(value)]
    return value


# The quotes and the sentence's punctuation around a value the user wrote, not part of it.
_AROUND = "\"'“”‘’`.,;:!?()[]{}<>"
_QUOTES = "\"'“”‘’`"  # a value's run ends at a quote: Goog in "Goog's" and in "'Goog'"


def _as_said(value: Any, said: str, said_numbers: set[float]) -> Any:
    """`value` as the user's words hold it, or None where they do not: a text in the user's
    spelling, and whole: where the model copied part of what the user wrote ("45.ABC" of
    "45.ABC,-120.33"), the user's run of characters up to the spaces or quotes around it, without
    the punctuation at its ends."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return value if float(value) in said_numbers else None
    if not isinstance(value, str) or len(value.strip()) < 2:
        return None
    found = re.search(rf"(?<!\w){re.escape(value.strip())}(?!\w)", said, re.I)
    if not found:
        return None
    start, end = found.span()
    while start > 0 and not said[start - 1].isspace() and said[start - 1] not in _QUOTES:
        start -= 1
    while end < len(said) and not said[end].isspace() and said[end] not in _QUOTES:
        end += 1
    whole = said[start:end].strip(_AROUND)
    return whole if found.group(0) in whole else found.group(0)


def step_broken(
    calls: list[ToolCall], schemas: dict[str, dict[str, Any]], said: str
) -> dict[str, list[Broken]]:
    """The calls of one step that break a limit, keyed by `ToolCall.key()`, each value with whether
    the user's words (`said`, as the user wrote them) hold it; empty when none breaks one."""
    out: dict[str, list[Broken]] = {}
    numbers: set[float] | None = None  # read from the user's words only once a value breaks a limit
    for c in calls:
        found = _breaks(c, schemas.get(c.name, {}))
        if found:
            numbers = numbers_in(said, articles=False) if numbers is None else numbers
            out[c.key()] = [Broken(path, v, rule, _as_said(v, said, numbers)) for path, v, rule in found]
    return out


def as_data(held: dict[str, list[Broken]]) -> dict[str, list[dict[str, Any]]]:
    """The held calls' broken values as plain data, for the trace's event."""
    return {
        k: [{"path": b.path, "value": b.value, "rule": b.rule, "said": b.said} for b in v]
        for k, v in held.items()
    }


def any_users(held: dict[str, list[Broken]]) -> bool:
    """Whether the user is to be asked: some value the user gave breaks a limit."""
    return any(b.users for found in held.values() for b in found)


def held_result(call: ToolCall, found: list[Broken] | None) -> str:
    """The tool response of a call not run: the value and the limit it breaks, or that another
    call of the step was held."""
    if found:
        said = "; ".join(f"{b.path}={tojson(b.value)} is not {b.rule}" for b in found)
        error = f"not run: {said}"
    else:
        error = "not run: another call of this step broke a limit of its tool"
    return tojson({"error": error, "kind": "limit"})


def tell_user(held: dict[str, list[Broken]], calls: list[ToolCall]) -> str:
    """What the agent tells the user of the values they gave that a tool does not take: which, in
    their own spelling, and why (the question that follows is the caller's)."""
    parts = []
    for c in calls:
        for b in held.get(c.key(), []):
            if b.users:
                part = f"{tojson(b.said)} for the {b.path.replace('_', ' ')} of {c.name} (it takes {b.rule})"
                if part not in parts:
                    parts.append(part)
    return f"I can't use {'; '.join(parts)}."
