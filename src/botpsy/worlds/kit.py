"""Shared machinery for the suites' worlds: a task builder that runs gold calls, and a domain class.

A suite's world module supplies a seeded state and *recipes*: functions `recipe(b: Builder) ->
Task | None` grouped by task kind. A recipe writes the user's request from a split-specific
template, then runs the gold conversation through `b.call` / `b.parallel` / `b.say` /
`b.user_says`; results, ids and the expected hash all come from executing the real tools in a
`World`. A recipe returns None when the seeded state does not suit it (no matching item, an
ambiguous name), and the domain simply draws again.

Splits, as in the calendar world: request templates come in disjoint `train` / `eval` lists and
the random stream mixes in the split name, so evaluation measures phrasing the model never saw.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

from pydantic import BaseModel

from botpsy.protocol.messages import Message, ToolCall
from botpsy.protocol.prompt import runtime_system
from botpsy.tools.base import Tool, Toolbox
from botpsy.tools.registry import CAPABILITY_REASONING, Suite, capability_answer
from botpsy.worlds.base import Task, World

TODAY = date(2026, 12, 1)
SYSTEM = runtime_system(TODAY)
REFUSAL_FACTS = [["can't", "cannot", "can not", "unable", "not able"]]

Recipe = Callable[["Builder"], Task | None]

# Requests no single suite can serve, tagged with the suite that *could* (excluded from its own world).
OUT_OF_SCOPE = [
    ("Book a table for two at Luigi's tonight.", "book restaurant tables", "-"),
    ("Order me a large pepperoni pizza.", "order food", "-"),
    ("What's the weather going to be tomorrow?", "check the weather", "-"),
    ("Play some jazz music.", "play music", "-"),
    ("Call a taxi to the airport.", "call taxis", "-"),
    ("Turn off the living room lights.", "control smart-home lights", "-"),
    ("Send an email to my boss saying I'm late.", "send emails", "email"),
    ("Transfer 50 euros to my brother.", "move money", "banking"),
    ("Book me a flight to Lisbon next week.", "book flights", "travel"),
    ("Text Mia that I'm on my way.", "send text messages", "messages"),
    ("Set an alarm for 6am.", "set alarms", "device"),
    ("Unlock the car.", "control the car", "vehicle"),
]
GREETINGS = [
    ("Hi!", "Hello! How can I help?"),
    ("Good morning", "Good morning! What can I do for you?"),
    ("Thanks, that's all.", "You're welcome!"),
    ("Thank you so much!", "Happy to help!"),
    ("How are you today?", "I'm doing well, thanks! What can I do for you?"),
    ("Who are you?", "I'm botpsy, your on-device assistant."),
]
CAPABILITY_QUESTIONS = ["What can you do?", "What can you help me with?"]
# What the train split asks instead of chit-chat that BFCL's irrelevance items ask word for word
# ("Who are you?" is live_irrelevance_21-2-9): trained on, an evaluation item's own text would
# inflate the score it reports. The eval split keeps the originals, so its stream is unchanged.
TRAIN_PHRASINGS = {
    "Hi!": "Hello there, botpsy!",
    "How are you today?": "How is your day going?",
    "Who are you?": "Who am I talking to?",
    "What can you do?": "What kinds of things can you do?",
}
# Every capability question a task can ask, in either split (`agent.capabilities` answers them all).
CAPABILITY_ASKED = [
    *CAPABILITY_QUESTIONS,
    *(TRAIN_PHRASINGS[q] for q in CAPABILITY_QUESTIONS if q in TRAIN_PHRASINGS),
]


def phrased(user: str, split: str) -> str:
    """`user` as the split asks it: the train split's own phrasing of chit-chat (`TRAIN_PHRASINGS`)."""
    return TRAIN_PHRASINGS.get(user, user) if split == "train" else user


def pick(rng: random.Random, templates: dict[str, list[str]], split: str, **kw: Any) -> str:
    return rng.choice(templates[split]).format(**kw)


def date_phrase(rng: random.Random, d: date) -> str:
    month = d.strftime("%B")
    forms = [
        f"{month} {d.day}",
        f"{d.strftime('%b')} {d.day}",
        f"{d.day} {month}",
        d.isoformat(),
        f"{d.strftime('%A')}, {month} {d.day}",
    ]
    if d == TODAY + timedelta(days=1):
        forms.append("tomorrow")
    return rng.choice(forms)


