"""Where the embedded model's resident memory goes: one engine setting per fresh process.

    python reports/bench-memory/memory_steps.py '{"n_batch": 512}'    # the old batch
    python reports/bench-memory/memory_steps.py '{}'                  # the engine's defaults

Prints one JSON line: RSS before the model (llama_cpp already imported), after loading, after
prefilling the agent's first prompt (system block, tools, the demo's request) and after a 32-token
generation; the peak (VmHWM); llama.cpp's own buffer sizes from its load log; the model's share of
the peak over GGUF + KV cache (as `bench.device` computes it) and the whole process's.
"""

import json
import os
import re
import sys
import tempfile

from botpsy.bench.device import kv_cache_bytes, peak_rss_mb, reset_peak_rss
from botpsy.engine.llamacpp import LlamaCppEngine, import_llama
from botpsy.models import resolve
from botpsy.worlds import get_domain

import_llama()
import llama_cpp.llama as LL  # noqa: E402

cfg = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
n_batch = cfg.pop("n_batch", None)
_init = LL.Llama.__init__


def _with_batch(self, *a, **k):
    if n_batch:
        k["n_batch"] = n_batch
    _init(self, *a, **k)


LL.Llama.__init__ = _with_batch


def rss() -> float:
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


spec = resolve(None)
gguf = spec.base.stat().st_size + spec.adapter.stat().st_size
reset_peak_rss()
before = peak_rss_mb()
with tempfile.TemporaryFile("w+") as log:
    saved = os.dup(2)
    os.dup2(log.fileno(), 2)
    try:
        eng = LlamaCppEngine(spec.base, lora_path=spec.adapter, n_ctx=4096, verbose=True, **cfg)
    finally:
        os.dup2(saved, 2)
    log.seek(0)
    text = log.read()
buffers = {
    m.group(1).strip(): float(m.group(2))
    for m in re.finditer(r"CPU\s+([A-Za-z ]+?) buffer size =\s+([\d.]+) MiB", text)
}
after_load = rss()
dom, fmt = get_domain("calendar"), eng.chat_format
ids = eng.tokenize(
    fmt.system([t.schema() for t in dom.tools], dom.system)
    + fmt.user("Add a dentist appointment on December 3 2026 at 10am")
    + fmt.generation_prompt(True)
)
eng.llm.reset()
eng.llm.eval(ids)
after_prefill = rss()
eng.generate(ids, max_tokens=32)
after_gen = rss()
peak = peak_rss_mb()
kv = kv_cache_bytes(eng.llm, 4096)
print(
    json.dumps(
        {
            "config": {**cfg, **({"n_batch": n_batch} if n_batch else {})},
            "rss_mib": {
                "before": round(before, 1),
                "after_load": round(after_load, 1),
                "after_prefill": round(after_prefill, 1),
                "after_generate": round(after_gen, 1),
                "peak": round(peak, 1),
            },
            "llama_cpp_buffers_mib": buffers,
            "gguf_mib": round(gguf / 2**20, 1),
            "kv_mib": round(kv / 2**20, 1),
            "model_share": round((peak - before) * 2**20 / (gguf + kv), 3),
            "whole_process": round(peak * 2**20 / (gguf + kv), 3),
        }
    )
)
