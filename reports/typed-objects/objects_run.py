"""Items whose tools take an object that declares its keys: ACEBench atom_object_short/deep (the first
25 of each) and every BFCL calling item with such a parameter, through the agent on the embedded
model (one llama.cpp thread, greedy, grounding guard and copy guide on); one row per item.

    ACEBENCH_DIR=ACEBench python reports/typed-objects/objects_run.py LABEL OUT.jsonl

Run it once on the tree before the change (PYTHONPATH=OLD/src) and once after; rows already in
OUT.jsonl are skipped, so an interrupted run resumes.
"""

import json
import os
import sys
from pathlib import Path
from types import SimpleNamespace

import botpsy.engine.grammar as G
from botpsy.engine.base import EngineError
from botpsy.engine.load import load_engine
from botpsy.eval import acebench as A
from botpsy.eval import acebench_data as AD
from botpsy.eval import bfcl as B
from botpsy.eval.bfcl_data import load_category, to_json_schema

BFCL = [
    "simple_python",
    "multiple",
    "parallel",
    "parallel_multiple",
    "live_simple",
    "live_multiple",
    "live_parallel_multiple",
]
ACE = ["normal_atom_object_short", "normal_atom_object_deep"]


def nested_object(schema, top=True) -> bool:
    """Whether a parameter (at any depth) is an object the grammar types (`typed_object`)."""
    if not isinstance(schema, dict):
        return False
    if not top and schema.get("type") == "object" and G.typed_object(schema):
        return True
    inner = list((schema.get("properties") or {}).values()) + [schema.get("items")]
    return any(nested_object(s, False) for s in inner)


label, out_path = sys.argv[1], Path(sys.argv[2])
print("grammar from", G.__file__, flush=True)
done = {json.loads(line)["id"] for line in out_path.open()} if out_path.exists() else set()
engine = load_engine(None, n_threads=1)
with out_path.open("a") as out:

    def write(item_id, cat, r):
        out.write(json.dumps({"id": item_id, "cat": cat, "ok": r.ok, "detail": r.detail}, default=str) + "\n")
        out.flush()

    data = Path(os.environ["ACEBENCH_DIR"]) / "data_all" / "data_en"
    for cat in ACE:
        for it in AD.load_category(data, cat)[:25]:
            if it["id"] not in done:
                write(it["id"], cat, A.run_single(cat, it, engine, label, A.AceConfig()))
    worker = B.BfclWorker()
    for cat in BFCL:
        for e in load_category(cat):
            params = [to_json_schema({**f.get("parameters", {}), "type": "dict"}) for f in e["function"]]
            if e["id"] in done or not any(nested_object(p) for p in params):
                continue
            try:
                write(e["id"], cat, B.run_item(cat, e, engine, worker, label, B.BfclConfig()))
            except EngineError as err:  # a prompt longer than the window: failed, as eval bfcl counts it
                write(e["id"], cat, SimpleNamespace(ok=False, detail={"error": str(err)}))
    worker.close()
