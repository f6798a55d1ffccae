"""Generated tools' results and the answers that restate them (data/tool_results.py,
data/tool_answers.py), through both generators (issue 35: a continuation trained on the opaque
"Done: NAME answered (result R…)" line learned to answer without the tool's facts)."""

from __future__ import annotations

import json
import random

import pytest

from botpsy.agent.detectors import action_claims
from botpsy.data.synthetic_rich import rich_conversation
from botpsy.data.synthetic_tools import APIS, synthetic_conversation
from botpsy.data.tool_answers import restating_answer
from botpsy.data.tool_catalog import FAMILIES
from botpsy.data.tool_results import ERROR, RESULTS, facts, failed
from botpsy.protocol.messages import ToolCall


def plain(seed: int, restate: bool = True):
    return synthetic_conversation(random.Random(seed), requests=4, restate=restate)


def rich(seed: int, restate: bool = True):
    return rich_conversation(random.Random(seed), requests=4, near_miss=0.1, parallel=0.5, restate=restate)


GENERATORS = {"synthetic": plain, "synthetic_rich": rich}


def call_turns(msgs):
    """(calls, results, final answer) of every turn that called tools."""
    for i, m in enumerate(msgs):
        if m.tool_calls:
            n = len(m.tool_calls)
            tools = msgs[i + 1 : i + 1 + n]
            assert [t.role for t in tools] == ["tool"] * n and [t.name for t in tools] == [
                c.name for c in m.tool_calls
            ]
            answer = msgs[i + 1 + n]
            assert answer.role == "assistant" and not answer.tool_calls
            yield m.tool_calls, [json.loads(t.content) for t in tools], answer


def leaves(value) -> list:
    """The scalars of a result's facts, at any depth."""
    inner = value.values() if isinstance(value, dict) else value if isinstance(value, list) else None
    return [value] if inner is None else [x for v in inner for x in leaves(v)]


def turns_of(gen, seeds=range(150)):
    for seed in seeds:
        yield from call_turns(gen(seed)[1])


def test_every_generated_api_has_a_result_kind():
    nouns = {api[1] for api in APIS} | {api.noun for pair in FAMILIES for api in pair}
    assert nouns <= set(RESULTS), nouns - set(RESULTS)


@pytest.mark.parametrize("gen", GENERATORS.values(), ids=GENERATORS.keys())
def test_every_answer_states_every_fact_its_results_returned(gen):
    checked = 0
    for _, results, answer in turns_of(gen):
        for result in results:
            if failed(result):
                continue
            stated = facts(result)
            assert stated and "result_id" not in result  # facts, not an opaque id
            for leaf in leaves(stated):
                assert str(leaf) in answer.content, (leaf, result, answer.content)
                checked += 1
        assert "answered (result" not in answer.content
    assert checked > 500


@pytest.mark.parametrize("gen", GENERATORS.values(), ids=GENERATORS.keys())
def test_a_failed_call_is_answered_as_not_done_with_its_reason(gen):
    alone = mixed = 0
    for calls, results, answer in turns_of(gen, range(400)):
        if not any(failed(r) for r in results):
            continue
        assert "error" in answer.reasoning
        # one clause per call, in the calls' order, when a turn made several
        clauses = answer.content.split("; ") if len(calls) > 1 else [answer.content]
        assert len(clauses) == len(calls), answer.content
        for clause, result in zip(clauses, results, strict=True):
            if not failed(result):
                continue
            assert result[ERROR] in clause
            assert action_claims(clause) == [], clause
            assert any(w in clause for w in ("not", "n't", "failed")), clause
            assert not any(w in clause for w in ("It's ", "All ", "says:", "returned:")), clause
        if len(calls) == 1:
            alone += 1
        else:
            mixed += 1
    assert alone > 20 and mixed > 5


def test_a_share_of_calls_fails_and_most_succeed():
    results = [r for gen in GENERATORS.values() for _, rs, _ in turns_of(gen, range(200)) for r in rs]
    share = sum(map(failed, results)) / len(results)
    assert len(results) > 1000 and 0.05 < share < 0.15


@pytest.mark.parametrize("gen", GENERATORS.values(), ids=GENERATORS.keys())
def test_answers_come_in_several_phrasings(gen):
    openings, joined = set(), 0
    for calls, results, answer in turns_of(gen, range(100)):
        if len(calls) == 1 and not failed(results[0]):
            # the phrasing without the tool's name and facts: "Here is what", "According to", …
            openings.add(" ".join(answer.content.replace(calls[0].name, "NAME").split()[:2]))
        joined += len(calls) > 1
    assert len(openings) >= 4, openings
    assert joined > 10


def test_a_turn_of_one_api_tells_its_calls_apart_by_the_values_that_differ():
    calls = [ToolCall("get_weather", {"city": c, "unit": "celsius"}) for c in ("Paris", "Lima")]
    results = [{"status": "ok", "temperature": 14, "conditions": "fog"}, {"status": "error", ERROR: "x y"}]
    answer, reason = restating_answer(calls, results, {"get_weather": "get"})
    first, second = answer.split("; ")
    assert "Paris" in first and "14" in first and "fog" in first and "Lima" not in first
    assert "Lima" in second and "x y" in second and ("did not work" in second or "failed" in second)
    assert "get_weather returned an error" in reason


@pytest.mark.parametrize("gen", GENERATORS.values(), ids=GENERATORS.keys())
def test_restated_results_are_deterministic_and_change_only_tool_turns_and_answers(gen):
    for seed in range(30):
        a, b = gen(seed), gen(seed)
        assert a[0] == b[0] and [m.to_openai() for m in a[1]] == [m.to_openai() for m in b[1]]
        old = gen(seed, restate=False)
        assert old[0] == a[0] and len(old[1]) == len(a[1])
        for new, was in zip(a[1], old[1], strict=True):
            assert new.role == was.role and new.tool_calls == was.tool_calls
            if new.role == "user" or new.tool_calls:
                assert new.to_openai() == was.to_openai()
    assert any(gen(s)[1] != gen(s, restate=False)[1] for s in range(5))


def test_calculators_return_what_their_arguments_compute():
    area = RESULTS["triangle_area"](random.Random(0), {"base": 10, "height": 5})
    assert area == {"area": 25.0}
    roots = RESULTS["quadratic"](random.Random(0), {"a": 1, "b": -3, "c": 2})
    assert roots == {"discriminant": 1, "roots": [1.0, 2.0]}
    assert RESULTS["quadratic"](random.Random(0), {"a": 1, "b": 0, "c": 4})["real_root_count"] == 0
    stats = RESULTS["summary_stats"](random.Random(0), {"values": [3, 8.5, 12], "decimals": 1})
    assert stats == {"mean": 7.8, "median": 8.5, "minimum": 3, "maximum": 12}
    box = RESULTS["box_volume"](random.Random(0), {"dimensions": {"length": 2, "width": 3, "height": 4}})
    assert box == {"volume": 24, "unit": "cubic cm"}
    sort = RESULTS["numbers"](random.Random(0), {"values": [3, 9, 1], "descending": True})
    assert sort == {"sorted": [9, 3, 1]}
