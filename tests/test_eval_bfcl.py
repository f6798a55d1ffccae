"""BFCL v4 through botpsy's path: the oracle scores 100%, corrupted answers fail, faults fail one item.

Needs the `bfcl-eval` package (the eval extra); one checker process serves the whole module.
"""

from __future__ import annotations

import copy

import pytest

pytest.importorskip("bfcl_eval")

from botpsy.engine.oracle import OracleEngine, ScriptedEngine  # noqa: E402
from botpsy.eval import bfcl, bfcl_data, bfcl_process  # noqa: E402
from botpsy.eval.bfcl import BfclConfig, evaluate_bfcl  # noqa: E402
from botpsy.eval.bfcl_data import KNOWN_UNPASSABLE, aggregate, parse_categories, to_json_schema  # noqa: E402
from botpsy.eval.bfcl_oracle import gold_messages, parse_call_string  # noqa: E402
from botpsy.eval.bfcl_process import BfclWorker  # noqa: E402
from botpsy.protocol.formats import ChatFormat  # noqa: E402

DONE_WHEN = ["simple_python", "multiple", "parallel", "parallel_multiple", "irrelevance"]


@pytest.fixture(scope="module")
def worker(tmp_path_factory):
    import os

    os.environ.setdefault("BFCL_PROJECT_ROOT", str(tmp_path_factory.mktemp("bfcl_root")))
    with BfclWorker() as w:
        yield w


def oracle(fmt="qwen35"):
    return lambda c, e, t: OracleEngine(gold_messages(c, e, t), fmt)


# The harness checks judge the model's calls as written: without the agent's grounding guard,
# which holds a gold call whose number comes from world knowledge (52 cards in a deck).
BARE = BfclConfig(grounding_guard=False)


def test_oracle_scores_100_percent_on_the_done_when_categories(worker):
    rep = evaluate_bfcl(DONE_WHEN, "oracle", oracle(), BARE, worker=worker)
    d = rep.to_dict()
    assert d["overall"] == 1.0, d["failures"]
    assert d["n"] == 1240 and all(v["accuracy"] == 1.0 for v in d["categories"].values())


def test_the_grounding_guard_holds_few_gold_calls_and_keeps_the_models_score(worker):
    """With the guard on, the gold's own score stays 100% as `model_accuracy`; the agent's is
    lower by the gold calls whose numbers the question never states (a die's 6 sides, 52 cards,
    0 for "from rest", a unit conversion): 23 of the 1,000 calling items when this was written, 24
    since the guard also holds empty required arguments ("starting from an empty board": `[]`)."""
    d = evaluate_bfcl(DONE_WHEN, "oracle", oracle(), worker=worker).to_dict()["categories"]
    assert all(v["model_accuracy"] == 1.0 for v in d.values())
    assert d["irrelevance"]["accuracy"] == 1.0 and d["irrelevance"]["held"] == 0
    held = sum(v["held"] for v in d.values())
    assert 0 < held <= 24 and all(v["correct"] == v["total"] - v["held"] for v in d.values())


def _known(fmt, ids):
    return {
        i
        for i, why in KNOWN_UNPASSABLE.items()
        if i in ids and (fmt == "qwen35" or not why.startswith("qwen35"))
    }


@pytest.mark.parametrize("fmt", ["qwen35", "hermes"])
def test_oracle_on_a_sample_of_every_offline_category(worker, fmt):
    rep = evaluate_bfcl(
        parse_categories("all"),
        "oracle",
        oracle(fmt),
        BfclConfig(limit=12, grounding_guard=False),
        worker=worker,
    )
    failed = {r.id for r in rep.results if not r.ok}
    assert failed == _known(fmt, {r.id for r in rep.results}), {
        r.id: r.reason for r in rep.results if not r.ok
    }


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["qwen35", "hermes"])
def test_oracle_on_every_offline_item_fails_only_the_known_data_bugs(worker, fmt):
    """All 4,441 offline items (≈15 s per format): only the documented data bugs fail."""
    rep = evaluate_bfcl(parse_categories("all"), "oracle", oracle(fmt), BARE, worker=worker)
    failed = {r.id for r in rep.results if not r.ok}
    assert failed == _known(fmt, {r.id for r in rep.results}), {
        r.id: r.reason for r in rep.results if not r.ok
    }


def _corrupt_value(v):
    if isinstance(v, bool):
        return not v
    if isinstance(v, (int, float)):
        return v + 7919
    if isinstance(v, str):
        return v + " zzz"
    if isinstance(v, list):
        return v + ["zzz"]
    return {"zzz": 1}


