"""`bench.device.bench_model`'s memory step by step: VmRSS and VmHWM at each of its log lines and
after each agent task (startup and contention processes left out; they run in other processes).

    python reports/bench-memory/bench_steps.py 3
"""

import json
import sys

import botpsy.bench.device as D


def status() -> dict[str, float]:
    out = {}
    for line in open("/proc/self/status"):
        if line.startswith(("VmRSS:", "VmHWM:", "RssAnon:", "RssFile:")):
            out[line.split(":")[0]] = round(int(line.split()[1]) / 1024, 1)
    return out


marks: list[tuple[str, dict]] = []


def log(msg: str) -> None:
    marks.append((msg[:70], status()))
    print(marks[-1], flush=True)


_run = D._AgentRuns.run


def run(self, engine, domain, task, config):
    _run(self, engine, domain, task, config)
    log(f"agent task {task.id} grammar={config.tool_grammar}")


D._AgentRuns.run = run
r = D.bench_model(
    None, tasks=int(sys.argv[1]) if len(sys.argv) > 1 else 3, log=log, startup=False, contention=False
)
keys = (
    "peak_rss_mb",
    "rss_before_load_mb",
    "kv_cache_mb",
    "gguf_mb",
    "rss_over_budget",
    "model_rss_over_budget",
)
print(json.dumps({k: getattr(r, k) for k in keys}))
