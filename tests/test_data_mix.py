"""The SFT mix (data/mix.py, data/synthetic_tools.py): every world, the runtime's prompt, unseen tools."""

import json
import random
from collections import Counter
from itertools import pairwise

import pytest

from botpsy.agent.detectors import action_claims
from botpsy.agent.loop import declined_result
from botpsy.data.mix import (
    DECLINE_OPENING,
    Conversation,
    MixConfig,
    completed_variant,
    declined_variant,
    domain_list,
    first_replies,
    mix_conversations,
    pick_tasks,
    replies_line,
    task_weights,
    vary,
)
from botpsy.data.synthetic_rich import rich_conversation
from botpsy.data.synthetic_tools import (
    APIS,
    NEAR_MISSES,
    OVERLAPS,
    near_miss_request,
    synthetic_conversation,
    unlisted_request,
)
from botpsy.protocol.messages import Message, ToolCall
from botpsy.worlds import DOMAINS, get_domain

JSON_TYPES = {"string": str, "integer": int, "number": (int, float), "boolean": bool, "array": list}


@pytest.fixture(scope="module")
def mix():
    return mix_conversations(2 * len(DOMAINS) + 10, seed=3)


def test_every_world_and_unseen_tools_are_in_the_mix(mix):
    sources = Counter(c.source for c in mix)
    assert set(DOMAINS) <= set(sources) and sources["synthetic"] > 0


def test_every_gold_call_is_to_a_tool_the_prompt_shows_by_then(mix):
    """In the system block, or added to a user turn so far, as the agent adds them under retrieval."""
    added = 0
    for c in mix:
        shown = {t["function"]["name"] for t in c.tools}
        for m in c.messages:
            if m.role == "user" and "\nMore functions you can call:\n<tools>\n" in m.content:
                block = m.content.split("<tools>\n", 1)[1].split("\n</tools>", 1)[0]
                shown |= {json.loads(line)["function"]["name"] for line in block.splitlines()}
                added += 1
            for call in m.tool_calls:
                assert call.name in shown, (c.source, call.name)
    assert added  # later requests under retrieval do get their tools


def test_some_conversations_show_the_cli_retrieved_tools_over_all_suites(mix):
    own = {name: {t.name for t in get_domain(name).tools} for name in DOMAINS}
    retrieved = [
        c for c in mix if c.source in own and {t["function"]["name"] for t in c.tools} != own[c.source]
    ]
    assert retrieved and all(len(c.tools) == MixConfig().tool_top_k for c in retrieved)


def test_a_capability_answer_comes_only_with_its_worlds_own_tools():
    """ "What can you do?" is answered with the world's capability line, which describes the world's
    tools, not a retrieved mix over every suite (the demo, shown the calendar, named email)."""
    from botpsy.worlds.kit import CAPABILITY_ASKED

    def asks(c) -> int:
        return sum(
            m.role == "user" and any(q.lower()[:-1] in m.content.lower() for q in CAPABILITY_ASKED)
            for m in c.messages
        )

    own = {name: {t.name for t in get_domain(name).tools} for name in DOMAINS}
    convs = [c for c in mix_conversations(150, seed=5, cfg=MixConfig(retrieval_share=0.5)) if c.source in own]
    retrieved = [c for c in convs if {t["function"]["name"] for t in c.tools} != own[c.source]]
    assert retrieved and sum(asks(c) for c in convs) >= 3  # both occur, and the question is drawn
    assert sum(asks(c) for c in retrieved) == 0


def test_user_turns_carry_the_runtime_resolved_dates():
    convs = mix_conversations(12, seed=5, cfg=MixConfig(domains=("calendar",), synthetic_share=0))
    users = [m.content for c in convs for m in c.messages if m.role == "user"]
    assert any("\n(resolved: " in u for u in users)
    plain = mix_conversations(
        12, seed=5, cfg=MixConfig(domains=("calendar",), synthetic_share=0, resolve_dates=False)
    )
    assert not any("(resolved: " in m.content for c in plain for m in c.messages)


def test_a_declined_turn_is_answered_without_a_claim():
    domain = get_domain("contacts")
    confirm = {t.name for t in domain.tools if t.labels.needs_confirmation}
    tasks = [t for t in domain.generate(40, 1, "train") if t.kind in ("single", "multi_step")]
    variants = [v for v in (declined_variant(t, confirm) for t in tasks) if v]
    assert variants
    for v in variants:
        tool, answer = v[-2], v[-1]
        assert tool.content == declined_result(tool.name) and not answer.tool_calls
        assert not action_claims(answer.content)
        assert sum(len(m.tool_calls) for m in v if m.role == "assistant") >= 1