CORRUPTIONS = {
    "wrong value": lambda calls: [
        type(c)(c.name, {k: _corrupt_value(v) for k, v in c.arguments.items()}) for c in calls
    ],
    "wrong function": lambda calls: [type(c)(c.name + "_x", c.arguments) for c in calls],
    "no call": lambda calls: [],
    "extra call": lambda calls: calls + calls[:1],
}


@pytest.mark.parametrize("how", list(CORRUPTIONS))
def test_corrupted_answers_fail(worker, how):
    def corrupt(c, e, t):
        msgs = gold_messages(c, e, t)
        for m in msgs:
            m.tool_calls = CORRUPTIONS[how](m.tool_calls)
        return OracleEngine(msgs)

    cats = ["simple_python", "multiple", "parallel", "live_simple"]
    rep = evaluate_bfcl(cats, how, corrupt, BfclConfig(limit=15), worker=worker)
    # A call with no arguments cannot get a wrong value; everything else must fail.
    bad = [r for r in rep.results if r.ok and (how != "wrong value" or r.detail["calls"][0] != {})]
    assert not bad, [(r.id, r.detail) for r in bad]


def test_irrelevance_fails_when_a_call_is_made(worker):
    def call_anyway(c, e, t):
        f = e["function"][0]
        args = {p: "x" for p in f["parameters"].get("required", [])}
        from botpsy.protocol.messages import Message, ToolCall

        return OracleEngine([Message("assistant", "", "go", [ToolCall(f["name"], args)])])

    rep = evaluate_bfcl(["irrelevance"], "caller", call_anyway, BfclConfig(limit=10), worker=worker)
    assert sum(r.ok for r in rep.results) == 0
    assert set(rep.failures) == {"irrelevance_error:decoder_success"}


def test_multi_turn_corrupted_state_fails(worker):
    def corrupt(c, e, t):
        t = copy.deepcopy(t)
        t[0] = t[0][:-1]  # drop the last call of the first turn: the state diverges
        return OracleEngine(gold_messages(c, e, t))

    rep = evaluate_bfcl(["multi_turn_base"], "dropper", corrupt, BfclConfig(limit=5), worker=worker)
    assert sum(r.ok for r in rep.results) == 0


def test_a_backend_that_dies_fails_the_item_and_the_run_goes_on(worker):
    engines = iter([ScriptedEngine([None]), None, None])

    def engine_for(c, e, t):
        eng = next(engines, None)
        return eng if eng is not None else OracleEngine(gold_messages(c, e, t))

    rep = evaluate_bfcl(["simple_python"], "flaky", engine_for, BfclConfig(limit=3), worker=worker)
    assert [r.ok for r in rep.results] == [False, True, True]
    assert rep.results[0].reason == "error: EngineError" and rep.failures == {"error: EngineError": 1}


def test_garbage_output_is_scored_failed_not_crashed(worker):
    texts = ["", "<tool_call>\n<function=", "\x00\x01 garbage </tool_call>", "no think close"]
    it = iter(texts)
    rep = evaluate_bfcl(
        ["simple_python"],
        "garbage",
        lambda c, e, t: ScriptedEngine([next(it)]),
        BfclConfig(limit=4),
        worker=worker,
    )
    assert [r.ok for r in rep.results] == [False] * 4 and not any(r.error for r in rep.results)


def test_checker_fault_fails_one_item(worker):
    with pytest.raises(bfcl_process.WorkerError):
        worker.request("ast", category="simple_python", id="no_such_item", output=[])
    # the worker is still usable afterwards
    assert worker.request("relevance", category="irrelevance", output=[])["valid"] is True


def test_results_are_cached_and_a_rerun_resumes(tmp_path, worker):
    calls = []

    def engine_for(c, e, t):
        calls.append(e["id"])
        return OracleEngine(gold_messages(c, e, t))

    first = evaluate_bfcl(
        ["parallel"], "oracle", engine_for, BfclConfig(limit=6), out=tmp_path, worker=worker
    )
    n = len(calls)
    second = evaluate_bfcl(
        ["parallel"], "oracle", engine_for, BfclConfig(limit=6), out=tmp_path, worker=worker
    )
    assert n == 6 and len(calls) == 6  # nothing ran the second time
    assert second.to_dict()["categories"] == first.to_dict()["categories"]


# ---- pure helpers ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec, expected",
    [
        ("simple_python", ["simple_python"]),
        ("simple_python,simple_python", ["simple_python"]),
        ("multi_turn", bfcl_data.MULTI_TURN),
        (None, bfcl_data.NON_LIVE),
        ("live, irrelevance", bfcl_data.LIVE + ["irrelevance"]),
    ],
)
def test_parse_categories(spec, expected):
    assert parse_categories(spec) == expected


