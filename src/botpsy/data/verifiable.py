"""Multi-domain verifiable prompts for RL2 and MOPD: generated items, each with a checker.

Domains (skill tag in brackets; MOPD routes each prompt to the teacher of its skill):

* ``arithmetic`` [reasoning] — multi-step word problems; the last number of the answer must equal
  the exact result.
* ``mcq`` [reasoning] — four-option questions (primes, comparisons, products, weekdays); the
  answer must name the right letter.
* ``code`` [reasoning] — small Python functions, run against their tests in a sandbox subprocess
  (`run_sandboxed`: isolated interpreter, empty environment, temp working dir, CPU-time, memory,
  file-size and process limits, wall-clock timeout). Score = share of tests passed.
* ``ifeval`` [instruction_following] — a writing request plus one constraint whose verifier is
  IFBench's own (`ifbench.instructions_registry`, via `botpsy.data.nltk_offline.require_ifbench`), no
  second implementation. Constraint types are split by a fixed rule into training types and
  held-out types (`IF_HELD_OUT`), so the recipe's instruction-following figure measures transfer
  to constraints RL never rewarded.
* ``json`` [instruction_following] — return a JSON object for a described record; half credit for
  validating against the schema (`jsonschema`), full credit when the values are right too.
* ``tools`` [tool_use] — turns of world tasks (`botpsy.data.turns.TurnItem`), multi-turn
  included, scored by `turns.tool_reward` on the world checker.

All generators are deterministic in (seed, split); "train" and "eval" draw disjoint random streams.
Every checker is a pure function of (item, completion) returning a score in [0, 1]; the answer is
what follows `</think>`, parsed by `botpsy.protocol.formats.parse_completion` as the runtime does.
"""

from __future__ import annotations

import json
import os
import random
import re
import resource
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from typing import Any

from botpsy.data.nltk_offline import require_ifbench
from botpsy.data.turns import TurnItem, tool_reward, turn_items
from botpsy.protocol.formats import THINK_CLOSE, ChatFormat, parse_completion
from botpsy.protocol.messages import Message
from botpsy.worlds import DOMAINS

SKILLS = ("tool_use", "reasoning", "instruction_following")
DOMAIN_SKILL = {
    "arithmetic": "reasoning",
    "mcq": "reasoning",
    "code": "reasoning",
    "ifeval": "instruction_following",
    "json": "instruction_following",
    "tools": "tool_use",
}
SYSTEM = "You are botpsy, a helpful assistant. Think briefly, then answer."


@dataclass
class Item:
    id: str
    domain: str
    user: str
    spec: dict[str, Any] = field(default_factory=dict)  # what the checker needs (answer, tests, schema …)
    system: str = SYSTEM

    @property
    def skill(self) -> str:
        return DOMAIN_SKILL[self.domain]

    def prompt(self, fmt: ChatFormat) -> str:
        if self.domain == "tools":
            return TurnItem.from_json(self.spec["turn_item"]).prompt(fmt)
        msgs = [Message("system", self.system), Message("user", self.user)]
        return fmt.render(msgs, None, add_generation_prompt=True, thinking=True)

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> Item:
        return cls(**json.loads(text))


def answer_text(completion: str) -> str | None:
    """The visible answer of a completion, or None when the reasoning was never closed."""
    if THINK_CLOSE not in completion:
        return None
    return parse_completion(completion, "qwen35", None, thinking=True).content


# ---- arithmetic -----------------------------------------------------------------------------

NAMES = ("Ana", "Ben", "Chen", "Dara", "Eli", "Fatima", "Goran", "Hana", "Ivo", "Jun")


