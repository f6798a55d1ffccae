"""An experiment, not a runtime rule: where the model's reasoning would open with its decline ("No
listed tool fits …"), force it to open "BEST fits; its parameters come from the request." (BEST:
the request's best tool by the agent's BM25 ranking) and let the agent run as usual, the grounding
guard included. One row per item run; items whose first reasoning token is not "No" run unchanged.

    OMP_NUM_THREADS=1 python reports/bfcl-whole-embedded/force_opening.py ROWS.jsonl \
        live_simple:nocall simple_python:nocall multiple:nocall irrelevance:all live_irrelevance:200

`CAT:nocall` runs the items whose recorded run made no call (`reports/word-ends/table.py`'s
`recorded`); `CAT:N` N evenly spaced items; `CAT:all` every item.
"""

import json
import sys
from pathlib import Path

import numpy as np

import botpsy.engine.copy_guide as CG
from botpsy.agent.retrieval import rank_tools
from botpsy.engine.load import load_engine
from botpsy.eval import bfcl as B
from botpsy.eval.bfcl_data import bfcl_tools, load_category
from botpsy.eval.runs import sample

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "word-ends"))
from table import recorded  # noqa: E402

STATE: dict = {"opening": None, "forcing": False, "forced": False}
original = CG.CopyGuide.steer


def steer(self, text, logits):
    opening = STATE["opening"]
    at = text.rfind(CG.THINK_OPEN)
    if opening is not None and at >= 0 and CG.THINK_CLOSE not in text[at:]:
        think = text[at + len(CG.THINK_OPEN) :]
        if think == "" and self._piece(int(np.argmax(logits))).strip() == "No":
            STATE["forcing"] = STATE["forced"] = True
        if STATE["forcing"] and opening.startswith(think) and len(think) < len(opening):
            tok = self._first_token(opening[len(think) :])
            if tok is not None:
                return tok
        STATE["forcing"] = False
    return original(self, text, logits)


CG.CopyGuide.steer = steer
engine = load_engine(None, n_threads=1)
worker = B.BfclWorker()
calls_of = recorded()
with open(sys.argv[1], "a") as out:
    for spec in sys.argv[2:]:
        cat, n = spec.split(":")
        entries = load_category(cat)
        if n == "nocall":
            entries = [e for e in entries if not calls_of[cat, e["id"]][1]]
        elif n != "all":
            entries = sample(entries, int(n))
        for e in entries:
            _, user = B._question_text(e["question"][0])
            best = rank_tools(user, bfcl_tools(e["function"]))[0][0].name
            STATE.update(
                opening=f"{best} fits; its parameters come from the request.", forcing=False, forced=False
            )
            r = B.run_item(cat, e, engine, worker, "embedded", B.BfclConfig())
            row = {"cat": cat, "id": e["id"], "best": best, "forced": STATE["forced"], "ok": r.ok}
            row.update(held=bool(r.detail.get("held")), calls=r.detail["calls"])
            out.write(json.dumps(row) + "\n")
            out.flush()
worker.close()
