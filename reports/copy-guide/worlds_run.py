"""The 190 held-out world tasks (10 per world, seed 1000) with the copy guide at a margin; a task it
steered runs again without it (a task it did not steer made the same tokens). One row per run.

    python reports/copy-guide/worlds_run.py 8      # rows appended to worlds-items.jsonl
"""

import json
import sys

import steer_log

import botpsy.engine.copy_guide as CG
from botpsy.agent.loop import AgentConfig
from botpsy.engine.load import load_engine
from botpsy.eval.worlds import run_task
from botpsy.worlds import get_domain
from botpsy.worlds.tasks import domain_names

CG.MARGIN = float(sys.argv[1]) if len(sys.argv) > 1 else 8.0
engine = load_engine(None, n_threads=1)
items = [(get_domain(d), t) for d in domain_names("all") for t in get_domain(d).generate(10, 1000, "eval")]
with open("worlds-items.jsonl", "a") as out:
    for dom, task in items:
        for guide in (True, False):
            steer_log.STEERS.clear()
            _, res = run_task(lambda t: engine, dom, task, AgentConfig(max_tokens=256, copy_guide=guide))
            out.write(
                json.dumps(
                    {"id": task.id, "guide": guide, "ok": res.success, "steers": list(steer_log.STEERS)}
                )
                + "\n"
            )
            if guide and not steer_log.STEERS:
                break
