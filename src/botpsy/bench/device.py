"""Device benchmark: the latency, throughput and memory figures BotPsy never published.

Everything is measured inside one process and one run, and the comparisons that matter are given
as ratios of figures taken minutes apart on the same machine (other load on a shared CPU moves
absolute tokens/s by 2-10x; ratios much less).

Figures:
* load time; tokens in the system block (tool definitions) and the time to prefill them cold;
* time to first token cold (empty cache) and warm (a follow-up turn over the cached prefix);
* prefill tokens/s (cold prompt) and decode tokens/s (raw llama.cpp loop, no stop condition);
* agent-loop decode tokens/s on world tasks, and its overhead over llama.cpp's own loop replaying
  the same steps (same prompts, same token counts);
* the lazy tool-call grammar: decode tokens/s with it on and off over the same tasks, and the
  steps that did not parse with each;
* cache-hit share per turn over a multi-turn conversation (prompt tokens reused / prompt tokens);
* end-to-end seconds to the first tool call and to the final answer on world tasks;
* peak resident memory (ru_maxrss) against the GGUF size;
* decode tokens/s alone and beside one busy-looping process (a shared CPU), `bench.contention`'s
  idle CPU and decode quiet / contended per OpenMP wait policy and thread count, and `bench.startup`'s
  fresh-process figures: the demo's first request cold, with the saved system block and warm,
  and a `botpsy run` from process start split into import, load, setup, prefill and decode;
* roofline: this machine's memory bandwidth (numpy copy of arrays far larger than the caches)
  divided by the bytes a decode step must read (the weights, ≈ the GGUF size), and the measured
  decode rate as a fraction of that bound.

`bench_speed` is the raw-speed subset for models whose outputs mean nothing (random-init
reference shapes): load, prefill of the real system + tools prompt, time to first token cold and
over a cached prefix, decode over a fixed number of tokens whatever they are (a random tied model
may emit one token forever, or an end-of-turn), peak RSS in a process of its own
(`bench_speed_isolated`), and the roofline from the bytes of the tensors a decode step reads.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import json
import os
import resource
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from botpsy.agent.loop import Agent, AgentConfig
from botpsy.bench.contention import bench_contention, contention_rows
from botpsy.bench.startup import bench_startup, decode_under_load, startup_rows, vm_hwm_mb
from botpsy.engine.load import load_engine
from botpsy.export.gguf import read_header
from botpsy.models import resolve
from botpsy.protocol.messages import StepTiming
from botpsy.reports import JsonFormat, ReportWriter
from botpsy.worlds import get_domain, make_world
from botpsy.worlds.kit import TODAY


def memory_bandwidth_gb_s(size_mb: int = 256, repeats: int = 5, threads: int = 1) -> float:
    """Sustained copy bandwidth: bytes read + bytes written per second, best of `repeats`.

    With `threads` > 1 the arrays are split into that many slices copied concurrently (numpy
    releases the GIL for plain copies), as llama.cpp's threads stream the weights together.
    """
    src = np.ones(size_mb * 1024 * 1024 // 8, dtype=np.float64)
    dst = np.empty_like(src)
    dst[:] = 0.0  # touch the pages so the first timed copy does not pay for page faults
    bounds = np.linspace(0, len(src), max(1, threads) + 1).astype(int)
    slices = [slice(a, b) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]

    def copy(sl: slice) -> None:
        np.copyto(dst[sl], src[sl])

    best = float("inf")
    if threads <= 1:
        for _ in range(repeats):
            t0 = time.perf_counter()
            np.copyto(dst, src)
            best = min(best, time.perf_counter() - t0)
        return 2 * src.nbytes / best / 1e9

    with ThreadPoolExecutor(threads) as pool:
        for _ in range(repeats):
            t0 = time.perf_counter()
            list(pool.map(copy, slices))
            best = min(best, time.perf_counter() - t0)
    return 2 * src.nbytes / best / 1e9


def decode_bytes_per_token(path: str | Path) -> int:
    """Bytes of weights one decode step reads: every tensor once, except that an untied model
    reads one row of its token embedding, not all of it (a tied one reads it whole as the output
    projection). KV cache and recurrent state reads are left out (small at short context)."""
    tensors = {t.name: t.n_bytes for t in read_header(path)[1]}
    total = sum(tensors.values())
    if "output.weight" in tensors and "token_embd.weight" in tensors:
        total -= tensors["token_embd.weight"]
    return total


def release_free_memory() -> None:
    """Hand memory the process has freed but the C allocator still holds back to the system.

    A bench takes "before the model" as its baseline. Memory freed earlier (by imports, by an
    earlier test) stays resident in glibc's heap, and the model's allocations then reuse it, so the
    model's share came out smaller than it is: the embedded model read 1.24x GGUF + KV with 134
    MiB of imports before it, 1.28x without them. Collecting Python's garbage and
    `malloc_trim(0)` makes the baseline what is live. Without glibc this only collects.
    """
    gc.collect()
    try:
        ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def reset_peak_rss() -> None:
    """Start the peak over from what is live now (Linux: `5` to /proc/self/clear_refs).

    Without it, a bench run inside a process that was larger before (a test runner that loaded
    torch earlier) reports that older peak as the model's. Freed memory is released first
    (`release_free_memory`). Elsewhere this only releases.
    """
    release_free_memory()
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass


def peak_rss_mb() -> float:
    """Peak resident memory of this process's current image.

    /proc's VmHWM where there is one: `ru_maxrss` survives fork + exec, so a benchmark child
    started from a large parent (a test runner with torch loaded) would report the parent's size.
    """
    hwm = vm_hwm_mb()
    return hwm if hwm is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def kv_cache_bytes(llm, n_ctx: int) -> int:
    """Bytes of the f16 KV cache llama.cpp allocates for `n_ctx` tokens (llama.cpp's default cache
    type). Hybrid models (Qwen3.5: one full-attention layer in every `full_attention_interval`)
    hold it only in their attention layers; their recurrent state is small and left out."""
    import llama_cpp

    md = llm.metadata
    arch = md.get("general.architecture", "")
    n_layer = llama_cpp.llama_model_n_layer(llm.model)
    n_head = llama_cpp.llama_model_n_head(llm.model)
    n_head_kv = llama_cpp.llama_model_n_head_kv(llm.model)
    head = llama_cpp.llama_model_n_embd(llm.model) // max(1, n_head)
    k = int(md.get(f"{arch}.attention.key_length", head))
    v = int(md.get(f"{arch}.attention.value_length", head))
    interval = int(md.get(f"{arch}.full_attention_interval", 1) or 1)
    return n_ctx * (n_layer // interval) * n_head_kv * (k + v) * 2


def _turns(engine, prompt_ids: list[int], follow_ups: list[str], max_tokens: int = 8) -> list[StepTiming]:
    """Timing of each turn of one conversation that keeps growing: the first from an empty cache,
    then one per follow-up request, each over the cached conversation before it."""
    fmt = engine.chat_format
    engine.llm.reset()
    gen = engine.generate(prompt_ids, max_tokens=max_tokens)
    ids, timings = list(prompt_ids), [gen.timing]
    for follow_up in follow_ups:
        ids = ids + gen.ids + engine.tokenize("\n" + fmt.user(follow_up) + fmt.generation_prompt(True))
        gen = engine.generate(ids, max_tokens=max_tokens)
        timings.append(gen.timing)
    return timings


FOLLOW_UPS = [
    "Thanks! What else is on that day?",
    "Move it to 11am instead.",
    "And what do I have the week after?",
    "Please add a reminder note about the insurance card.",
    "Is Friday afternoon free?",
    "Book a call with Anna on Friday at 3pm.",
    "What time was the dentist again?",
]


@dataclass
class BenchResult:
    model: str
    gguf_mb: float
    load_s: float
    system_tokens: int
    system_prefill_ms: float
    ttft_ms: float  # cold: empty cache, system + first request
    ttft_warm_ms: float  # a follow-up turn over the cached conversation
    prefill_tok_s: float
    decode_tok_s: float  # raw llama.cpp loop (mean of the readings before and after the agent runs)
    agent_decode_tok_s: float  # decode inside the agent loop (free tool calls), per model step
    agent_overhead: float  # 1 - agent / replay: llama.cpp's own loop replaying the same steps
    replay_decode_tok_s: float = 0.0  # that replay's decode rate
    # The same world tasks with the lazy tool-call grammar on (the runtime's default) and off.
    grammar_decode_tok_s: float = 0.0
    grammar_overhead: float = 0.0  # 1 - grammar on / off, agent decode over the same tasks
    parse_errors_free: int = 0  # model steps that did not parse, grammar off
    parse_errors_grammar: int = 0  # the same, grammar on
    calls_free: int = 0  # well-formed tool calls made, grammar off
    calls_grammar: int = 0
    cache_hit_per_turn: list[float] = field(default_factory=list)  # agent steps on world tasks
    ttft_turns_ms: list[float] = field(default_factory=list)  # turn k of one growing conversation
    cache_hit_turns: list[float] = field(default_factory=list)  # its prompt share read from cache
    e2e_first_call_s: float = 0.0
    e2e_answer_s: float = 0.0
    peak_rss_mb: float = 0.0  # read before the bandwidth probe, whose arrays would count
    kv_cache_mb: float = 0.0  # the KV cache llama.cpp allocates for the context
    rss_over_budget: float = 0.0  # peak RSS / (GGUF + KV cache); the target is <= 1.25
    # Python, numpy and botpsy before the model; llama-cpp-python is imported after it, so its
    # library (8.1 MiB resident here) counts in the model's share below
    rss_before_load_mb: float = 0.0
    model_rss_over_budget: float = 0.0  # (peak RSS - that) / (GGUF + KV cache)
    bandwidth_gb_s: float = 0.0
    roofline_tok_s: float = 0.0
    roofline_fraction: float = 0.0
    # `bench.startup`: the demo's first request in fresh processes, cold / with the saved prefix /
    # warm, and a `botpsy run` from process start split into phases (StartupResult's fields).
    startup: dict = field(default_factory=dict)
    decode_quiet_tok_s: float = 0.0  # raw decode alone (mean of a reading before and after)...
    decode_contended_tok_s: float = 0.0  # ...and beside one busy-looping process
    contended_over_quiet: float = 0.0  # the target is >= 0.4 on a 2-core CPU
    omp_wait_policy: str = ""  # what llama.cpp's OpenMP threads did at barriers (engine.llamacpp)
    # `bench.contention`: idle CPU and decode quiet / beside a busy process per wait policy and
    # thread count, and the demo's first request beside a busy process, in fresh processes
    contention: dict = field(default_factory=dict)


def _raw_decode(engine, prompt_ids: list[int], n: int) -> float:
    """Decode tokens/s of llama.cpp's own loop, ignoring end-of-turn, after a warm prefix."""
    seconds = _raw_decode_s(engine, prompt_ids, n)
    return (n - 1) / seconds if seconds else 0.0