def test_a_sensitive_task_that_asks_first_has_no_declined_variant():
    domain = get_domain("banking")
    confirm = {t.name for t in domain.tools if t.labels.needs_confirmation}
    asks = [t for t in domain.generate(60, 2, "train") if t.kind == "sensitive"]
    assert asks and all(declined_variant(t, confirm) is None for t in asks)


def test_a_completed_missing_info_request_goes_straight_to_the_calls():
    """The calendar's "Add a haircut at 10am" + "On December 3." is one request whose gold creates
    the event at once: the same create call as after asking, and no question first."""
    tasks = [t for t in get_domain("calendar").generate(80, 5, "train") if t.kind == "missing_info"]
    assert tasks
    for task in tasks:
        request, gold = completed_variant(task)
        answer = task.gold_messages()[1].content
        assert request.startswith(task.user.rstrip()) and request.endswith(answer.strip())
        assert gold[0].role == "assistant" and gold[0].tool_calls  # no question before the call
        assert all(m.role != "user" for m in gold)
        assert [(c.name, c.arguments) for c in task.gold_calls] == [
            (c.name, c.arguments) for m in gold for c in m.tool_calls
        ]


def test_tasks_that_are_not_one_ask_then_calls_have_no_completed_variant():
    calendar = get_domain("calendar").generate(60, 5, "train")
    assert all(completed_variant(t) is None for t in calendar if t.kind != "missing_info")
    telecom = [t for t in get_domain("telecom").generate(80, 5, "train") if any(t.user_actions)]
    assert telecom and all(completed_variant(t) is None for t in telecom)


def test_completed_share_replaces_asks_with_direct_calls():
    def asks(cfg):
        convs = mix_conversations(40, seed=2, cfg=cfg)
        return sum(
            1
            for c in convs
            for a, b in zip(c.messages, c.messages[1:], strict=False)
            if a.role == "assistant" and not a.tool_calls and b.role == "user" and "?" in a.content
        )

    base = MixConfig(domains=("calendar",), task_weights=("missing_info=5",), synthetic_share=0)
    assert asks(MixConfig(**{**base.__dict__, "completed_share": 1.0})) < asks(base)


@pytest.mark.parametrize("seed", range(20))
def test_an_unlisted_request_names_no_listed_or_overlapping_api(seed):
    rng = random.Random(seed)
    apis = rng.sample(APIS, 4)
    request = unlisted_request(rng, apis)
    near = {a[1] for a in apis}.union(*(g for g in OVERLAPS if g & {a[1] for a in apis}))
    assert request and not any(a[2].casefold() in request.casefold() for a in APIS if a[1] in near)


def test_unlisted_requests_get_no_call():
    tools, msgs = synthetic_conversation(random.Random(1), requests=40, unlisted=1.0)
    assert len([m for m in msgs if m.role == "user"]) == 40
    assert not any(m.tool_calls for m in msgs)
    assert all("none of my tools" in m.content for m in msgs if m.role == "assistant")


def test_no_unlisted_share_leaves_the_synthetic_stream_as_it_was():
    a = synthetic_conversation(random.Random(4), requests=3)
    b = synthetic_conversation(random.Random(4), requests=3, unlisted=0.0)
    assert a[0] == b[0] and [m.to_openai() for m in a[1]] == [m.to_openai() for m in b[1]]


def test_every_generated_api_has_near_misses_that_are_not_its_own_request():
    assert set(NEAR_MISSES) == {api[1] for api in APIS}
    for api in APIS:
        for seed in range(10):
            request = near_miss_request(random.Random(seed), api)
            assert "{" not in request and api[2].casefold() not in request.casefold()


def test_near_miss_requests_get_no_call_and_name_the_tool_they_passed_over():
    tools, msgs = synthetic_conversation(random.Random(2), requests=60, near_miss=1.0)
    names = {t["function"]["name"] for t in tools}
    assert len([m for m in msgs if m.role == "user"]) == 60
    assert not any(m.tool_calls for m in msgs)
    replies = [m for m in msgs if m.role == "assistant"]
    declined = [m for m in replies if "none of my tools" in m.content]
    # a decline opens its reasoning with "No" and then names the tool it passed over
    assert declined and all(m.reasoning.startswith("No listed tool does this: ") for m in declined)
    assert all(m.reasoning.split(" ")[5] in names and "shares the topic" in m.reasoning for m in declined)
    # an ask for a calculator's values opens with its name: the tool fits
    asks = []
    for seed in range(30):
        tools, msgs = synthetic_conversation(random.Random(seed), requests=10, near_miss=1.0)
        names = {t["function"]["name"] for t in tools}
        asks += [(m, names) for m in msgs if m.role == "assistant" and "none of my tools" not in m.content]
    assert asks and all(m.reasoning.split(" ")[0] in names for m, names in asks)


