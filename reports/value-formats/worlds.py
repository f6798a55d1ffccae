"""The worlds' 190 held-out tasks with the three conversions on, each conversion that changed a
value logged (`_one_text`, `in_declared_format` as `protocol.arguments` calls them, and the copy
guide's rate test where it says yes).

    OMP_NUM_THREADS=1 python reports/value-formats/worlds.py OUT.jsonl [DOMAINS N]

The shipped `embedded` model, one llama.cpp thread, greedy, the tasks `botpsy eval worlds --domain
all --n 10 --seed 1000` runs (`AgentConfig(max_tokens=256)`, as `../word-ends/run.py worlds`).
"""

import json
import sys

import botpsy.engine.copy_guide as CG
import botpsy.protocol.arguments as A
from botpsy.agent.loop import AgentConfig
from botpsy.engine.load import load_engine
from botpsy.eval.worlds import run_task
from botpsy.worlds import get_domain
from botpsy.worlds.tasks import domain_names

LOG: list[tuple[str, str, str]] = []


def logged(name, fn):
    def wrapper(value, *args):
        out = fn(value, *args)
        if out != value:
            LOG.append((name, repr(value)[:80], repr(out)[:80]))
        return out

    return wrapper


A._one_text = logged("one_text", A._one_text)
A.in_declared_format = logged("declared_date", A.in_declared_format)
asks_fraction = CG.CopyGuide._asks_fraction


def rate_logged(self, argument):
    yes = asks_fraction(self, argument)
    if yes:
        LOG.append(("fraction", repr(argument), ""))
    return yes


CG.CopyGuide._asks_fraction = rate_logged


def main(out_path: str, domains: str = "all", n: str = "10") -> None:
    engine = load_engine(None, n_threads=1)
    with open(out_path, "w") as out:
        for d in domain_names(domains):
            dom = get_domain(d)
            for t in dom.generate(int(n), 1000, "eval"):
                LOG.clear()
                result = run_task(lambda _: engine, dom, t, AgentConfig(max_tokens=256))[1]
                out.write(json.dumps({"id": t.id, "ok": result.success, "conversions": LOG}) + "\n")
                out.flush()


if __name__ == "__main__":
    main(*sys.argv[1:])