def _raw_decode_s(engine, prompt_ids: list[int], n: int) -> float:
    """Seconds llama.cpp's own loop takes for tokens 2..n after `prompt_ids` (prefix reused)."""
    if n < 2:
        return 0.0
    count, t_first = 0, 0.0
    for _tok in engine.llm.generate(prompt_ids, temp=0.0, top_k=1, reset=True):  # reuses the prefix
        count += 1
        if count == 1:
            t_first = time.perf_counter()
        if count >= n:
            break
    return time.perf_counter() - t_first


class _AgentRuns:
    """World tasks through the agent, timed per model step from its first token to its end."""

    def __init__(self):
        self.steps: list[tuple[list[int], int, float]] = []  # (prompt ids, tokens, decode seconds)
        self.hit_shares: list[float] = []
        self.first_call: list[float] = []
        self.answer: list[float] = []
        self.parse_errors = self.calls = 0

    def rate(self) -> float:
        seconds = sum(t for _, _, t in self.steps)
        return sum(n - 1 for _, n, _ in self.steps) / seconds if seconds else 0.0

    def run(self, engine, domain, task, config) -> None:
        agent = Agent(engine, make_world(domain, task), task.system, config, today=TODAY)
        step = agent._generate
        t_start = time.perf_counter()
        first_call: list[float] = []

        def timed_step():
            prompt = list(agent.trace.token_ids)
            t0 = time.perf_counter()
            out = step()
            seconds = time.perf_counter() - t0
            timing = agent.trace.timings[-1]  # the step's: its first chunk's time to first token
            if timing.generated_tokens > 8:
                self.steps.append((prompt, timing.generated_tokens, seconds - timing.ttft_s))
            return out

        def on_event(ev):
            if ev.kind == "model" and ev.data.get("calls") and not first_call:
                first_call.append(time.perf_counter() - t_start)

        agent._generate, agent.on_event = timed_step, on_event
        engine.llm.reset()
        trace = agent.send(task.user)
        self.answer.append(time.perf_counter() - t_start)
        self.first_call += first_call
        self.parse_errors += trace.parse_errors
        self.calls += sum(len(m.tool_calls) for m in trace.messages if m.role == "assistant")
        for t in trace.timings:
            total = t.prompt_tokens + t.cached_tokens
            self.hit_shares.append(t.cached_tokens / total if total else 0.0)


