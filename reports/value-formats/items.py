"""BFCL items by id through the shipped `embedded` model, today's code, one row each.

OMP_NUM_THREADS=1 THREADS=1 python reports/value-formats/items.py OUT.jsonl CATEGORY:ID [CATEGORY:ID ...]
"""

import json
import os
import sys

from botpsy.engine.load import load_engine
from botpsy.eval import bfcl as B
from botpsy.eval.bfcl_data import load_category
from botpsy.eval.bfcl_process import BfclWorker

want = {}
for x in sys.argv[2:]:
    c, i = x.split(":")
    want.setdefault(c, set()).add(i)
engine = load_engine(None, n_threads=int(os.environ.get("THREADS", "2")))
out = open(sys.argv[1], "w")
with BfclWorker() as w:
    for c, ids in want.items():
        for e in load_category(c):
            if e["id"] in ids:
                r = B.run_item(c, e, engine, w, "embedded", B.BfclConfig())
                out.write(json.dumps({"category": c, "id": e["id"], "ok": r.ok, "detail": r.detail}) + "\n")
                out.flush()
                print(c, e["id"], r.ok, json.dumps(r.detail["calls"])[:150], flush=True)
