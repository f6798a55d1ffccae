"""Prefill and decode tokens/s of the embedded model under engine settings, interleaved in one process.

    python reports/bench-memory/compare_speed.py '{"b512": {"n_batch": 512}, "b128": {}}' 8

Each config is a `LlamaCppEngine` keyword set (n_ubatch, flash_attn, ...; n_batch is passed to
`Llama()` directly). The engines are loaded side by side and read in alternating order; the
paired ratio is each reading against the first config's reading next to it.
"""

import json
import statistics
import sys
import time

import botpsy.engine.llamacpp as L
from botpsy.models import resolve
from botpsy.worlds import get_domain

L.import_llama()
import llama_cpp.llama as LL  # noqa: E402  (after import_llama: its OpenMP wait policy)

_n_batch: dict[str, int | None] = {}
_init = LL.Llama.__init__


def _with_batch(self, *a, **k):
    if _n_batch.get("n"):
        k["n_batch"] = _n_batch["n"]
    _init(self, *a, **k)


LL.Llama.__init__ = _with_batch
spec = resolve(None)
configs = json.loads(sys.argv[1])
reps = int(sys.argv[2]) if len(sys.argv) > 2 else 8
engines = {}
for name, kw in configs.items():
    _n_batch["n"] = kw.pop("n_batch", None)
    engines[name] = L.LlamaCppEngine(spec.base, lora_path=spec.adapter, n_ctx=4096, **kw)
first = next(iter(engines.values()))
fmt, dom = first.chat_format, get_domain("calendar")
ids = first.tokenize(
    fmt.system([t.schema() for t in dom.tools], dom.system)
    + fmt.user("Add a dentist appointment on December 3 2026 at 10am")
    + fmt.generation_prompt(True)
)
res = {n: {"prefill": [], "decode": []} for n in engines}
for r in range(reps):
    for n, e in list(engines.items()) if r % 2 == 0 else list(engines.items())[::-1]:
        e.llm.reset()
        t0 = time.perf_counter()
        e.llm.eval(ids)
        res[n]["prefill"].append(len(ids) / (time.perf_counter() - t0))
        t0 = time.perf_counter()
        for _ in range(48):
            e.llm.eval([198])
        res[n]["decode"].append(48 / (time.perf_counter() - t0))
base = next(iter(res))
for n, v in res.items():
    pr = [a / b for a, b in zip(v["prefill"], res[base]["prefill"], strict=True)]
    dr = [a / b for a, b in zip(v["decode"], res[base]["decode"], strict=True)]
    print(
        json.dumps(
            {
                "config": n,
                "prefill_tok_s": [round(x, 1) for x in v["prefill"]],
                "decode_tok_s": [round(x, 1) for x in v["decode"]],
                "prefill_paired_ratio_median": round(statistics.median(pr), 3),
                "decode_paired_ratio_median": round(statistics.median(dr), 3),
            }
        )
    )