def bench_model(
    model: str | None,
    tasks: int = 3,
    decode_tokens: int = 64,
    threads: int | None = None,
    log=print,
    startup: bool = True,
    contention: bool = True,
) -> BenchResult:
    """Every figure of the module doc for one model; `startup` adds `bench.startup`'s processes,
    `contention` `bench.contention`'s."""
    spec = resolve(model)
    gguf_bytes = spec.base.stat().st_size + (spec.adapter.stat().st_size if spec.adapter else 0)
    reset_peak_rss()
    rss_before = peak_rss_mb()  # the interpreter and botpsy's imports, before llama.cpp loads anything
    # No state cache here: "cold" means an empty cache; `bench.startup` measures the saved prefix.
    engine = load_engine(model, n_threads=threads, state_cache=None)
    domain = get_domain("calendar")
    fmt = engine.chat_format
    tools = [t.schema() for t in domain.tools]
    log(f"model {engine.name}: {gguf_bytes / 1e6:.0f} MB, loaded in {engine.load_s:.2f} s")

    system_ids = engine.tokenize(fmt.system(tools, domain.system))
    engine.llm.reset()
    t0 = time.perf_counter()
    engine.llm.eval(system_ids)
    system_prefill_s = time.perf_counter() - t0

    request = "Add a dentist appointment on December 3 2026 at 10am"
    prompt = system_ids + engine.tokenize(fmt.user(request) + fmt.generation_prompt(True))
    turns = _turns(engine, prompt, FOLLOW_UPS)
    cold, warm = turns[0], turns[1]
    ttft_turns = [round(t.ttft_s * 1000, 1) for t in turns]
    hit_turns = [round(t.cached_tokens / max(1, t.prompt_tokens + t.cached_tokens), 4) for t in turns]
    log(
        f"ttft cold {cold.ttft_s * 1000:.0f} ms ({cold.prompt_tokens} tokens), "
        f"warm {warm.ttft_s * 1000:.0f} ms ({warm.prompt_tokens} new, {warm.cached_tokens} cached)"
    )
    log(
        "turn-k time to first token (ms): "
        + ", ".join(f"{x:.0f}" for x in ttft_turns)
        + f"; cached share from turn 2: {min(hit_turns[1:]):.1%}–{max(hit_turns[1:]):.1%}"
    )
    raw = _raw_decode(engine, prompt, decode_tokens)
    runs = {False: _AgentRuns(), True: _AgentRuns()}
    for task in domain.generate(tasks, 1000, "eval"):
        for grammar in (False, True):  # interleaved, so drifting load hits both alike
            runs[grammar].run(
                engine, domain, task, AgentConfig(max_tokens=decode_tokens, tool_grammar=grammar)
            )
    free, constrained = runs[False], runs[True]
    # Every free step replayed by llama.cpp's own loop from the same prompt for the same number of
    # tokens: the agent's side holds everything it adds per step (reasoning chunks re-entering the
    # engine, loop checks, detokenising), the raw side none of it, at equal context positions.
    raw_s = sum(_raw_decode_s(engine, ids, n) for ids, n, _ in free.steps)
    agent_s = sum(t for _, _, t in free.steps)
    tokens = sum(n - 1 for _, n, _ in free.steps)
    agent_rate = tokens / agent_s if agent_s else 0.0
    replay_raw = tokens / raw_s if raw_s else 0.0
    log(
        f"agent loop: {len(free.steps)} model steps, {tokens} decoded tokens at {agent_rate:.1f} tok/s "
        f"vs {replay_raw:.1f} tok/s replayed by llama.cpp's loop; tool-call grammar on: "
        f"{constrained.rate():.1f} tok/s, parse errors {constrained.parse_errors} (off: {free.parse_errors})"
    )
    hit_shares, first_call, answer = free.hit_shares, free.first_call, free.answer
    # Raw decode again after the agent runs: load on a shared CPU drifts over a minute; the plain
    # decode figure is the mean of one reading on each side.
    raw_runs = [raw, _raw_decode(engine, prompt, decode_tokens)]
    raw = float(np.mean(raw_runs))
    rss = peak_rss_mb()
    quiet, contended = decode_under_load(lambda: _raw_decode(engine, prompt, decode_tokens))
    log(f"decode alone {quiet:.1f} tok/s, beside one busy process {contended:.1f} tok/s")
    started = asdict(bench_startup(model, threads=threads, log=log)) if startup else {}
    shared = bench_contention(model, threads=threads, log=log) if contention else {}
    kv = kv_cache_bytes(engine.llm, engine.n_ctx)
    bw = memory_bandwidth_gb_s()
    roof = bw * 1e9 / gguf_bytes
    res = BenchResult(
        model=engine.name,
        gguf_mb=round(gguf_bytes / 1e6, 1),
        load_s=round(engine.load_s, 3),
        system_tokens=len(system_ids),
        system_prefill_ms=round(system_prefill_s * 1000, 1),
        ttft_ms=ttft_turns[0],
        ttft_warm_ms=ttft_turns[1],
        prefill_tok_s=round(cold.prefill_tok_s, 1),
        decode_tok_s=round(raw, 1),
        agent_decode_tok_s=round(agent_rate, 1),
        replay_decode_tok_s=round(replay_raw, 1),
        agent_overhead=round(1 - agent_rate / replay_raw, 4) if replay_raw and agent_rate else 0.0,
        grammar_decode_tok_s=round(constrained.rate(), 1),
        grammar_overhead=round(1 - constrained.rate() / free.rate(), 4) if free.rate() else 0.0,
        parse_errors_free=free.parse_errors,
        parse_errors_grammar=constrained.parse_errors,
        calls_free=free.calls,
        calls_grammar=constrained.calls,
        cache_hit_per_turn=[round(x, 4) for x in hit_shares],
        ttft_turns_ms=ttft_turns,
        cache_hit_turns=hit_turns,
        e2e_first_call_s=round(float(np.median(first_call)), 3) if first_call else 0.0,
        e2e_answer_s=round(float(np.median(answer)), 3) if answer else 0.0,
        peak_rss_mb=round(rss, 1),
        kv_cache_mb=round(kv / 1e6, 1),
        rss_over_budget=round(rss * 2**20 / (gguf_bytes + kv), 3),
        rss_before_load_mb=round(rss_before, 1),
        model_rss_over_budget=round((rss - rss_before) * 2**20 / (gguf_bytes + kv), 3),
        bandwidth_gb_s=round(bw, 2),
        roofline_tok_s=round(roof, 1),
        roofline_fraction=round(raw / roof, 4),
        startup=started,
        contention=shared,
        decode_quiet_tok_s=round(quiet, 1),
        decode_contended_tok_s=round(contended, 1),
        contended_over_quiet=round(contended / quiet, 3) if quiet else 0.0,
        omp_wait_policy=os.environ.get("OMP_WAIT_POLICY", "PASSIVE (botpsy's default)"),
    )
    return res


