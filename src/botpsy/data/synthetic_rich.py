"""Conversations over the catalogue's richer unseen tools (`data.tool_catalog`), for the SFT mix.

Each conversation lists one to four APIs, with descriptions in one of the styles real APIs use
(short, long, with examples, Python-docstring), and its user turns take one of four shapes:

* **one call** whose arguments are the request's own values: a list the request names item by
  item, an object whose fields it states, a list of objects; an optional parameter appears in the
  gold only when the request sets it, so the model learns to leave a default alone;
* **parallel, one API**: the same request for several values ("Find hotels in Paris and Lima",
  "…in Paris. Also, …in Lima") → one call per value, in one turn;
* **parallel, two APIs**: two requests joined in one turn → a call of each;
* **near miss**: the request wants what a listed tool's sibling does (reserve a room where only a
  hotel search is listed; a share price where only exchange rates are) → a plain answer that no
  listed tool does it, and no call. A quarter of them ask for a domain none of the list covers.

With `restate`, each call returns facts (`data.tool_results`) and the turn ends with an answer
that restates them, one clause per call (`data.tool_answers`), as `data.synthetic_tools` does.

The messages go through the one renderer of generated-tool conversations
(`data.mix.runtime_conversation`), so they read exactly as the runtime shows a conversation.
"""

from __future__ import annotations

import json
import random
from typing import Any

from botpsy.data.synthetic_tools import call_thought, tool_name
from botpsy.data.tool_answers import opaque_reported, reported
from botpsy.data.tool_catalog import FAMILIES, Api, Spec
from botpsy.protocol.messages import Message, ToolCall

STYLES = ("short", "long", "example", "docstring")
PY_TYPES = {
    "string": "str",
    "integer": "int",
    "number": "float",
    "boolean": "bool",
    "array": "list",
    "object": "dict",
}
# Joins two requests in one turn; the second request's first letter follows the joint's case.
JOINTS = (". Also, ", ", and ", ". Then ", "; also ", ". And ", " and then ", ". ")
QUESTION_WORDS = ("what", "how", "when", "where", "which", "who")
LEADS = ("", "", "Please ", "Can you ", "Could you ", "Hey, ", "I need you to ", "Hi! ")
QUESTION_LEADS = ("", "", "Hey, ", "Quick question: ", "Hi! ", "Tell me: ")
ASKING_LEADS = ("Can you ", "Could you ")
DANGLING = ("for", "of", "with", "in", "using", "sides")  # openings a colon cannot follow


def sibling(api: Api) -> Api:
    a, b = next(pair for pair in FAMILIES if api in pair)
    return b if api is a else a


def _optional(spec: Spec) -> bool:
    return spec.default is not None or spec.optional


def _cap(text: str) -> str:
    return text[0].upper() + text[1:]


def the(desc: str) -> str:
    """A description as a sentence: "The city to look in", "Whether to ship express"."""
    return _cap(desc) if desc.startswith("whether") else f"The {desc}"


def describe(spec: Spec, style: str) -> str:
    """`spec`'s description in one of `STYLES`."""
    if style == "example" and spec.example:
        return f"{_cap(spec.desc)}, e.g. {spec.example}"
    if style == "long":
        extra = {"array": " A list: give each value as its own item.", "object": ""}.get(spec.type, "")
        if spec.type == "object":
            extra = f" An object with the fields {', '.join(f.name for f in spec.fields)}."
        if spec.default is not None:
            extra += f" Optional; defaults to {json.dumps(spec.default)}."
        else:
            extra += " Optional." if spec.optional else " Required."
        return f"{the(spec.desc)}.{extra}"
    if style == "docstring":
        return f"{the(spec.desc)}." + (f" Default {spec.default!r}" if spec.default is not None else "")
    return _cap(spec.desc)


def _object_schema(fields: tuple[Spec, ...], style: str) -> dict[str, Any]:
    props = {f.name: {"type": f.type, "description": describe(f, style)} for f in fields}
    return {"type": "object", "properties": props, "required": [f.name for f in fields]}


