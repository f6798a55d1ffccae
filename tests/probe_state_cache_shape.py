"""Issue 37 on BotPsy's 0.8B shape (random weights, the real vocabulary): a fresh engine resumes from
the saved system-block state with the logits of a full prefill, and later turns reuse the whole
conversation before them.

Not collected by pytest (the model is 0.8-1.5 GB and prefills at ~45 tok/s here); run it as a script:

    botpsy export shapes --shape qwen3.5-0.8b --out runs/shapes/qwen3.5-0.8b --no-bench
    python tests/probe_state_cache_shape.py runs/shapes/qwen3.5-0.8b/model-Q8_0.gguf [--json OUT] [--tasks N] [--gold-only]

Turn k is measured twice. With the random model's own 12-token generations (a lower bound: each
turn's request is most of what is new), and with a world conversation replayed from gold: calendar
tasks one after another in one conversation, the agent (default settings: thinking, reasoning in
64-token chunks) running the gold calls against the world and feeding their results back, while the
engine evaluates the gold assistant turns as if it had decoded them (`GoldReplayEngine`). Each
turn's first step reports its share of the whole prompt read from the cache and its share of the
conversation before the turn.
"""

import json
import sys
import tempfile
import time
from pathlib import Path

import llama_cpp
import numpy as np

from botpsy.agent.loop import Agent, AgentConfig, approve_all
from botpsy.engine.llamacpp import LlamaCppEngine
from botpsy.engine.state_cache import StateCache, system_prefix_len
from botpsy.protocol.formats import IM_END
from botpsy.stores.workspace import Workspace
from botpsy.worlds import get_domain, make_world
from botpsy.worlds.kit import TODAY


class GoldReplayEngine(LlamaCppEngine):
    """llama.cpp with its real prefix reuse, whose "generations" are given turns: `LlamaCppEngine.generate`
    runs as it is over `Llama.generate` replaced by `_forced`, which keeps the cached prefix as
    llama.cpp's loop does, evaluates the prompt's new tokens and yields the turn's next tokens. The
    cache then holds what decoding would have left: every token of the call but the last one."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.turns: list[list[int]] = []  # ids of each gold assistant turn still to come, <|im_end|> last
        self.cursor = 0  # tokens of turns[0] already handed out (reasoning comes in chunks)
        self.llm.generate = self._forced
        self._limit = 0

    def queue(self, completions: list) -> None:
        self.turns = [self.tokenize(c) for c in completions]
        self.cursor = 0

    def generate(self, prompt_ids, max_tokens=512, *args, **kw):
        self._limit = max_tokens
        return super().generate(prompt_ids, max_tokens, *args, **{**kw, "grammar": None})

    def _forced(self, tokens, **_):
        llm = self.llm
        keep = min(self.cached_prefix(tokens), len(tokens) - 1)
        if keep < llm.n_tokens and not llm._ctx.kv_cache_seq_rm(-1, keep, -1):
            llm.reset()  # a hybrid model cannot drop its tail: llama.cpp reads it all again
            keep = 0
        llm.n_tokens = keep
        llm.eval(tokens[keep:])
        if not self.turns:  # the agent asked for more steps than the gold has: end the turn
            self.turns = [self.tokenize("\n</think>\n\nDone." + IM_END)]
        turn = self.turns[0]
        take = turn[self.cursor : self.cursor + self._limit]
        self.cursor += len(take)
        if self.cursor >= len(turn):
            self.turns.pop(0)
            self.cursor = 0
        yield take[0]
        llm.eval(take[:-1])  # the decode steps of all but the last token the caller takes
        yield from take[1:]


def gold_conversation(path: str, n_tasks: int = 6, n_ctx: int = 8192) -> list[dict]:
    """Calendar tasks replayed from gold one after another in one conversation (module doc); per
    user turn, its first step's tokens."""
    dom = get_domain("calendar")
    tasks = dom.generate(n_tasks, 1000, "eval")
    eng = GoldReplayEngine(path, n_ctx=n_ctx, n_threads=2, n_threads_batch=2)
    config = AgentConfig(tool_grammar=False, grounding_guard=False, phantom_retry=False)
    agent = Agent(eng, make_world(dom, tasks[0]), tasks[0].system, config, approve_all, today=TODAY)
    fmt, rows = eng.chat_format, []
    for task in tasks:
        segments: list[tuple[str, list]] = [(task.user, [])]
        for m in task.gold_messages():
            if m.role == "user":
                segments.append((m.content, []))
            elif m.role == "assistant":
                segments[-1][1].append(fmt.completion(m, thinking=True))
        for text, completions in segments:
            eng.queue(completions)
            prior = len(agent.trace.token_ids)
            before = len(agent.trace.timings)
            agent.send(text)
            steps = agent.trace.timings[before:]
            t = steps[0]
            rows.append(
                {
                    "task": task.id,
                    "kind": task.kind,
                    "prior_tokens": prior,
                    "new_tokens": t.prompt_tokens,
                    "cached_tokens": t.cached_tokens,
                    "share_of_prompt": t.cached_tokens / max(t.cached_tokens + t.prompt_tokens, 1),
                    "share_of_prior": t.cached_tokens / max(prior, 1),
                    "later_steps_share": [
                        s.cached_tokens / max(s.cached_tokens + s.prompt_tokens, 1) for s in steps[1:]
                    ],
                    "gold_left": len(eng.turns),
                    "total_tokens": len(agent.trace.token_ids),
                }
            )
            r = rows[-1]
            print(
                f"turn {len(rows)} ({task.kind}): {r['new_tokens']} new, {r['cached_tokens']} cached of "
                f"{r['prior_tokens']} before the turn; share of the prompt {r['share_of_prompt']:.1%}, of the "
                f"conversation before it {r['share_of_prior']:.1%}; later steps "
                + ", ".join(f"{x:.1%}" for x in r["later_steps_share"])
                + (f"; {r['gold_left']} gold turns unused" if r["gold_left"] else "")
            )
    shares = [r["share_of_prompt"] for r in rows[1:]]
    prior = [r["share_of_prior"] for r in rows[1:]]
    print(
        f"gold conversation, turns 2-{len(rows)}: share of the prompt {min(shares):.1%}-{max(shares):.1%} "
        f"(median {float(np.median(shares)):.1%}); of the conversation before the turn {min(prior):.1%}-{max(prior):.1%}"
    )
    eng.close()
    return rows


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
    args = sys.argv[1:]
    out = args[args.index("--json") + 1] if "--json" in args else None
    if "--gold-only" not in args:
        main(args[0])
    rows = gold_conversation(
        args[0], n_tasks=int(args[args.index("--tasks") + 1]) if "--tasks" in args else 6
    )
    if out:
        Path(out).write_text(json.dumps(rows, indent=1))
