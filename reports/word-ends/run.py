"""Four copy-guide rules and the date line without a clock, each measured with it on and off: word
ends (`--rule=word-end`, the default: `CopyGuide._steer_word_end`), whole numbers
(`--rule=whole-number`: `_whole_number`), scale words (`--rule=scaled`: `_scaled`), tool names
(`--rule=tool-name`: `_steer_tool_name`, the reasoning's tool and the first call's) and dates
(`--rule=dates`: `agent.dates.annotate` with no clock; off, no line as before).

    python reports/word-ends/run.py candidates > ids.txt        # BFCL items word ends can act on
    python reports/word-ends/run.py bfcl OUT.jsonl $(cat ids.txt)
    python reports/word-ends/run.py worlds OUT.jsonl            # the 190 held-out world tasks
    python reports/word-ends/run.py --rule=whole-number candidates > ids.txt   # and so on
    python reports/word-ends/run.py --rule=all worlds OUT.jsonl calendar 60     # all four: the calendar's 60

`candidates` (word ends, whole numbers, scale words): such a rule acts only where the model ends a
value cut short of the user's (a text value inside one of the user's words; a number of three
digits or more that begins a longer one; the digits of "50 million"), and it changes nothing
before it acts; so an item whose latest recorded calls (`table.recorded`) hold no such value,
case aside, makes the same tokens with it. No world task's data holds a scale word.
Tool names act only where there are several tools: every item of `multiple`, and no other of the
five categories. `bfcl` and `worlds` run each item or task with the rule on; where it chose a
token, again with it off. One row per run; `fired` lists (the text so far, what it chose) per
choice. One llama.cpp thread, the shipped `embedded` model, greedy, the grounding guard and every
other copy-guide rule on.
"""

import json
import re
import sys

from table import recorded

import botpsy.engine.copy_guide as CG
from botpsy.agent import dates
from botpsy.agent.loop import AgentConfig
from botpsy.engine.load import load_engine
from botpsy.eval import bfcl as B
from botpsy.eval.bfcl_data import load_category
from botpsy.eval.worlds import run_task
from botpsy.worlds import get_domain
from botpsy.worlds.tasks import domain_names

CATEGORIES = ["live_simple", "simple_python", "multiple", "parallel", "irrelevance"]
ON, FIRED = [True], []
RULES = {
    "word-end": "_steer_word_end",
    "whole-number": "_whole_number",
    "scaled": "_scaled",
    "tool-name": "_steer_tool_name",
}
RULE = sys.argv.pop(1)[len("--rule=") :] if sys.argv[1].startswith("--rule=") else "word-end"


def logging(name: str):
    """The rule `name`, off when ON is false; what it chose (a piece, or the number to complete) logged."""
    rule = getattr(CG.CopyGuide, name)

    def logged(self, value, *args):
        chosen = rule(self, value, *args) if ON[0] else None
        if chosen is not None:
            FIRED.append((value, chosen if isinstance(chosen, str) else self._piece(chosen)))
        return chosen

    return logged


for _name in RULES.values() if RULE == "all" else [RULES.get(RULE)] if RULE in RULES else []:
    setattr(CG.CopyGuide, _name, logging(_name))
_annotate = dates.annotate


def clockless(text, today, earlier=""):
    """`--rule=dates`: the resolved line without a clock (`agent.dates.annotate`), off as before it."""
    if today is None and not ON[0]:
        return text
    out = _annotate(text, today, earlier)
    if today is None and out != text:
        FIRED.append((text[:40], out[len(text.rstrip()) :]))
    return out


if RULE == "dates":
    dates.annotate = clockless


def cut_word(value, words: str) -> bool:
    """Whether a text value stops inside a word of the request somewhere, case aside."""
    v = value.lower() if isinstance(value, str) else ""
    if len(v) < 2 or not v[-1].isalnum():
        return False
    at = words.lower().find(v)
    while at >= 0 and not words.lower()[at + len(v) : at + len(v) + 1].isalnum():
        at = words.lower().find(v, at + 1)
    return at >= 0


def cut_number(value, words: str) -> bool:
    """Whether a whole number of 3 digits or more begins a longer one in the request."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
        return False
    digits = str(abs(int(value)))
    numbers = {n.replace(",", "") for n in re.findall(r"\d[\d,]*", words)}
    return len(digits) >= 3 and any(n.startswith(digits) and n != digits for n in numbers)


def cut_scaled(value, words: str) -> bool:
    """Whether a number is the digits of one the request writes with a scale word ("50 million")."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
        return False
    return bool(
        re.search(rf"(?<![\d.,]){abs(int(value))}\s+(thousand|million|billion|trillion)\b", words, re.I)
    )


def dated(value, words: str) -> bool:
    """`--rule=dates`: whether the request gets a resolved line without a clock (any value will do)."""
    return _annotate(words, None) != words


def values(x):
    if isinstance(x, dict | list):
        for v in x.values() if isinstance(x, dict) else x:
            yield from values(v)
    else:
        yield x


def candidates() -> None:
    """The items whose recorded calls hold a value the rule would act on (module doc)."""
    cut = {"word-end": cut_word, "whole-number": cut_number, "scaled": cut_scaled, "dates": dated}[RULE]
    calls = {key: calls for key, (_, calls) in recorded().items()}
    for cat in CATEGORIES:
        ids = []
        for e in load_category(cat):
            words = " ".join(m["content"] for turn in e["question"] for m in turn if m["role"] == "user")
            if any(cut(v, words) for v in [*values(calls.get((cat, e["id"])) or []), None]):
                ids.append(e["id"])
        if ids:
            print(f"{cat}:{','.join(ids)}")


def runs(run_one, out):
    """Run with the rule on; again with it off where it chose. Yields the row of each run."""
    for on in (True, False):
        ON[0] = on
        FIRED.clear()
        row = run_one() | {"rule": on, "fired": list(FIRED)}
        out.write(json.dumps(row) + "\n")
        out.flush()
        if on and not row["fired"]:
            break


def main() -> None:
    mode = sys.argv[1]
    if mode == "candidates":
        return candidates()
    engine = load_engine(None, n_threads=1)
    with open(sys.argv[2], "a") as out:
        if mode == "worlds":
            domains, n = (sys.argv[3], int(sys.argv[4])) if len(sys.argv) > 4 else ("all", 10)
            for d in domain_names(domains):
                dom = get_domain(d)
                for t in dom.generate(n, 1000, "eval"):

                    def task(dom=dom, t=t):
                        result = run_task(lambda _: engine, dom, t, AgentConfig(max_tokens=256))[1]
                        return {"id": t.id, "ok": result.success}

                    runs(task, out)
            return
        worker = B.BfclWorker()
        for spec in sys.argv[3:]:
            cat, ids = spec.split(":")
            items = {e["id"]: e for e in load_category(cat)}
            for iid in ids.split(","):

                def one(cat=cat, iid=iid, item=items[iid]):
                    r = B.run_item(cat, item, engine, worker, "embedded", B.BfclConfig())
                    return {"cat": cat, "id": iid, "ok": r.ok, "calls": r.detail.get("calls")}

                runs(one, out)
        worker.close()


if __name__ == "__main__":
    main()
