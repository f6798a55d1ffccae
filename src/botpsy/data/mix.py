"""The SFT mix: conversations over every world, with the runtime's own prompt, plus unseen tools.

One generator for all suites and the cross-suite worlds, every task kind each world has (single,
parallel, multi-step, no call, missing information with the scripted user's answer, impossible,
sensitive with confirmation, injection) and two kinds built here from them:

* **declined** — a gold turn whose call needs confirmation is cut after that call, the tool
  answers with the runtime's own decline message (`agent.loop.declined_result`), and the gold
  answer says it was not done. The model learns never to claim a declined action (the agent's
  guard enforces it too).
* **completed** — a missing-information task asked again with the scripted user's answer already
  in the request ("Add a haircut at 10am. On December 3."), whose gold goes straight to the
  calls. The pair teaches when to ask: a model that only ever sees "…at 10am" → "Which day?" also
  asks when the day is there (the demo's "Add a dentist appointment on December 3 2026 at 10am").
* **unseen tools** — conversations over procedurally generated APIs (`data.synthetic_tools`), so
  the model learns to read a schema rather than memorise the suites' hundred tools; with
  `synthetic_rich`, a share of them over APIs in the shapes other people's tools have (lists,
  nested objects, defaults, parallel calls, near-miss tool lists: `data.synthetic_rich`).

The prompt is the runtime's: the same blocks (`protocol.transcript`), the date and time line the agent adds
to each user turn (`agent.dates.annotate`), and for a share of conversations the tool set the CLI
shows with `--suites all --tool-top-k K` (BM25 retrieval over every installed tool from the first
request, `agent.retrieval`) instead of the world's own tools (what `eval worlds` shows). A later
request gets the tools the agent would add to its turn (`retrieval.more_tools`); one whose tools
the runtime would still not show is dropped, as the runtime could not serve it either.

Balance: the worlds draw their task kinds at random and most of them begin with a search, so a
model trained on the plain stream learns "look it up first" even for "Add a dentist appointment…".
`task_weights` (e.g. `parallel=2,no_call=0.5,writes=3`) reweights which of a larger pool of a
world's train tasks a conversation gets: by task kind, and `writes` for a task whose first gold
call changes the user's data or sends something. All weights 1 (the default) leaves the stream as
it was.

Phrasing: training requests come from the worlds' train templates (disjoint from evaluation's)
and are varied here at the surface — a polite lead or tail, lower case, one typo in a word that no
gold argument contains — so a new wording of a known request is not a new request to the model.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from datetime import date
from itertools import pairwise

from botpsy.agent.dates import annotate, annotate_messages, answered_turn
from botpsy.agent.loop import declined_result
from botpsy.agent.retrieval import more_tools, select_tools
from botpsy.data.mix_config import MixConfig
from botpsy.data.synthetic_rich import rich_conversation
from botpsy.data.synthetic_tools import synthetic_conversation
from botpsy.protocol.formats import ChatFormat
from botpsy.protocol.messages import Message
from botpsy.tools.base import Tool
from botpsy.tools.registry import all_tools
from botpsy.worlds import DOMAINS, get_domain
from botpsy.worlds.base import ALL_TASK_KINDS, Task
from botpsy.worlds.kit import CAPABILITY_ASKED, SYSTEM, TODAY


@dataclass
class Conversation:
    source: str  # world name, or "synthetic"
    tools: list[dict]  # tool schemas in the system block
    messages: list[Message] = field(default_factory=list)  # from the system message on


# How every decline in the mix opens: the worlds' out-of-scope replies (`worlds.kit`) and the generated
# tools' unlisted, unserved and near-miss replies (`data.synthetic_tools`, `data.synthetic_rich`).
DECLINE_OPENING = "Sorry, I can't"


def first_replies(conversations) -> dict[str, int]:
    """How the assistant first answers each request of `conversations`: `call` (with a tool call),
    `decline` (in text opening with `DECLINE_OPENING`), `text` (asks back, asks to confirm, answers).

    The call/decline balance is what a model learns when not to call from (BFCL irrelevance on one
    side, declining a request its one tool serves on the other), so a mix is compared by it before
    any training: knobs such as `synthetic_unlisted` move it only within their own share. A public
    dataset's declines are in its own words and count as `text`."""
    out = {"call": 0, "decline": 0, "text": 0}
    for conv in conversations:
        msgs = conv.messages
        for msg, reply in pairwise(msgs):
            if msg.role != "user" or reply.role != "assistant":
                continue
            if reply.tool_calls:
                out["call"] += 1
            else:
                out["decline" if reply.content.startswith(DECLINE_OPENING) else "text"] += 1
    return out


