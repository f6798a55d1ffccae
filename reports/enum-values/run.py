"""Enum guidance measured: each item runs with it (today's code); an item where it chose a token
runs again without it (an item it did not touch made the same tokens). One row per run.

    python reports/enum-values/run.py OUT.jsonl live_simple:all simple_python:50 worlds ...
    ACEBENCH_DIR=~/src/ACEBench python reports/enum-values/run.py OUT.jsonl ace:normal_atom_enum:all

`CAT:N` is a BFCL category (N evenly spaced items, or all), `ace:CAT:N` an ACEBench (English) normal
or special category, `worlds` the 190 held-out world tasks (10 per world, seed 1000). One
llama.cpp thread, the shipped `embedded` model, greedy.
"""

import json
import os
import sys

import botpsy.engine.copy_guide as CG
from botpsy.agent.loop import AgentConfig
from botpsy.engine.load import load_engine
from botpsy.eval import acebench as A
from botpsy.eval import acebench_data as AD
from botpsy.eval import bfcl as B
from botpsy.eval.bfcl_data import load_category
from botpsy.eval.runs import sample
from botpsy.eval.worlds import run_task
from botpsy.worlds import get_domain
from botpsy.worlds.tasks import domain_names

STEERS: list[list] = []  # [value so far, chosen piece] per token the enum guidance chose
_steer_enum, _enum = CG.CopyGuide._steer_enum, CG.CopyGuide._enum
ON = [True]


def steer_enum(self, value, members, named, json_string, logits):
    r = _steer_enum(self, value, members, named, json_string, logits)
    if r is not None:
        STEERS.append([value, named, self._piece(r)])
    return r


def enum(self, argument):
    return _enum(self, argument) if ON[0] else ([], None)


CG.CopyGuide._steer_enum, CG.CopyGuide._enum = steer_enum, enum


def items(spec):
    if spec == "worlds":
        for d in domain_names("all"):
            for t in get_domain(d).generate(10, 1000, "eval"):
                yield "worlds", (get_domain(d), t)
        return
    if spec.startswith("ace:"):
        _, cat, n = spec.split(":")
        data, _ = AD.resolve_data(os.environ["ACEBENCH_DIR"])
        for e in AD.sample_items(AD.load_category(data, cat), cat, None if n == "all" else int(n)):
            yield "ace:" + cat, e
        return
    cat, n = spec.split(":")
    entries = load_category(cat)
    for e in entries if n == "all" else sample(entries, int(n)):
        yield cat, e


def run(engine, worker, cat, item):
    if cat == "worlds":
        dom, task = item
        _, res = run_task(lambda t: engine, dom, task, AgentConfig(max_tokens=256))
        return task.id, res.success, None
    if cat.startswith("ace:"):
        r = A.run_single(cat[4:], item, engine, "embedded", A.AceConfig())
        return item["id"], r.ok, r.detail.get("calls")
    r = B.run_item(cat, item, engine, worker, "embedded", B.BfclConfig())
    return item["id"], r.ok, r.detail.get("calls")


engine = load_engine(None, n_threads=1)
worker = B.BfclWorker()
with open(sys.argv[1], "a") as out:
    for spec in sys.argv[2:]:
        for cat, item in items(spec):
            for on in (True, False):
                ON[0] = on
                STEERS.clear()
                iid, ok, calls = run(engine, worker, cat, item)
                row = {
                    "cat": cat,
                    "id": iid,
                    "enum_guide": on,
                    "ok": ok,
                    "calls": calls,
                    "steers": list(STEERS),
                }
                out.write(json.dumps(row) + "\n")
                out.flush()
                if on and not STEERS:
                    break
worker.close()
