"""Where the model's resident memory sits at each step of `bench.device`'s session: /proc/self/smaps
summed by kind (C heap, anonymous mappings, files) and glibc's `mallinfo2` (heap in use and free).

    python reports/bench-memory/heap_steps.py 3 [OUT.json]

Steps: the bench's baseline, `import llama_cpp`, loading the embedded model, prefilling the system
block, each turn of `bench.device`'s conversation (`engine.generate`), one raw decode, then the
world tasks with the tool-call grammar off and on. "inuse" growing turn by turn with nothing freed
is memory something keeps; "free" is heap that a later allocation can reuse without growing RSS.
"""

import ctypes
import json
import re
import sys
from collections import defaultdict

import botpsy.bench.device as D
from botpsy.agent.loop import AgentConfig
from botpsy.worlds import get_domain


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (n, ctypes.c_size_t)
        for n in "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split()
    ]


libc = ctypes.CDLL("libc.so.6")
libc.mallinfo2.restype = _MallInfo2


def smaps_mb() -> dict[str, float]:
    out: dict[str, int] = defaultdict(int)
    name = ""
    for line in open("/proc/self/smaps"):
        if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
            parts = line.split()
            name = parts[5] if len(parts) > 5 else "[anon]"
            name = "files" if name.startswith("/") else name
        elif line.startswith("Rss:"):
            out[name] += int(line.split()[1])
    return {k: v / 1024 for k, v in out.items()}


rows: list[dict] = []


def snap(step: str) -> None:
    s, m = smaps_mb(), libc.mallinfo2()
    row = {
        "step": step,
        "peak": round(D.peak_rss_mb(), 2),
        "heap": round(s.get("[heap]", 0.0), 2),
        "anon": round(s.get("[anon]", 0.0), 2),
        "files": round(s.get("files", 0.0), 2),
        "inuse": round(m.uordblks / 2**20, 2),
        "free": round(m.fordblks / 2**20, 2),
    }
    rows.append(row)
    print(json.dumps(row), flush=True)


D.reset_peak_rss()
snap("baseline")
import llama_cpp  # noqa: E402,F401

snap("import llama_cpp")
engine = D.load_engine(None, state_cache=None)
snap("load")
domain = get_domain("calendar")
fmt = engine.chat_format
system = engine.tokenize(fmt.system([t.schema() for t in domain.tools], domain.system))
engine.llm.reset()
engine.llm.eval(system)
snap("system prefill")
prompt = system + engine.tokenize(
    fmt.user("Add a dentist appointment on December 3 2026 at 10am") + fmt.generation_prompt(True)
)
_generate = engine.generate


def generate(ids, *a, **k):
    out = _generate(ids, *a, **k)
    snap(f"generate {len(ids)} tokens, grammar {k.get('grammar') is not None}")
    return out


engine.generate = generate
D._turns(engine, prompt, D.FOLLOW_UPS)
D._raw_decode(engine, prompt, 64)
snap("raw decode")
runs = D._AgentRuns()
for task in domain.generate(int(sys.argv[1]) if len(sys.argv) > 1 else 3, 1000, "eval"):
    for grammar in (False, True):
        runs.run(engine, domain, task, AgentConfig(max_tokens=64, tool_grammar=grammar))
        snap(f"agent {task.id} grammar {grammar}")
if len(sys.argv) > 2:
    with open(sys.argv[2], "w") as f:
        json.dump(rows, f, indent=1)
