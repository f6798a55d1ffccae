"""ACEBench (English: normal, special, agent) through botpsy's agent, scored by ACEBench's rules.

    botpsy eval acebench --data ACEBench --backend oracle
    botpsy eval acebench --data ACEBench --model embedded --categories normal --limit 20 --out reports/acebench
    botpsy eval acebench --data ACEBench --model embedded --categories agent --user-model http://127.0.0.1:8080/v1#user

The data is the user's checkout of github.com/chenchen0103/ACEBench (`acebench_data`); the scoring
is ACEBench's, restated in `acebench_checker`; the agent items run on `acebench_apis` /
`acebench_travel`, state machines of ACEBench's simulated phone and travel APIs.

The path of one item, as `eval bfcl` does it: the item's functions become botpsy `Tool`s, the
question goes to botpsy's `Agent` over the chosen engine in botpsy's own chat format (tools as JSON
lines in the system turn, Qwen3.5 XML or hermes calls), and the parsed calls are judged.

Where botpsy differs from ACEBench's own inference, on purpose:
* the prompt is botpsy's, because that is how the model is deployed; it carries what ACEBench's
  prompt tells a model and its checker relies on: the item's date line or user profile, and for
  special items the three reply forms the checker looks for (`SPECIAL_RULES`);
* calls are botpsy's tool calls rather than `[f(a='x')]` text; for the special checker and the
  agent's process score they are written back in that text form (`call_text`); likewise the
  agent's structured outcomes on special items — a guard's hold, the model's decline — are
  written in the reply forms ACEBench's prompt asks for (`reply_form`), and each row keeps the
  verdict on the agent's own words beside it (`words_ok`);
* an item whose question is a transcript ("user: …", "system: …" lines: 423 of the 823 English
  normal items, 214 of them multi-turn, 176 atom, 33 similar_api) reaches the model as the turns the runtime
  renders, its earlier calls and their results included (`transcript_turns`, `Agent.seed`), where
  ACEBench's inference pastes the transcript into one message;
* normal and special items get one model step (ACEBench asks for one reply); the agent's
  guards run (grounding, limits), and a call they hold counts as no call (`model_ok` keeps the
  model alone);
* agent items end when the agent answers without a call (botpsy's turn end) — in multi-step items
  there is no user, so that answer ends the episode; in multi-turn items an LLM user simulator
  (`ChatUser`, behind an OpenAI-compatible endpoint, as `eval tau2`) replies until it says
  "finish conversation". ACEBench's budget of 40 messages becomes `AGENT_STEPS` model steps per
  user turn and `USER_TURNS` user turns.

The oracle (`--backend oracle`) speaks the possible answers through the same path: the first
possible answer's calls, the special reply the checker expects, the agent milestones' calls.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from botpsy.agent.dates import stated_date
from botpsy.agent.loop import HELD_EVENTS, Agent, AgentConfig
from botpsy.engine.base import Engine, EngineError
from botpsy.eval import acebench_checker as checker
from botpsy.eval.acebench_apis import Phone, execute, load_seeds
from botpsy.eval.acebench_data import (
    AGENT,
    SPECIAL,
    acebench_tools,
    conversation,
    load_category,
    sample_items,
)
from botpsy.eval.acebench_oracle import call_text, parse_call_text
from botpsy.eval.acebench_travel import Travel
from botpsy.eval.acebench_user import FINISH, UserSimulator
from botpsy.eval.bfcl import BfclFormat, decode_for_checker
from botpsy.eval.runs import (
    ItemResult,
    ResultCache,
    failure_counts,
    item_turn,
    run_items,
    token_counter,
    trace_figures,
)
from botpsy.protocol.formats import THINK_CLOSE
from botpsy.protocol.messages import Message, ToolCall, Trace
from botpsy.tools.base import Toolbox

AGENT_STEPS = 20  # model steps per user turn (ACEBench: 40 messages, calls and results alternating)
USER_TURNS = 20
NOT_EXECUTED = json.dumps({"note": "ACEBench normal and special items are judged on the calls; nothing ran"})

TASK_RULES = (
    "Call the function or functions that carry out the user's latest request. Put in every parameter "
    "the user mentioned and leave out optional ones they did not; where a description asks for no "
    "particular format, use the user's own words as the value."
)
SPECIAL_RULES = (
    "When the request cannot be carried out as stated, do not call anything; reply with exactly one of:\n"
    '- a required value is missing: "Missing necessary parameters (param1, param2) for the api (FunctionName)"\n'
    "- a value does not fit the function's definition: \"There is incorrect value (value) for the parameters "
    '(param) in the conversation history."\n'
    '- no function can do it: "Due to the limitations of the function, I cannot solve this problem."'
)
PHONE_RULES = (
    "You are a phone assistant; it is 2024-06-11 16:00. Sending messages needs Wi-Fi and a logged-in "
    "device; the inbox holds at most six messages, so when it is full ask the user which message to "
    "delete. Viewing messages needs the device logged in (login_device). Ordering food needs the user's "
    "platform account and password and login_food_platform first; order each merchant separately; say "
    "'Insufficient balance' when the money does not cover it. User names are full names."
)
TRAVEL_RULES = (
    "You are an airline agent; it is 2024-07-15 08:00. Get the user's ID and password before booking, "
    "changing or cancelling; list what you will change and get an explicit yes before any booking or "
    "change. Payment is cash or bank. Free checked bags: regular 1 economy / 2 business, silver 2 / 3, "
    "gold 3 / 3; each extra bag costs 50 yuan. Bags can be added, not removed. Round trips and "
    "connections are booked flight by flight. Only offer compensation when the user complains and asks."
)


STEP_RULES = (
    "Carry out the user's request with the functions, one step at a time: decide each next call from "
    "the results of the last. When the task is done, say so briefly."
)


def system_prompt(category: str, item: dict[str, Any]) -> str:
    """botpsy's system text for an item (the tools are listed by the chat format, not here)."""
    if category == "agent_multi_step":
        return STEP_RULES
    if category == "agent_multi_turn":
        return TRAVEL_RULES if "Travel" in item.get("involved_classes", []) else PHONE_RULES
    parts = [TASK_RULES]
    if category.startswith("special"):
        parts.append(SPECIAL_RULES)
    if item.get("profile"):
        parts.append(f"The user's profile:\n{item['profile']}")
    if item.get("time"):
        parts.append(str(item["time"]))
    return "\n\n".join(parts)


