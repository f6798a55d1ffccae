"""The gold answer after generated tools' results: their facts restated, failures said as failures.

An answer that ends a tool turn should tell the user what the tool found, not that it ran. This
writes it from the results of `data.tool_results`: every fact of every result in plain words
("the temperature is 14 and the conditions are fog"), one clause per call when a turn made several
("for Paris, …; for Lima, …"), in one of a few phrasings so the model does not learn one line. A
call that failed gets a clause that says it did not happen and why, never one that claims it
(`agent.detectors.action_claims` finds no claim in it).

The phrasing is drawn from a generator seeded by the calls and their results, not from the
conversation's rng, so the rest of the conversation's draws are the same whichever answer is written.
"""

from __future__ import annotations

import json
import random
from typing import Any

from botpsy.data.tool_results import ACTION_VERBS, ERROR, facts, failed, opaque_result, tool_result
from botpsy.protocol.messages import Message, ToolCall

# How a field's unit suffix reads.
SUFFIXES = {
    "_mm": " in mm",
    "_g": " in grams",
    "_kb": " in KB",
    "_kcal": " in kcal",
    "_percent": " in percent",
    "_days": " in days",
    "_minutes": " in minutes",
}
ORDINALS = ("the first", "the second", "the third", "the fourth")


def text(value: Any) -> str:
    """A value as an answer writes it: a list as "A, B and C", an object as its values."""
    if isinstance(value, dict):
        return ", ".join(text(v) for v in value.values())
    if isinstance(value, list):
        return _listing([text(v) for v in value])
    return str(value)


def words(key: str) -> str:
    """A field name as words: "price_per_night" → "price per night", "rainfall_mm" → "rainfall in mm"."""
    for suffix, said in SUFFIXES.items():
        if key.endswith(suffix):
            return key[: -len(suffix)].replace("_", " ") + said
    return key.replace("_", " ")


def _listing(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def stated(result: dict[str, Any], prose: bool) -> str:
    """Every fact of `result`: "the high is 12 and the outlook is fog and rain" or, not `prose`,
    "high 12 and outlook fog and rain"."""
    parts = []
    for key, value in facts(result).items():
        verb = "are" if isinstance(value, list) and len(value) > 1 else "is"
        parts.append(f"the {words(key)} {verb} {text(value)}" if prose else f"{words(key)} {text(value)}")
    return _listing(parts)


def _named(key: str, value: Any) -> str:
    """An argument as the subject of a clause: a name as it is ("Paris"), anything else with its
    parameter's name ("sides 3 and 4", "a 2")."""
    return value if isinstance(value, str) else f"{words(key)} {text(value)}"


def _subjects(calls: list[ToolCall]) -> list[str]:
    """What tells the calls of one turn apart: the tool's name when they differ, else the values of
    the arguments that differ ("for Paris", "for Lima"); an ordinal when nothing does."""
    if len({c.name for c in calls}) == len(calls):
        return [c.name for c in calls]
    out = []
    for i, call in enumerate(calls):
        keys = [k for k in call.arguments if any(o.arguments.get(k) != call.arguments[k] for o in calls)]
        said = [_named(k, call.arguments[k]) for k in keys]
        out.append(f"for {' and '.join(said)}" if said else f"{ORDINALS[i % 4]} call")
    return out


def _cap(s: str) -> str:
    return s[0].upper() + s[1:]


def _single(rng: random.Random, call: ToolCall, result: dict, verb: str) -> str:
    name = call.name
    if failed(result):
        why = result[ERROR]
        done = ACTION_VERBS.get(verb, "done")
        return rng.choice(
            [
                f"Sorry, that did not work: {name} reported that {why}.",
                f"{name} failed, so nothing was {done}: {why}.",
                f"I couldn't get that done, because {why}.",
                f"That did not go through: {why}.",
            ]
        )
    prose = rng.random() < 0.6
    said = stated(result, prose)
    shapes = [f"Here is what {name} returned: {said}.", f"{name} says: {said}."]
    if prose:
        shapes += [f"{_cap(said)}.", f"According to {name}, {said}."]
    if verb in ACTION_VERBS:
        past = ACTION_VERBS[verb]
        shapes += [f"It's {past}: {said}.", f"All {past}: {said}."]
    return rng.choice(shapes)


def _clause(rng: random.Random, subject: str, result: dict) -> str:
    if failed(result):
        why = result[ERROR]
        return rng.choice([f"{subject}: it did not work ({why})", f"{subject}: it failed, because {why}"])
    return f"{subject}: {stated(result, rng.random() < 0.6)}"


def restating_answer(calls: list[ToolCall], results: list[dict], verbs: dict[str, str]) -> tuple[str, str]:
    """(answer, reasoning) that ends a turn whose `calls` returned `results`; `verbs` maps a tool's
    name to its API's verb, which says whether the tool changes something ("book") or looks up."""
    seed = json.dumps([[c.name, c.arguments, r] for c, r in zip(calls, results, strict=True)], sort_keys=True)
    rng = random.Random(f"answer|{seed}")
    bad = [c.name for c, r in zip(calls, results, strict=True) if failed(r)]
    reason = (
        f"{' and '.join(dict.fromkeys(bad))} returned an error: I say what did not happen and why."
        if bad
        else "The results are back; I tell the user what they say."
    )
    if len(calls) == 1:
        return _single(rng, calls[0], results[0], verbs.get(calls[0].name, "")), reason
    clauses = [_clause(rng, s, r) for s, r in zip(_subjects(calls), results, strict=True)]
    lead = rng.choice(["", "", "Here are the results. ", "The answers are in. "])
    said = "; ".join(clauses)
    # a sentence opens with a capital, but a tool's name stays as it is spelled
    return lead + (_cap(said) if said.startswith(("for ", "the ")) else said) + ".", reason


def reported(rng: random.Random, calls: list[ToolCall], apis: dict[str, tuple[str, str]]) -> list[Message]:
    """The tool turns of `calls` (each a `tool_results.tool_result`) and the answer that restates
    them; `apis` maps a tool's name to its API's (verb, noun). One draw of `rng` per call."""
    results = [tool_result(rng, c.name, *apis[c.name], c.arguments) for c in calls]
    answer, reason = restating_answer(calls, results, {name: verb for name, (verb, _) in apis.items()})
    tools = [Message("tool", json.dumps(r), name=c.name) for c, r in zip(calls, results, strict=True)]
    return [*tools, Message("assistant", answer, reason)]


def opaque_reported(rng: random.Random, calls: list[ToolCall], plural: bool) -> list[Message]:
    """The tool turns and answer the shipped adapter was trained on: an id per call under a fixed
    line, "Done: NAME answered (result R…)." (`plural`: the rich generator's "results" and "The
    tools answered."). One draw of `rng` per call, as `reported`."""
    results = [opaque_result(rng, c.name, c.arguments) for c in calls]
    tools = [Message("tool", json.dumps(r), name=c.name) for c, r in zip(calls, results, strict=True)]
    names = " and ".join(dict.fromkeys(c.name for c in calls))
    ids = ", ".join(r["result_id"] for r in results)
    word, thought = ("results", "The tools answered.") if plural else ("result", "The tool answered.")
    return [*tools, Message("assistant", f"Done: {names} answered ({word} {ids}).", thought)]