def test_unknown_category_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown BFCL category 'web_search'"):
        parse_categories("web_search")


def test_gorilla_types_become_json_schema():
    s = to_json_schema(
        {
            "type": "dict",
            "properties": {
                "a": {"type": "float"},
                "b": {"type": "tuple", "items": {"type": "integer"}},
                "c": {"type": "dict", "properties": {"d": {"type": "any"}}},
            },
        }
    )
    assert s["type"] == "object"
    assert s["properties"]["a"]["type"] == "number"
    assert s["properties"]["b"] == {"type": "array", "items": {"type": "integer"}}
    assert s["properties"]["c"]["properties"]["d"]["type"] == "string"


@pytest.mark.parametrize(
    "text, expected",
    [
        ("cd(folder='document')", ("cd", {"folder": "document"})),
        ("sort('final_report.pdf')", ("sort", {"file_name": "final_report.pdf"})),
        ("ls(a=True)", ("ls", {"a": True})),
        ("mean(numbers=[1, 2.5])", ("mean", {"numbers": [1, 2.5]})),
    ],
)
def test_parse_call_string(text, expected):
    docs = {
        "sort": {"parameters": {"properties": {"file_name": {}}}},
        "cd": {"parameters": {"properties": {"folder": {}}}},
    }
    call = parse_call_string(text, docs)
    assert (call.name, call.arguments) == expected


def test_decode_for_checker_keeps_calls_botpsy_would_reject():
    fmt = ChatFormat("qwen35")
    tools = {
        "f": {
            "type": "object",
            "properties": {"x": {"type": "array"}, "n": {"type": "integer"}},
            "required": ["n"],
        }
    }
    text = "ok\n</think>\n\n<tool_call>\n<function=f>\n<parameter=x>\ndata['a']\n</parameter>\n</function>\n</tool_call>"
    assert fmt.parse(text, tools).calls == []  # botpsy drops it (missing n, x not an array) …
    assert bfcl.decode_for_checker(text, fmt, tools, True) == [{"f": {"x": "data['a']"}}]  # … BFCL judges it


def test_aggregate_follows_the_leaderboard():
    cats = {
        "simple_python": {"accuracy": 1.0, "total": 400},
        "simple_java": {"accuracy": 0.5, "total": 100},
        "simple_javascript": {"accuracy": 0.0, "total": 50},
        "multiple": {"accuracy": 1.0, "total": 200},
        "parallel": {"accuracy": 1.0, "total": 200},
        "parallel_multiple": {"accuracy": 1.0, "total": 200},
        "live_simple": {"accuracy": 1.0, "total": 300},
        "live_multiple": {"accuracy": 0.0, "total": 100},
        "irrelevance": {"accuracy": 0.8, "total": 240},
        "live_irrelevance": {"accuracy": 0.6, "total": 800},
    }
    agg = aggregate(cats)
    assert agg["simple"] == pytest.approx(0.5)  # unweighted across languages
    assert agg["groups"]["non_live"] == pytest.approx((0.5 + 1 + 1 + 1) / 4)
    assert agg["groups"]["live"] == pytest.approx(300 / 400)  # weighted by count
    assert agg["groups"]["hallucination"] == pytest.approx(0.7)
    expected = (10 * 0.875 + 10 * 0.75 + 10 * 0.7) / 30
    assert agg["overall"] == pytest.approx(expected)
    assert agg["overall_leaderboard"] == pytest.approx((10 * 0.875 + 10 * 0.75 + 10 * 0.7) / 100)


def test_a_turns_earlier_messages_are_seeded_as_turns():
    """live_irrelevance has turns holding an earlier exchange: it reaches the model as turns (one
    message per run of a role), and a turn opening with the assistant's words keeps them as text."""
    from botpsy.protocol.messages import Message

    turn = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi"},
        {"role": "user", "content": "I need a cab"},
        {"role": "assistant", "content": "Where to?"},
        {"role": "user", "content": "The airport"},
    ]
    system, earlier, last = bfcl._question_turns(turn)
    assert (system, last) == ("Be brief.", "The airport")
    assert earlier == [Message("user", "Hi\nI need a cab"), Message("assistant", "Where to?")]
    engine = ScriptedEngine(["ok\n</think>\n\nNo tool fits."])
    agent = bfcl.Agent(engine, bfcl.StubEnv([]), system)
    agent.seed(earlier)
    agent.send(last)
    assert "<|im_start|>assistant\n<think>\n\n</think>\n\nWhere to?<|im_end|>" in engine.prompts[0]
    _, earlier, last = bfcl._question_turns(turn[3:])
    assert earlier == [] and last == "Earlier in this conversation:\nassistant: Where to?\n\nNow: The airport"
