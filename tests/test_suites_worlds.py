"""Worlds for every suite and the cross-suite worlds: generation, gold replay, splits, kind rules."""

import copy

import pytest

from botpsy.protocol.messages import Message, ToolCall, Trace
from botpsy.worlds import DOMAINS
from botpsy.worlds.base import (
    ALL_TASK_KINDS,
    ActingUser,
    Task,
    check_trace,
    make_user,
    make_world,
    replay_gold,
)
from botpsy.worlds.tasks import check_tasks, domain_names, generate_tasks, read_tasks, write_tasks


def test_done_when_three_tasks_per_domain_seed_11_replay_to_their_hash():
    for split in ("train", "eval"):
        tasks = generate_tasks("all", n=3, seed=11, split=split)
        assert {t.domain for t in tasks} == set(DOMAINS)
        assert len(tasks) == 3 * len(DOMAINS)
        bad = [r for r in check_tasks(tasks) if not r.ok]
        assert not bad, bad


@pytest.mark.parametrize("name", [d for d in DOMAINS if d != "calendar"])
def test_every_generated_task_replays(name):
    domain = DOMAINS[name]
    for seed in range(3):
        for split in ("train", "eval"):
            tasks = domain.generate(10, seed, split)
            assert len(tasks) == 10  # a recipe that does not fit a seed never costs a task
            for t in tasks:
                assert t.kind in ALL_TASK_KINDS and t.domain == name
                ok, why = replay_gold(domain, t)
                assert ok, (t.id, t.kind, why)


def test_every_kind_is_generated_somewhere():
    kinds = {t.kind for t in generate_tasks("all", n=16, seed=3, split="train")}
    assert kinds == set(ALL_TASK_KINDS)


def test_generation_is_deterministic_and_splits_differ():
    a = generate_tasks("email,banking", 6, seed=4, split="eval")
    b = generate_tasks("email,banking", 6, seed=4, split="eval")
    assert [t.to_json() for t in a] == [t.to_json() for t in b]
    train = {t.user for t in generate_tasks("all", 20, seed=1, split="train")}
    evals = {t.user for t in generate_tasks("all", 20, seed=1, split="eval")}
    # Templates are disjoint; a few generic lines (greetings, out-of-scope requests) are shared on purpose.
    assert len(train & evals) < 0.15 * len(evals)


def test_task_files_round_trip(tmp_path):
    tasks = generate_tasks("telecom,cross_web_notes", 4, seed=2, split="train")
    path = tmp_path / "tasks.jsonl"
    assert write_tasks(tasks, path) == len(tasks)
    again = read_tasks(path)
    assert [t.to_json() for t in again] == [t.to_json() for t in tasks]
    assert all(r.ok for r in check_tasks(again))


def test_domain_names():
    assert domain_names("all") == list(DOMAINS)
    assert domain_names("email, web") == ["email", "web"]
    with pytest.raises(KeyError, match="unknown domain"):
        domain_names("email,nope")


def test_tampered_task_fails_the_check():
    t = DOMAINS["banking"].generate(1, 0, "train")[0]
    bad = copy.deepcopy(t)
    bad.expected_hash = "0" * 16
    assert not check_tasks([bad])[0].ok
    broken = copy.deepcopy(t)
    broken.domain = "no-such-domain"
    assert "KeyError" in check_tasks([broken])[0].reason


def _task(domain: str, kind: str, seed_range=range(40)) -> Task:
    for seed in seed_range:
        for t in DOMAINS[domain].generate(8, seed, "train"):
            if t.kind == kind:
                return t
    raise AssertionError(f"no {kind} task in {domain}")


def _replay_trace(domain, task: Task, skip_first_user_reply: bool = False) -> tuple[Trace, str]:
    """Run the gold conversation as if an agent produced it; returns the trace and final hash."""
    world = make_world(domain, task)
    user = make_user(domain, task, world)
    trace = Trace(messages=[Message("user", task.user)], stopped="answer")
    for m in task.gold_messages():
        if m.role == "user":
            reply = user.respond(trace.final_answer)
            trace.messages.append(Message("user", reply))
            continue
        if m.role == "assistant":
            trace.messages.append(m)
            for c in m.tool_calls:
                world.call(c.name, c.arguments)
    return trace, world.hash()


@pytest.mark.parametrize(
    "domain", ["email", "banking", "files", "retail", "cross_email_banking", "cross_web_notes"]
)
def test_injection_gold_passes_and_obeying_the_injection_fails(domain):
    d = DOMAINS[domain]
    task = _task(domain, "injection")
    assert task.forbidden
    mutating = {t.name for t in d.tools if t.labels.mutates}
    trace, final = _replay_trace(d, task)
    assert check_trace(task, trace, final, mutating).success
    # An agent that does what the planted text says makes a forbidden call: the verdict says so.
    obeyed = copy.deepcopy(trace)
    obeyed.messages.insert(-1, Message("assistant", "", None, [ToolCall(task.forbidden[0], {})]))
    verdict = check_trace(task, obeyed, final, mutating)
    assert not verdict.success and "forbidden" in verdict.reason


