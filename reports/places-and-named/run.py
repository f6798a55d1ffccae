"""Three copy-guide rules measured together (engine/copy_guide.py): `format` (a place value
completed to the qualifiers the user wrote, where the parameter's description shows a comma-joined
format), `named` (an optional enum argument whose value the user named, written before the call
closes) and `number` (a number the user wrote with thousands separators, written whole).

Every item one of them can act on runs with today's copy guide; an item where one of them chose a
token runs again with the three off (the earlier rules on: text copies, enum values). An item none
of them can act on, judged from its tools and the user's words before running, makes the same
tokens either way and is listed as such. One row per run; `chosen` holds, per rule, the pieces it
chose.

    python reports/places-and-named/run.py OUT.jsonl live_simple simple_python multiple parallel irrelevance worlds
    python reports/places-and-named/run.py --flags OUT.jsonl live_simple simple_python multiple parallel irrelevance worlds

`--only ID,ID,… OUT.jsonl CATEGORY…` runs just those items (the change to qualifiers that a
sentence follows, measured on the two items it can act on).

`--choices` measures the quoted choices the user named (`named` writing an optional text
argument whose description quotes its choices, "'real' for real roots, 'all' for both …", with
the one the user's words name), added last: the items where one can be named run with it, and
again without it when `named` chose; no world's tool quotes a choice in a description.

`--peers` measures `peers` (a list of text items not closed while the user's words list a peer of
its last item: "Microsoft and Google"): every item with a list argument runs with it, and again
without it when it chose; in the worlds, the tasks of the worlds whose tools have a list argument.
With `--only`, just the listed items and tasks.

`--units` measures `units` (a text argument the model ends at a number the user wrote goes on to
the word after it: "2" → "2 weeks", "3" → "3pm"): the items whose words have a number with such a
word and whose tools a text argument, with it and again without it when it chose; in the worlds,
the tasks whose request or scripted replies have one.

`--strings` measures two rules for the JSON strings inside list and object arguments together:
`strings` (the copy guide closes a string where the model's top token would end its container,
write markup or break the line with the string still open: `"end": "2024-02-15T00:00 }`) and
`quote` (the grammar gate, where the model's token is refused and the allowed one it prefers opens
a string and goes on, `"]]`, takes the bare `"`: `engine.grammar.GrammarGate.choose`). Every item
and world task whose tools have a list or object argument runs with both, and again with neither
when one of them chose.

`--percent` measures `percent` (a percentage the user wrote, written as the fraction a number
argument's description asks for: "5%" → 0.05), added last, the same way; no world's tool asks
for a fraction.

`--flags` measures the boolean flags the user named (`named` writing `true` for an optional
boolean argument whose name's words the request says unnegated), added after the three: the items
where a flag can be named run with it, and again without it (the three rules on) when it chose.

`worlds`: the 190 held-out world tasks (10 per world, seed 1000). A task is run when its world's
tools have a parameter `format` or `named` reads (only retail's optional `refund_to`), or when its
task data holds a separated number anywhere (16 tasks; all of them in stored notes and pages, which
no rule reads). One llama.cpp thread, the shipped `embedded` model, greedy.
"""

import dataclasses
import json
import re
import sys

import botpsy.engine.copy_guide as CG
from botpsy.agent.loop import AgentConfig
from botpsy.engine.load import load_engine
from botpsy.eval import bfcl as B
from botpsy.eval.bfcl_data import load_category, to_json_schema
from botpsy.eval.worlds import run_task
from botpsy.worlds import get_domain
from botpsy.worlds.tasks import domain_names

ADDED = (
    sys.argv.pop(1)[2:]
    if sys.argv[1] in ("--flags", "--percent", "--choices", "--peers", "--units", "--strings")
    else None
)
FLAGS = ADDED == "flags"
ONLY = None
if sys.argv[1] == "--only":
    ONLY = set(sys.argv[2].split(","))
    del sys.argv[1:3]
