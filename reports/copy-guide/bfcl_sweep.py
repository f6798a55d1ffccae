"""BFCL simple_python / multiple / parallel, 50 evenly spaced items each, through the agent with the copy
guide at each margin given ("off": without it), one llama.cpp thread; one row per item and margin.

    python reports/copy-guide/bfcl_sweep.py 8 > log      # rows appended to bfcl-items.jsonl
"""

import json
import sys

import steer_log

import botpsy.engine.copy_guide as CG
from botpsy.engine.load import load_engine
from botpsy.eval import bfcl as B
from botpsy.eval.bfcl_data import load_category
from botpsy.eval.runs import sample

margins = [None if x == "off" else float(x) for x in sys.argv[1].split(",")]
engine = load_engine(None, n_threads=1)
worker = B.BfclWorker()
with open("bfcl-items.jsonl", "a") as out:
    for cat in ["simple_python", "multiple", "parallel"]:
        for e in sample(load_category(cat), 50):
            for m in margins:
                if m is not None:
                    CG.MARGIN = m
                steer_log.STEERS.clear()
                r = B.run_item(cat, e, engine, worker, "embedded", B.BfclConfig(copy_guide=m is not None))
                row = {"id": e["id"], "margin": m, "ok": r.ok, "calls": r.detail.get("calls")}
                out.write(json.dumps({**row, "steers": list(steer_log.STEERS)}) + "\n")
worker.close()