_SPEAKER = re.compile(r"(user|system):\s?")


def transcript_turns(question: str, functions: set[str]) -> tuple[list[Message], str]:
    """An item's transcript as the earlier turns and the user's last message, for `Agent.seed`
    and `Agent.send`: a conversation the model reads as the runtime renders one, not a block of
    text. ACEBench writes it as "user: …" and "system: …" lines (a line without a speaker goes
    on the one above). A "system:" line that is a call list (`[f(a=1)]`) to the item's functions
    is the assistant's call, and the "system:" line after it is what it returned, as the call's
    result and as the assistant's answer (the user read it); any other "system:" line is the
    assistant's words. Lines by one speaker in a row are one message."""
    said: list[list[str]] = []  # [speaker, text]
    for line in question.strip().split("\n"):
        m = _SPEAKER.match(line)
        if m and (not said or said[-1][0] != m.group(1)):
            said.append([m.group(1), line[m.end() :]])
        elif said:
            said[-1][1] += "\n" + (line[m.end() :] if m else line)
        elif line.strip():
            said.append(["user", line])
    if not said or said[-1][0] != "user":
        raise ValueError("an ACEBench transcript must end with the user's message")
    turns: list[Message] = []
    for speaker, text in said[:-1]:
        text = text.strip()
        if speaker == "user":
            turns.append(Message("user", text))
            continue
        calls, answer = _call_line(text, functions)
        if calls:
            turns.append(Message("assistant", tool_calls=calls))
            turns += [Message("tool", answer, name=c.name) for c in calls]
        turns.append(Message("assistant", answer))
    return turns, said[-1][1].strip()


def _call_line(text: str, functions: set[str]) -> tuple[list[ToolCall], str]:
    """(the calls of a run's first line when it is a call list to known functions, the rest)."""
    first, _, rest = text.partition("\n")
    if not (first.strip().startswith("[") and first.strip().endswith("]")):
        return [], text
    calls = parse_call_text(first)
    if not calls or any(c.name not in functions for c in calls):
        return [], text
    return calls, rest.strip()


class StubEnv:
    """Normal and special items: the calls are the answer; running them returns a note."""

    def __init__(self, item: dict[str, Any]):
        self.toolbox = Toolbox(acebench_tools(item["function"]))

    def call(self, name: str, arguments: dict[str, Any]) -> str:
        return NOT_EXECUTED


