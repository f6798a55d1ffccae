"""At the first token of the model's reasoning, where its trained reasoning either names the tool it
will call ("get_weather fits; …") or declines ("No listed tool fits …"): the logit of "No" against
the best first token of an installed tool's name. One row per item; the item is not generated on.

    OMP_NUM_THREADS=1 python reports/bfcl-whole-embedded/decide.py ROWS.jsonl live_simple:all irrelevance:all

`MODEL=RUN` reads another model (a run folder, a .gguf) instead of the embedded one.
"""

import json
import os
import sys

import numpy as np

import botpsy.engine.copy_guide as CG
from botpsy.engine.load import load_engine
from botpsy.eval import bfcl as B
from botpsy.eval.bfcl_data import load_category
from botpsy.eval.runs import sample


class Stop(Exception):
    """Raised once the first reasoning token's logits are read."""


ROW: dict = {}
NAMES: list[str] = []


def steer(self, text, logits):
    # The copy guide is consulted before every token, with the assistant turn so far.
    if "<think>" in text and text.split("<think>")[-1].strip() == "":
        firsts = [i for i in (self._first_token(n) for n in NAMES) if i is not None]
        ROW.update(
            no=float(logits[self._first_token("No")]),
            tool=max(float(logits[i]) for i in firsts),
            top=self._piece(int(np.argmax(logits))),
        )
        raise Stop
    return None


CG.CopyGuide.steer = steer
engine = load_engine(os.environ.get("MODEL") or None, n_threads=1)
worker = B.BfclWorker()
with open(sys.argv[1], "a") as out:
    for spec in sys.argv[2:]:
        cat, n = spec.split(":")
        entries = load_category(cat)
        for e in entries if n == "all" else sample(entries, int(n)):
            NAMES[:] = [f["name"] for f in e["function"]]
            ROW.clear()
            try:
                B.run_item(cat, e, engine, worker, "embedded", B.BfclConfig())
            except Exception:  # the Stop above, surfaced by the agent as a backend error
                pass
            out.write(json.dumps({"cat": cat, "id": e["id"], **ROW}) + "\n")
worker.close()