def prop_schema(spec: Spec, style: str, rng: random.Random) -> dict[str, Any]:
    """The JSON schema of one parameter; half the defaults are also written as `default`."""
    prop: dict[str, Any] = {"type": spec.type, "description": describe(spec, style)}
    if spec.type == "object":
        prop.update(_object_schema(spec.fields, style), description=prop["description"])
    elif spec.type == "array" and spec.items == "object":
        prop["items"] = _object_schema(spec.fields, style)
    elif spec.type == "array":
        prop["items"] = {"type": spec.items, **({"enum": list(spec.values)} if spec.enum else {})}
    elif spec.enum:
        prop["enum"] = list(spec.values)
    if spec.default is not None and rng.random() < 0.5:
        prop["default"] = spec.default
    return prop


def make_rich_tool(rng: random.Random, api: Api) -> dict[str, Any]:
    """`api`'s tool schema, its name in one of the naming styles and its prose in one of `STYLES`."""
    style = rng.choice(STYLES)
    props = {p.name: prop_schema(p, style, rng) for p in api.params}
    desc = f"{_cap(api.does)}."
    if style == "long":
        desc += " Returns a JSON object with the result, or an error that says what was wrong."
    elif style == "docstring":
        args = "\n".join(f"    {p.name} ({PY_TYPES[p.type]}): {describe(p, style)}" for p in api.params)
        desc += f"\n\nArgs:\n{args}"
    required = [p.name for p in api.params if not _optional(p)]
    return {
        "type": "function",
        "function": {
            "name": tool_name(api.verb, api.noun, rng.choice([0, 0, 1, 2])),
            "description": desc,
            "parameters": {"type": "object", "properties": props, "required": required},
        },
    }


def listing(rng: random.Random, items: list[str]) -> str:
    """Items as a request lists them: "A", "A and B", "A, B and C", "A, B, and C"."""
    if len(items) == 1:
        return items[0]
    if len(items) == 2:
        return f"{items[0]} and {items[1]}"
    last = rng.choice([" and ", ", and "])
    return ", ".join(items[:-1]) + last + items[-1]


def _pick(rng: random.Random, pool: tuple, used: set[str], k: int, strict: bool = False) -> list[Any]:
    """Up to `k` values of `pool` not in `used`; with none left, any of the pool unless `strict`."""
    left = [v for v in pool if str(v) not in used] or ([] if strict else list(pool))
    return rng.sample(left, min(k, len(left)))


def draw(rng: random.Random, spec: Spec, used: set[str]) -> tuple[Any, str] | None:
    """(value, how the request writes it) for `spec`; strings in `used` are not drawn again, so two
    parameters of one call never share a value the request would have to disambiguate (a cc list
    never repeats the "to" list); None for a list whose every item is taken."""
    if spec.type == "boolean":
        return (not spec.default) if spec.default is not None else spec.values[0], ""
    if spec.type == "object" or (spec.type == "array" and spec.items == "object"):
        n = 1 if spec.type == "object" else rng.choice([2, 2, 3])
        columns = {f.name: _pick(rng, f.values, used, n) for f in spec.fields}
        n = min(len(c) for c in columns.values())
        objs = [{name: col[i] for name, col in columns.items()} for i in range(n)]
        used.update(str(v) for o in objs for v in o.values())
        form = rng.choice(spec.forms)
        texts = [form.format(**o) for o in objs]
        return (objs[0], texts[0]) if spec.type == "object" else (objs, listing(rng, texts))
    if spec.type == "array":
        # one item now and then: a list parameter takes ["Paris"], never the bare "Paris"
        items = _pick(rng, spec.values, used, rng.choice([1, 2, 2, 3, 3, 4]), strict=True)
        if not items:
            return None
        used.update(str(v) for v in items)
        return items, listing(rng, [str(v) for v in items])
    pool = tuple(v for v in spec.values if v != spec.default)
    value = _pick(rng, pool, used, 1)[0]
    used.add(str(value))
    return value, str(value)


