import gzip, json, re, sys
from pathlib import Path
import llama_cpp
from botpsy.data.decontaminate import EvalIndex, bfcl_items, bfcl_data_dir, tau2_items, tau2_data_dir, acebench_items
from botpsy.models import embedded  # noqa
import importlib.resources as r
gguf = next(Path(p) for p in __import__('glob').glob('.venv/lib/python3.11/site-packages/**/SmolLM2*.gguf', recursive=True))
llm = llama_cpp.Llama(model_path=str(gguf), vocab_only=True, verbose=False)
idx = EvalIndex(bfcl_items(bfcl_data_dir()) + tau2_items(tau2_data_dir()) + acebench_items(Path(__import__('os').environ['ACEBENCH_DIR'])))
n = hits = 0
out = gzip.open('train-clean.jsonl.gz', 'wt') if '--write' in sys.argv else None
kept = 0
for path in [a for a in sys.argv[1:] if a != '--write']:
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