@dataclass
class SpeedResult:
    """Raw speed of one GGUF at one thread count, measured in a process of its own."""

    model: str
    gguf_mb: float
    threads: int
    load_s: float
    system_tokens: int  # system turn with the tool definitions
    prompt_tokens: int  # system + first request + generation prompt
    prefill_tok_s: float  # cold prompt, llama.cpp decode of the whole prompt
    ttft_ms: float  # cold: prefill + first token
    ttft_warm_ms: float  # a follow-up turn over the cached conversation
    warm_new_tokens: int
    decode_tokens: int
    decode_tok_s: float  # greedy, fixed count, stop tokens ignored
    peak_rss_mb: float
    decode_mb_per_token: float  # weight bytes one decode step reads
    bandwidth_gb_s: float
    roofline_tok_s: float
    roofline_fraction: float


def _argmax_next(llm) -> int:
    import llama_cpp

    ptr = llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1)
    return int(np.ctypeslib.as_array(ptr, shape=(llm.n_vocab(),)).argmax())


def bench_speed(
    model: str | Path, threads: int = 2, decode_tokens: int = 64, n_ctx: int = 4096, domain: str = "calendar"
) -> SpeedResult:
    """Load, prefill, time to first token (cold and warm) and fixed-length decode for one GGUF.

    The prompt is the real agent prompt (the domain's system text and tool definitions plus one
    request), so its token count is what the model's vocabulary makes of it. Decoding runs its
    own greedy loop over llama.cpp (`eval` one token, argmax the logits) for exactly
    `decode_tokens` steps: stop tokens are not special, so random-init models measure as well as
    trained ones.
    """
    spec = resolve(model)
    # load_engine runs prompt batches on the same thread count as decode: llama-cpp-python's
    # default (every core) would make the 1-thread rows measure contention instead of one core.
    reset_peak_rss()
    engine = load_engine(model, n_ctx=n_ctx, n_threads=threads, state_cache=None)
    llm, fmt = engine.llm, engine.chat_format
    dom = get_domain(domain)
    system_ids = engine.tokenize(fmt.system([t.schema() for t in dom.tools], dom.system))
    prompt = system_ids + engine.tokenize(
        fmt.user("Add a dentist appointment on December 3 2026 at 10am") + fmt.generation_prompt(True)
    )
    llm.reset()
    t0 = time.perf_counter()
    llm.eval(prompt)
    t_prefill = time.perf_counter() - t0
    tok = _argmax_next(llm)
    ttft = time.perf_counter() - t0

    t1 = time.perf_counter()
    generated = [tok]
    for _ in range(decode_tokens):
        llm.eval([tok])
        tok = _argmax_next(llm)
        generated.append(tok)
    t_decode = time.perf_counter() - t1

    follow = engine.tokenize("\n" + fmt.user("Thanks!") + fmt.generation_prompt(True))
    follow = engine.turn_end.ids + follow
    t2 = time.perf_counter()
    llm.eval(follow)
    _argmax_next(llm)
    ttft_warm = time.perf_counter() - t2

    rss = peak_rss_mb()
    bw = memory_bandwidth_gb_s(threads=threads)
    per_token = decode_bytes_per_token(spec.base)
    roof = bw * 1e9 / per_token
    decode_rate = decode_tokens / t_decode
    res = SpeedResult(
        model=engine.name,
        gguf_mb=round(spec.base.stat().st_size / 1e6, 1),
        threads=threads,
        load_s=round(engine.load_s, 3),
        system_tokens=len(system_ids),
        prompt_tokens=len(prompt),
        prefill_tok_s=round(len(prompt) / t_prefill, 2),
        ttft_ms=round(ttft * 1000, 1),
        ttft_warm_ms=round(ttft_warm * 1000, 1),
        warm_new_tokens=len(follow),
        decode_tokens=decode_tokens,
        decode_tok_s=round(decode_rate, 2),
        peak_rss_mb=round(rss, 1),
        decode_mb_per_token=round(per_token / 1e6, 1),
        bandwidth_gb_s=round(bw, 2),
        roofline_tok_s=round(roof, 2),
        roofline_fraction=round(decode_rate / roof, 4),
    )
    llm.close()
    return res