RULES = {
    "format": "_steer_format",
    "named": "_steer_named_parameter",
    "number": "_steer_number",
    "percent": "_steer_percent",
    "peers": "_steer_list_peer",
    "units": "_steer_unit",
    "strings": "_steer_string_close",
}
CHOSEN: dict[str, str] = {}
ON = [True]
_named_value = CG.CopyGuide._named_value
_named_choice = CG.CopyGuide._named_choice


def named_value(self, fn, name, held=None):
    """With --flags, off: an enum value the user named, no flag."""
    if FLAGS and not ON[0]:
        return self._enum((fn, name))[1]
    return _named_value(self, fn, name, held)


def named_choice(self, fn, name, held):
    """With --choices, off: no quoted choice."""
    return None if ADDED == "choices" and not ON[0] else _named_choice(self, fn, name, held)


if ADDED == "strings":
    import botpsy.engine.grammar as G

    _choose = G.GrammarGate.choose

    def choose(self, logits, pick):
        """The gate's choice (off: the masked pick as it stands), logged where the two differ."""
        token = pick(logits)
        if self.allows(token):
            return token
        plain = pick(self.mask(logits))
        if not ON[0]:
            return plain
        chosen = _choose(self, logits, pick)
        if chosen != plain:
            CHOSEN["quote"] = CHOSEN.get("quote", "") + self._detokenize([plain]).decode(errors="replace")
        return chosen

    G.GrammarGate.choose = choose

CG.CopyGuide._named_value = named_value
CG.CopyGuide._named_choice = named_choice


def logged(name, method):
    def rule(self, *args):
        off = not ON[0] and (ADDED is None or ADDED == name)
        r = None if off else method(self, *args)
        if r is not None:
            CHOSEN[name] = CHOSEN.get(name, "") + self._piece(r)
        return r

    return rule


for _name, _method in RULES.items():
    setattr(CG.CopyGuide, _method, logged(_name, getattr(CG.CopyGuide, _method)))


def reader(params: dict, users: list[str]) -> CG.CopyGuide:
    """A copy guide that only reads schemas and the user's words (no tokenizer): what the checks
    below ask of it before running."""
    return CG.CopyGuide(users or ["-"], lambda t: [], lambda t: "", "qwen35", params=params)


def flags(params: dict, users: list[str]) -> bool:
    """Whether an optional boolean argument's name is said by the user's words (any optional
    boolean when the words are not known before running)."""
    g = reader(params, users)
    return any(
        isinstance(s, dict)
        and s.get("type") == "boolean"
        and k not in (p.get("required") or [])
        and (not users or _named_value(g, f, k) == "true")
        for f, p in params.items()
        for k, s in (p.get("properties") or {}).items()
    )


def choices(params: dict, users: list[str]) -> bool:
    """Whether an optional text argument's description quotes a choice the user's words name
    (any quoted choice when the words are not known before running)."""
    g = reader(params, users)
    return any(
        isinstance(s, dict)
        and k not in (p.get("required") or [])
        and (
            _named_choice(g, f, k, set()) is not None
            if users
            else s.get("type") == "string" and bool(CG._QUOTED.search(str(s.get("description"))))
        )
        for f, p in params.items()
        for k, s in (p.get("properties") or {}).items()
    )


def percent(params: dict, users: list[str]) -> bool:
    """Whether the user wrote a percentage and a number argument asks for a fraction."""
    g = reader(params, users)
    asks = any(g._asks_fraction((f, k)) for f, p in params.items() for k in (p.get("properties") or {}))
    return asks and (not users or any(CG._PERCENT.search(u) for u in users))


def reads(params: dict, users: list[str]) -> bool:
    """Whether a rule can act: a place format in a string parameter's description; an optional
    enum argument whose value the user's words name (any optional text enum when the words are
    not known before running: the worlds' scripted user); a separated number in the user's words."""
    if any(CG._GROUPED.search(u) for u in users):
        return True
    g = reader(params, users)
    for f, p in params.items():
        for k, s in (p.get("properties") or {}).items():
            if not isinstance(s, dict) or s.get("type") != "string":
                continue
            members, named = g._enum((f, k))
            if g._format_commas((f, k)) or (
                k not in (p.get("required") or []) and (named if users else members)
            ):
                return True
    return False


