"""The calendar world: generation, gold replay, splits and the checker."""

from collections import Counter

import pytest

from botpsy.protocol.messages import Message, ToolCall, Trace
from botpsy.worlds import get_domain, make_world, replay_gold
from botpsy.worlds.base import TASK_KINDS, check_trace, facts_present
from botpsy.worlds.calendar import _T, generate_conversations

DOMAIN = get_domain("calendar")


@pytest.mark.parametrize("split", ["train", "eval"])
def test_every_gold_trajectory_reaches_its_hash(split):
    tasks = DOMAIN.generate(120, 7, split)
    assert len(tasks) == 120
    for t in tasks:
        ok, why = replay_gold(DOMAIN, t)
        assert ok, (t.id, why)


def test_eval_covers_every_kind_evenly():
    kinds = Counter(t.kind for t in DOMAIN.generate(50, 1000, "eval"))
    assert set(kinds) == set(TASK_KINDS) and min(kinds.values()) == 10


def test_generation_is_deterministic():
    a = [t.to_json() for t in DOMAIN.generate(10, 3, "eval")]
    b = [t.to_json() for t in DOMAIN.generate(10, 3, "eval")]
    assert a == b


def test_train_and_eval_templates_and_streams_are_disjoint():
    for kind, pools in _T.items():
        assert not set(pools["train"]) & set(pools["eval"]), kind
    train = {t.user for t in DOMAIN.generate(300, 0, "train")}
    evals = DOMAIN.generate(100, 0, "eval")
    # requests with a template (not small talk / out-of-scope) never repeat across splits
    overlap = [
        t.user for t in evals if t.user in train and t.kind in ("single", "multi_step", "missing_info")
    ]
    assert overlap == []


def test_conversations_chain_requests_over_one_state():
    convs = generate_conversations(5, 0, "train", per_conversation=4)
    assert all(len(c) == 4 for c in convs)
    for c in convs:
        # each task starts from the state the previous one left
        for prev, nxt in zip(c, c[1:], strict=False):
            world = make_world(DOMAIN, prev)
            for call in prev.gold_calls:
                world.call(call.name, call.arguments)
            assert world.state.model_dump() == nxt.initial_state


def _trace(task, calls=(), answer="", stopped="answer"):
    msgs = [Message("user", task.user)]
    if calls:
        msgs.append(Message("assistant", "", "", list(calls)))
    msgs.append(Message("assistant", answer))
    return Trace(messages=msgs, stopped=stopped)


def test_checker_rules():
    tasks = DOMAIN.generate(25, 5, "eval")
    mutating = {t.name for t in DOMAIN.tools if t.labels.mutates}
    no_call = next(t for t in tasks if t.kind == "no_call")
    initial = make_world(DOMAIN, no_call).hash()
    assert check_trace(no_call, _trace(no_call, answer="hello"), initial, mutating).success
    bad = check_trace(
        no_call, _trace(no_call, [ToolCall("list_events", {"date": "2026-12-01"})], "hi"), initial, mutating
    )
    assert not bad.success and "none was needed" in bad.reason
    capped = check_trace(no_call, _trace(no_call, answer="hello", stopped="token_cap"), initial, mutating)
    assert not capped.success

    ask = next(t for t in tasks if t.kind == "missing_info")
    hasty = _trace(ask, [ToolCall("create_event", {"title": "x", "start": "2026-12-03T10:00"})], "done")
    assert not check_trace(ask, hasty, ask.expected_hash, mutating).success

    single = next(t for t in tasks if t.kind == "single" and t.required_facts)
    assert not check_trace(single, _trace(single, answer="no idea"), single.expected_hash, mutating).success


@pytest.mark.parametrize(
    "answer,facts,missing",
    [
        ("You have Dentist at 10:00", [["dentist"]], []),
        ("You have nothing", [["dentist"], ["nothing", "free"]], ["dentist"]),
        ("", [["a", "b"]], ["a|b"]),
        ("anything", [], []),
    ],
)
def test_facts(answer, facts, missing):
    assert facts_present(answer, facts) == missing


def test_the_task_streams_are_pinned():
    """`eval worlds` compares models on the eval stream: a change there changes every held-out
    calendar figure. The train stream changed on purpose when issue 13 added training phrasings,
    when issue 34 gave "What can you do?" the reasoning the agent writes, and when issue 35 gave the
    train split its own phrasings of the chit-chat BFCL asks word for word (worlds.kit.TRAIN_PHRASINGS);
    the eval stream did not. Change either on purpose, and say so."""
    import hashlib

    def digest(tasks) -> str:
        return hashlib.sha256("".join(t.to_json() for t in tasks).encode()).hexdigest()

    assert digest(DOMAIN.generate(50, 1000, "eval")) == (
        "58123d8b898a283607c57860e8f5d73c6e7811b3f0950d201ed36a7093b556fc"
    )
    train = DOMAIN.generate(50, 0, "train") + [t for c in generate_conversations(3, 0, "train") for t in c]
    assert digest(train) == "31d67fc0a0b98c4a482fd1518d1b56943b8beedb81dc7a6bc6c1b2d67501f30a"


def test_the_calendar_is_a_kit_world():
    from botpsy.worlds.kit import SuiteDomain

    assert isinstance(DOMAIN, SuiteDomain)
    assert set(DOMAIN.all_recipes()) == set(TASK_KINDS)  # its own small talk and refusals only