def bench_speed_isolated(model: str | Path, threads: int = 2, timeout_s: float = 3600, **kw) -> SpeedResult:
    """`bench_speed` in a fresh interpreter, so peak RSS and load time are this model's alone.

    A subprocess rather than multiprocessing's spawn, which re-imports the caller's main script.
    """
    args = json.dumps({"model": str(model), "threads": threads, **kw})
    code = (
        "import json, sys\n"
        "from dataclasses import asdict\n"
        "from botpsy.bench.device import bench_speed\n"
        "print(json.dumps(asdict(bench_speed(**json.loads(sys.argv[1])))))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, args], capture_output=True, text=True, timeout=timeout_s
    )
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
        raise RuntimeError(f"benchmark of {model} failed (exit {proc.returncode}): " + " | ".join(tail))
    return SpeedResult(**json.loads(lines[-1]))


@dataclass
class GrammarCost:
    """Decode speed with no grammar, with the lazy tool-call grammar not yet triggered, and with
    the tool-call grammar active on every token (what a call costs once `<tool_call>` is out)."""

    model: str
    threads: int
    vocab: int
    free_tok_s: float
    lazy_idle_tok_s: float
    active_tok_s: float  # grammar-first (the engine's default)
    active_tokens: int
    refusal_share: float  # steps where the model's own choice was refused and the vocabulary masked
    active_chain_tok_s: float  # llama.cpp's sampler chain: every candidate checked every step
    lazy_idle_overhead: float  # 1 - lazy_idle / free
    active_overhead: float  # 1 - active / free
    active_ms_per_token: float  # extra milliseconds per token while the grammar is active
    active_chain_ms_per_token: float


