"""BFCL v4 with the official data and checkers (`bfcl-eval`), run through botpsy's agent and backends.

    botpsy eval bfcl --backend oracle --categories simple_python,multiple,parallel,parallel_multiple,irrelevance --json
    botpsy eval bfcl --model embedded --categories non_live --limit 20 --out reports/bfcl

Every offline category is covered: simple (python, java, javascript), multiple, parallel,
parallel_multiple, irrelevance, the five live ones plus live_relevance, and the four multi-turn
ones. Memory and web search need the network to generate and are left out.

The path of one item: BFCL's function docs (with the language hints BFCL's inference adds) become
botpsy `Tool`s; the question goes to botpsy's `Agent` over the chosen engine in botpsy's own chat
format; the parsed calls become the decoded form BFCL's FC handlers produce
(`[{name: {arg: value}}]`, or call strings for execution); the official checker judges them in a
child process (`bfcl_worker`), because it `eval()`s strings. Multi-turn items execute their calls on
BFCL's simulated APIs in that same child process, turn by turn, as BFCL's inference does.

Where botpsy differs from BFCL's own inference, on purpose:
* the prompt is botpsy's (tools as JSON lines in the system turn, Qwen3.5 XML or hermes calls),
  because that is how the model is deployed;
* single-turn items get one model step (as in BFCL); in multi-turn items an unparseable step goes
  back to the model as an error, as in botpsy's runtime, instead of ending the turn; the step
  limit per turn is BFCL's (20 steps, then the item is force-terminated and fails);
* functions BFCL adds mid-conversation (miss_func) are listed in that turn's user message, since
  the history is append-only token ids and the system turn cannot change;
* the agent's grounding guard runs (`agent.grounding`): a call holding a number the question
  never states is not made, so the item is scored as no call; the model's own output is judged
  too, and `model_accuracy` beside `accuracy` is the model alone, from the same run;
* the six live_irrelevance items whose question has earlier turns get them as a transcript in the
  last user message.

Aggregation follows the leaderboard (`generate_leaderboard_csv`): non-live = unweighted mean of
simple (itself the mean of python/java/javascript), multiple, parallel, parallel_multiple; live =
count-weighted mean of the four live AST categories; hallucination = mean of irrelevance and
live_irrelevance; relevance = live_relevance; multi-turn = unweighted mean of its four; overall =
10% non-live + 10% live + 10% hallucination + 30% multi-turn + 40% agentic. `overall` in the JSON
renormalises these weights over the groups that were run (so a partial run can reach 100%);
`overall_leaderboard` is the official formula with missing groups — always agentic, offline —
counted as 0.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from botpsy.agent.loop import HELD_EVENTS, Agent, AgentConfig
from botpsy.engine.base import Engine, EngineError
from botpsy.eval.bfcl_data import (
    ADDED_FUNCTIONS_PROMPT,
    MULTI_TURN,
    NOT_EXECUTED,
    STEP_LIMIT,
    aggregate,
    bfcl_tools,
    load_category,
    load_truth,
    require_bfcl,
)
from botpsy.eval.bfcl_process import BfclWorker, WorkerError
from botpsy.eval.runs import (
    ItemResult,
    ResultCache,
    failure_counts,
    item_turn,
    run_items,
    sample,
    token_counter,
    trace_figures,
)
from botpsy.protocol.arguments import ToolError, coerce
from botpsy.protocol.formats import ChatFormat, Parsed, ParseError, parse_completion
from botpsy.protocol.messages import Message, ToolCall
from botpsy.tools.base import Tool, Toolbox

# ---- environments ------------------------------------------------------------------------------


class StubEnv:
    """Single-turn items: the calls are the answer; executing them returns a note."""

    def __init__(self, tools: list[Tool]):
        self.toolbox = Toolbox(tools)

    def call(self, name: str, arguments: dict[str, Any]) -> str:
        return NOT_EXECUTED


class ApiEnv:
    """Multi-turn items: calls run on BFCL's simulated APIs in the worker, state kept per tag."""

    def __init__(self, tools: list[Tool], worker: BfclWorker, category: str, item_id: str, tag: str):
        self.toolbox = Toolbox(tools)
        self.worker, self.category, self.item_id, self.tag = worker, category, item_id, tag

    def call(self, name: str, arguments: dict[str, Any]) -> str:
        reply = self.worker.request(
            "execute", category=self.category, id=self.item_id, tag=self.tag, calls=[{name: arguments}]
        )
        return str(reply["results"][0]) if reply["results"] else ""