def test_every_decline_of_a_mix_decides_at_its_first_reasoning_word():
    """A call's reasoning opens with the tool's name; every generated decline's with "No", near misses
    too (a world's few own-words declines, "Email cannot be recalled.", are left to the worlds)."""
    cfg = MixConfig(synthetic_share=0.6, synthetic_rich=0.5, synthetic_unlisted=0.3, synthetic_near_miss=0.3)
    openings = Counter()
    for conv in mix_conversations(120, 9, cfg):
        for msg, reply in pairwise(conv.messages if conv.source.startswith("synthetic") else []):
            if msg.role == "user" and reply.role == "assistant" and reply.content.startswith(DECLINE_OPENING):
                openings[reply.reasoning.split(" ")[0]] += 1
    assert openings["No"] > 50 and set(openings) == {"No"}, openings


@pytest.mark.parametrize("seed", range(40))
def test_a_calculator_asked_without_values_is_asked_back_for_each_required_one(seed):
    tools, msgs = synthetic_conversation(random.Random(seed), requests=8, near_miss=1.0)
    by_name = {t["function"]["name"]: t["function"]["parameters"] for t in tools}
    for user, reply in zip(msgs[::2], msgs[1::2], strict=True):
        if not reply.content.startswith("I can do that: what"):
            continue
        assert not any(ch.isdigit() for ch in user.content)  # nothing to fill the call with
        params = by_name[reply.reasoning.split(" ")[0]]
        for name in params["required"]:
            assert params["properties"][name]["description"].lower() in reply.content


def test_no_near_miss_share_leaves_the_synthetic_stream_as_it_was():
    a = synthetic_conversation(random.Random(5), requests=3, unlisted=0.3)
    b = synthetic_conversation(random.Random(5), requests=3, unlisted=0.3, near_miss=0.0)
    assert [m.to_openai() for m in a[1]] == [m.to_openai() for m in b[1]]


def test_the_mix_passes_the_near_miss_share_on():
    cfg = MixConfig(domains=("calendar",), synthetic_share=1.0, synthetic_near_miss=1.0)
    convs = mix_conversations(6, seed=3, cfg=cfg)
    assert all(c.source == "synthetic" for c in convs)
    assert not any(m.tool_calls for c in convs for m in c.messages)


@pytest.mark.parametrize("seed", range(20))
def test_vary_keeps_protected_words(seed):
    text = "Send the invoice to Maria Lopez about the quarterly report"
    out = vary(text, random.Random(seed), protected="maria lopez quarterly report invoice")
    for word in ("Maria", "Lopez", "quarterly", "report", "invoice"):
        assert word.casefold() in out.casefold()


@pytest.mark.parametrize("seed", range(30))
def test_synthetic_calls_match_their_schemas(seed):
    tools, msgs = synthetic_conversation(random.Random(seed), requests=3)
    by_name = {t["function"]["name"]: t["function"]["parameters"] for t in tools}
    assert len(by_name) == len(tools)  # names unique in one conversation
    for m in msgs:
        for call in m.tool_calls:
            params = by_name[call.name]
            assert set(params["required"]) <= set(call.arguments)
            for k, v in call.arguments.items():
                spec = params["properties"][k]
                assert isinstance(v, JSON_TYPES[spec["type"]]) and not (
                    spec["type"] != "boolean" and isinstance(v, bool)
                )
                if "enum" in spec:
                    assert v in spec["enum"]
        if m.role == "tool":
            assert json.loads(m.content)["status"] == "ok"


def test_the_mix_is_deterministic_per_seed():
    a = mix_conversations(6, seed=9)
    b = mix_conversations(6, seed=9)
    assert [[m.to_openai() for m in c.messages] for c in a] == [
        [m.to_openai() for m in c.messages] for c in b
    ]


def test_a_world_weight_gives_it_that_many_turns_in_the_round_robin():
    convs = mix_conversations(2 * 21, seed=3, cfg=MixConfig(domains=("all", "calendar=3"), synthetic_share=0))
    counts = {c.source: sum(1 for d in convs if d.source == c.source) for c in convs}
    assert counts["calendar"] == 6 and counts["email"] == 2 and set(counts) == set(DOMAINS)
    assert domain_list(("email=2", "calendar")) == ["calendar", "email", "email"]