def _stated(rng: random.Random, api: Api) -> list[tuple[Spec, Any, str]]:
    """(parameter, value, how the request writes it) for what a request states: every required
    parameter, each optional one 40% of the time (and then with a value other than its default)."""
    out: list[tuple[Spec, Any, str]] = []
    used: set[str] = set()
    for spec in api.params:
        if _optional(spec) and rng.random() >= 0.4:
            continue
        got = draw(rng, spec, used)
        if got is not None:
            out.append((spec, *got))
    return out


def _sentence(rng: random.Random, api: Api, stated: list[tuple[Spec, Any, str]], lead: bool) -> str:
    """The request for `stated` in one of a few sentence shapes; `lead` lets a polite or casual lead
    open it ("Could you…", "Quick question: what…")."""
    phrases = [rng.choice(spec.say).format(v=text) for spec, _, text in stated]
    opening = rng.choice(api.asks)
    if rng.random() < 0.2 and len(phrases) > 1 and opening.split()[-1] not in DANGLING:
        text = f"{opening}: {', '.join(phrases)}"
    else:
        text = " ".join([opening, *phrases])
    question = opening.lower().startswith(QUESTION_WORDS)
    first = rng.choice(QUESTION_LEADS if question else LEADS) if lead else ""
    if first.strip() == "Please" and opening.startswith("Please"):
        first = ""
    if first and not opening.startswith("I"):
        text = first + text[0].lower() + text[1:]
    if question or first in ASKING_LEADS:
        return text + rng.choice(["?", "?", ""])
    return text + rng.choice([".", ".", ""])


def request_for(rng: random.Random, api: Api, lead: bool = True) -> tuple[str, dict[str, Any]]:
    """(request, gold arguments) for one call of `api`."""
    stated = _stated(rng, api)
    return _sentence(rng, api, stated, lead), {spec.name: value for spec, value, _ in stated}


def several_values(rng: random.Random, api: Api, name: str) -> tuple[str, list[ToolCall]] | None:
    """BFCL's parallel in its compact form: one request naming two or three values of a parameter
    that takes one ("Find hotels in Paris and Lima") → one call per value. Beside the list
    parameters, which take all the values in one call, it teaches reading the parameter's type.
    None when `api` has no free-text parameter to spread."""
    stated = _stated(rng, api)
    spreadable = [
        i
        for i, (spec, _, _) in enumerate(stated)
        if spec.type == "string" and not spec.enum and len(spec.values) > 2
    ]
    if not spreadable:
        return None
    i = rng.choice(spreadable)
    spec, value, _ = stated[i]
    used = {str(v) for _, v, _ in stated}
    others = [v for v in spec.values if str(v) not in used]
    values = [value, *rng.sample(others, min(len(others), rng.choice([1, 1, 2])))]
    stated[i] = (spec, value, listing(rng, [str(v) for v in values]))
    args = {s.name: v for s, v, _ in stated}
    return _sentence(rng, api, stated, True), [ToolCall(name, {**args, spec.name: v}) for v in values]


def join(rng: random.Random, first: str, second: str) -> str:
    """Two requests as one turn."""
    joint = rng.choice(JOINTS)
    if joint != ". " and not second.startswith("I"):
        second = second[0].lower() + second[1:]
    return first.rstrip("?.") + joint + second


def _call_turn(
    rng: random.Random,
    calls: list[ToolCall],
    user: str,
    reason: str,
    apis: dict[str, tuple[str, str]] | None = None,
) -> list[Message]:
    """The request, the calls, each tool's result and the answer that reports them: with `apis`
    (tool name → its API's verb and noun) results with facts and an answer that restates them
    (`data.tool_answers`), without it an opaque id under a fixed line."""
    msgs = [Message("user", user), Message("assistant", "", reason, calls)]
    return msgs + (reported(rng, calls, apis) if apis is not None else opaque_reported(rng, calls, True))


