"""Issue 37 on BotPsy's 0.8B shape (random weights, the real vocabulary): a fresh engine resumes from
the saved system-block state with the logits of a full prefill, and later turns reuse the whole
conversation before them.

Not collected by pytest (the model is 0.8-1.5 GB and prefills at ~45 tok/s here); run it as a script:

    botpsy export shapes --shape qwen3.5-0.8b --out runs/shapes/qwen3.5-0.8b --no-bench
    python tests/probe_state_cache_shape.py runs/shapes/qwen3.5-0.8b/model-Q8_0.gguf
"""

import sys
import tempfile
import time
from pathlib import Path

import llama_cpp
import numpy as np

from botpsy.agent.loop import Agent, AgentConfig, approve_all
from botpsy.engine.llamacpp import LlamaCppEngine
from botpsy.engine.state_cache import StateCache, system_prefix_len
from botpsy.stores.workspace import Workspace
from botpsy.worlds import get_domain


def main(path: str) -> None:

    def last(engine):
        ptr = llama_cpp.llama_get_logits_ith(engine.llm.ctx, -1)
        return np.ctypeslib.as_array(ptr, shape=(engine.llm.n_vocab(),)).copy()

    def make(cache):
        return LlamaCppEngine(path, n_ctx=4096, n_threads=2, n_threads_batch=2, state_cache=cache)

    with tempfile.TemporaryDirectory() as tmp:
        cache = StateCache(Path(tmp) / "states")
        first = make(cache)
        dom = get_domain("calendar")
        fmt = first.chat_format
        ids = first.tokenize(fmt.system([t.schema() for t in dom.tools], dom.system))
        ids = ids + first.tokenize(fmt.user("What do I have on Friday?") + fmt.generation_prompt(True))
        n = system_prefix_len(ids, first.tokenize, first.detokenize)
        t0 = time.time()
        restored = first.prefix_states.prepare(ids)
        first.llm.eval(ids[first.llm.n_tokens :])
        t_miss = time.time() - t0
        first.llm.reset()
        t0 = time.time()
        first.llm.eval(ids)
        full = last(first)
        t_full = time.time() - t0
        first.close()
        second = make(cache)
        t0 = time.time()
        restored = second.prefix_states.prepare(ids)
        second.llm.eval(ids[second.llm.n_tokens :])
        resumed = last(second)
        t_hit = time.time() - t0
        print(
            f"format {fmt.name}; prompt {len(ids)} tokens, system block {n}; restored {restored} (hit {second.prefix_states.last['hit']})"
        )
        print(
            f"max |logit diff| resumed vs full prefill: {np.abs(resumed - full).max():.3g}; argmax equal: {int(resumed.argmax()) == int(full.argmax())}"
        )
        print(
            f"time to the logits: full prefill {t_full:.1f} s, miss (prefill + save) {t_miss:.1f} s, fresh engine with the saved state {t_hit:.2f} s"
        )
        second.close()
        # turn k: an agent conversation of 4 requests, short generations; cached share of each turn's first step
        eng = LlamaCppEngine(path, n_ctx=4096, n_threads=2, n_threads_batch=2)
        ws = Workspace(Path(tmp) / "ws", suites=["calendar"])
        agent = Agent(
            eng,
            ws,
            dom.system,
            AgentConfig(
                max_tokens=12,
                loop_check_every=0,
                reasoning_budget=None,
                call_grace=0,
                max_steps=1,
                tool_grammar=False,
            ),
            approve_all,
        )
        shares = []
        for req in [
            "What do I have on Friday?",
            "And on Saturday?",
            "Add a dentist visit on December 3 at 10am",
            "Thanks!",
        ]:
            before = len(agent.trace.timings)
            agent.send(req)
            t = agent.trace.timings[before]
            # prompt_tokens: the ids evaluated anew; cached_tokens: the ids the engine kept
            shares.append(t.cached_tokens / max(t.cached_tokens + t.prompt_tokens, 1))
            print(
                f"turn {len(shares)}: {t.prompt_tokens} new tokens, {t.cached_tokens} cached ({shares[-1]:.1%}), ttft {t.ttft_s * 1000:.0f} ms"
            )
        print(f"turn-k cached share from turn 2: {min(shares[1:]):.1%}-{max(shares[1:]):.1%}")
        eng.close()


if __name__ == "__main__":
    main(sys.argv[1])