class ApiEnv:
    """Agent items: calls run on the episode's simulated APIs; `ran` says whether any call ran."""

    def __init__(self, item: dict[str, Any], seeds: dict[str, dict[str, Any]]):
        involved = item.get("involved_classes", [])
        world_cls = Travel if "Travel" in involved else Phone
        self.world = world_cls(seeds, involved, item.get("initial_config", {}))
        self.toolbox = Toolbox(acebench_tools(item["function"]))
        self.ran = False

    def call(self, name: str, arguments: dict[str, Any]) -> str:
        self.ran = True
        return execute(self.world, name, arguments)

    def state(self) -> list[dict[str, Any]]:
        """The saved attributes per involved class; none when no call ever ran (as in ACEBench)."""
        return self.world.state() if self.ran else []


@dataclass(frozen=True)
class AceConfig:
    max_tokens: int = 512  # generated tokens per model step
    temperature: float = 0.0
    thinking: bool = True
    limit: int | None = None  # items per category (conversations in normal multi-turn), None: all
    grounding_guard: bool = True  # the agent's guard (agent/grounding.py); a held call is no call
    limits_guard: bool = True  # the agent's limits guard (agent/limits.py), the same
    copy_guide: bool = True  # the agent's copy guidance (engine/copy_guide.py)
    agent_steps: int = AGENT_STEPS
    user_turns: int = USER_TURNS


def _raise_on_error(trace: Trace) -> None:
    if trace.stopped == "error":
        raise EngineError(
            next((e.data["message"] for e in reversed(trace.events) if e.kind == "error"), "backend error")
        )


def _agent(
    engine: Engine, env: Any, system: str, config: AceConfig, steps: int, today: date | None = None
) -> Agent:
    agent = Agent(
        engine,
        env,
        system,
        today=today,
        config=AgentConfig(
            max_steps=steps,
            max_tokens=config.max_tokens,
            temperature=config.temperature,
            thinking=config.thinking,
            grounding_guard=config.grounding_guard,
            limits_guard=config.limits_guard,
            copy_guide=config.copy_guide,
        ),
    )
    agent.fmt = BfclFormat(engine.chat_format.name)  # calls to known functions kept whatever their arguments
    return agent


def run_single(
    category: str, item: dict[str, Any], engine: Engine, model: str, config: AceConfig
) -> ItemResult:
    """A normal or special item: one model step, judged on its calls (normal) or its text (special)."""
    # The item's stated "now" is the agent's clock, as a deployed agent's would be: its resolved-
    # dates line then reads "tomorrow" as the item's answer does (the system text states it too).
    today = stated_date(str(item.get("time") or ""))
    agent = _agent(engine, StubEnv(item), system_prompt(category, item), config, 1, today)
    trace = item_turn(agent, *transcript_turns(item["question"], set(agent.tools)))
    _raise_on_error(trace)
    step = next((e for e in trace.events if e.kind == "model"), None)
    calls = decode_for_checker(step.data["text"], agent.fmt, agent.tools, config.thinking) if step else []
    held = any(e.kind in HELD_EVENTS for e in trace.events)
    answer = next((m.content for m in reversed(trace.messages) if m.role == "assistant" and m.content), "")
    if category in SPECIAL:
        model_text = call_text(calls) if calls else answer
        words = answer if held else model_text
        form = reply_form(trace)
        # The agent's own words judged too: what the score is without the reply forms.
        on_words = checker.special_check(category, words, item["truth"])
        verdict = checker.special_check(category, form, item["truth"]) if form else on_words
        alone = checker.special_check(category, model_text, item["truth"])
        detail = {
            "output": (form or words)[:300],
            "model_called": bool(calls),
            "calls": calls,
            "form": bool(form),
            "words_ok": bool(on_words["valid"]),
            "reasoning": (step.data["text"].split(THINK_CLOSE)[0] if step else "")[:200],
        }
    else:
        verdict = checker.check_normal(item["function"], [] if held else calls, item["truth"], category)
        alone = checker.check_normal(item["function"], calls, item["truth"], category)
        detail = {"calls": calls, "answer": answer[:300]}
    if held:
        detail.update(held=True, model_ok=alone["valid"])
    if not verdict["valid"]:
        detail["error"] = str(verdict["error"])[:300]
    return _result(category, item["id"], model, verdict, trace, engine, detail)