def bench_grammar(
    model: str | Path, threads: int = 1, tokens: int = 48, n_ctx: int = 4096, domain: str = "calendar"
) -> GrammarCost:
    """Greedy decode of `tokens` tokens from the agent's first turn four ways (same process): no
    grammar, the lazy grammar before its trigger, and the grammar active from the first token,
    grammar-first (the engine's default) and through llama.cpp's sampler chain.

    The chain checks every candidate token against the grammar, so its cost grows with the
    vocabulary (248k for Qwen3.5): measure it on the real one. Grammar-first pays that only on a
    refusal; a random model's choices are refused far more often than a trained model's, so its
    grammar-first figure is an upper bound (`refusal_share` says how often).
    """
    from botpsy.engine.grammar import lazy_tool_grammar, tool_call_grammar  # imports llama_cpp

    engine = load_engine(model, n_ctx=n_ctx, n_threads=threads, state_cache=None)
    fmt, dom = engine.chat_format, get_domain(domain)
    tools = [t.schema() for t in dom.tools]
    prompt = engine.tokenize(
        fmt.system(tools, dom.system)
        + fmt.user("Add a dentist appointment on December 3 2026 at 10am")
        + fmt.generation_prompt(True)
    )

    def rate(grammar) -> tuple[float, int]:
        g = engine.generate(prompt, max_tokens=tokens, grammar=grammar)
        return g.timing.decode_tok_s, g.timing.generated_tokens

    free, _ = rate(None)
    idle, _ = rate(lazy_tool_grammar(engine, tools))
    active, n_active = rate(tool_call_grammar(tools))
    stats = dict(engine.grammar_stats)
    engine.grammar_first = False
    chain, _ = rate(tool_call_grammar(tools))
    engine.grammar_first = True

    def extra_ms(r: float) -> float:
        return round(1000 / r - 1000 / free, 2) if free and r else 0.0

    res = GrammarCost(
        model=engine.name,
        threads=threads,
        vocab=engine.llm.n_vocab(),
        free_tok_s=round(free, 2),
        lazy_idle_tok_s=round(idle, 2),
        active_tok_s=round(active, 2),
        active_tokens=n_active,
        refusal_share=round(stats.get("refusals", 0) / max(1, stats.get("checks", 0)), 4),
        active_chain_tok_s=round(chain, 2),
        lazy_idle_overhead=round(1 - idle / free, 4) if free else 0.0,
        active_overhead=round(1 - active / free, 4) if free else 0.0,
        active_ms_per_token=extra_ms(active),
        active_chain_ms_per_token=extra_ms(chain),
    )
    engine.llm.close()
    return res


