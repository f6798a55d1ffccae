"""Parity with ACEBench's own code, when a checkout is at hand: `ACEBENCH_DIR=/path/to/ACEBench pytest …`.

botpsy restates ACEBench's checker and simulated APIs rather than importing them. These tests run
ACEBench's `model_eval/checker.py` and its scenario classes from the user's clone (never from
this repository) beside botpsy's versions and demand the same verdicts and end states: every
normal item's first possible answer plus mutations of each call (values changed, parameters
dropped or added, a call lost, a wrong function), and every agent item's milestones replayed
as they are, shortened, doubled and shuffled. Skipped without `ACEBENCH_DIR` (no fetched data in
the default suite). Checked at ACEBench commit 56dd66c: 5,493 normal outputs and 200 agent call
sequences, no difference.
"""

from __future__ import annotations

import copy
import json
import os
import random
import sys
import uuid

import pytest

from botpsy.eval import acebench_checker as ck
from botpsy.eval.acebench import ApiEnv
from botpsy.eval.acebench_apis import SAVED, load_seeds
from botpsy.eval.acebench_data import AGENT, NORMAL, load_category, resolve_data
from botpsy.eval.acebench_oracle import parse_call_text

ROOT = os.environ.get("ACEBENCH_DIR")
pytestmark = pytest.mark.skipif(
    not ROOT, reason="set ACEBENCH_DIR to a clone of ACEBench to run parity checks"
)


@pytest.fixture(scope="module")
def acebench():
    data, root = resolve_data(ROOT)
    sys.path.insert(0, str(root))
    yield data, root
    sys.path.remove(str(root))


def _mutate(call: dict, rng: random.Random) -> dict:
    ((name, args),) = call.items()
    args = copy.deepcopy(args)
    if not args:
        return {name: {"x": 1}}
    k = rng.choice(list(args))
    v, kind = args[k], rng.choice(["value", "drop", "add"])
    if kind == "drop":
        del args[k]
    elif kind == "add":
        args["extra_param"] = "x"
    elif isinstance(v, bool):
        args[k] = rng.choice([not v, "true"])
    elif isinstance(v, str):
        args[k] = rng.choice([v + " extra", v.upper(), "other", v[: max(1, len(v) // 2)], 3])
    elif isinstance(v, (int, float)):
        args[k] = rng.choice([v + 1, str(v), float(v), -v])
    elif isinstance(v, list):
        args[k] = rng.choice([v[::-1], v[:-1], v + v[:1], [], [str(x) for x in v]])
    elif isinstance(v, dict) and v:
        args[k] = {**v, rng.choice(list(v)): rng.choice(["changed", 0, [], {}, None])}
    return {name: args}


def test_normal_verdicts_match_acebench_checker(acebench):
    from model_eval.checker import normal_checker  # ACEBench's, from the user's clone

    data, _ = acebench
    rng, n = random.Random(0), 0
    for cat in NORMAL:
        for it in load_category(data, cat):
            truth = it["truth"]
            answers = truth if isinstance(truth, list) else [truth]
            gold = [{ck.base_name(k): v} for k, v in answers[0].items()]
            outs = [gold, gold[:-1], [{"nope": {}}, *gold[1:]]]
            outs += [
                [_mutate(c, rng) if j == i else c for j, c in enumerate(gold)]
                for i in range(len(gold))
                for _ in range(3)
            ]
            for out in outs:
                theirs = (
                    [{k: ck.strip_whitespace(v)} for c in out for k, v in c.items()]
                    if "multi_turn" in cat
                    else out
                )
                official = any(
                    normal_checker(it["function"], copy.deepcopy(theirs), copy.deepcopy(a), "", cat)["valid"]
                    for a in answers
                )
                assert ck.check_normal(it["function"], copy.deepcopy(out), truth, cat)["valid"] == official, (
                    it["id"],
                    out,
                )
                n += 1
    assert n > 1000


def test_agent_end_states_match_acebench_scenarios(acebench):
    from model_inference.multi_step.multi_step_utils import execute_agent_func_call  # ACEBench's

    data, root = acebench
    seeds, rng = load_seeds(root), random.Random(1)
    for cat in AGENT:
        for it in load_category(data, cat):
            stones = it["mile_stone"]
            stones = stones[0] if stones and isinstance(stones[0], list) else stones
            advertised = {f["name"] for f in it["function"]}
            base = [c for s in stones for c in parse_call_text(s) if c.name in advertised]
            shuffled = list(base)
            rng.shuffle(shuffled)
            for calls in (base, base[1:], base + base, shuffled):
                tag, instances = "parity" + uuid.uuid4().hex[:8], {}
                for c in calls:
                    text = f"{c.name}({', '.join(f'{k}={v!r}' for k, v in c.arguments.items())})"
                    _, instances = execute_agent_func_call(
                        [text], it["initial_config"], it["involved_classes"], tag, "0", "en"
                    )
                theirs = [
                    {n: {a: getattr(o, a) for a in SAVED[n] if hasattr(o, a)}} for n, o in instances.items()
                ]
                env = ApiEnv(it, seeds)
                for c in calls:
                    env.call(c.name, c.arguments)
                assert json.loads(json.dumps(env.state())) == json.loads(json.dumps(theirs)), (
                    it["id"],
                    calls,
                )