# The reasoning botpsy's training data gives a decline ("No listed tool fits this request.", "No tool
# can do this."): the model's own decision that no tool serves the request.
_DECLINE = re.compile(r"\s*No (?:listed )?tools? (?:fits|does|can|serves)\b")


def reply_form(trace: Trace) -> str:
    """What the agent decided on a special item, written in the reply form ACEBench's prompt asks
    for; "" when its turn ended otherwise (a call, a question in the model's words, an answer).

    As `call_text` writes botpsy's calls in ACEBench's call text, this writes botpsy's structured
    outcomes in ACEBench's reply text: the limits guard's hold names the user's values that a tool
    does not take, as the user wrote them ("There is incorrect value"), the grounding guard's the
    tool and the required values nobody gave, at their path inside an object ("Missing necessary
    parameters (location.latitude, location.longitude)"), both where the
    agent's reply says both; a turn without a call whose reasoning opens as a decline (`_DECLINE`)
    is "the limitations of the function"."""
    forms = []
    for e in trace.events:
        if e.kind == "grounding_guard":
            missing: dict[str, list[str]] = {}
            for key, params in e.data["held"].items():
                names = missing.setdefault(json.loads(key)["name"], [])
                names += [p for p in e.data.get("paths", {}).get(key, params) if p not in names]
            forms.append(checker.missing_reply(missing))
        if e.kind == "limits_guard":
            wrong: dict[str, list[Any]] = {}
            for found in e.data["broken"].values():
                for b in found:
                    if b["said"] is not None and b["said"] not in wrong.get(b["path"], []):
                        wrong.setdefault(b["path"], []).append(b["said"])
            forms.append(checker.incorrect_reply(wrong))
    if forms:
        return " ".join(forms)
    said = [m for m in trace.messages if m.role == "assistant"]
    if said and not any(m.tool_calls for m in said) and _DECLINE.match(said[-1].reasoning or ""):
        return checker.IRRELEVANT_REPLY
    return ""


def _result(
    category: str,
    item_id: str,
    model: str,
    verdict: dict[str, Any],
    trace: Trace,
    engine: Engine,
    detail: dict[str, Any],
) -> ItemResult:
    return ItemResult(
        "acebench",
        category,
        item_id,
        model,
        bool(verdict["valid"]),
        "" if verdict["valid"] else verdict.get("error_type") or "invalid",
        detail=detail,
        **trace_figures(trace, token_counter(engine)),
    )


def run_agent(
    category: str,
    item: dict[str, Any],
    engine: Engine,
    model: str,
    config: AceConfig,
    seeds: dict[str, dict[str, Any]],
    user: UserSimulator | None = None,
) -> ItemResult:
    """An agent item on the simulated APIs: end state against the answer, milestones for process."""
    env = ApiEnv(item, seeds)
    agent = _agent(engine, env, system_prompt(category, item), config, config.agent_steps)
    if category == "agent_multi_step":
        trace = agent.send(item["question"])
        _raise_on_error(trace)
    else:
        if user is None:
            raise ValueError("agent_multi_turn items need a user simulator")
        said = user.start(item["question"])
        trace = agent.trace
        for _ in range(config.user_turns):
            if FINISH in said.lower():
                break
            trace = agent.send(said)
            _raise_on_error(trace)
            said = user.reply(trace.final_answer or "")
    calls = [call_text(m.tool_calls) for m in trace.messages if m.role == "assistant" and m.tool_calls]
    verdict = checker.agent_check(env.state(), item["truth"])
    process = 1.0 if verdict["valid"] else checker.process_accuracy(calls, item["mile_stone"])
    detail = {"calls": calls[:40], "process": process}
    if not verdict["valid"]:
        detail["error"] = verdict["error"][:300]
    return _result(category, item["id"], model, verdict, trace, engine, detail)


# ---- aggregation and the report ------------------------------------------------------------------