def write_report(results: list[BenchResult], out_dir: Path) -> Path:
    """`bench.{json,md,png}` in `out_dir`; the folder."""
    writer = ReportWriter(out_dir)
    writer.json("bench.json", [asdict(r) for r in results], JsonFormat(newline=False))
    rows = [
        "| model | GGUF MB | load s | TTFT cold ms | TTFT warm ms | prefill tok/s | decode tok/s | agent overhead | peak RSS MB | roofline |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        rows.append(
            f"| {r.model} | {r.gguf_mb} | {r.load_s} | {r.ttft_ms} | {r.ttft_warm_ms} | {r.prefill_tok_s} | "
            f"{r.decode_tok_s} | {r.agent_overhead:.1%} | {r.peak_rss_mb} | {r.roofline_fraction:.1%} |"
        )
    for r in results:
        rows += [
            "",
            f"**{r.model}**: peak RSS {r.peak_rss_mb} MiB = {r.rss_over_budget:.2f}× (GGUF {r.gguf_mb} MB + "
            f"KV cache {r.kv_cache_mb} MB), of which {r.rss_before_load_mb} MiB before the model loaded "
            f"(the model's own share: {r.model_rss_over_budget:.2f}×); agent-loop decode {r.agent_decode_tok_s} tok/s against "
            f"{r.replay_decode_tok_s} tok/s in llama.cpp's own loop replaying the same steps (agent-loop "
            f"overhead {r.agent_overhead:.1%}; plain decode {r.decode_tok_s} tok/s); tool-call grammar on: {r.grammar_decode_tok_s} tok/s "
            f"({abs(r.grammar_overhead):.1%} {'slower' if r.grammar_overhead >= 0 else 'faster'} than off), "
            f"{r.parse_errors_grammar} parse errors and "
            f"{r.calls_grammar} calls against {r.parse_errors_free} and {r.calls_free} with it off; "
            f"{r.system_tokens} tokens of tool definitions prefilled in "
            f"{r.system_prefill_ms} ms; memory bandwidth {r.bandwidth_gb_s} GB/s, roofline "
            f"{r.roofline_tok_s} tok/s.",
            "",
            "| turn | " + " | ".join(str(k + 1) for k in range(len(r.ttft_turns_ms))) + " |",
            "|---|" + "---|" * len(r.ttft_turns_ms),
            "| time to first token, ms | " + " | ".join(f"{x:.0f}" for x in r.ttft_turns_ms) + " |",
            "| prompt share from cache | " + " | ".join(f"{x:.1%}" for x in r.cache_hit_turns) + " |",
        ]
        if r.decode_quiet_tok_s > 0:  # a figure only where it was measured
            rows += [
                "",
                f"Decode {r.decode_quiet_tok_s} tok/s alone, {r.decode_contended_tok_s} tok/s beside one "
                f"busy process ({r.contended_over_quiet:.2f}×; OpenMP wait policy {r.omp_wait_policy}).",
            ]
        rows += startup_rows(r.startup)
        rows += contention_rows(r.contention)
    writer.text("bench.md", "\n".join(rows) + "\n")
    with writer.figure("bench.png", 1, 2, figsize=(10, 4), dpi=110) as (fig, axes):
        names = [r.model for r in results]
        axes[0].bar(names, [r.prefill_tok_s for r in results], label="prefill")
        axes[0].bar(names, [r.decode_tok_s for r in results], label="decode")
        axes[0].set_ylabel("tokens/s")
        axes[0].legend()
        axes[1].bar(names, [r.ttft_ms for r in results], label="cold")
        axes[1].bar(names, [r.ttft_warm_ms for r in results], label="warm (cached prefix)")
        axes[1].set_ylabel("time to first token, ms")
        axes[1].legend()
        for ax in axes:
            ax.tick_params(axis="x", labelrotation=15)
        fig.tight_layout()
    return writer.folder