# ---- running one item ----------------------------------------------------------------------------


def _question_turns(turn: list[dict[str, Any]]) -> tuple[str, list[Message], str]:
    """(system text, earlier turns, the user's last message) of one BFCL turn. Earlier user and
    assistant messages are turns for `Agent.seed`, as the runtime renders a conversation; messages
    by one role in a row are one message. A turn that opens with the assistant's words, which no
    runtime conversation does, keeps them as text before the user's message."""
    system = "\n\n".join(m["content"] for m in turn if m["role"] == "system")
    runs: list[Message] = []
    for m in turn:
        if m["role"] == "system":
            continue
        if runs and runs[-1].role == m["role"]:
            runs[-1].content += "\n" + m["content"]
        else:
            runs.append(Message(m["role"], m["content"]))
    if not runs:
        return system, [], ""
    if runs[0].role != "user" or runs[-1].role != "user":
        history = "\n".join(f"{m.role}: {m.content}" for m in runs[:-1])
        return system, [], f"Earlier in this conversation:\n{history}\n\nNow: {runs[-1].content}"
    return system, runs[:-1], runs[-1].content


class BfclFormat(ChatFormat):
    """botpsy's chat format with BFCL's tolerance: a call to a known function is kept even when its
    arguments miss the schema (types, required ones), because BFCL executes what the model wrote
    and returns the error as the result; the official docs and answers disagree in a few items.
    Calls to unknown functions stay parse errors: there is nothing to execute."""

    def parse(
        self, text: str, tools: dict[str, dict[str, Any]] | None = None, thinking: bool = True
    ) -> Parsed:
        parsed = parse_completion(text, self.name, None, thinking)
        if tools is None:
            return parsed
        kept = []
        for d, call in zip(decode_for_checker(text, self, tools, thinking), parsed.calls, strict=False):
            if call.name not in tools:
                known = ", ".join(sorted(tools)) or "none"
                parsed.errors.append(
                    ParseError("unknown_function", f"there is no function {call.name!r}; available: {known}")
                )
                continue
            kept.append(ToolCall(call.name, d[call.name]))
        parsed.calls = kept
        return parsed


def _decoded(msg: Message) -> list[dict[str, Any]]:
    return [{c.name: dict(c.arguments)} for c in msg.tool_calls]


