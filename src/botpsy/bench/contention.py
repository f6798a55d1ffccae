"""What sharing the CPU costs botpsy: llama.cpp's waiting policy and its thread count beside other work.

A phone or laptop is never idle, and llama.cpp's CPU threads meet at a barrier after every
operation. How they wait there is libgomp's OpenMP wait policy, read once when llama.cpp's
library loads (`engine.llamacpp.import_llama` makes it PASSIVE unless the user chose one):

* **idle cost**: CPU seconds a loaded engine burns while it waits `idle_s` between two requests;
* **decode beside a busy process**: raw decode tokens/s with the machine quiet and beside one
  busy-looping process (`bench.startup.decode_under_load`), and their ratio (issue 37's target:
  ≥ 0.4 on a 2-core CPU);

for botpsy's defaults (PASSIVE; decode on every core but one, `engine.llamacpp.default_threads`)
and for every core decoding under PASSIVE, ACTIVE and libgomp's own default (spin ~300,000 times,
then sleep), each in a fresh interpreter because libgomp reads the policy only once; they alternate
over `rounds` so drifting load hits each alike.

`ttft_beside_busy` is the other half: the demo's first request in a fresh `botpsy run`-shaped
process with the saved system block (`bench.startup.run_process`), its time to first token quiet
and beside one busy process, for each thread count asked (the default, every core up to 8, and
fewer), interleaved.

    python -c "from botpsy.bench.contention import bench_contention; bench_contention(None)"
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field

from botpsy.bench.startup import DEMO_FIRST, child_result, run_process

POLICIES = ("PASSIVE", "ACTIVE", "default")

_CHILD = (
    "import json, sys\n"
    "if sys.argv[1] == 'default':\n"
    "    import llama_cpp  # loaded before botpsy: libgomp keeps its own default policy\n"
    "from botpsy.bench.contention_child import policy_child\n"
    "print('BOTPSY-POLICY ' + json.dumps(policy_child(**json.loads(sys.argv[2]))))\n"
)


def process_cpu_s() -> float:
    """User + system CPU seconds of this process, every thread included."""
    t = os.times()
    return t.user + t.system


def run_policy(
    policy: str,
    model: str | None,
    threads: int | None = None,
    idle_s: float = 10.0,
    decode_tokens: int = 64,
    timeout_s: float = 600,
) -> dict:
    """`contention_child.policy_child` in a fresh interpreter whose OpenMP runtime waits as `policy` says
    ("PASSIVE", "ACTIVE", or "default": libgomp's own, with no variable set)."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    if policy.startswith("spin="):
        env["GOMP_SPINCOUNT"] = policy.removeprefix("spin=")
    elif policy not in POLICIES:
        raise ValueError(
            f"unknown wait policy {policy!r}: expected one of {', '.join(POLICIES)} or spin=N (GOMP_SPINCOUNT)"
        )
    elif policy != "default":
        env["OMP_WAIT_POLICY"] = policy
    args = {"model": model, "threads": threads, "idle_s": idle_s, "decode_tokens": decode_tokens}
    return child_result(_CHILD, [policy, json.dumps(args)], "BOTPSY-POLICY", "wait-policy", timeout_s, env)


@dataclass
class PolicyFigures:
    """One wait policy's readings (one per round) and their medians."""

    policy: str  # the label: wait policy and threads
    idle_cpu_s: list[float]  # CPU seconds over `idle_s` of waiting between requests
    quiet_tok_s: list[float]
    contended_tok_s: list[float]
    idle_cpu_share: float  # median CPU seconds per idle wall second (1.0: one core kept busy)
    quiet_median: float
    contended_median: float
    contended_over_quiet: float  # the median of each round's own ratio


def summarize_policy(policy: str, readings: list[dict]) -> PolicyFigures:
    ratios = [r["contended_tok_s"] / r["quiet_tok_s"] for r in readings if r["quiet_tok_s"]]
    return PolicyFigures(
        policy=policy,
        idle_cpu_s=[round(r["idle_cpu_s"], 3) for r in readings],
        quiet_tok_s=[round(r["quiet_tok_s"], 1) for r in readings],
        contended_tok_s=[round(r["contended_tok_s"], 1) for r in readings],
        idle_cpu_share=round(statistics.median(r["idle_cpu_s"] / r["idle_wall_s"] for r in readings), 4),
        quiet_median=round(statistics.median(r["quiet_tok_s"] for r in readings), 1),
        contended_median=round(statistics.median(r["contended_tok_s"] for r in readings), 1),
        contended_over_quiet=round(statistics.median(ratios), 3) if ratios else 0.0,
    )


def wait_configs(cores: int | None = None) -> list[tuple[str, str, int | None]]:
    """(label, policy, threads) compared by default: botpsy's own settings (PASSIVE, the engine's
    default thread counts), then every core decoding under each policy."""
    cores = cores or os.cpu_count() or 2
    return [
        ("botpsy default: PASSIVE, default threads", "PASSIVE", None),
        (f"PASSIVE, {cores} threads", "PASSIVE", cores),
        (f"ACTIVE, {cores} threads", "ACTIVE", cores),
        (f"libgomp default, {cores} threads", "default", cores),
    ]


def bench_wait_policies(
    model: str | None,
    configs: list[tuple[str, str, int | None]] | None = None,
    idle_s: float = 10.0,
    decode_tokens: int = 64,
    rounds: int = 1,
    log=print,
) -> list[PolicyFigures]:
    """Idle CPU and decode quiet / beside a busy process for each (label, policy, threads) of
    `configs` (`wait_configs` by default), alternating their order round by round (module doc)."""
    configs = configs or wait_configs()
    readings: dict[str, list[dict]] = {label: [] for label, _, _ in configs}
    for r in range(rounds):
        for label, policy, threads in configs if r % 2 == 0 else list(reversed(configs)):
            readings[label].append(run_policy(policy, model, threads, idle_s, decode_tokens))
    out = [summarize_policy(label, readings[label]) for label, _, _ in configs]
    for f in out:
        log(
            f"{f.policy}: idle engine {f.idle_cpu_share:.3f} CPU-s per second; decode "
            f"{f.quiet_median} tok/s alone, {f.contended_median} beside one busy process "
            f"({f.contended_over_quiet:.2f}x)"
        )
    return out


@dataclass
class ThreadsTTFT:
    """The demo's first request in fresh processes over a saved system block, by thread count."""

    threads: str  # "default" (every core, up to 8) or the count
    quiet_ms: list[float] = field(default_factory=list)
    busy_ms: list[float] = field(default_factory=list)  # beside one busy-looping process
    busy_to_token_s: list[float] = field(default_factory=list)  # process start to first token, busy
    quiet_median_ms: float = 0.0
    busy_median_ms: float = 0.0


def _busy_loop() -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


def ttft_beside_busy(
    model: str | None,
    thread_counts: tuple[int | None, ...] = (None, 1),
    rounds: int = 3,
    n_ctx: int = 4096,
    log=print,
) -> list[ThreadsTTFT]:
    """Time to first token of the demo's first request in a fresh process restoring the saved
    system block, quiet and beside one busy process, per thread count; counts and the quiet /
    busy halves interleaved round by round."""
    figures = {t: ThreadsTTFT("default" if t is None else str(t)) for t in thread_counts}
    with tempfile.TemporaryDirectory(prefix="botpsy-state-") as folder:
        kw = {"n_ctx": n_ctx, "first_step_only": [True]}
        run_process(model, folder, [DEMO_FIRST], **kw)  # writes the state file
        for r in range(rounds):
            order = thread_counts if r % 2 == 0 else tuple(reversed(thread_counts))
            for t in order:
                p = run_process(model, folder, [DEMO_FIRST], threads=t, **kw)
                figures[t].quiet_ms.append(round(p["requests"][0]["ttft_s"] * 1000, 1))
            hog = _busy_loop()
            try:
                time.sleep(0.5)  # let it reach the run queue
                for t in order:
                    p = run_process(model, folder, [DEMO_FIRST], threads=t, **kw)
                    req = p["requests"][0]
                    if not req["restore"].get("hit"):
                        log("contention bench: a process did not restore the saved system block")
                    figures[t].busy_ms.append(round(req["ttft_s"] * 1000, 1))
                    to_token = p["import_s"] + p["load_s"] + req["setup_s"] + req["ttft_s"]
                    figures[t].busy_to_token_s.append(round(to_token, 3))
            finally:
                hog.kill()
                hog.wait()
    out = list(figures.values())
    for f in out:
        f.quiet_median_ms = round(statistics.median(f.quiet_ms), 1)
        f.busy_median_ms = round(statistics.median(f.busy_ms), 1)
        log(
            f"threads {f.threads}: demo's first request with the saved prefix, time to first token "
            f"{f.quiet_median_ms:.0f} ms quiet, {f.busy_median_ms:.0f} ms beside one busy process "
            f"(readings {f.busy_ms})"
        )
    return out


def bench_contention(
    model: str | None, threads: int | None = None, idle_s: float = 10.0, rounds: int = 1, log=print
) -> dict:
    """Both halves of the module doc, as one dict of plain figures."""
    configs = [("given threads, PASSIVE", "PASSIVE", threads)] if threads else None
    policies = bench_wait_policies(model, configs, idle_s=idle_s, rounds=rounds, log=log)
    counts = (threads,) if threads else (None, 1)
    ttft = ttft_beside_busy(model, thread_counts=counts, rounds=max(rounds, 3), log=log)
    return {
        "cores": os.cpu_count(),
        "idle_s": idle_s,
        "policies": [asdict(p) for p in policies],
        "ttft_beside_busy": [asdict(t) for t in ttft],
    }


def contention_rows(c: dict) -> list[str]:
    """`bench_contention`'s figures as markdown (none when they were not measured)."""
    if not c:
        return []
    rows = [
        "",
        f"Sharing the CPU ({c['cores']} cores): llama.cpp's OpenMP wait policy; idle is a loaded engine "
        f"waiting {c['idle_s']:.0f} s between requests; decode beside one busy-looping process.",
        "",
        "| wait policy, threads | idle CPU-s per s | decode alone tok/s | beside a busy process | ratio |",
        "|---|---|---|---|---|",
    ]
    for p in c["policies"]:
        rows.append(
            f"| {p['policy']} | {p['idle_cpu_share']:.3f} | {p['quiet_median']} | {p['contended_median']} | "
            f"{p['contended_over_quiet']:.2f} |"
        )
    rows += [
        "",
        "| threads | demo's first request, TTFT quiet ms | beside one busy process ms |",
        "|---|---|---|",
    ]
    for t in c["ttft_beside_busy"]:
        rows.append(f"| {t['threads']} | {t['quiet_median_ms']:.0f} | {t['busy_median_ms']:.0f} |")
    return rows
