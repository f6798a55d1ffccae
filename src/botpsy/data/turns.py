"""Turn items and their checkers: one gold assistant turn of a world task, scored in [0, 1].

A *turn item* is one assistant turn of a world task to predict: the task, and the index `turn` of the
gold assistant message the model must produce, given the system prompt, the user's request and the
gold conversation before that turn (tool results included). Turn 0 is the classic single-turn
setting; later turns are multi-turn tool use (the model reads earlier tool results).

They are RL1's rewards (`train/rl_tools.py`) and the checker of RL2's and MOPD's tool-use domain
(`data/verifiable.py`); they live with the data because every consumer stands above it. Rewards,
each in [0, 1]:

* `format_reward` — Tool-N1 (Zhang et al. 2025, arXiv:2505.00024): 1 when the completion closes its
  reasoning and every tool call parses against the tools' schemas (`parse_completion` with no
  errors), else 0. Free text after the calls is allowed, as the runtime allows it.
* `call_reward` — ToolRL (Qian et al. 2025, arXiv:2504.13958) partial credit against the gold calls
  of the turn: the mean of (a) Jaccard similarity of the called tool names, (b) per matched call,
  Jaccard similarity of argument names, (c) per matched call, the share of gold arguments whose
  value equals the gold value after `botpsy.worlds.calls.norm_call` normalisation (defaults
  filled, text case and spacing folded). Unmatched calls score 0 in (b) and (c).
  A turn whose gold makes *no* call earns 1 for making none (explicit credit for abstaining or
  asking) and 0 for any call. A malformed turn (format 0) earns 0 here too.
* `success_reward` — the world checker: the completion replaces the gold turn, the rest of the gold
  conversation is kept, and `replay_gold` + `check_trace` judge the spliced conversation exactly as
  evaluation judges an episode (final state hash, required facts, the kind's rule).

Nothing here re-implements parsing or checking: the parser is `parse_completion`, argument
normalisation is `norm_call`, state replay is `replay_gold`, the verdict is `check_trace`.
"""

from __future__ import annotations

import copy
import json
from collections import Counter
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from botpsy.agent.dates import annotate_messages
from botpsy.protocol.formats import THINK_CLOSE, ChatFormat, Parsed, parse_completion
from botpsy.protocol.messages import Message, ToolCall, Trace
from botpsy.worlds import get_domain
from botpsy.worlds.base import Domain, Task, check_trace, replay_gold
from botpsy.worlds.calls import norm_call
from botpsy.worlds.kit import TODAY


@dataclass(frozen=True)
class TurnItem:
    """One gold assistant turn of a world task, the unit RL1 rewards (and RL2's tool-use domain)."""

    task: Task
    turn: int = 0  # index among the task's gold *assistant* messages

    @property
    def domain(self) -> Domain:
        return get_domain(self.task.domain)

    def gold_index(self) -> int:
        """Position of the predicted assistant message inside `task.gold`."""
        seen = -1
        for i, m in enumerate(self.task.gold):
            if m["role"] == "assistant":
                seen += 1
                if seen == self.turn:
                    return i
        raise ValueError(f"task {self.task.id} has no assistant turn {self.turn}")

    def gold_message(self) -> Message:
        return Message.from_dict(self.task.gold[self.gold_index()])

    def context(self) -> list[Message]:
        """The messages the model sees: system, user request, gold conversation before the turn,
        with the user turns' resolved dates as the agent adds them (`agent.dates`), so RL samples
        from the prompt the runtime shows."""
        before = [Message.from_dict(d) for d in self.task.gold[: self.gold_index()]]
        said = annotate_messages([Message("user", self.task.user), *before], TODAY)
        return [Message("system", self.task.system), *said]

    def tools(self) -> list[dict[str, Any]]:
        return [t.schema() for t in self.domain.tools]

    def prompt(self, fmt: ChatFormat) -> str:
        """The prompt text up to and including the generation prompt (`<think>` opened)."""
        return fmt.render(self.context(), self.tools(), add_generation_prompt=True, thinking=True)

    def to_json(self) -> str:
        return json.dumps({"task": json.loads(self.task.to_json()), "turn": self.turn})

    @classmethod
    def from_json(cls, text: str) -> TurnItem:
        d = json.loads(text)
        return cls(Task(**d["task"]), int(d["turn"]))


def turn_items(tasks: list[Task], all_turns: bool = True) -> list[TurnItem]:
    """Every assistant turn of every task (or only the first turn of each)."""
    out = []
    for t in tasks:
        n = sum(1 for m in t.gold if m["role"] == "assistant")
        out.extend(TurnItem(t, k) for k in range(n if all_turns else min(n, 1)))
    return out


def _schemas(domain: Domain) -> dict[str, dict[str, Any]]:
    return {t.name: t.parameters for t in domain.tools}