@pytest.mark.parametrize(
    "domains,msg",
    [
        (("atlantis",), "unknown world domain"),
        (("calendar=0",), ">= 1"),
        (("mail=x",), ">= 1"),
        ((), "empty"),
    ],
)
def test_bad_domain_entries_fail_with_what_is_known(domains, msg):
    with pytest.raises(ValueError, match=msg):
        domain_list(domains)


def _first_calls(convs, writing):
    """(requests, requests whose first assistant turn calls a tool that writes) over world conversations."""
    n = w = 0
    for c in convs:
        for i, m in enumerate(c.messages):
            if m.role != "user":
                continue
            reply = next((x for x in c.messages[i + 1 :] if x.role == "assistant"), None)
            n += 1
            w += bool(reply and reply.tool_calls and reply.tool_calls[0].name in writing)
    return n, w


def test_task_weights_shift_the_mix_toward_writes():
    writing = {t.name for d in DOMAINS for t in get_domain(d).tools if t.labels.mutates or t.labels.egress}
    plain = weighted = (0, 0)
    for seed in (6, 7, 8):
        a = _first_calls(mix_conversations(42, seed=seed, cfg=MixConfig(synthetic_share=0)), writing)
        cfg = MixConfig(synthetic_share=0, task_weights=("writes=8",))
        b = _first_calls(mix_conversations(42, seed=seed, cfg=cfg), writing)
        plain, weighted = (plain[0] + a[0], plain[1] + a[1]), (weighted[0] + b[0], weighted[1] + b[1])
    assert weighted[1] / weighted[0] > 1.5 * plain[1] / plain[0]


def test_all_weights_one_leave_the_stream_as_it_was():
    as_json = lambda convs: [[m.to_openai() for m in c.messages] for c in convs]  # noqa: E731
    plain = mix_conversations(8, seed=2)
    ones = mix_conversations(8, seed=2, cfg=MixConfig(task_weights=("single=1", "writes=1")))
    assert as_json(plain) == as_json(ones)


def test_a_zero_weight_kind_is_never_picked():
    pool = get_domain("calendar").generate(40, 11, "train")
    assert any(t.kind == "no_call" for t in pool)
    rng = random.Random(0)
    for _ in range(20):
        picked = pick_tasks(pool, 3, {"no_call": 0.0}, set(), rng)
        assert len(picked) == 3 and len({t.id for t in picked}) == 3
        assert all(t.kind != "no_call" for t in picked)
    only_zero = [t for t in pool if t.kind == "no_call"]
    assert pick_tasks(only_zero, 3, {"no_call": 0.0}, set(), rng) == []


@pytest.mark.parametrize(
    "entries,msg",
    [
        (("chitchat=2",), "unknown key 'chitchat'"),
        (("single",), "needs a weight"),
        (("writes=-1",), ">= 0"),
        (("parallel=lots",), ">= 0"),
        (("single=nan",), ">= 0"),
    ],
)
def test_bad_task_weights_fail_with_what_is_known(entries, msg):
    with pytest.raises(ValueError, match=msg):
        task_weights(entries)


def test_calculators_require_every_parameter_and_the_request_names_each_value():
    calculators = {a[1] for a in APIS if len(a) > 4 and a[4]}
    seen = set()
    for seed in range(200):
        tools, msgs = synthetic_conversation(random.Random(seed), requests=3)
        by_name = {t["function"]["name"]: t["function"]["parameters"] for t in tools}
        for i, m in enumerate(msgs):
            for call in m.tool_calls:
                params = by_name[call.name]
                if not any(noun.split("_")[0] in call.name.casefold() for noun in calculators):
                    continue
                assert params["required"] == list(params["properties"]) == list(call.arguments)
                user = next(u.content for u in reversed(msgs[:i]) if u.role == "user")
                assert all(str(v) in user for v in call.arguments.values())
                seen.add(call.name)
    assert len(seen) > 10


def test_the_synthetic_stream_holds_single_tool_lists_and_three_call_turns():
    sizes, widths = set(), set()
    for seed in range(200):
        tools, msgs = synthetic_conversation(random.Random(seed), requests=3)
        sizes.add(len(tools))
        widths.update(len(m.tool_calls) for m in msgs if m.tool_calls)
    assert 1 in sizes and {1, 2, 3} <= widths