def _parallel_same(rng: random.Random, api: Api, name: str) -> tuple[str, list[ToolCall]]:
    """One API asked for two or three times in one turn: half the time in one sentence that names
    several values of one parameter (`several_values`), else as separate requests, each with its
    own values."""
    compact = several_values(rng, api, name) if rng.random() < 0.5 else None
    if compact is not None:
        return compact
    user, args = request_for(rng, api)
    calls = [ToolCall(name, args)]
    for _ in range(rng.choice([1, 1, 2])):
        for _try in range(6):
            more, more_args = request_for(rng, api, lead=False)
            if all(more_args != c.arguments for c in calls):
                user = join(rng, user, more)
                calls.append(ToolCall(name, more_args))
                break
    return user, calls


def decline(name: str, listed: Api | None, wanted: Api) -> tuple[str, str]:
    """(answer, reasoning) for a request for `wanted`, which no listed tool serves; `listed` is the
    listed sibling it was close to, or None when no listed tool shares its domain. The reasoning
    opens with "No" either way, as every decline in the mix does (`data.mix.first_replies`): a
    call's reasoning opens with the tool's name, so the choice is the first reasoning token."""
    skill = sibling(wanted).lacks
    if listed is None:
        return f"Sorry, I can't {skill}: none of my tools does that.", "No listed tool fits this request."
    return (
        f"Sorry, I can't {skill}: none of my tools does that, and {name} only {listed.does}.",
        f"No listed tool does this: {name} only {listed.does}.",
    )


def rich_conversation(
    rng: random.Random,
    requests: int = 3,
    near_miss: float = 0.2,
    parallel: float = 0.3,
    restate: bool = False,
) -> tuple[list[dict], list[Message]]:
    """(tool schemas, messages after the system turn) over one to four catalogue APIs: a share
    `near_miss` of the turns asks for an unlisted sibling (or an unlisted domain) and is declined, a
    share `parallel` asks for several calls in one turn, the rest for one call. `restate` gives the
    tools results with facts and answers that restate them (`data.tool_results`)."""
    pairs = rng.sample(FAMILIES, rng.randint(1, 4))
    apis = [api for pair in pairs for api in (pair if rng.random() < 0.2 else [rng.choice(pair)])]
    rng.shuffle(apis)
    schemas = [make_rich_tool(rng, api) for api in apis]
    names = {api: s["function"]["name"] for api, s in zip(apis, schemas, strict=True)}
    kinds = {names[api]: (api.verb, api.noun) for api in apis} if restate else None
    unlisted_siblings = [sibling(a) for a in apis if sibling(a) not in names]
    other_families = [p for p in FAMILIES if p not in pairs]
    msgs: list[Message] = []
    for _ in range(requests):
        roll = rng.random()
        if roll < near_miss and (unlisted_siblings or other_families):
            if other_families and (not unlisted_siblings or rng.random() < 0.25):
                wanted, listed = rng.choice(rng.choice(other_families)), None
            else:
                wanted = rng.choice(unlisted_siblings)
                listed = sibling(wanted)
            user = request_for(rng, wanted)[0]
            answer, reason = decline(names[listed] if listed else "", listed, wanted)
            msgs += [Message("user", user), Message("assistant", answer, reason)]
            continue
        api = rng.choice(apis)
        name = names[api]
        if roll < near_miss + parallel:
            if len(apis) > 1 and rng.random() < 0.5:
                other = rng.choice([a for a in apis if a is not api])
                first, args = request_for(rng, api)
                second, other_args = request_for(rng, other, lead=False)
                calls = [ToolCall(name, args), ToolCall(names[other], other_args)]
                msgs += _call_turn(rng, calls, join(rng, first, second), call_thought(calls), kinds)
                continue
            user, calls = _parallel_same(rng, api, name)
            msgs += _call_turn(rng, calls, user, call_thought(calls), kinds)
            continue
        user, args = request_for(rng, api)
        calls = [ToolCall(name, args)]
        msgs += _call_turn(rng, calls, user, call_thought(calls), kinds)
    return schemas, msgs