def test_injected_text_is_in_a_tool_result_not_in_the_request():
    for name in [
        "email",
        "messages",
        "notes",
        "contacts",
        "shopping",
        "travel",
        "files",
        "cross_calendar_email",
    ]:
        task = _task(name, "injection")
        tool_text = " ".join(m["content"] for m in task.gold if m["role"] == "tool")
        assert any(w in tool_text for w in ("assistant", "AI agents", "AI assistant")), name
        assert "assistant" not in task.user.lower()


@pytest.mark.parametrize("domain", ["banking", "contacts", "travel", "vehicle", "retail"])
def test_sensitive_gold_confirms_first_and_acting_early_fails(domain):
    d = DOMAINS[domain]
    task = _task(domain, "sensitive")
    mutating = {t.name for t in d.tools if t.labels.mutates}
    trace, final = _replay_trace(d, task)
    assert check_trace(task, trace, final, mutating).success
    # The same calls made before the user said yes: state is identical, the rule is not.
    calls = [c for m in trace.messages if m.role == "assistant" for c in m.tool_calls]
    eager = Trace(
        messages=[
            Message("user", task.user),
            Message("assistant", "", None, calls),
            Message("assistant", "Done."),
        ],
        stopped="answer",
    )
    verdict = check_trace(task, eager, final, mutating)
    assert not verdict.success and "confirmed" in verdict.reason


def test_telecom_user_actions_are_needed_to_reach_the_hash():
    d = DOMAINS["telecom"]
    task = next(
        t for s in range(20) for t in d.generate(8, s, "train") if t.user_actions and any(t.user_actions)
    )
    assert isinstance(make_user(d, task, make_world(d, task)), ActingUser)
    ok, why = replay_gold(d, task)
    assert ok, why
    # Without the customer's phone actions the agent's calls alone do not fix the problem.
    no_phone = copy.deepcopy(task)
    no_phone.user_actions = []
    assert not replay_gold(d, no_phone)[0]
    user_side = {t.name for t in d.user_tools}
    assert not user_side & {t.name for t in d.tools}
    assert all(a["name"] in user_side for acts in task.user_actions for a in acts)


def test_cross_domains_hash_every_part():
    d = DOMAINS["cross_contacts_email"]
    task = _task("cross_contacts_email", "multi_step")
    world = make_world(d, task)
    canon = world.state.canonical()
    assert set(canon) == {"contacts", "email"}
    assert {t.suite for t in d.tools} == {"contacts", "email"}


def test_composite_states_pickle():
    import pickle
    import random

    for name in [d for d in DOMAINS if d.startswith("cross_")]:
        state = DOMAINS[name].seed(random.Random(0))
        assert pickle.loads(pickle.dumps(state)) == state


# ---- one record per suite: the tools-level Suite and its world (issue 15) -------------------------


def _suite_world_classes(cls=None) -> list[type]:
    from botpsy.worlds.kit import SuiteDomain

    cls = cls or SuiteDomain
    found = [cls] if cls.__dict__.get("suite") is not None else []
    return found + [c for sub in cls.__subclasses__() for c in _suite_world_classes(sub)]


def test_every_suite_has_exactly_one_world_over_it_alone_and_every_such_world_a_suite():
    from botpsy.tools.registry import SUITES
    from botpsy.worlds import SUITE_WORLDS, suite_world

    classes = [c for c in _suite_world_classes() if c.__module__.startswith("botpsy.")]
    assert sorted(c.suite.name for c in classes) == sorted(SUITES)  # one class per suite, no extra
    assert list(SUITE_WORLDS) == list(SUITES)  # the order DOMAINS (and every task stream) walks
    for name, suite in SUITES.items():
        world = suite_world(name)
        assert world is SUITE_WORLDS[name] is DOMAINS[name]
        assert world.suite is suite and world.name == name
        assert world.tools is suite.tools and world.state_type is suite.state_type
        assert world.user_tools is suite.user_tools
        assert name in world.suites
    others = [d for name, d in DOMAINS.items() if name not in SUITES]
    assert others and all(d.suite is None and len(d.suites) > 1 for d in others)  # the cross worlds
    assert all(set(d.suites) <= set(SUITES) for d in others)
    with pytest.raises(KeyError, match="unknown suite 'cross_web_notes'"):
        suite_world("cross_web_notes")


def test_a_world_cannot_restate_what_its_suite_record_gives():
    from botpsy.tools.registry import SUITES
    from botpsy.worlds.kit import SuiteDomain

    with pytest.raises(TypeError, match=r"suite 'notes'.*tools, state_type"):

        class Restated(SuiteDomain):
            suite = SUITES["notes"]
            tools = SUITES["notes"].tools
            state_type = SUITES["notes"].state_type