def replies_line(replies: dict[str, int], conversations: int) -> str:
    """The log line of `first_replies`, with declines per conversation (the figure mixes compare by)."""
    per = replies["decline"] / conversations if conversations else 0.0
    return (
        f"first replies: {replies['call']} calls, {replies['decline']} declines, {replies['text']} other "
        f"text ({per:.3f} declines per conversation)"
    )


def domain_weights(domains: tuple[str, ...]) -> dict[str, int]:
    """World name -> weight in the round-robin. Entries are a world, "all" (every world, weight 1)
    or "world=W" (that world W times per turn, e.g. `[all, calendar=3]`); a weight given for a world
    overrides the 1 that "all" gave it. Unknown worlds and bad weights fail with the known names."""
    out: dict[str, int] = {}
    for entry in domains:
        name, sep, w = (s.strip() for s in entry.partition("="))
        if name == "all" and not sep:
            for d in DOMAINS:
                out.setdefault(d, 1)
            continue
        if sep and not (w.isdigit() and int(w) >= 1):
            raise ValueError(f"sft.domains: weight of {name!r} must be a whole number >= 1, got {w!r}")
        if name not in DOMAINS:
            raise ValueError(
                f"sft.domains: unknown world domain {name!r}; known: all, {', '.join(sorted(DOMAINS))}"
            )
        out[name] = int(w) if sep else out.get(name, 1)
    if not out:
        raise ValueError("sft.domains is empty: name at least one world, or all")
    return out


def domain_list(domains: tuple[str, ...]) -> list[str]:
    """The round-robin order: each world as many times as its weight, in the worlds' order."""
    weights = domain_weights(domains)
    return [d for d in sorted(weights, key=list(DOMAINS).index) for _ in range(weights[d])]


WEIGHT_KEYS = (*ALL_TASK_KINDS, "writes")


def task_weights(entries: tuple[str, ...]) -> dict[str, float]:
    """Task kind (or "writes") -> weight from "key=W" entries; keys not named weigh 1. Unknown keys and
    weights that are not numbers >= 0 fail with the known keys."""
    out: dict[str, float] = {}
    for entry in entries:
        key, sep, w = (s.strip() for s in entry.partition("="))
        if key not in WEIGHT_KEYS:
            raise ValueError(f"sft.task_weights: unknown key {key!r}; known: {', '.join(WEIGHT_KEYS)}")
        try:
            weight = float(w) if sep else math.nan
        except ValueError:
            weight = math.nan
        if not weight >= 0:  # also catches nan
            raise ValueError(f"sft.task_weights: {key} needs a weight, a number >= 0, got {w!r}")
        out[key] = weight
    return out


def _writes_first(task: Task, writing: set[str]) -> bool:
    calls = task.gold_calls
    return bool(calls) and calls[0].name in writing


def pick_tasks(
    pool: list[Task], k: int, weights: dict[str, float], writing: set[str], rng: random.Random
) -> list[Task]:
    """`k` tasks drawn from `pool` without replacement, each as likely as its weight (the product of
    its kind's and, when its first gold call writes, the "writes" weight); zero-weight tasks never."""

    def weight(t: Task) -> float:
        w = weights.get(t.kind, 1.0)
        return w * weights.get("writes", 1.0) if _writes_first(t, writing) else w

    left = [(t, weight(t)) for t in pool]
    out: list[Task] = []
    while left and len(out) < k:
        total = sum(w for _, w in left)
        if total <= 0:
            break
        x, acc = rng.random() * total, 0.0
        for i, (t, w) in enumerate(left):
            acc += w
            if x < acc or i == len(left) - 1:
                out.append(t)
                del left[i]
                break
    return out