def _arithmetic(rng: random.Random) -> tuple[str, int]:
    n = rng.choice(NAMES)
    form = rng.randrange(5)
    a, b, c = rng.randint(2, 12), rng.randint(2, 15), rng.randint(1, 20)
    if form == 0:
        return (
            f"{n} has {a} boxes with {b} pencils each and gives away {c} pencils. How many pencils are left?",
            a * b - c,
        )
    if form == 1:
        return (
            f"A bus drives {a * 10} km per hour for {b} hours, then {c} km more. How many km did it drive?",
            a * 10 * b + c,
        )
    if form == 2:
        pay = (a * b // 10 + 1) * 10 + 10
        return (
            f"{n} buys {a} notebooks at {b} euros each and pays with {pay} euros. How much change is due?",
            pay - a * b,
        )
    if form == 3:
        return (
            f"{a * b} chairs are set out in {a} equal rows, then {c} chairs are added to each row. How many chairs are in one row now?",
            b + c,
        )
    return (
        f"{n} reads {a} pages a day for {b} days and then {c} pages on the last day. How many pages in total?",
        a * b + c,
    )


def check_number(answer: str | None, expected: float) -> float:
    if not answer:
        return 0.0
    nums = re.findall(r"-?\d+(?:[.,]\d+)?", answer.replace(",", ""))
    if not nums:
        return 0.0
    try:
        return float(abs(float(nums[-1]) - expected) < 1e-6)
    except ValueError:
        return 0.0


# ---- multiple choice ------------------------------------------------------------------------

WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def _mcq(rng: random.Random) -> tuple[str, list[str], int]:
    form = rng.randrange(4)
    if form == 0:
        prime = rng.choice([7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47])
        wrong = rng.sample([9, 15, 21, 25, 27, 33, 35, 39, 45, 49, 51, 57], 3)
        options = [str(x) for x in [prime, *wrong]]
        q = "Which of these numbers is prime?"
    elif form == 1:
        a, b = rng.randint(11, 29), rng.randint(3, 9)
        right = a * b
        options = [str(x) for x in [right, right + b, right - a, right + 10]]
        q = f"What is {a} × {b}?"
    elif form == 2:
        vals = rng.sample(range(100, 999), 4)
        options = [str(x) for x in sorted(vals, reverse=True)]
        q = "Which number is the largest?"
    else:
        start, k = rng.randrange(7), rng.randint(2, 20)
        right = WEEKDAYS[(start + k) % 7]
        others = [d for d in WEEKDAYS if d != right]
        options = [right, *rng.sample(others, 3)]
        q = f"Which day is {k} days after {WEEKDAYS[start]}?"
    order = list(range(4))
    rng.shuffle(order)
    shown = [options[i] for i in order]
    return q, shown, order.index(0)


def check_choice(answer: str | None, letter: str) -> float:
    if not answer:
        return 0.0
    m = re.search(r"answer\s*(?:is|:)?\s*\(?([A-D])\)?\b", answer, re.I)
    got = m.group(1).upper() if m else None
    if got is None:
        letters = re.findall(r"(?:^|[\s(])([A-D])(?:[).:]|$|\s)", answer.strip())
        got = letters[-1] if len(set(letters)) == 1 else None  # several different letters: no answer
    return float(got == letter)


# ---- code ------------------------------------------------------------------------------------

CODE_TASKS = (
    (
        "sum_even",
        "returns the sum of the even numbers in the list `xs`",
        "xs",
        [([1, 2, 3, 4],), ([],), ([-2, 5, 8],)],
    ),
    (
        "count_vowels",
        "returns how many vowels (a, e, i, o, u, any case) the string `s` contains",
        "s",
        [("Hello",), ("",), ("AEIOUxyz",)],
    ),
    (
        "reverse_words",
        "returns the string `s` with the order of its space-separated words reversed",
        "s",
        [("a b c",), ("one",), ("x  y",)],
    ),
    (
        "max_gap",
        "returns the largest difference between consecutive numbers of the list `xs` (0 for fewer than two)",
        "xs",
        [([1, 5, 6],), ([3],), ([10, 2, 4],)],
    ),
    (
        "is_palindrome",
        "returns True when the string `s` reads the same backwards, ignoring case",
        "s",
        [("Anna",), ("abc",), ("",)],
    ),
    (
        "fizz",
        "returns 'Fizz' if `n` is divisible by 3, 'Buzz' if by 5, 'FizzBuzz' if by both, else str(n)",
        "n",
        [(3,), (10,), (15,), (7,)],
    ),
)
_REFERENCE = {
    "sum_even": lambda xs: sum(x for x in xs if x % 2 == 0),
    "count_vowels": lambda s: sum(c in "aeiouAEIOU" for c in s),
    "reverse_words": lambda s: " ".join(reversed(s.split(" "))),
    "max_gap": lambda xs: max((abs(b - a) for a, b in zip(xs, xs[1:], strict=False)), default=0),
    "is_palindrome": lambda s: s.lower() == s.lower()[::-1],
    "fizz": lambda n: (
        "FizzBuzz" if n % 15 == 0 else "Fizz" if n % 3 == 0 else "Buzz" if n % 5 == 0 else str(n)
    ),
}


def extract_code(answer: str | None) -> str:
    if not answer:
        return ""
    m = re.search(r"```(?:python|py)?\s*\n(.*?)```", answer, re.S)
    return m.group(1) if m else answer


_HARNESS = """
import json, sys
ns = {}
try:
    exec(compile(open("solution.py").read(), "solution.py", "exec"), ns)
except BaseException as e:
    print(json.dumps({"passed": 0, "error": type(e).__name__})); sys.exit(0)
tests = json.loads(open("tests.json").read())
passed = 0
for args, want in tests:
    try:
        passed += ns[FUNC](*args) == want
    except BaseException:
        pass
print(json.dumps({"passed": passed}))
"""


def _limits(cpu_s: int, mem_mb: int):  # pragma: no cover - runs in the child

    resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s))
    resource.setrlimit(resource.RLIMIT_AS, (mem_mb << 20, mem_mb << 20))
    resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))
    resource.setrlimit(resource.RLIMIT_NPROC, (64, 64))
    os.setsid()


