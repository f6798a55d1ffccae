"""The richer unseen tools (data/tool_catalog.py, data/synthetic_rich.py) and their place in the mix."""

from __future__ import annotations

import random

import pytest

from botpsy.data.mix import mix_conversations
from botpsy.data.mix_config import MixConfig
from botpsy.data.synthetic_rich import (
    LEADS,
    QUESTION_LEADS,
    STYLES,
    describe,
    make_rich_tool,
    request_for,
    rich_conversation,
    several_values,
)
from botpsy.data.synthetic_tools import tool_name
from botpsy.data.tool_catalog import FAMILIES
from botpsy.protocol.arguments import check_arguments

APIS = [api for pair in FAMILIES for api in pair]


def _names(api) -> set[str]:
    return {tool_name(api.verb, api.noun, style) for style in (0, 1, 2)}


def _turns(msgs):
    """(user text, the assistant turn that answers it) for each request."""
    for i, m in enumerate(msgs):
        if m.role == "user":
            yield m.content, msgs[i + 1]


def _unled(user: str) -> str:
    """The request without the lead `request_for` may have put before its opening."""
    for lead in sorted({*LEADS, *QUESTION_LEADS} - {""}, key=len, reverse=True):
        if user.startswith(lead):
            return user[len(lead) :]
    return user


def _leaves(value):
    if isinstance(value, dict):
        for v in value.values():
            yield from _leaves(v)
    elif isinstance(value, list):
        for v in value:
            yield from _leaves(v)
    else:
        yield value


def test_the_catalogue_is_pairs_of_one_domain_with_unique_tool_names():
    assert len(FAMILIES) >= 10
    assert all(a.family == b.family and a.noun != b.noun for a, b in FAMILIES)
    assert len({api.noun for api in APIS}) == len(APIS)
    for api in APIS:
        for spec in api.params:
            assert spec.type != "boolean" or spec.default is False  # stated → True, never the default
            if spec.type != "boolean":
                assert all("{v}" in say for say in spec.say), (api.noun, spec.name)


@pytest.mark.parametrize("seed", range(60))
def test_every_gold_call_passes_the_argument_checker_unchanged(seed):
    tools, msgs = rich_conversation(random.Random(seed), requests=4, near_miss=0.2, parallel=0.4)
    by_name = {t["function"]["name"]: t["function"]["parameters"] for t in tools}
    assert len(by_name) == len(tools)
    for m in msgs:
        for call in m.tool_calls:
            params = by_name[call.name]
            assert check_arguments(call.name, params, call.arguments) == call.arguments
            assert set(params["required"]) <= set(call.arguments)


@pytest.mark.parametrize("seed", range(60))
def test_lists_and_objects_in_the_gold_are_the_values_the_request_states_in_its_order(seed):
    tools, msgs = rich_conversation(random.Random(seed), requests=4, near_miss=0.0, parallel=0.0)
    by_name = {t["function"]["name"]: t["function"]["parameters"]["properties"] for t in tools}
    for user, reply in _turns(msgs):
        (call,) = reply.tool_calls
        for key, value in call.arguments.items():
            kind = by_name[call.name][key]["type"]
            if kind == "boolean":
                continue  # a flag: its phrase is checked in the optional-parameter test
            if kind not in ("array", "object"):
                assert str(value) in user
                continue
            leaves = list(_leaves(value))
            # the user's data, never the schema: no "type"/"items" keys, no empty list
            assert leaves and not (isinstance(value, dict) and {"type", "items", "properties"} & set(value))
            if kind == "array":
                assert not any(isinstance(v, dict) and "type" in v for v in value)
            at = [user.find(str(v)) for v in leaves if isinstance(v, str) or not isinstance(v, bool)]
            assert -1 not in at, (user, value)
            if kind == "array" and not isinstance(value[0], dict):
                assert at == sorted(at), (user, value)