LEADS = ["Hey, ", "Please ", "Hi botpsy, ", "Quick one: ", "Could you ", "Can you please "]
TAILS = [" Thanks!", " please", " thx", " Thank you.", ""]


def _gold_values(task: Task) -> str:
    return " ".join(str(v) for c in task.gold_calls for v in c.arguments.values()).casefold()


def vary(text: str, rng: random.Random, protected: str = "") -> str:
    """A surface variation of a request; words inside `protected` (gold values) keep their spelling."""
    roll = rng.random()
    if roll < 0.3:
        lead = rng.choice(LEADS)
        text = lead + (text[0].lower() + text[1:] if lead.endswith(" ") and len(text) > 1 else text)
    elif roll < 0.5:
        text = text.rstrip(".!") + rng.choice(TAILS)
    elif roll < 0.65:
        text = text.lower()
    words = text.split(" ")
    candidates = [
        i for i, w in enumerate(words) if len(w) > 4 and w.isalpha() and w.casefold() not in protected
    ]
    if candidates and rng.random() < 0.35:
        i = rng.choice(candidates)
        w = words[i]
        j = rng.randrange(1, len(w) - 2)
        words[i] = w[:j] + w[j + 1] + w[j] + w[j + 2 :]  # swap two letters
    return " ".join(words)


def declined_variant(task: Task, needs_confirmation: set[str]) -> list[Message] | None:
    """The task's gold cut at its first call that needs confirmation, declined, answered truthfully."""
    gold = task.gold_messages()
    for i, m in enumerate(gold):
        if m.role == "user":
            return None  # the gold asks first (sensitive kind): the user's yes is the confirmation
        if m.role == "assistant" and m.tool_calls:
            names = [c.name for c in m.tool_calls]
            if len(names) != 1 or names[0] not in needs_confirmation:
                continue
            name = names[0]
            return [
                *gold[: i + 1],
                Message("tool", declined_result(name), name=name),
                Message(
                    "assistant",
                    f"OK, I didn't do it: you declined {name}, so nothing was changed.",
                    f"The user declined {name}; it did not happen and I must not say it did.",
                ),
            ]
    return None


def completed_variant(task: Task) -> tuple[str, list[Message]] | None:
    """A missing-info task's request with the scripted user's one answer appended, and the gold from
    after that answer: (request, gold). None when the task is not one ask, one answer, then calls,
    or when the user acts on their own device before answering."""
    gold = task.gold_messages()
    if task.kind != "missing_info" or any(task.user_actions) or len(gold) < 3:
        return None
    ask, answer, rest = gold[0], gold[1], gold[2:]
    if ask.role != "assistant" or ask.tool_calls or answer.role != "user":
        return None
    if any(m.role == "user" for m in rest) or not any(m.tool_calls for m in rest):
        return None
    request = task.user.rstrip()
    sep = " " if request.endswith((".", "?", "!")) else ". "
    return request + sep + answer.content.strip(), rest