def test_restated_synthetic_answers_hold_the_calculators_real_results():
    """Issue 35: the answer after a calculator states what the arguments compute, not a result id."""
    seen = 0
    for seed in range(200):
        _, msgs = synthetic_conversation(random.Random(seed), requests=3, restate=True)
        for i, m in enumerate(msgs):
            if len(m.tool_calls) != 1 or "triangle" not in m.tool_calls[0].name.casefold():
                continue
            result = json.loads(msgs[i + 1].content)
            if result["status"] != "ok":
                continue
            args = m.tool_calls[0].arguments
            assert result["area"] == args["base"] * args["height"] / 2
            assert str(result["area"]) in msgs[i + 2].content
            seen += 1
    assert seen > 3


def test_the_default_mix_keeps_the_opaque_line_and_restate_replaces_it():
    """The shipped adapter's recipe stays reproducible: `synthetic_restate` is off by default."""
    assert MixConfig().synthetic_restate is False
    base = dict(domains=("calendar",), synthetic_share=1.0)
    off = mix_conversations(6, seed=3, cfg=MixConfig(**base))
    on = mix_conversations(6, seed=3, cfg=MixConfig(**base, synthetic_restate=True))
    said = [[m.content for c in convs for m in c.messages if m.role == "assistant"] for convs in (off, on)]
    assert any(a.startswith("Done: ") and "answered (result R" in a for a in said[0])
    assert not any("answered (result" in a for a in said[1])
    users = [[m.content for c in convs for m in c.messages if m.role == "user"] for convs in (off, on)]
    assert users[0] == users[1]  # only the tool turns and the answers change


def test_first_replies_counts_each_request_once():
    msgs = [
        Message("system", "s"),
        Message("user", "Add lunch."),
        Message("assistant", "", "add_event fits.", [ToolCall("add_event", {"title": "lunch"})]),
        Message("tool", "{}", name="add_event"),
        Message("assistant", "Added lunch."),  # after a tool result: not a first reply
        Message("user", "Book me a flight."),
        Message(
            "assistant",
            f"{DECLINE_OPENING} book flights: none of my tools does that.",
            "No listed tool fits.",
        ),
        Message("user", "Move my meeting."),
        Message("assistant", "Which meeting?", "The request names none."),
        Message("user", "Hello?"),  # unanswered last turn
    ]
    replies = first_replies([Conversation("x", [], msgs)])
    assert replies == {"call": 1, "decline": 1, "text": 1}
    assert replies_line(replies, 1).endswith("(1.000 declines per conversation)")
    assert first_replies([]) == {"call": 0, "decline": 0, "text": 0}
    assert "0.000 declines" in replies_line(first_replies([]), 0)


def test_every_generated_decline_opens_as_the_count_expects():
    """The generators' decline replies are counted as declines, asks for values are not."""
    rng = random.Random(11)
    _, rich = rich_conversation(rng, requests=30, near_miss=1.0)
    assert first_replies([Conversation("r", [], rich)]) == {"call": 0, "decline": 30, "text": 0}
    counted = Counter()
    for seed in range(40):
        _, msgs = synthetic_conversation(random.Random(seed), requests=6, unlisted=0.5, near_miss=0.3)
        for msg, reply in pairwise(msgs):
            if msg.role == "user" and not reply.tool_calls:
                asks = "request gives none of its values" in reply.reasoning
                counted[asks, reply.content.startswith(DECLINE_OPENING)] += 1
    # every no-call reply but the asks for missing values is a decline, and there are both
    assert set(counted) == {(True, False), (False, True)}


def test_the_worlds_out_of_scope_replies_count_as_declines():
    """Every world declines a request for a skill it lacks ("book a flight" in the calendar) in words
    the count reads; its other no-call replies to impossible tasks (a path outside the user's files,
    a look-up first) are not what the count is for."""
    declined, text = Counter(), Counter()
    for name in DOMAINS:
        tasks = [t for t in get_domain(name).generate(60, 4, "train") if t.kind == "impossible"]
        replies = first_replies(
            Conversation(name, [], [Message("user", t.user), *t.gold_messages()]) for t in tasks
        )
        declined[name], text[name] = replies["decline"], replies["text"]
    assert all(declined[name] >= 1 for name in DOMAINS), declined
    assert sum(text.values()) <= 3, text  # files' two paths, telecom's apology


def test_the_unlisted_share_raises_the_declines_of_a_mix():
    cfg = dict(synthetic_share=1.0, synthetic_rich=0.0, synthetic_near_miss=0.0)
    few = first_replies(mix_conversations(60, 5, MixConfig(**cfg, synthetic_unlisted=0.0)))
    many = first_replies(mix_conversations(60, 5, MixConfig(**cfg, synthetic_unlisted=0.8)))
    assert many["decline"] > few["decline"] + 60