def category_scores(category: str, results: list[ItemResult]) -> dict[str, Any]:
    """ACEBench's per-category figure: item accuracy; per conversation in normal multi-turn; agent
    items add the process accuracy (1 for items solved end to end)."""
    out: dict[str, Any] = {"total": len(results)}
    if "normal_multi_turn" in category:
        convs: dict[str, list[bool]] = {}
        for r in results:
            convs.setdefault(conversation(r.id), []).append(r.ok)
        out["conversations"] = len(convs)
        out["accuracy"] = sum(all(v) for v in convs.values()) / len(convs) if convs else 0.0
        out["process_accuracy"] = sum(sum(v) / len(v) for v in convs.values()) / len(convs) if convs else 0.0
    else:
        out["accuracy"] = sum(r.ok for r in results) / len(results) if results else 0.0
    if category in AGENT:
        out["process_accuracy"] = (
            sum(r.detail.get("process", float(r.ok)) for r in results) / len(results) if results else 0.0
        )
    if category not in AGENT and "normal_multi_turn" not in category:
        held = [r for r in results if r.detail.get("held")]
        out["held"] = len(held)
        model_ok = sum(bool(r.detail.get("model_ok", r.ok)) and not r.error for r in results)
        out["model_accuracy"] = model_ok / len(results) if results else 0.0
    if category in SPECIAL and results:
        out["model_no_call"] = sum(not r.detail.get("model_called", True) for r in results) / len(results)
    out["correct"] = sum(r.ok for r in results)
    return out


@dataclass
class AceReport:
    model: str
    categories: dict[str, dict[str, Any]]
    summary: dict[str, Any]
    failures: dict[str, int]
    not_run: dict[str, str] = field(default_factory=dict)
    results: list[ItemResult] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        r4 = lambda x: round(x, 4) if isinstance(x, float) else x  # noqa: E731
        return {
            "suite": "acebench",
            "model": self.model,
            "overall": r4(self.summary["overall"]),
            "overall_official": r4(self.summary["overall_official"]),
            "groups": {k: r4(v) for k, v in self.summary["groups"].items()},
            "categories": {c: {k: r4(v) for k, v in d.items()} for c, d in self.categories.items()},
            "n": sum(v["total"] for v in self.categories.values()),
            "failures": self.failures,
            "not_run": self.not_run,
        }


def evaluate_acebench(
    data_dir: Path,
    root: Path | None,
    categories: list[str],
    model: str,
    engine_for: Callable[[str, dict[str, Any]], Engine],
    config: AceConfig = AceConfig(),
    out: str | Path | None = None,
    progress: Callable[[ItemResult], None] | None = None,
    on_category: Callable[[str, int], None] | None = None,
    run_config: dict[str, Any] | None = None,
    user: UserSimulator | None = None,
    seeds: dict[str, dict[str, Any]] | None = None,
) -> AceReport:
    """Run `categories` for one model. `engine_for(category, item)` gives the item's engine (the same
    engine for a real model, a fresh oracle per item). Agent categories need the simulated APIs'
    seeds (`seeds`, else read from the checkout `root`) and multi-turn a `user` (an LLM simulator
    for a model, `ScriptedUser` for the oracle); without them they are listed under `not_run` with the reason, never scored."""
    cache = ResultCache(out, "acebench", model, {"model": model, **(run_config or {}), **config.__dict__})
    results: list[ItemResult] = []
    per: dict[str, dict[str, Any]] = {}
    not_run: dict[str, str] = {}
    for category in categories:
        if category in AGENT and seeds is None:
            try:
                seeds = load_seeds(root) if root else None
            except (FileNotFoundError, SyntaxError) as e:
                not_run[category] = str(e)
                continue
            if seeds is None:
                not_run[category] = (
                    "the simulated APIs' seed states are read from ACEBench's model_inference/ folder: "
                    "pass the repository root as --data"
                )
                continue
        if category == "agent_multi_turn" and user is None:
            not_run[category] = (
                "a model's multi-turn run needs a user simulator: pass --user-model http://HOST:PORT/v1#NAME"
            )
            continue
        items = sample_items(load_category(data_dir, category), category, config.limit)
        if on_category:
            on_category(category, len(items))

        def one(item: dict[str, Any], category: str = category, seeds: dict | None = seeds) -> ItemResult:
            engine = engine_for(category, item)
            if category in AGENT:
                return run_agent(category, item, engine, model, config, seeds or {}, user)
            return run_single(category, item, engine, model, config)

        rs = run_items(((category, it["id"], it) for it in items), one, cache, "acebench", model, progress)
        results.extend(rs)
        per[category] = category_scores(category, rs)
    summary = checker.aggregate({c: v["accuracy"] for c, v in per.items()})
    return AceReport(model, per, summary, failure_counts(results), not_run, results)