def run_sandboxed(
    code: str, func: str, tests: list[list[Any]], timeout_s: float = 5.0, mem_mb: int = 512
) -> float:
    """Share of `tests` ([args, expected] pairs) that `func` from `code` passes, run in a limited subprocess.

    The child is a fresh isolated interpreter (`-I`: no user site, no PYTHON* variables, no cwd on
    the path) with an empty environment in a temporary directory, under CPU-time, address-space,
    file-size and process-count limits, killed at the wall-clock timeout. It has no network
    isolation of its own: run RL on a machine where that does not matter, or inside a container.
    It protects the host, not the reward: code that deliberately rewrites the interpreter's
    builtins could forge the harness's verdict line (a verdict printed *before* the harness's is
    ignored; the test pins that).
    """
    if not code.strip() or not tests:
        return 0.0
    with tempfile.TemporaryDirectory(prefix="botpsy-sandbox-") as tmp:
        with open(os.path.join(tmp, "solution.py"), "w") as f:
            f.write(code)
        with open(os.path.join(tmp, "tests.json"), "w") as f:
            json.dump(tests, f)
        harness = f"FUNC = {func!r}\n" + _HARNESS
        try:
            proc = subprocess.run(
                [sys.executable, "-I", "-c", harness],
                cwd=tmp,
                env={"PATH": "/usr/bin:/bin"},
                capture_output=True,
                text=True,
                timeout=timeout_s,
                preexec_fn=lambda: _limits(int(timeout_s) + 1, mem_mb),
            )
        except subprocess.TimeoutExpired:
            return 0.0
        lines = proc.stdout.strip().splitlines()
        try:
            passed = int(json.loads(lines[-1])["passed"]) if lines else 0
        except (ValueError, KeyError, TypeError):
            return 0.0  # the solution printed something that is not the harness's verdict
        return min(passed, len(tests)) / len(tests)


# ---- instruction following (IFBench verifiers) ----------------------------------------------

IF_TOPICS = (
    "a rainy weekend",
    "learning to cook",
    "a train journey",
    "your favourite tool",
    "a city park",
    "saving energy at home",
)


def _if_registry():
    require_ifbench()
    spacy = sys.modules.get("spacy")
    if spacy is not None and not hasattr(spacy, "Language"):
        # `data.nltk_offline` stands in a bare `spacy` module for IFBench; `datasets`' pickler then
        # checks `issubclass(x, spacy.Language)` for every object it fingerprints and crashes.
        # Give the stand-in the one name it needs (the real fix belongs in nltk_offline's stub).
        spacy.Language = type("Language", (), {})
    from ifbench import instructions_registry

    return instructions_registry.INSTRUCTION_DICT


def if_instruction_ids(held_out: bool) -> list[str]:
    """IFBench constraint types, split by a fixed rule: every third (sorted) is held out from training."""
    ids = sorted(_if_registry())
    return [i for n, i in enumerate(ids) if (n % 3 == 0) == held_out]


IF_HELD_OUT = "every third IFBench instruction id, sorted"  # documented rule; see if_instruction_ids


def check_instruction(answer: str | None, instruction_id: str, kwargs: dict[str, Any] | None) -> float:
    if not answer:
        return 0.0
    instr = _if_registry()[instruction_id](instruction_id)
    instr.build_description(**(kwargs or {}))
    try:
        return float(bool(instr.check_following(answer)))
    except Exception:  # a verifier that chokes on odd text: the constraint is not shown to be met
        return 0.0


def draw_instruction(rng: random.Random, held_out: bool) -> tuple[str, str, dict[str, Any]] | None:
    """One IFBench constraint (id, text for the prompt, verifier arguments) from one side of the split."""
    registry = _if_registry()
    for _ in range(20):
        iid = rng.choice(if_instruction_ids(held_out))
        instr = registry[iid](iid)
        state = random.getstate()
        random.seed(rng.random())  # the verifiers draw their parameters from the global generator
        try:
            desc = instr.build_description()
            kwargs = instr.get_instruction_args()
        except Exception:
            continue
        finally:
            random.setstate(state)
        if kwargs and any(k.startswith("prompt") for k in kwargs):
            continue  # constraints that quote the prompt back need the original prompt text
        return iid, desc, dict(kwargs or {})
    return None


# ---- JSON against a schema ---------------------------------------------------------------------