def parse(completion: str, item: TurnItem, fmt: str = "qwen35") -> Parsed:
    """The completion parsed as the runtime parses it, with the domain's schemas.

    Parsed once per (completion, domain, format): the RL rewards each read the same parse (format,
    call credit and success asked for it five times per completion before). Callers must not
    change the `Parsed` they get."""
    return _parse(completion, item.task.domain, fmt)


@lru_cache(maxsize=4096)
def _parse(completion: str, domain: str, fmt: str) -> Parsed:
    return parse_completion(completion, fmt, _schemas(get_domain(domain)), thinking=True)  # type: ignore[arg-type]


def format_reward(completion: str, item: TurnItem, fmt: str = "qwen35") -> float:
    if THINK_CLOSE not in completion:
        return 0.0
    parsed = parse(completion, item, fmt)
    if parsed.errors:
        return 0.0
    if not parsed.calls and not parsed.content.strip():
        return 0.0  # an empty turn is neither an answer nor an action
    return 1.0


def _jaccard(a: Counter | set, b: Counter | set) -> float:
    if not a and not b:
        return 1.0
    if isinstance(a, Counter):
        return sum((a & b).values()) / max(sum((a | b).values()), 1)
    return len(a & b) / max(len(a | b), 1)


def _norm_args(call: ToolCall, domain: Domain) -> dict[str, Any]:
    return json.loads(norm_call(call, domain))["arguments"]


def call_reward(completion: str, item: TurnItem, fmt: str = "qwen35") -> float:
    if format_reward(completion, item, fmt) == 0.0:
        # Tool-N1 gating inside each reward, because TRL sums reward functions: otherwise a turn
        # that never closes its reasoning would still earn the "made no call" credit.
        return 0.0
    gold = item.gold_message().tool_calls
    made = parse(completion, item, fmt).calls
    if not gold:
        return 0.0 if made else 1.0
    if not made:
        return 0.0
    name_score = _jaccard(Counter(c.name for c in made), Counter(c.name for c in gold))
    # Match each gold call to the first unused made call of the same name, in order.
    unused = list(range(len(made)))
    pairs = []
    for g in gold:
        j = next((j for j in unused if made[j].name == g.name), None)
        if j is not None:
            unused.remove(j)
            pairs.append((made[j], g))
    denom = max(len(made), len(gold))
    key_score = value_score = 0.0
    for m, g in pairs:
        m_args, g_args = _norm_args(m, item.domain), _norm_args(g, item.domain)
        key_score += _jaccard(set(m_args), set(g_args))
        value_score += (
            sum(1 for k, v in g_args.items() if k in m_args and m_args[k] == v) / len(g_args)
            if g_args
            else float(not m_args)
        )
    return (name_score + key_score / denom + value_score / denom) / 3


def spliced_task(completion: str, item: TurnItem, fmt: str = "qwen35") -> tuple[Task, Message]:
    """The task whose gold has the completion in place of the predicted turn (and the message)."""
    parsed = parse(completion, item, fmt)
    msg = parsed.message()
    gold = copy.deepcopy(item.task.gold)
    k = item.gold_index()
    d = msg.to_openai()
    d["reasoning"] = msg.reasoning
    gold[k] = d
    same = [norm_call(c, item.domain) for c in msg.tool_calls] == [
        norm_call(c, item.domain) for c in item.gold_message().tool_calls
    ]
    if not same:
        # The gold's tool results answered the gold calls: with other calls they would be wrong, so
        # the spliced conversation keeps only what the completion itself decided.
        gold = gold[: k + 1]
    return replace(item.task, gold=gold), msg


def success_reward(completion: str, item: TurnItem, fmt: str = "qwen35") -> float:
    """1 when the conversation with this turn in place of the gold one passes the world checker."""
    if format_reward(completion, item, fmt) == 0.0:
        return 0.0
    task, msg = spliced_task(completion, item, fmt)
    domain = item.domain
    ok, _ = replay_gold(domain, task)
    messages = [Message("user", task.user), *task.gold_messages()]
    if messages[-1].role != "assistant" or messages[-1].tool_calls:
        return 0.0  # the conversation stops on a call whose result the model never saw: not finished
    trace = Trace(messages=messages, stopped="answer")
    mutating = {t.name for t in domain.tools if t.labels.mutates}
    verdict = check_trace(task, trace, task.expected_hash if ok else "(replay diverged)", mutating)
    return float(verdict.success)


def tool_reward(completion: str, item: TurnItem, fmt: str = "qwen35", weights=(0.2, 0.4, 0.4)) -> float:
    """The RL1 reward: weighted format, partial call credit and world success (weights sum to 1)."""
    wf, wc, ws = weights
    f = format_reward(completion, item, fmt)
    if f == 0.0:
        return 0.0  # Tool-N1: a malformed turn earns nothing, whatever it got right by accident
    return wf * f + wc * call_reward(completion, item, fmt) + ws * success_reward(completion, item, fmt)