def test_optional_parameters_appear_only_when_stated_and_never_at_their_default():
    stated, left_out = 0, 0
    for seed in range(300):
        rng = random.Random(seed)
        api = rng.choice(APIS)
        user, args = request_for(rng, api)
        for spec in api.params:
            if spec.default is None and not spec.optional:
                assert spec.name in args
                continue
            if spec.name in args:
                stated += 1
                assert args[spec.name] != spec.default
                if spec.type == "boolean":
                    assert any(say in user for say in spec.say)
            else:
                left_out += 1
                if spec.type == "boolean":  # a flag the request does not state stays off
                    assert not any(say in user for say in spec.say)
    assert stated > 50 and left_out > 50


def test_near_miss_requests_get_no_call_and_want_an_api_the_list_does_not_hold():
    siblings = 0
    for seed in range(80):
        tools, msgs = rich_conversation(random.Random(seed), requests=3, near_miss=1.0)
        listed = {t["function"]["name"] for t in tools}
        assert not any(m.tool_calls for m in msgs) and not any(m.role == "tool" for m in msgs)
        for user, reply in _turns(msgs):
            assert reply.content.startswith("Sorry, I can't") and "none of my tools" in reply.content
            texts = (user.casefold(), _unled(user).casefold())
            # the API whose opening the request starts with (the longest: "Read the sensors", not "Read")
            opened = [
                (len(ask), a) for a in APIS for ask in a.asks for t in texts if t.startswith(ask.casefold())
            ]
            wanted = [a for n, a in opened if n == max(opened, key=lambda o: o[0])[0]]
            assert wanted and not any(_names(a) & listed for a in wanted), user
            # every decline's reasoning opens with "No" (a call's opens with the tool's name)
            assert reply.reasoning.split(" ")[0] == "No", reply.reasoning
            if "only" in reply.content:  # a listed sibling was passed over, by name
                siblings += 1
                assert reply.reasoning.split(" ")[5] in listed
    assert siblings > 80


def test_parallel_turns_hold_several_distinct_calls_of_one_or_two_apis():
    same, two = 0, 0
    for seed in range(60):
        tools, msgs = rich_conversation(random.Random(seed), requests=3, near_miss=0.0, parallel=1.0)
        for _, reply in _turns(msgs):
            calls = reply.tool_calls
            assert len(calls) >= 2
            keys = [c.key() for c in calls]
            assert len(set(keys)) == len(keys)
            if len({c.name for c in calls}) == 1:
                same += 1
            else:
                two += 1
    assert same > 20 and two > 20


def test_a_request_naming_several_values_of_a_one_value_parameter_gets_a_call_per_value():
    """ "Find hotels in Paris and Lima": `city` takes one city, so two calls, the same but for it."""
    seen = 0
    for seed in range(200):
        rng = random.Random(seed)
        api = rng.choice(APIS)
        got = several_values(rng, api, "f")
        if got is None:
            required = [p for p in api.params if p.default is None and not p.optional]
            assert not any(p.type == "string" and not p.enum and len(p.values) > 2 for p in required)
            continue
        user, calls = got
        seen += 1
        spread = [k for k in calls[0].arguments if len({str(c.arguments[k]) for c in calls}) > 1]
        assert len(calls) >= 2 and len(spread) == 1
        (key,) = spread
        assert all(
            {k: v for k, v in c.arguments.items() if k != key}
            == {k: v for k, v in calls[0].arguments.items() if k != key}
            for c in calls
        )
        at = [user.find(str(c.arguments[key])) for c in calls]
        assert -1 not in at and at == sorted(at), user
    assert seen > 60


def test_descriptions_come_in_every_style():
    spec = next(p for api in APIS for p in api.params if p.default is not None and p.example == "")
    assert describe(spec, "docstring").endswith(f"Default {spec.default!r}")
    assert "defaults to" in describe(spec, "long")
    seen = set()
    for seed in range(100):
        rng = random.Random(seed)
        schema = make_rich_tool(rng, rng.choice(APIS))
        text = schema["function"]["description"]
        seen.add("docstring" if "Args:\n" in text else "long" if "Returns a JSON" in text else "other")
    assert seen == {"docstring", "long", "other"} and len(STYLES) == 4


