"""The agent loop: request → model → parsed calls → confirmation → tools → results → … → answer.

The conversation lives as token ids and only grows (`Agent.ids`), so each model step prefills just
the blocks appended since the last one. Every step is recorded in a `Trace`: the messages, the
exact ids with a mask of the generated ones, timings, parse errors and confirmation decisions.

Bad model output never ends a session: parse errors and refused calls go back to the model as
`<tool_response>` errors and count against the step limit.

Guards (`agent.guards`): reasoning that loops or runs past its budget is cut with a forced
`</think>` and the step goes on to an answer; an answer that claims an action no tool call made
gets one nudged retry; a call with a number nobody stated is not run, and the user is asked for
it (`agent.grounding`). On llama.cpp, a lazy grammar (`engine.grammar`) holds every tool call to
the installed tools' schemas from `<tool_call>` on, so calls are well-formed. The trigger only sees
text generated in the same engine call, so two things keep a call inside one: a reasoning chunk
that closes `</think>` is kept only through it and the answer is generated in one piece, and a
generation the token cap cuts inside a call is made again once with `call_grace` more tokens.
Both drop generated tokens, which a hybrid model (Qwen3.5 on llama.cpp) can only do by reading the
whole conversation again; there (`engine.cheap_rollback` False) the chunk is kept whole and a cut
call continues, and the parser checks what the grammar could not hold.
With many tools installed, only the top-k relevant ones enter the prompt
(`agent.retrieval`), picked once per conversation so later turns keep the cached prefix.

A conversation held elsewhere (an evaluation item's earlier turns) enters with `Agent.seed`, as
the turns the runtime renders, before the next `send`.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from typing import Any, Literal, Protocol

from botpsy.agent import dates, facts, grounding, guards, history, limits, provenance
from botpsy.agent.capabilities import is_capability_question
from botpsy.agent.provenance import GUARD_SOURCES
from botpsy.agent.retrieval import more_tools, select_tools, tool_prior
from botpsy.engine.base import Engine, EngineError, Generation
from botpsy.protocol.formats import IM_END, THINK_CLOSE
from botpsy.protocol.messages import Event, Message, ToolCall, Trace
from botpsy.protocol.transcript import Transcript
from botpsy.tools.base import Tool, Toolbox
from botpsy.tools.registry import CAPABILITY_REASONING, capability_answer

CALL_OPEN, CALL_CLOSE = "<tool_call>", "</tool_call>"


class Environment(Protocol):
    toolbox: Toolbox

    def call(self, name: str, arguments: dict[str, Any]) -> str: ...


ConfirmFn = Callable[[ToolCall, Tool], bool]


# Trace events after which a step's calls did not run: held for the user, or sent back to the model.
HELD_EVENTS = frozenset({"grounding_guard", "limits_guard", "limits_retry"})


def approve_all(call: ToolCall, tool: Tool) -> bool:
    return True


def decline_all(call: ToolCall, tool: Tool) -> bool:
    return False


def declined_result(name: str) -> str:
    """The tool response of a call the user declined (training data shows the model the same text)."""
    return json.dumps({"error": f"the user declined {name}; do not retry it, say so instead"})


def is_error_result(result: str) -> bool:
    """Whether a tool response reports a failure (every error path answers `{"error": ...}`)."""
    try:
        parsed = json.loads(result)
    except (json.JSONDecodeError, TypeError):
        return False
    return isinstance(parsed, dict) and "error" in parsed


# `tool_top_k="auto"`: every tool while their preamble takes at most this share of the context
# window (the rest is the conversation's), else the AUTO_TOP_K most relevant. All 14 suites'
# preamble is about 8,400 tokens, twice the embedded model's 4,096-token window; it saw 12
# retrieved tools in training (`data.mix.MixConfig.tool_top_k`).
AUTO_PREAMBLE_SHARE = 0.5
AUTO_TOP_K = 12


@dataclass(frozen=True)
class AgentConfig:
    max_steps: int = 8  # model steps per user message before giving up
    max_tokens: int = 384  # generated tokens per model step (the token cap)
    temperature: float = 0.0
    thinking: bool = True  # open every assistant turn with <think>
    # Loop guard (agent/guards.py). Reasoning tokens per model step before a forced </think>:
    # "auto" keeps `answer_reserve` tokens of `max_tokens` for the answer, so a long reasoning
    # ends in an answer instead of a token-cap parse error; 0 or None: no budget.
    reasoning_budget: int | Literal["auto"] | None = "auto"
    answer_reserve: int = 128  # tokens left to answer after any cut (also what "auto" keeps)
    # Check the reasoning for loops (`agent.detectors.reasoning_loop`) every this many generated
    # tokens; 0: never. The detector needs 4 repeats of a 10-word span, so a shorter period
    # only adds engine calls.
    loop_check_every: int = 64
    phantom_retry: bool = True  # one nudged retry when the answer claims an action no call made
    # Show only the k tools most relevant to the first request (agent/retrieval.py); 0: all;
    # "auto": all while their preamble fits in AUTO_PREAMBLE_SHARE of the context window, else
    # AUTO_TOP_K (what the CLI does unless told).
    tool_top_k: int | Literal["auto"] = 0
    # Constrain tool calls with a grammar from `<tool_call>` on (engine/grammar.py), on engines
    # that take one (llama.cpp); others ignore it.
    tool_grammar: bool = True
    # A generation the token cap cuts inside a tool call is made again, once, with this many more
    # tokens, so the call can close (and the grammar, which a continuation would not see
    # triggered, holds all of it). 0: a cut call goes to the parser as it is.
    call_grace: int = 128
    # "What can you do?" asked on its own is answered by code from the installed suites
    # (`agent.capabilities`), without a model step; False leaves it to the model.
    capabilities_by_code: bool = True
    # A step whose call holds a number the conversation never stated is not run; the agent asks
    # the user for the value instead (agent/grounding.py). False runs every call as the model wrote it.
    grounding_guard: bool = True
    # A step whose call breaks a limit its tool declares (a pattern, a bound, a length, a format) is
    # not run (agent/limits.py): the user is told when the value is theirs, the model otherwise.
    limits_guard: bool = True
    # A call's text value that has begun to copy the user's words goes on copying them where the
    # model garbles them (engine/copy_guide.py), on engines that take a guide (llama.cpp).
    copy_guide: bool = True


def open_call(text: str) -> bool:
    """Whether `text` ends inside a tool call: a `<tool_call>` after the last `</tool_call>`."""
    return text.rfind(CALL_OPEN) > text.rfind(CALL_CLOSE)


def skip_shown(on_text: Callable[[str], None] | None, shown: str) -> Callable[[str], None] | None:
    """A stream callback that drops the pieces repeating `shown` (already streamed) and passes the rest."""
    if on_text is None or not shown:
        return on_text
    seen = ""

    def emit(piece: str) -> None:
        nonlocal seen
        if len(seen) >= len(shown):
            on_text(piece)
            return
        seen += piece
        if shown.startswith(seen):
            return
        # caught up inside this piece: stream the new part; a sampled repeat that went another
        # way is streamed from this piece on
        on_text(seen[len(shown) :] if seen.startswith(shown) else piece)
        seen = shown + " "  # skip no more

    return emit


def _seed_problem(messages: list[Message]) -> str:
    """Why `messages` cannot follow a conversation at rest as turns ("" when they can)."""
    expect, owed = "user", 0  # at rest: a user message opens the next turn
    for i, m in enumerate(messages):
        if m.role != expect:
            wanted = {"user": "a user message", "assistant": "an answer or a call", "tool": "a call's result"}
            return f"message {i} is a {m.role!r} message where {wanted[expect]} must come"
        if m.role == "user":
            expect = "assistant"
        elif m.role == "assistant":
            owed = len(m.tool_calls)
            expect = "tool" if owed else "user"
        else:
            owed -= 1
            expect = "tool" if owed else "assistant"
    if expect != "user":
        return "the last message must be an answer"
    return ""


class Agent:
    def __init__(
        self,
        engine: Engine,
        env: Environment,
        system: str = "",
        config: AgentConfig = AgentConfig(),
        confirm: ConfirmFn = approve_all,
        on_event: Callable[[Event], None] | None = None,
        on_text: Callable[[str], None] | None = None,
        today: date | None = None,
        confirm_data: ConfirmFn | None = None,
    ):
        self.engine, self.env, self.config, self.confirm = engine, env, config, confirm
        # Asked instead of `confirm` for an acting call whose arguments or intent come from a tool
        # result (agent/provenance.py); the CLI never lets a standing --yes answer it.
        self.confirm_data = confirm_data or confirm
        self._data_held: list[tuple[str, str]] = []  # (tool, why) declined this turn for that reason
        # With a date, each user turn gets its date and time phrases resolved by code (agent.dates).
        self.today = today
        self._last_user = ""  # the previous user turn as typed, for the dates it names
        self.fmt = engine.chat_format
        self.on_event, self.on_text = on_event, on_text
        # Every installed tool stays callable; retrieval only narrows what the prompt shows.
        self.tools = {t.name: t.parameters for t in env.toolbox}
        self.trace = Trace(messages=[Message("system", system)] if system else [])
        # The ids the model reads, built as SFT builds them (protocol.transcript); the trace's
        # token_ids and generated_mask are its lists.
        self.transcript = Transcript(
            engine.tokenize, engine.bos_ids, ids=self.trace.token_ids, mask=self.trace.generated_mask
        )
        self._end_ids = engine.tokenize(IM_END)
        self._acting = guards.acting_tools(env.toolbox)
        self._budget = guards.resolve_budget(
            config.reasoning_budget, config.max_tokens, config.answer_reserve
        )
        self._system: str | None = system
        self._shown: set[str] | None = None  # tool names the prompt shows, under retrieval
        every_tool = None  # the system block with every tool, as ids, when "auto" measured it
        self.top_k = config.tool_top_k
        if self.top_k == "auto":
            every_tool = engine.tokenize(self.fmt.system(env.toolbox.schemas(), system))
            fits = engine.n_ctx is None or len(every_tool) <= AUTO_PREAMBLE_SHARE * engine.n_ctx
            self.top_k = 0 if fits else AUTO_TOP_K
        if not (0 < self.top_k < len(env.toolbox)):
            self.transcript.add(every_tool or self.fmt.system(env.toolbox.schemas(), system), "system")
            self._system = None  # rendered; otherwise it waits for the first request
        self._after_completion = False
        # Dropping generated tokens keeps the engine's cache (False for hybrid llama.cpp models).
        self._rollback = engine.cheap_rollback
        self._grammar = None
        if config.tool_grammar and self.tools:
            # Every installed tool, as the parser accepts: retrieval narrows the prompt, not the calls.
            self._grammar = engine.tool_grammar(env.toolbox.schemas())
        self._start = history.take(self)  # what `reset` returns to

    def _emit(self, kind: str, **data: Any) -> None:
        ev = Event(kind, data)  # type: ignore[arg-type]
        self.trace.events.append(ev)
        if self.on_event:
            self.on_event(ev)

    def _open_turn(self, block: str, request: bool = False) -> None:
        kind = "request" if request else "results"
        self.transcript.open_turn(self.fmt, block, kind, self.config.thinking, self._after_completion)
        self._after_completion = False

    # ---- history (agent/history.py) ------------------------------------------------------------
    def checkpoint(self) -> history.Checkpoint:
        """Where the conversation stands; `rollback` returns to it (an interrupted or failed request)."""
        return history.take(self)

    def rollback(self, cp: history.Checkpoint) -> None:
        history.restore(self, cp)

    def reset(self) -> None:
        """Start the conversation over (the tools and system prompt stay; the engine keeps its cache)."""
        history.restore(self, self._start)

    def _make_room(self, request: str) -> None:
        """Drop the oldest turns when the history and this request would crowd the window."""
        n_ctx = self.engine.n_ctx
        if not n_ctx:
            return
        extra = self.engine.count_tokens(request) + 16  # the request and its turn markup
        limit = n_ctx - history.room(n_ctx, self.config.max_tokens)
        k = history.turns_to_drop(self.transcript.turns(), len(self.trace.token_ids), extra, limit)
        if k:
            dropped = history.drop_turns(self, k)
            self._emit("history_trimmed", turns=k, tokens=dropped, kept=len(self.trace.token_ids))

    def _retrieve_tools(self, request: str) -> None:
        """Render the system block with the tools most relevant to the first request (once)."""
        assert self._system is not None
        tools = list(self.env.toolbox)
        chosen = select_tools(request, tools, self.top_k)
        self.transcript.add(self.fmt.system([t.schema() for t in chosen], self._system), "system")
        self._system = None
        self._shown = {t.name for t in chosen}
        self._emit("tool_retrieval", tools=[t.name for t in chosen], installed=len(tools))

    def _later_tools(self, request: str) -> str:
        """For a later request under retrieval: the tools it needs that the prompt lacks, as a note."""
        if self._shown is None:
            return ""
        added = more_tools(request, list(self.env.toolbox), self._shown, self.top_k)
        if not added:
            return ""
        self._shown |= {t.name for t in added}
        self._emit(
            "tool_retrieval", tools=[t.name for t in added], installed=len(self.env.toolbox), later=True
        )
        return self.fmt.more_tools([t.schema() for t in added])

    def _content_ids(self, gen: Generation) -> list[int]:
        """The generated ids without the end-of-turn marker the engine appends at the cap."""
        n = len(self._end_ids)
        if n and gen.ids[-n:] == self._end_ids:
            return gen.ids[:-n]
        return gen.ids[:-1]

    def _through_close(self, before: str, ids: list[int]) -> list[int]:
        """The shortest prefix of `ids` after which `before` + its text holds `</think>`."""
        for k in range(1, len(ids) + 1):
            if THINK_CLOSE in before + self.engine.detokenize(ids[:k]):
                return ids[:k]
        return ids

    def _engine_generate(self, max_tokens: int, shown: str = "", before: str = "") -> Generation:
        """One engine call. `shown`: text already streamed that this call is expected to repeat;
        `before`: the step's text generated by earlier calls (a call may have opened there)."""
        gen = self._call_engine(max_tokens, skip_shown(self.on_text, shown))
        grace = self.config.call_grace
        if grace <= 0 or gen.stop != "length" or not open_call(before + gen.text):
            return gen
        self._emit("call_grace", tokens=max_tokens, grace=grace)
        if self._rollback:
            # Cut inside a call: the same prompt again with more room. The prompt is cached, so
            # this costs the cut attempt's decode; the stream skips what it already showed.
            again = self._call_engine(max_tokens + grace, skip_shown(self.on_text, shown + gen.text))
            again.timing = guards.merge_timings([gen.timing, again.timing])
            return again
        # A model that cannot drop tokens cheaply (hybrid: a rollback re-reads the conversation)
        # continues the cut call instead; the grammar does not hold that continuation.
        body = self._content_ids(gen)
        more = self._call_engine(grace, self.on_text, body)
        timing = guards.merge_timings([gen.timing, more.timing])
        return Generation(body + more.ids, gen.text + more.text, more.stop, timing)

    def _call_engine(self, max_tokens: int, on_text, after: list[int] | None = None) -> Generation:
        """The engine on the conversation so far (plus `after`, generated ids not appended yet)."""
        extra: dict[str, Any] = {"grammar": self._grammar} if self._grammar is not None else {}
        if self.config.copy_guide and self.tools:  # no tools, no calls to guide
            users = [m.content for m in self.trace.messages if m.role == "user"]
            prior = tool_prior(" ".join(users), list(self.env.toolbox))
            guide = self.engine.copy_guide(users, self.tools, prior)
            if guide is not None:
                extra["guide"] = guide
        ids = self.trace.token_ids + after if after else self.trace.token_ids
        return self.engine.generate(ids, max_tokens, self.config.temperature, on_text=on_text, **extra)

    def _generate(self) -> tuple[str, str]:
        """One model step, appended to the history; returns (text, stop).

        Without a guard this is one engine call. With one, the reasoning is generated in chunks
        and checked between them (module doc of `agent.guards`); a cut appends a forced
        </think> that is masked as not generated, and the rest of the step follows.
        """
        cfg = self.config
        check_loops = cfg.loop_check_every > 0
        # Pausing needs an engine that continues the prompt ids as they are; the HTTP backend's chat
        # mode re-renders complete messages only and would drop a half-written reasoning.
        pausable = self.engine.mode != "chat"
        if not cfg.thinking or (self._budget is None and not check_loops) or not pausable:
            gen = self._engine_generate(cfg.max_tokens)
            self.transcript.add(gen.ids, "completion", generated=True)
            self.trace.timings.append(gen.timing)
            return gen.text, gen.stop
        text, used, parts, cut, shown = "", 0, [], False, ""
        while True:
            reasoning = not cut and THINK_CLOSE not in text
            if reasoning:
                n = cfg.max_tokens - used
                if self._budget is not None:
                    n = min(n, self._budget - used)
                if check_loops:
                    n = min(n, cfg.loop_check_every)
            else:
                n = max(cfg.max_tokens - used, cfg.answer_reserve) if cut else cfg.max_tokens - used
            gen = self._engine_generate(n, shown, text)
            shown = ""
            parts.append(gen.timing)
            body = self._content_ids(gen)
            text += gen.text
            used += len(body)
            if gen.stop != "length" or not reasoning or not body or used >= cfg.max_tokens:
                self.transcript.add(gen.ids, "completion", generated=True)
                self.trace.timings.append(guards.merge_timings(parts))
                return text, gen.stop
            if THINK_CLOSE in text and self._rollback:
                # The reasoning closed inside this chunk: keep it through </think> and generate
                # the answer in one call, so a tool call in it starts inside a generation (the
                # grammar's trigger sees `<tool_call>`) and the cap, not a chunk, bounds it.
                before = text[: len(text) - len(gen.text)]
                keep = self._through_close(before, body)
                kept = self.engine.detokenize(keep)
                self.transcript.add(keep, "completion", generated=True)
                text, used = before + kept, used - len(body) + len(keep)
                shown = gen.text[len(kept) :] if gen.text.startswith(kept) else ""
                continue
            self.transcript.add(body, "completion", generated=True)  # paused: no end-of-turn yet
            if THINK_CLOSE in text:
                continue  # closed inside this chunk (no cheap rollback): generate the rest at once
            reason = guards.cut_reason(text, used, self._budget, check_loops)
            if reason is None:
                continue
            self.transcript.add(guards.FORCED_CLOSE, "forced")
            text += guards.FORCED_CLOSE
            if self.on_text:
                self.on_text(guards.FORCED_CLOSE)
            cut = True
            self._emit("loop_guard", reason=reason, reasoning_tokens=used, budget=self._budget)

    def _user_turn(self, user_text: str, later: str = "", **data: Any) -> str:
        """The user's words as the model reads them (resolved dates, tools added later), kept in
        the messages and as a "user" event; returns that text."""
        reply = next((m.content for m in reversed(self.trace.messages) if m.role == "assistant"), "")
        seen = dates.annotate(user_text, self.today, dates.answered_turn(self._last_user, reply)) + later
        self._last_user = user_text
        self.trace.messages.append(Message("user", seen))
        self._emit("user", text=user_text, **data)
        return seen

    def seed(self, messages: list[Message]) -> None:
        """Start from turns held elsewhere (an evaluation item's earlier turns, a client's history):
        user, assistant and tool messages enter the trace and the model's ids as if this agent had
        held them, rendered by the transcript's one construction (`Transcript.extend`), masked as
        not generated. User words read as `send` reads them (their resolved dates; the guards
        count them as the user's). The turns must read as a conversation: a user message after an
        answer, each call's results right after it, and an answer last, so `send` opens the next turn.
        """
        last = self.trace.messages[-1] if self.trace.messages else Message("system")
        if last.role not in ("system", "assistant") or last.tool_calls:
            raise ValueError("seed needs a conversation at rest: its last message must be an answer")
        problem = _seed_problem(messages)
        if problem:
            raise ValueError(f"these turns cannot seed a conversation: {problem}")
        if not messages:
            return  # nothing to enter; tool retrieval waits for the first request
        if self._system is not None:
            self._retrieve_tools(" ".join(m.content for m in messages if m.role == "user"))
        turns = []
        for m in messages:
            if m.role == "user":
                m = Message("user", self._user_turn(m.content, seeded=True))
            else:
                m = copy.deepcopy(m)  # the trace never aliases the caller's messages
                self.trace.messages.append(m)
            turns.append(m)
        self._after_completion = self.transcript.extend(
            turns, self.fmt, self.config.thinking, self._after_completion, generated=False
        )

    def send(self, user_text: str) -> Trace:
        """Add a user message and run until the model answers without calling a tool."""
        later = ""
        if self._system is not None:
            self._retrieve_tools(user_text)
        else:
            later = self._later_tools(user_text)
        self.trace.not_done = []
        self._data_held = []
        seen = self._user_turn(user_text, later)
        self._make_room(seen)
        self._open_turn(self.fmt.user(seen), request=True)
        if self.config.capabilities_by_code and is_capability_question(user_text):
            known = capability_answer(self.env.toolbox)
            if known is not None:
                return self._answer_by_code(known, "capabilities", reasoning=CAPABILITY_REASONING)
        calls_made: list[str] = []  # acting calls of this turn that ran and succeeded
        not_done: list[str] = []  # calls of this turn that were declined or failed
        retried = False
        for step in range(self.config.max_steps):
            try:
                text, stop = self._generate()
            except EngineError as e:
                self._emit("error", message=str(e))
                self.trace.stopped = "error"
                return self.trace
            self._after_completion = True
            parsed = self.fmt.parse(text, self.tools, thinking=self.config.thinking)
            msg = parsed.message()
            self.trace.messages.append(msg)
            self._emit(
                "model",
                text=text,
                stop=stop,
                calls=[c.key() for c in parsed.calls],
                errors=[e.message for e in parsed.errors],
            )
            if parsed.errors:
                self.trace.parse_errors += 1
                results = [e.as_tool_result() for e in parsed.errors]
                for r in results:
                    self.trace.messages.append(Message("tool", r, name="parser"))
                self._open_turn(self.fmt.tool_results(results))
                continue
            if not parsed.calls:
                claims = guards.phantom_claims(msg.content, calls_made, self._acting, not_done)
                undone = guards.unresolved(not_done, calls_made)
                last_step = step == self.config.max_steps - 1
                if claims and self.config.phantom_retry and not retried and not last_step:
                    retried = True  # exactly one retry
                    nudge = guards.phantom_nudge(claims, undone)
                    self.trace.messages.append(Message("tool", nudge, name="phantom_guard"))
                    self._emit("phantom_guard", claims=claims)
                    self._open_turn(self.fmt.tool_results([nudge]))
                    continue
                if claims and undone:
                    # A claim that stands after a declined or failed call is false for certain:
                    # the user is told what did not happen, in code's words, never the claim.
                    msg.content = guards.not_done_answer(undone)
                    self._emit("claim_replaced", claims=claims, not_done=undone)
                self._check_money(msg)
                if self._data_held:
                    # What a tool result asked for and was not done is said in code's words.
                    msg.content = (msg.content + "\n\n" + provenance.held_note(self._data_held)).strip()
                self.trace.stopped = "token_cap" if stop == "length" else "answer"
                self.trace.not_done = undone
                return self.trace
            if self.config.limits_guard:
                limits.trim(parsed.calls, self._schemas(parsed.calls))  # before any guard keys a call
            held = self._ungrounded(parsed.calls) if self.config.grounding_guard else {}
            broke = self._broken(parsed.calls) if self.config.limits_guard else {}
            if held or limits.any_users(broke):
                return self._hold(msg, held, broke)
            if broke:
                # The model's own value breaks a limit: nothing runs; it reads why and tries again.
                results = [limits.held_result(c, broke.get(c.key())) for c in parsed.calls]
                for r in results:
                    self.trace.messages.append(Message("tool", r, name="limits_guard"))
                self._emit(
                    "limits_retry", calls=[c.key() for c in parsed.calls], broken=limits.as_data(broke)
                )
                self._open_turn(self.fmt.tool_results(results))
                continue
            repeats = guards.repeated_calls(parsed.calls, self._acting)
            if repeats:
                msg.tool_calls = [c for i, c in enumerate(parsed.calls) if i not in repeats]
                self._emit("repeated_calls", calls=[parsed.calls[i].key() for i in sorted(repeats)])
            results = []
            for i, c in enumerate(parsed.calls):
                if i in repeats:
                    results.append(guards.REPEATED_RESULT)
                    self.trace.messages.append(Message("tool", guards.REPEATED_RESULT, name="repeat_guard"))
                    continue
                r = self._execute(c)
                results.append(r)
                if c.name in self._acting:
                    (not_done if is_error_result(r) else calls_made).append(c.name)
                self.trace.messages.append(Message("tool", r, name=c.name))
            self._open_turn(self.fmt.tool_results(results))
        self.trace.stopped = "step_limit"
        self.trace.not_done = guards.unresolved(not_done, calls_made)
        self._emit("error", message=f"no answer after {self.config.max_steps} model steps")
        return self.trace

    def _check_money(self, msg: Message) -> None:
        """Currencies in the answer corrected to what the tool results say; unbacked amounts recorded."""
        sources = [m.content for m in self.trace.messages if m.role == "tool" and m.name not in GUARD_SOURCES]
        money = facts.check_money(msg.content, self.trace.messages, sources)
        if money.corrected:
            msg.content = money.answer
            self._emit("money_corrected", corrected=money.corrected)
        if money.unbacked:
            self._emit("unbacked_amount", amounts=money.unbacked)

    def _answer_by_code(self, text: str, kind: str, reasoning: str | None = None, **data: Any) -> Trace:
        """End the turn with an answer code wrote: a whole assistant turn, masked as not generated
        (with the reasoning training data gives the same turn, so the history matches it)."""
        msg = Message("assistant", text, reasoning)
        self.transcript.add(self.fmt.completion(msg, self.config.thinking), "answer")
        self._after_completion = True
        self.trace.messages.append(msg)
        self._emit(kind, text=text, **data)
        self.trace.stopped = "answer"
        return self.trace

    def _ungrounded(self, calls: list[ToolCall]) -> grounding.Held:
        box = self.env.toolbox
        tools = {c.name: grounding.tool_numbers(box[c.name].schema(), box[c.name].defaults) for c in calls}
        return grounding.held_calls(calls, tools, self.trace.messages, self.users_words())

    def _hold(self, msg: Message, held: grounding.Held, broke: dict[str, list[limits.Broken]]) -> Trace:
        """Run none of a step's calls and ask the user, in one reply: about the values of theirs a
        tool does not take (`agent.limits`) and for the values a call lacks (a required number
        nobody stated, an empty required argument: `agent.grounding`).

        The calls leave the message, as a parse error's would: the assistant did not act, so
        evaluation does not count them as calls made; the events keep what the model wrote."""
        calls, msg.tool_calls = msg.tool_calls, []
        for c in calls:
            key = c.key()
            if key in broke and key not in held:
                self.trace.messages.append(
                    Message("tool", limits.held_result(c, broke[key]), name="limits_guard")
                )
            else:
                self.trace.messages.append(
                    Message("tool", grounding.held_result(c, held.get(key)), name="grounding_guard")
                )
        self._open_turn(self.fmt.tool_results([m.content for m in self.trace.messages[-len(calls) :]]))
        told = limits.tell_user(broke, calls) if limits.any_users(broke) else ""
        data = {"calls": [c.key() for c in calls]}
        if not held:
            return self._answer_by_code(
                f"{told} What should I use instead?", "limits_guard", **data, broken=limits.as_data(broke)
            )
        if told:
            self._emit("limits_guard", **data, broken=limits.as_data(broke))
        return self._answer_by_code(
            f"{told} {grounding.ask_for(held, calls)}".strip(),
            "grounding_guard",
            **data,
            held={k: dict(v) for k, v in held.items()},
            paths=held.paths,
        )

    def _schemas(self, calls: list[ToolCall]) -> dict[str, dict[str, Any]]:
        return {c.name: self.env.toolbox[c.name].parameters for c in calls}

    def _broken(self, calls: list[ToolCall]) -> dict[str, list[limits.Broken]]:
        return limits.step_broken(calls, self._schemas(calls), self.users_words())

    def users_words(self) -> str:
        """The user's requests as they typed them: without the resolved-dates line and the tools'
        note the agent adds to a user turn (the trace's "user" events keep the typed text)."""
        return "\n".join(e.data["text"] for e in self.trace.events if e.kind == "user")

    def _execute(self, call: ToolCall) -> str:
        tool = self.env.toolbox[call.name]
        if tool.labels.needs_confirmation:
            why = provenance.data_driven(call, tool, self.trace.messages)
            if why:
                self._emit("data_driven", call=call.key(), reason=why)
            approved = (self.confirm_data if why else self.confirm)(call, tool)
            self._emit("confirm", call=call.key(), approved=approved, labels=tool.labels.as_dict())
            if not approved:
                if why:
                    self._data_held.append((call.name, why))
                    return provenance.held_result(call.name, why)
                return declined_result(call.name)
        result = self.env.call(call.name, call.arguments)
        self._emit("tool", name=call.name, result=result[:2000])
        return result
