"""Every user request of the given example files checked against BFCL, tau2 and ACEBench; with
--write OUT, the conversations with no match written to OUT. Used by issue35-cpu1 and issue35-cpu2;
run from the repository root (it reads the base GGUF under .venv):

    ACEBENCH_DIR=PATH python reports/archive/issue35-cpu1/filter_eval_matches.py A.jsonl.gz B.jsonl.gz \
        --write train-clean.jsonl.gz
"""
import gzip, json, os, re, sys
from pathlib import Path
import llama_cpp
from botpsy.data.decontaminate import EvalIndex, bfcl_items, bfcl_data_dir, tau2_items, tau2_data_dir, acebench_items
from botpsy.models import embedded  # noqa
import importlib.resources as r
gguf = next(Path(p) for p in __import__('glob').glob('.venv/lib/python3.11/site-packages/**/SmolLM2*.gguf', recursive=True))
llm = llama_cpp.Llama(model_path=str(gguf), vocab_only=True, verbose=False)
idx = EvalIndex(bfcl_items(bfcl_data_dir()) + tau2_items(tau2_data_dir()) + acebench_items(Path(os.environ['ACEBENCH_DIR'])))
n = hits = 0
args = sys.argv[1:]
out = None
if '--write' in args:
    at = args.index('--write')
    out = gzip.open(args[at + 1], 'wt')
    del args[at : at + 2]
kept = 0
for path in args:
    for line in gzip.open(path, 'rt'):
        ids = json.loads(line)['input_ids']
        bad = False
        text = llm.detokenize(ids, special=True).decode('utf-8', 'replace')
        for m in re.finditer(r'<\|im_start\|>user\n(.*?)<\|im_end\|>', text, re.S):
            req = m.group(1)
            if req.startswith('<tool_response>'):
                continue
            req = req.split('\n(')[0].strip()  # drop the resolved-dates line if any
            n += 1
            mm = idx.match(req)
            if mm:
                hits += 1
                bad = True
                print(mm.kind, mm.item.suite, mm.item.item, round(mm.score, 2), repr(req[:80]), '|', repr(mm.item.text[:80]))
        if out and not bad:
            out.write(line); kept += 1
if out: out.close()
print('kept', kept)
print('requests', n, 'matches', hits)
