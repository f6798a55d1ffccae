"""The child process of `bench.contention`: one loaded engine, its idle CPU and its decode speed.

A module of its own so that it can import the device bench at its top: `bench.device` reports
`bench.contention`'s figures, and the child needs the device bench's raw decode timer.
"""

from __future__ import annotations

import time

from botpsy.bench.contention import process_cpu_s
from botpsy.bench.device import _raw_decode
from botpsy.bench.startup import DEMO_FIRST, decode_under_load
from botpsy.engine.load import load_engine
from botpsy.worlds import get_domain


def policy_child(model: str | None, threads: int | None, idle_s: float, decode_tokens: int) -> dict:
    """A loaded engine after one request: CPU burnt while idle, then decode quiet and contended."""
    engine = load_engine(model, n_threads=threads, state_cache=None)
    fmt, dom = engine.chat_format, get_domain("calendar")
    prompt = engine.tokenize(
        fmt.system([t.schema() for t in dom.tools], dom.system)
        + fmt.user(DEMO_FIRST)
        + fmt.generation_prompt(True)
    )
    engine.generate(prompt, max_tokens=8)  # the threads exist and have just finished work
    cpu0, t0 = process_cpu_s(), time.perf_counter()
    time.sleep(idle_s)
    idle_cpu, idle_wall = process_cpu_s() - cpu0, time.perf_counter() - t0
    quiet, contended = decode_under_load(lambda: _raw_decode(engine, prompt, decode_tokens))
    engine.close()
    return {
        "idle_cpu_s": idle_cpu,
        "idle_wall_s": idle_wall,
        "quiet_tok_s": quiet,
        "contended_tok_s": contended,
    }
