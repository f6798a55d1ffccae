"""The engine's turns with and without `engine.llama_memory.release_replaced_samplers`, interleaved
in one process: the same tokens, and time to first token and decode tokens/s as paired ratios.

    python reports/bench-memory/sampler_ab.py 12

One engine; the hook is switched off (llama-cpp-python's own `_init_sampler`) and on again round by
round, the order alternating. Each turn starts from the cached system block alone: the request's
prefill and 32 greedy tokens through `LlamaCppEngine.generate`.
"""

import json
import statistics
import sys

from botpsy.engine.load import load_engine
from botpsy.worlds import get_domain

rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 12
engine = load_engine(None, state_cache=None)
hook = engine.llm.__dict__["_init_sampler"]
fmt, dom = engine.chat_format, get_domain("calendar")
system = engine.tokenize(fmt.system([t.schema() for t in dom.tools], dom.system))
asks = ["Add a dentist appointment on December 3 2026 at 10am", "What is on my calendar tomorrow?"]
res: dict[str, dict[str, list]] = {m: {"ttft": [], "decode": [], "ids": []} for m in ("off", "on")}


def turn(mode: str, ask: str) -> None:
    if mode == "on":
        engine.llm._init_sampler = hook
    else:
        engine.llm.__dict__.pop("_init_sampler", None)
    ids = system + engine.tokenize(fmt.user(ask) + fmt.generation_prompt(True))
    # back to the system block alone, so that every turn reads the same suffix from the same state
    engine.llm._ctx.kv_cache_seq_rm(-1, len(system), -1)
    engine.llm.n_tokens = len(system)
    gen = engine.generate(ids, max_tokens=32)
    res[mode]["ttft"].append(gen.timing.ttft_s)
    res[mode]["decode"].append(gen.timing.decode_tok_s)
    res[mode]["ids"].append(gen.ids)


engine.llm.eval(system)
for r in range(rounds):
    ask = asks[(r // 2) % 2]  # each ask read in both orders
    for mode in ("off", "on") if r % 2 == 0 else ("on", "off"):
        turn(mode, ask)
ttft = [a / b for a, b in zip(res["on"]["ttft"], res["off"]["ttft"], strict=True)]
dec = [a / b for a, b in zip(res["on"]["decode"], res["off"]["decode"], strict=True) if b]
print(
    json.dumps(
        {
            "rounds": rounds,
            "same_tokens": res["on"]["ids"] == res["off"]["ids"],
            "ttft_on_over_off_median": round(statistics.median(ttft), 3),
            "decode_on_over_off_median": round(statistics.median(dec), 3),
            "ttft_ms_off_median": round(1000 * statistics.median(res["off"]["ttft"]), 1),
            "decode_tok_s_off_median": round(statistics.median(res["off"]["decode"]), 1),
        }
    )
)