def world_conversation(
    name: str,
    rng: random.Random,
    seed: int,
    cfg: MixConfig,
    today: date | None,
    weights: dict[str, float],
) -> Conversation | None:
    """One conversation of `cfg.per_conversation` of world `name`'s train requests; `weights` is
    `task_weights(cfg.task_weights)`, parsed once by `mix_conversations`."""
    domain = get_domain(name)
    if any(w != 1 for w in weights.values()):
        pool = domain.generate(cfg.per_conversation * cfg.pool, seed, "train")
        writing = {t.name for t in domain.tools if t.labels.mutates or t.labels.egress}
        tasks = pick_tasks(pool, cfg.per_conversation, weights, writing, rng)
    else:
        tasks = domain.generate(cfg.per_conversation, seed, "train")
    if not tasks:
        return None
    confirm = {t.name for t in domain.tools if t.labels.needs_confirmation}
    completed = [
        completed_variant(t) if cfg.completed_share and rng.random() < cfg.completed_share else None
        for t in tasks
    ]
    requests = [c[0] if c else t.user for t, c in zip(tasks, completed, strict=True)]
    # what the user types: a surface variation of the template's request, decided first, since
    # retrieval at run time ranks the typed text
    users = [
        vary(r, rng, _gold_values(t)) if rng.random() < cfg.vary_share else r
        for t, r in zip(tasks, requests, strict=True)
    ]
    tools, system = [t.schema() for t in domain.tools], tasks[0].system
    shown = {t.name for t in domain.tools}
    installed: list[Tool] = []
    if rng.random() < cfg.retrieval_share:
        candidates = all_tools()
        chosen = select_tools(users[0], candidates, cfg.tool_top_k)
        if {c.name for c in tasks[0].gold_calls} <= {t.name for t in chosen}:
            tools, shown, system = [t.schema() for t in chosen], {t.name for t in chosen}, SYSTEM
            installed = candidates
    conv = Conversation(name, tools, [Message("system", system)])
    said = ("", "")  # (the last user turn, the last assistant reply), raw
    for n, (task, user, done) in enumerate(zip(tasks, users, completed, strict=True)):
        note, added = "", []
        if installed and n > 0:
            added = more_tools(user, installed, shown, cfg.tool_top_k)
        if not {c.name for c in task.gold_calls} <= shown | {t.name for t in added}:
            continue  # the runtime would not show this request's tools
        if installed and task.user in CAPABILITY_ASKED:
            continue  # the world's capability line would not describe the retrieved tools
        if added:
            shown |= {t.name for t in added}
            note = ChatFormat("qwen35").more_tools([t.schema() for t in added])
        gold = declined_variant(task, confirm) if rng.random() < cfg.declined_share else None
        if done:
            gold = done[1]
        shown_user = annotate(user, today, answered_turn(*said)) if today else user  # None: no line
        conv.messages.append(Message("user", shown_user + note))
        raw = gold or task.gold_messages()
        conv.messages.extend(annotate_messages(raw, today, previous_user=user))
        said = (
            next((m.content for m in reversed(raw) if m.role == "user"), user),
            next((m.content for m in reversed(raw) if m.role == "assistant"), ""),
        )
    return conv if len(conv.messages) > 1 else None


def runtime_conversation(
    source: str, tools: list[dict], messages: list[Message], today: date | None
) -> Conversation:
    """`messages` (from the first user turn) as the runtime shows them: botpsy's system prompt with
    today's date, and the agent's resolved-dates line on each user turn. The one rendering of
    conversations that do not come from a world: generated tools here, public data in `data.public`."""
    return Conversation(source, tools, [Message("system", SYSTEM), *annotate_messages(messages, today)])


def mix_conversations(n: int, seed: int, cfg: MixConfig = MixConfig()) -> list[Conversation]:
    """`n` training conversations: worlds in turn (balanced), and a share over unseen tools."""
    rng = random.Random(f"sft-mix:{seed}")
    today = TODAY if cfg.resolve_dates else None
    names = domain_list(cfg.domains)
    weights = task_weights(cfg.task_weights)
    out: list[Conversation] = []
    i = 0
    while len(out) < n:
        i += 1
        if rng.random() < cfg.synthetic_share:
            # drawn only when the knob is set, so a stream without it stays as it was
            if cfg.synthetic_rich and rng.random() < cfg.synthetic_rich:
                tools, msgs = rich_conversation(
                    rng,
                    requests=cfg.per_conversation,
                    near_miss=cfg.synthetic_rich_near_miss,
                    parallel=cfg.synthetic_rich_parallel,
                    restate=cfg.synthetic_restate,
                )
                out.append(runtime_conversation("synthetic_rich", tools, msgs, today))
                continue
            tools, msgs = synthetic_conversation(
                rng,
                requests=cfg.per_conversation,
                unlisted=cfg.synthetic_unlisted,
                near_miss=cfg.synthetic_near_miss,
                restate=cfg.synthetic_restate,
            )
            out.append(runtime_conversation("synthetic", tools, msgs, today))
            continue
        name = names[len(out) % len(names)]
        conv = world_conversation(name, rng, seed * 100_003 + i, cfg, today, weights)
        if conv is not None:
            out.append(conv)
    return out