def money(cents: int) -> str:
    return f"{cents / 100:.2f}"


def money_phrase(rng: random.Random, cents: int, currency: str = "EUR") -> str:
    whole = cents % 100 == 0
    value = str(cents // 100) if whole else money(cents)
    forms = [f"{value} euros", f"€{value}", f"{value} EUR"] if currency == "EUR" else [f"{value} {currency}"]
    return rng.choice(forms)


@dataclass
class Builder:
    """Builds one task by running its gold conversation in a fresh world."""

    rng: random.Random
    split: str
    task_id: str
    domain: str
    world: World
    system: str
    gold: list[Message] = field(default_factory=list)
    replies: list[str] = field(default_factory=list)
    actions: list[list[dict[str, Any]]] = field(default_factory=list)
    user_tools: list[Tool] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.initial = self.world.state.model_dump(mode="json")

    @property
    def state(self) -> Any:
        return self.world.state

    def reseeded(self) -> None:
        """A recipe changed the seeded state (planted a text): that is the task's initial state."""
        assert not self.gold, "reseed before the first gold message"
        self.initial = self.world.state.model_dump(mode="json")

    def tpl(self, templates: dict[str, list[str]], **kw: Any) -> str:
        return pick(self.rng, templates, self.split, **kw)

    def call(self, reasoning: str, tool_name: str, /, **args: Any) -> Any:
        """One gold call in its own assistant turn; returns the parsed result (errors are bugs)."""
        return self.parallel(reasoning, [(tool_name, args)])[0]

    def parallel(self, reasoning: str, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
        """Several gold calls in one assistant turn, then one tool message per call."""
        self.gold.append(Message("assistant", "", reasoning, [ToolCall(n, dict(a)) for n, a in calls]))
        results = []
        for name, args in calls:
            out = self.world.call(name, dict(args))
            self.gold.append(Message("tool", out, name=name))
            parsed = json.loads(out)
            if isinstance(parsed, dict) and "error" in parsed:
                raise GoldError(f"{self.task_id}: gold call {name}({args}) failed: {parsed['error']}")
            results.append(parsed)
        return results

    def say(self, text: str, reasoning: str = "") -> None:
        self.gold.append(Message("assistant", text, reasoning))

    def user_says(
        self, text: str | Callable[[list[Any]], str], actions: list[tuple[str, dict[str, Any]]] | None = None
    ) -> None:
        """The scripted user's reply; `actions` are user-side tools it runs on its own device first.

        `text` may be a function of the actions' results (what the user saw on their phone).
        """
        done, seen = [], []
        for name, args in actions or []:
            seen.append(Toolbox(self.user_tools)[name](self.world.state, **args))
            done.append({"name": name, "arguments": dict(args)})
        text = text(seen) if callable(text) else text
        self.gold.append(Message("user", text))
        self.replies.append(text)
        self.actions.append(done)

    def task(
        self, kind: str, user: str, facts: list[list[str]] | None = None, forbidden: list[str] | None = None
    ) -> Task:
        has_actions = any(self.actions)
        return Task(
            id=self.task_id,
            domain=self.domain,
            kind=kind,
            split=self.split,
            user=user,
            initial_state=self.initial,
            gold=[m.to_openai() for m in self.gold],
            expected_hash=self.world.hash(),
            required_facts=facts or [],
            user_replies=list(self.replies),
            system=self.system,
            forbidden=forbidden or [],
            user_actions=self.actions if has_actions else [],
        )


class GoldError(RuntimeError):
    """A recipe's gold call failed: a bug in the recipe, never a property of the task."""


class SuiteDomain:
    """A world over one suite's (or several suites') state, generating tasks from recipes.

    A world over one suite names its record, `suite = SUITES["banking"]`: its `name`, `tools`,
    `user_tools`, `state_type` and `capability` are that record's, set when the class is made, so a
    world cannot drift from what the workspace, MCP and `botpsy tools list` serve (restating one is
    a TypeError). A world over several suites (`cross.py`) sets `name` and `capability` (one line:
    what the assistant can do there, used in its refusals) and builds its tools and state from
    theirs. Subclasses implement `seed(rng)` and `recipes()`.
    """

    suite: Suite | None = None  # the one suite this world is over; None for a cross-suite world
    name = ""
    tools: list[Tool] = []
    user_tools: list[Tool] = []
    state_type: type[BaseModel] = BaseModel
    system = SYSTEM
    capability = ""
    identity = "I'm botpsy, your on-device assistant."
    suites: tuple[str, ...] = ()  # the suites this world covers (excluded from out-of-scope requests)
    train_weights: dict[str, float] = {
        "single": 0.22,
        "parallel": 0.1,
        "multi_step": 0.18,
        "no_call": 0.07,
        "missing_info": 0.1,
        "impossible": 0.1,
        "sensitive": 0.12,
        "injection": 0.11,
    }

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        suite = cls.__dict__.get("suite")
        if suite is None:
            return
        restated = [
            k for k in ("name", "tools", "user_tools", "state_type", "capability") if k in cls.__dict__
        ]
        if restated:
            raise TypeError(
                f"{cls.__name__} is the world of suite {suite.name!r}, whose record gives its "
                f"{', '.join(restated)}: remove them from the class (expected only `suite`)"
            )
        cls.name, cls.tools, cls.user_tools = suite.name, suite.tools, suite.user_tools
        cls.state_type, cls.capability = suite.state_type, suite.capability
        if "suites" not in cls.__dict__:
            cls.suites = (suite.name,)

    def seed(self, rng: random.Random) -> BaseModel:
        raise NotImplementedError

    def recipes(self) -> dict[str, list[Recipe]]:
        raise NotImplementedError

    def all_recipes(self) -> dict[str, list[Recipe]]:
        table = {k: list(v) for k, v in self.recipes().items() if v}
        table.setdefault("no_call", []).append(self._small_talk)
        table.setdefault("impossible", []).append(self._out_of_scope)
        return table

    def generate(self, n: int, seed: int, split: str) -> list[Task]:
        if split not in ("train", "eval"):
            raise ValueError(f"split must be 'train' or 'eval', got {split!r}")
        rng = random.Random(f"{self.name}:{split}:{seed}")
        table = self.all_recipes()
        kinds = [k for k in self.train_weights if k in table]
        weights = [self.train_weights[k] for k in kinds]
        tasks: list[Task] = []
        for i in range(n):
            kind = rng.choices(kinds, weights)[0] if split == "train" else kinds[i % len(kinds)]
            # A recipe may not fit a seeded state; redraw, and after 30 misses fall back to the other
            # kinds in order, so `n` tasks always come back (no_call always fits).
            for k in [kind] + [k for k in kinds if k != kind]:
                task = self._draw(rng, split, f"{self.name}-{split}-{seed}-{i}", table[k])
                if task is not None:
                    tasks.append(task)
                    break
        return tasks

    def _draw(self, rng: random.Random, split: str, task_id: str, recipes: list[Recipe]) -> Task | None:
        for _attempt in range(30):
            task = rng.choice(recipes)(self.builder(rng, split, task_id))
            if task is not None:
                return task
        return None

    def builder(self, rng: random.Random, split: str, task_id: str) -> Builder:
        world = World(self.tools, self.seed(rng))
        return Builder(rng, split, task_id, self.name, world, self.system, user_tools=list(self.user_tools))

    # ---- generic kinds every world has --------------------------------------------------------
    def _small_talk(self, b: Builder) -> Task:
        if b.rng.random() < 0.3:
            user = b.rng.choice(CAPABILITY_QUESTIONS)
            # the runtime's own answer (agent.capabilities), so training says what the agent says
            b.say(
                capability_answer(self.tools) or f"I can {self.capability}.",
                CAPABILITY_REASONING,
            )
            return b.task("no_call", phrased(user, b.split))
        user, answer = b.rng.choice(GREETINGS)
        if user == "Who are you?":
            answer = self.identity
        b.say(answer, "No tool is needed.")
        return b.task("no_call", phrased(user, b.split))

    def _out_of_scope(self, b: Builder) -> Task:
        options = [o for o in OUT_OF_SCOPE if o[2] not in self.suites]
        user, skill, _ = b.rng.choice(options)
        b.say(f"Sorry, I can't {skill} here: I can {self.capability}.", "No tool can do this.")
        return b.task("impossible", user, REFUSAL_FACTS)