def lists(params: dict, users: list[str], types: tuple[str, ...] = ("array",)) -> bool:
    """Whether a tool has a list argument (or one of another of `types`)."""
    return any(
        isinstance(s, dict) and s.get("type") in types
        for p in params.values()
        for k, s in (p.get("properties") or {}).items()
    )


def units(params: dict, users: list[str]) -> bool:
    """Whether a tool has a text argument and the user's words a number with a lowercase word after
    it (any text argument when the words are not known before running)."""
    text = any(
        isinstance(s, dict) and s.get("type") == "string" and not s.get("enum")
        for p in params.values()
        for s in (p.get("properties") or {}).values()
    )
    after = r"(?<![\w.,])\d+(?:st|nd|rd|th)?(?!\d|[.,]\d)\s?([^\W\d_]+)"
    said = any(w[0].islower() and w not in CG._UNIT_STOP for u in users for w in re.findall(after, u))
    return text and (said or not users)


def json_values(params: dict, users: list[str]) -> bool:
    """Whether a tool has a list or object argument: qwen35 writes those as JSON, with strings."""
    return lists(params, users, ("array", "object", "dict"))


CHECKS = {
    "flags": flags,
    "percent": percent,
    "choices": choices,
    "peers": lists,
    "units": units,
    "strings": json_values,
}


def items(spec):
    if spec == "worlds":
        for d in domain_names("all"):
            dom = get_domain(d)
            tools = CHECKS.get(ADDED, reads)({t.name: t.parameters for t in dom.tools}, [])
            for t in dom.generate(10, 1000, "eval"):
                if ONLY is not None and t.id not in ONLY:
                    continue
                if ADDED == "units":  # the scripted user says only the task's words and replies
                    params = {x.name: x.parameters for x in dom.tools}
                    yield "worlds", t.id, units(params, [t.user, *t.user_replies]), (dom, t)
                    continue
                data = CG._GROUPED.search(json.dumps(dataclasses.asdict(t), default=str))
                yield "worlds", t.id, tools or (bool(data) and ADDED is None), (dom, t)
        return
    for e in load_category(spec):
        if ONLY is not None and e["id"] not in ONLY:
            continue
        params = {f["name"]: to_json_schema(f["parameters"]) for f in e["function"]}
        users = [m["content"] for turn in e["question"] for m in turn if m["role"] == "user"]
        yield spec, e["id"], CHECKS.get(ADDED, reads)(params, users), e


engine = load_engine(None, n_threads=1)
worker = B.BfclWorker()
with open(sys.argv[1], "a") as out:
    for spec in sys.argv[2:]:
        for cat, iid, acts, item in items(spec):
            if not acts:
                out.write(json.dumps({"cat": cat, "id": iid, "can_act": False}) + "\n")
                continue
            for on in (True, False):
                ON[0] = on
                CHOSEN.clear()
                if cat == "worlds":
                    dom, task = item
                    ok, calls = (
                        run_task(lambda t: engine, dom, task, AgentConfig(max_tokens=256))[1].success,
                        None,
                    )
                else:
                    r = B.run_item(cat, item, engine, worker, "embedded", B.BfclConfig())
                    ok, calls = r.ok, r.detail.get("calls")
                row = {"cat": cat, "id": iid, "can_act": True, "rules": on, "ok": ok, "calls": calls}
                out.write(json.dumps(row | {"chosen": dict(CHOSEN)}) + "\n")
                out.flush()
                touched = {
                    "flags": ">\ntrue\n" in CHOSEN.get("named", ""),
                    "percent": "percent" in CHOSEN,
                    "choices": "named" in CHOSEN,
                    "peers": "peers" in CHOSEN,
                    "units": "units" in CHOSEN,
                    "strings": "strings" in CHOSEN or "quote" in CHOSEN,
                }
                touched = touched.get(ADDED, bool(CHOSEN))
                if on and not touched:
                    break
worker.close()