def test_a_seeded_rich_conversation_and_stream_are_deterministic():
    a = rich_conversation(random.Random(11), requests=4)
    b = rich_conversation(random.Random(11), requests=4)
    assert a[0] == b[0] and [m.to_openai() for m in a[1]] == [m.to_openai() for m in b[1]]
    cfg = MixConfig(domains=("calendar",), synthetic_share=0.6, synthetic_rich=0.7)
    x, y = mix_conversations(12, seed=4, cfg=cfg), mix_conversations(12, seed=4, cfg=cfg)
    assert [[m.to_openai() for m in c.messages] for c in x] == [
        [m.to_openai() for m in c.messages] for c in y
    ]
    assert {c.source for c in x} >= {"synthetic_rich", "calendar"}


def test_the_rich_knobs_leave_the_default_stream_as_it_was():
    base = MixConfig(domains=("calendar",), synthetic_share=0.5)
    other = MixConfig(domains=("calendar",), synthetic_share=0.5, synthetic_rich_near_miss=0.9)
    a, b = mix_conversations(10, seed=2, cfg=base), mix_conversations(10, seed=2, cfg=other)
    assert [[m.to_openai() for m in c.messages] for c in a] == [
        [m.to_openai() for m in c.messages] for c in b
    ]
    assert "synthetic_rich" not in {c.source for c in a}


def test_the_mix_renders_rich_conversations_with_the_runtime_prompt():
    cfg = MixConfig(
        domains=("calendar",), synthetic_share=1.0, synthetic_rich=1.0, synthetic_rich_near_miss=1.0
    )
    convs = mix_conversations(5, seed=3, cfg=cfg)
    plain = mix_conversations(1, seed=3, cfg=MixConfig(domains=("calendar",), synthetic_share=1.0))
    assert all(c.source == "synthetic_rich" for c in convs)
    assert not any(m.tool_calls for c in convs for m in c.messages)  # the near-miss share passed on
    assert {c.messages[0].content for c in convs} == {plain[0].messages[0].content}


def test_no_rich_gold_call_holds_a_number_the_grounding_guard_would_stop():
    """The guard stops a call whose numbers the user never said; every number in a list or an object
    of the gold comes from the request, so the runtime would let each gold call through."""
    from botpsy.agent.grounding import held_calls, tool_numbers

    checked = 0
    for seed in range(80):
        tools, msgs = rich_conversation(random.Random(seed), requests=3, near_miss=0.1, parallel=0.4)
        numbers = {s["function"]["name"]: tool_numbers(s) for s in tools}
        for i, m in enumerate(msgs):
            if m.tool_calls:
                assert held_calls(m.tool_calls, numbers, msgs[:i]) == {}, m.tool_calls
                checked += 1
    assert checked > 150


def test_a_two_api_turn_restates_each_tool_in_its_own_clause_in_call_order():
    seen = 0
    for seed in range(60):
        _, msgs = rich_conversation(
            random.Random(seed), requests=3, near_miss=0.0, parallel=1.0, restate=True
        )
        for i, m in enumerate(msgs):
            calls = m.tool_calls
            if len({c.name for c in calls}) != 2:
                continue
            answer = msgs[i + 1 + len(calls)].content
            clauses = answer.split("; ")
            assert len(clauses) == 2 and all(c.name in cl for c, cl in zip(calls, clauses, strict=True))
            seen += 1
    assert seen > 20


def test_the_mix_passes_restate_on_to_rich_conversations_and_leaves_it_off_by_default():
    on = MixConfig(domains=("calendar",), synthetic_share=1.0, synthetic_rich=1.0, synthetic_restate=True)
    off = MixConfig(domains=("calendar",), synthetic_share=1.0, synthetic_rich=1.0)
    answers = {
        k: [
            m.content
            for c in mix_conversations(8, seed=5, cfg=cfg)
            for m in c.messages
            if m.role == "assistant"
        ]
        for k, cfg in (("on", on), ("off", off))
    }
    assert any("answered (results R" in a for a in answers["off"])  # the shipped recipe's line
    assert not any("answered (result" in a for a in answers["on"])