def _as_written(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def decode_for_checker(
    text: str, fmt: Any, tools: dict[str, dict[str, Any]], thinking: bool
) -> list[dict[str, Any]]:
    """The calls of one completion in BFCL's decoded form, judged by BFCL rather than by botpsy.

    botpsy's parser drops a call whose arguments miss the schema (and tells the model why); BFCL's
    FC handlers decode whatever JSON the model wrote and let the checker rule on types, missing
    arguments and unknown functions. So every syntactically complete call goes through: values
    are converted with the schema where they fit and kept as written (JSON-decoded if they parse)
    where they do not — the official docs and answers disagree on types in a few items. Hermes
    calls are JSON, so their values are kept exactly as written, as BFCL's Qwen FC handler does.
    """
    out = []
    for call in parse_completion(text, fmt.name, None, thinking).calls:
        if fmt.name == "hermes":
            out.append({call.name: dict(call.arguments)})
            continue
        props = tools.get(call.name, {}).get("properties", {})
        args = {}
        for k, v in call.arguments.items():
            if isinstance(v, str) and v.strip() == "null":  # Qwen3.5's parsers read a bare null as None
                args[k] = None
                continue
            try:
                args[k] = coerce(v, props[k], k) if k in props else _as_written(v)
            except ToolError:
                args[k] = _as_written(v)
        out.append({call.name: args})
    return out


@dataclass(frozen=True)
class BfclConfig:
    max_tokens: int = 512  # generated tokens per model step
    temperature: float = 0.0
    thinking: bool = True
    limit: int | None = None  # items per category (evenly spaced), None for all
    # The agent's grounding guard (agent/grounding.py): a call it holds is scored as no call, and
    # the raw model's verdict is kept beside it (`model_accuracy`).
    grounding_guard: bool = True
    limits_guard: bool = True  # the agent's limits guard (agent/limits.py); a held call is no call
    copy_guide: bool = True  # the agent's copy guidance (engine/copy_guide.py)


def run_item(
    category: str,
    entry: dict[str, Any],
    engine: Engine,
    worker: BfclWorker,
    model: str,
    config: BfclConfig = BfclConfig(),
) -> ItemResult:
    count = token_counter(engine)
    if category in MULTI_TURN:
        return _run_multi_turn(category, entry, engine, worker, model, config, count)
    system, earlier, user = _question_turns(entry["question"][0])
    agent = Agent(
        engine,
        StubEnv(bfcl_tools(entry["function"])),
        system,
        AgentConfig(
            max_steps=1,
            max_tokens=config.max_tokens,
            temperature=config.temperature,
            thinking=config.thinking,
            grounding_guard=config.grounding_guard,
            limits_guard=config.limits_guard,
            copy_guide=config.copy_guide,
        ),
    )
    agent.fmt = BfclFormat(engine.chat_format.name)
    trace = item_turn(agent, earlier, user)
    if trace.stopped == "error":
        raise EngineError(
            next((e.data["message"] for e in trace.events if e.kind == "error"), "backend error")
        )
    first = next((m for m in trace.messages if m.role == "assistant"), Message("assistant"))
    step = next((e for e in trace.events if e.kind == "model"), None)
    output = decode_for_checker(step.data["text"], agent.fmt, agent.tools, config.thinking) if step else []
    held = any(e.kind in HELD_EVENTS for e in trace.events)
    # What the agent did: a call a guard held (grounding, limits) was not made. The model's own output
    # is judged too when the two differ, so the guard's effect stays visible per item.
    verdict = _verdict(worker, category, entry["id"], [] if held else output)
    detail: dict[str, Any] = {"calls": output, "answer": first.content[:300]}
    if held:
        detail.update(held=True, model_ok=bool(_verdict(worker, category, entry["id"], output)["valid"]))
    figs = trace_figures(trace, count)
    return ItemResult(
        "bfcl",
        category,
        entry["id"],
        model,
        bool(verdict["valid"]),
        "" if verdict["valid"] else verdict.get("error_type") or "invalid",
        detail=detail,
        **figs,
    )


def _verdict(worker: BfclWorker, category: str, item_id: str, output: list[dict[str, Any]]) -> dict[str, Any]:
    if "relevance" in category:
        return worker.request("relevance", category=category, output=output)
    return worker.request("ast", category=category, id=item_id, output=output)


def model_ok(r: ItemResult) -> bool:
    """Whether the model's own output (before the agent's guards) passed the checker."""
    return bool(r.detail.get("model_ok", r.ok)) if not r.error else False


def _run_multi_turn(
    category: str,
    entry: dict[str, Any],
    engine: Engine,
    worker: BfclWorker,
    model: str,
    config: BfclConfig,
    count: Callable[[str], int],
) -> ItemResult:
    tag = f"botpsy_{uuid.uuid4().hex[:12]}"
    env = ApiEnv(bfcl_tools(entry["function"]), worker, category, entry["id"], tag)
    agent = Agent(
        engine,
        env,
        "",
        AgentConfig(
            max_steps=STEP_LIMIT + 1,
            max_tokens=config.max_tokens,
            temperature=config.temperature,
            thinking=config.thinking,
            grounding_guard=config.grounding_guard,
            limits_guard=config.limits_guard,
            copy_guide=config.copy_guide,
        ),
    )
    agent.fmt = BfclFormat(engine.chat_format.name)
    missed = entry.get("missed_function", {})
    # Held-out functions are announced at their turn, but BFCL executes any method of the involved
    # classes at any time (one gold answer calls one early): parse and run them from the start.
    for funcs in missed.values():
        for tool in bfcl_tools(funcs):
            if tool.name not in env.toolbox:
                env.toolbox.add(tool)
                agent.tools[tool.name] = tool.parameters
    output: list[list[list[dict[str, Any]]]] = []
    force_quit = False
    try:
        for t, turn in enumerate(entry["question"]):
            if str(t) in missed:
                added = bfcl_tools(missed[str(t)])
                listing = "\n".join(json.dumps(tool.schema(), ensure_ascii=False) for tool in added)
                earlier, user = [], f"<tools>\n{listing}\n</tools>\n{ADDED_FUNCTIONS_PROMPT}"
            else:
                _, earlier, user = _question_turns(turn)
            trace = item_turn(agent, earlier, user)
            output.append([_decoded(m) for m in trace.messages if m.role == "assistant" and m.tool_calls])
            if trace.stopped == "error":
                raise EngineError(
                    next(
                        (e.data["message"] for e in reversed(trace.events) if e.kind == "error"),
                        "backend error",
                    )
                )
            if trace.stopped == "step_limit":
                force_quit = True
                break
        verdict = worker.request(
            "multi_turn", category=category, id=entry["id"], tag=tag, output=output, force_quit=force_quit
        )
    finally:
        try:
            worker.request("forget", tag=tag)
        except WorkerError:
            pass
    figs = trace_figures(agent.trace, count)
    return ItemResult(
        "bfcl",
        category,
        entry["id"],
        model,
        bool(verdict["valid"]),
        "" if verdict["valid"] else verdict.get("error_type") or "invalid",
        detail={"turns": len(output), "calls": sum(len(s) for turn in output for s in turn)},
        **figs,
    )


@dataclass
class BfclReport:
    model: str
    categories: dict[str, dict[str, Any]]
    summary: dict[str, Any]
    failures: dict[str, int]
    results: list[ItemResult] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        r4 = lambda x: round(x, 4) if isinstance(x, float) else x  # noqa: E731
        return {
            "suite": "bfcl",
            "model": self.model,
            "overall": r4(self.summary["overall"]),
            "overall_leaderboard": r4(self.summary["overall_leaderboard"]),
            "groups": {k: r4(v) for k, v in self.summary["groups"].items()},
            "categories": {
                c: {**v, "accuracy": r4(v["accuracy"]), "model_accuracy": r4(v.get("model_accuracy"))}
                for c, v in self.categories.items()
            },
            "n": sum(v["total"] for v in self.categories.values()),
            "failures": self.failures,
        }


def evaluate_bfcl(
    categories: list[str],
    model: str,
    engine_for: Callable[[str, dict[str, Any], Any], Engine],
    config: BfclConfig = BfclConfig(),
    out: str | Path | None = None,
    progress: Callable[[ItemResult], None] | None = None,
    on_category: Callable[[str, int], None] | None = None,
    worker: BfclWorker | None = None,
    run_config: dict[str, Any] | None = None,
) -> BfclReport:
    """Run `categories` for one model. `engine_for(category, entry, truth)` gives the item's engine
    (the same engine every time for a real model; a fresh oracle per item for the oracle)."""
    require_bfcl()
    cache = ResultCache(out, "bfcl", model, {"model": model, **(run_config or {}), **config.__dict__})
    own = worker is None
    worker = worker or BfclWorker()
    results: list[ItemResult] = []
    per_category: dict[str, dict[str, Any]] = {}
    try:
        for category in categories:
            full = load_category(category)
            entries = sample(full, config.limit)
            truth = load_truth(category, full)
            if on_category:
                on_category(category, len(entries))

            def one(entry: dict[str, Any], category: str = category, truth: dict = truth) -> ItemResult:
                engine = engine_for(category, entry, truth.get(entry["id"]))
                return run_item(category, entry, engine, worker, model, config)

            rs = run_items(((category, e["id"], e) for e in entries), one, cache, "bfcl", model, progress)
            results.extend(rs)
            per_category[category] = {
                "accuracy": sum(r.ok for r in rs) / len(rs) if rs else 0.0,
                "correct": sum(r.ok for r in rs),
                "total": len(rs),
                "held": sum(bool(r.detail.get("held")) for r in rs),
                "model_accuracy": sum(model_ok(r) for r in rs) / len(rs) if rs else 0.0,
            }
    finally:
        if own:
            worker.close()
    return BfclReport(model, per_category, aggregate(per_category), failure_counts(results), results)