CITIES = ("Lisbon", "Oslo", "Kyoto", "Nairobi", "Lima", "Tallinn", "Perth", "Quebec")
JSON_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}, "city": {"type": "string"}},
    "required": ["name", "age", "city"],
    "additionalProperties": False,
}


def check_json(answer: str | None, expected: dict[str, Any], schema: dict[str, Any]) -> float:
    import jsonschema

    if not answer:
        return 0.0
    m = re.search(r"```(?:json)?\s*\n(.*?)```", answer, re.S)
    text = (m.group(1) if m else answer).strip()
    try:
        obj = json.loads(text)
        jsonschema.validate(obj, schema)
    except (json.JSONDecodeError, jsonschema.ValidationError, jsonschema.SchemaError):
        return 0.0
    return 1.0 if obj == expected else 0.5


# ---- generation and scoring -----------------------------------------------------------------


def generate(domain: str, n: int, seed: int, split: str) -> list[Item]:
    """`n` items of one domain. `split` "train" or "eval" (disjoint streams; held-out IF types on eval)."""
    if split not in ("train", "eval"):
        raise ValueError(f"split must be 'train' or 'eval', got {split!r}")
    rng = random.Random(f"verifiable:{domain}:{split}:{seed}")
    items: list[Item] = []
    for i in range(n):
        iid = f"{domain}-{split}-{seed}-{i}"
        if domain == "arithmetic":
            q, ans = _arithmetic(rng)
            items.append(Item(iid, domain, q + " End with the number alone.", {"answer": ans}))
        elif domain == "mcq":
            q, options, right = _mcq(rng)
            lines = "\n".join(f"{'ABCD'[k]}) {o}" for k, o in enumerate(options))
            items.append(
                Item(
                    iid,
                    domain,
                    f"{q}\n{lines}\nReply with 'Answer: ' and the letter.",
                    {"letter": "ABCD"[right]},
                )
            )
        elif domain == "code":
            name, what, arg, inputs = CODE_TASKS[rng.randrange(len(CODE_TASKS))]
            tests = [[list(a), _REFERENCE[name](*a)] for a in inputs]
            user = f"Write a Python function `{name}({arg})` that {what}. Reply with the code only."
            items.append(Item(iid, domain, user, {"func": name, "tests": tests}))
        elif domain == "ifeval":
            got = draw_instruction(rng, held_out=split == "eval")
            if got is None:
                continue
            instr_id, desc, kwargs = got
            user = f"Write a short text about {rng.choice(IF_TOPICS)}. {desc}"
            items.append(Item(iid, domain, user, {"instruction_id": instr_id, "kwargs": kwargs}))
        elif domain == "json":
            rec = {"name": rng.choice(NAMES), "age": rng.randint(18, 90), "city": rng.choice(CITIES)}
            user = (
                f"{rec['name']} is {rec['age']} years old and lives in {rec['city']}. Return only a JSON "
                f"object matching this schema: {json.dumps(JSON_SCHEMA)}"
            )
            items.append(Item(iid, domain, user, {"expected": rec, "schema": JSON_SCHEMA}))
        elif domain == "tools":
            world = rng.choice(sorted(DOMAINS)) if split == "train" else "calendar"
            task = DOMAINS[world].generate(1, rng.randrange(10**6), split)[0]
            turns = turn_items([task])
            it = turns[rng.randrange(len(turns))]
            items.append(Item(iid, domain, task.user, {"turn_item": it.to_json()}, task.system))
        else:
            raise ValueError(f"unknown verifiable domain {domain!r}; known: {', '.join(DOMAIN_SKILL)}")
    return items


def score(item: Item, completion: str) -> float:
    """The item's checker on a completion, in [0, 1]."""
    if item.domain == "tools":
        return tool_reward(completion, TurnItem.from_json(item.spec["turn_item"]))
    answer = answer_text(completion)
    s = item.spec
    if item.domain == "arithmetic":
        return check_number(answer, s["answer"])
    if item.domain == "mcq":
        return check_choice(answer, s["letter"])
    if item.domain == "code":
        return run_sandboxed(extract_code(answer), s["func"], s["tests"])
    if item.domain == "ifeval":
        return check_instruction(answer, s["instruction_id"], s["kwargs"])
    if item.domain == "json":
        return check_json(answer, s["expected"], s["schema"])
    raise ValueError(f"unknown verifiable domain {item.domain!r}")


def mixture(domains: dict[str, int], seed: int, split: str, log=print) -> list[Item]:
    """Items of several domains ({domain: count}); a domain whose verifiers are not installed is skipped."""
    out: list[Item] = []
    for domain, n in domains.items():
        try:
            out.extend(generate(domain, n, seed, split))
        except ValueError as e:
            if domain != "ifeval":
                raise
            log(f"skipping domain ifeval: {e}")
    return out
