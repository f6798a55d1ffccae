"""`botpsy run | chat | demo`: the commands that talk to the model, and what they share.

What they share: loading the engine and the workspace, the confirmation prompt, one stderr line
per agent event, the timing line after each answer, and the spinner while the model thinks. As in
`cli.py`, each command imports the agent and the engine inside its function, so building the
parser loads neither.
"""

from __future__ import annotations

import atexit
import json
import sys
import tempfile
from contextlib import contextmanager
from datetime import date

from botpsy.cli_control import wire
from botpsy.term import UsageError, console, out, say, styled


def open_engine(model: str | None, n_ctx: int = 4096, threads: int | None = None):
    from botpsy.engine.load import load_engine

    engine = load_engine(model, backend="llamacpp", n_ctx=n_ctx, n_threads=threads)
    atexit.register(engine.close)  # before the interpreter unloads llama.cpp's library
    return engine


def _confirm_fn(yes: bool):
    from botpsy.agent.loop import approve_all, decline_all

    if yes:
        return approve_all
    if not sys.stdin.isatty():
        return decline_all
    return _ask


def _confirm_data_fn(yes: bool):
    """For a call that text inside a tool result asked for (agent/provenance.py): `--yes` does not
    cover it; a terminal is asked, anything else declines."""
    from botpsy.agent.loop import decline_all

    return _ask if sys.stdin.isatty() else decline_all


def _ask(call, tool) -> bool:

    labels = ", ".join(k for k, v in tool.labels.as_dict().items() if v)
    args = ", ".join(f"{k}={v!r}" for k, v in call.arguments.items())
    prompt = styled(("Allow", "bold yellow"), f" {call.name}({args}) ", (f"({labels})", "dim"), "? [y/N] ")
    with _paused():
        answer = console.input(prompt)
    return answer.strip().lower() in ("y", "yes")


def _workspace(root: str, suites: str, extra_tools=None):
    from botpsy.stores.workspace import Workspace

    names = [x.strip() for x in suites.split(",") if x.strip()]
    if names == ["all"]:
        names = []
    return Workspace(root, suites=names or None, extra_tools=extra_tools)


def _system_today() -> str:
    from botpsy.protocol.prompt import runtime_system

    return runtime_system(date.today())


def _note(*parts: str | tuple[str, str]) -> None:
    say(console, *parts)


def _print_event(ev, note=_note) -> None:
    """One stderr line for an event worth showing; `note` prints it (chat first ends its open answer line)."""
    if ev.kind == "model":
        for c in ev.data.get("calls", []):
            call = json.loads(c)
            args = ", ".join(f"{k}={v!r}" for k, v in call["arguments"].items())
            note("  ", (f"→ {call['name']}", "cyan"), f"({args})")
        for e in ev.data.get("errors", []):
            note("  ", ("✗ unparseable output:", "red"), f" {e}")
    elif ev.kind == "tool":
        note("  ", (f"← {ev.data['result'][:200]}", "dim"))
    elif ev.kind == "data_driven":
        note("  ", ("asks first:", "yellow"), f" {ev.data['reason']}")
    elif ev.kind == "confirm" and not ev.data["approved"]:
        note("  ", ("declined", "yellow"), " (pass --yes to approve actions)")
    elif ev.kind == "error":
        note("  ", (str(ev.data["message"]), "red"))
    elif ev.kind == "loop_guard":
        why = "it looped" if ev.data["reason"] == "loop" else "it reached its budget"
        note(
            "  ",
            (f"reasoning cut after {ev.data['reasoning_tokens']} tokens", "yellow"),
            f" ({why})",
        )
    elif ev.kind == "phantom_guard":
        note("  ", ("the answer claimed an action no tool made; asking for the call", "yellow"))
    elif ev.kind == "money_corrected":
        note(
            "  ",
            ("currency corrected to the tool result's:", "yellow"),
            f" {'; '.join(ev.data['corrected'])}",
        )
    elif ev.kind == "grounding_guard":
        note("  ", ("not run: the call used a number you never gave; asking you for it", "yellow"))
    elif ev.kind == "limits_guard":
        note("  ", ("not run: a value you gave is not one the tool takes; asking you for another", "yellow"))
    elif ev.kind == "limits_retry":
        note("  ", ("not run: a value broke a limit of its tool; the model is told", "yellow"))
    elif ev.kind == "claim_replaced":
        undone = ", ".join(ev.data["not_done"])
        note(
            "  ",
            (f"the answer claimed what {undone} did not do (declined or failed); it is replaced", "yellow"),
        )
    elif ev.kind == "tool_retrieval":
        note("  ", (f"tools: {', '.join(ev.data['tools'])} (of {ev.data['installed']})", "dim"))


def _timing_line(trace, since: int = 0) -> str:
    """Timings of the model steps from `since` on: one turn's, in a chat whose trace keeps growing."""
    timings = trace.timings[since:]
    if not timings:
        return ""
    t0 = timings[0]
    gen = sum(t.generated_tokens for t in timings)
    dec = [t.decode_tok_s for t in timings if t.decode_tok_s > 0]
    return (
        f"ttft {t0.ttft_s * 1000:.0f} ms · prefill {t0.prefill_tok_s:.0f} tok/s · "
        f"decode {sum(dec) / max(len(dec), 1):.0f} tok/s · {gen} tokens in {len(timings)} steps"
    )


_status: list = []  # the spinner shown while the model works (chat on a terminal), if any


@contextmanager
def _working(text: str = "thinking…"):
    """A spinner on stderr while the model generates, so a long step is not a blank screen.
    Only on a terminal; the confirmation prompt pauses it (`_paused`)."""
    if not console.is_terminal:
        yield
        return
    with console.status(styled((text, "dim"))) as status:
        _status.append(status)
        try:
            yield
        finally:
            _status.pop()


@contextmanager
def _paused():
    status = _status[-1] if _status else None
    if status is not None:
        status.stop()
    try:
        yield
    finally:
        if status is not None:
            status.start()


def _spinner(on: bool) -> None:
    """Start or stop the spinner of `_working`, if one runs (streamed text must not share its line)."""
    if _status:
        _status[-1].start() if on else _status[-1].stop()


def _agent_config(a, engine):
    """The agent settings from the command line, with the model's own thinking mode: a model
    trained without <think> (a Qwen2.5 instruct GGUF, a manifest saying `thinking: false`) gets
    an empty think block instead of one it would never close."""
    from botpsy.agent.loop import AgentConfig

    return AgentConfig(
        max_tokens=a.max_tokens,
        tool_top_k=getattr(a, "tool_top_k", "auto"),
        tool_grammar=a.grammar,
        copy_guide=getattr(a, "copy_guide", True),
        thinking=engine.thinking,
    )


# ---- commands -----------------------------------------------------------------------------------


def cmd_run(a) -> int:
    from botpsy.agent.loop import Agent
    from botpsy.agent.provenance import action_request

    if not a.request.strip():
        raise UsageError(
            'the request is empty; say what you want, e.g. botpsy run "What do I have tomorrow?"'
        )
    engine = open_engine(a.model, n_ctx=a.n_ctx, threads=a.threads)
    env = _workspace(a.workspace, a.suites)
    # Grants, the preview in the confirmation, the journal and --dry-run (cli_control.wire).
    confirm, confirm_data, on_event = wire(
        env,
        _confirm_fn(a.yes),
        _confirm_data_fn(a.yes),
        None if a.json else _print_event,
        a.yes,
        a.dry_run,
        not a.json,
    )
    agent = Agent(
        engine,
        env,
        _system_today(),
        _agent_config(a, engine),
        confirm,
        confirm_data=confirm_data,
        on_event=on_event,
        today=date.today(),
    )
    trace = agent.send(a.request)
    if a.dry_run:
        say(console, ("dry run:", "yellow"), " every action was previewed; nothing was changed")
    if a.json:
        d = trace.to_dict()
        d["model"] = engine.name
        d["workspace"] = str(env.root)
        say(out, json.dumps(d, ensure_ascii=False))
    else:
        say(out, trace.final_answer or "(no answer)")
        say(console, (_timing_line(trace), "dim"))
    if env.store_errors:
        say(console, ("error:", "red"), f" {env.store_errors[0]}")
        return 1
    if trace.not_done:
        say(console, ("not carried out:", "yellow"), f" {', '.join(trace.not_done)} was declined or failed")
        return 1
    for ev in trace.events:
        if ev.kind == "unbacked_amount":
            say(console, ("check:", "yellow"), f" no tool result states {', '.join(ev.data['amounts'])}")
    verb = action_request(a.request, env.toolbox)
    if (
        verb
        and trace.stopped == "answer"
        and not _acted(trace, env.toolbox)
        and "?" not in trace.final_answer
    ):
        # An answer to "Move my appointment…" that neither acted nor asked anything did not do it.
        say(console, ("not carried out:", "yellow"), f" the request asks to {verb} and no action was taken")
        return 1
    return 0 if trace.stopped == "answer" else 1


def _acted(trace, toolbox, since: int = 0) -> bool:
    """Whether an acting (mutating or egress) call ran and succeeded in the trace (from event `since` on)."""
    from botpsy.agent.guards import acting_tools
    from botpsy.agent.loop import is_error_result

    acting = acting_tools(toolbox)
    return any(
        ev.kind == "tool" and ev.data["name"] in acting and not is_error_result(ev.data["result"])
        for ev in trace.events[since:]
    )


def cmd_chat(a) -> int:
    from botpsy.agent.loop import Agent

    engine = open_engine(a.model, n_ctx=a.n_ctx, threads=a.threads)
    conn, extra = None, []
    if a.mcp:
        from botpsy.tools.mcp_client import McpStartError, connect

        try:
            # The user's environment, as the shell would give it: a server that reads its API
            # key from there must start (issue 36, item 13).
            conn, extra = connect(a.mcp, pass_env=True)
        except McpStartError as e:
            raise UsageError(f"cannot start the MCP server {a.mcp!r}: {e}") from None
        say(console, (f"MCP: {len(extra)} tool(s) from {a.mcp}", "dim"))
    env = _workspace(a.workspace, a.suites, extra)
    config = _agent_config(a, engine)
    printer = _ChatPrinter(config.thinking)
    confirm, confirm_data, on_event = wire(
        env, _confirm_fn(a.yes), _confirm_data_fn(a.yes), printer.event, a.yes
    )
    agent = Agent(
        engine,
        env,
        _system_today(),
        config,
        confirm,
        confirm_data=confirm_data,
        on_event=on_event,
        on_text=printer.stream.feed,
        today=date.today(),
    )
    say(
        console,
        ("botpsy", "bold"),
        f" · {engine.name} · workspace {env.root} · /help for commands, empty line or Ctrl-D to quit",
    )
    while True:
        try:
            text = console.input(styled(("you>", "bold green"), " "))
        except EOFError:
            break
        except KeyboardInterrupt:  # at the prompt: a fresh prompt, as in a shell
            say(console, "")
            continue
        if not text.strip():
            break
        if text.strip().startswith("/"):
            _chat_command(text.strip(), agent)
            continue
        mark = agent.checkpoint()
        printer.new_turn()
        try:
            with _working():
                trace = agent.send(text)
        except KeyboardInterrupt:
            agent.rollback(mark)
            printer.close()
            say(
                console,
                ("interrupted: that request is dropped (actions already approved stay done)", "yellow"),
            )
            continue
        printer.finish(_turn_answer(trace, mark.lengths["messages"]) or "(no answer)")
        say(console, (_timing_line(trace, since=mark.lengths["timings"]), "dim"))
        if trace.stopped in ("error", "step_limit") and not _acted(
            trace, env.toolbox, mark.lengths["events"]
        ):
            # A failed turn that changed nothing would only crowd the next ones: it leaves the history.
            agent.rollback(mark)
    if conn is not None:
        conn.close()
    return 0


class _ChatPrinter:
    """A chat turn as it is generated: the answer streams to stdout as far as it can stand
    (`agent.stream.AnswerStream` holds back every action claim until its step is decided), event
    lines go to stderr on lines of their own, and `finish` prints the rest of the final answer, or
    the whole of it marked as a correction when the guard replaced what had been shown."""

    def __init__(self, thinking: bool):
        from botpsy.agent.stream import AnswerStream

        self.stream = AnswerStream(self._show, thinking)
        self.open = False  # a "botpsy>" line on stdout waits for more of its answer
        self.answer: str | None = None  # what was shown of the last answer step (None: none yet)

    def new_turn(self) -> None:
        self.stream.reset()
        self.answer = None

    def _show(self, text: str) -> None:
        if not self.open:
            _spinner(False)
            say(out, ("botpsy>", "bold blue"), " ", end="")
            self.open = True
        say(out, text, end="")

    def close(self) -> None:
        if self.open:
            say(out, "")
            self.open = False

    def _note(self, *parts: str | tuple[str, str]) -> None:
        self.close()
        _note(*parts)

    def event(self, ev) -> None:
        if ev.kind == "model":
            self.stream.end_step()
            is_answer = not (ev.data.get("calls") or ev.data.get("errors"))
            self.answer = self.stream.shown if is_answer else None
        _print_event(ev, self._note)
        if not self.open:
            _spinner(True)  # the model works on (or the turn ends, which stops it)

    def finish(self, final: str) -> None:
        shown = self.answer or ""
        if shown and final.startswith(shown) and self.open:
            say(out, final[len(shown) :])
            self.open = False
            return
        self.close()
        if shown and not final.startswith(shown):
            say(out, ("botpsy>", "bold blue"), " ", ("(corrected) ", "bold yellow"), final)
        else:
            say(out, ("botpsy>", "bold blue"), f" {final}")


def _turn_answer(trace, since: int) -> str:
    """The answer of the turn whose messages start at `since` ("" when it ended without one; a
    chat's trace also holds the answers of earlier turns)."""
    for m in reversed(trace.messages[since:]):
        if m.role == "assistant" and not m.tool_calls:
            return m.content
    return ""


CHAT_HELP = """commands:
  /help    this list
  /reset   start the conversation over (your data stays as it is)
  an empty line or Ctrl-D quits; Ctrl-C drops the request in flight"""


def _chat_command(text: str, agent) -> None:
    name = text.split()[0].lower()
    if name in ("/help", "/?"):
        say(console, CHAT_HELP)
    elif name == "/reset":
        agent.reset()
        say(console, ("conversation cleared", "dim"))
    else:
        say(console, ("unknown command", "yellow"), f" {name}; /help lists them")


DEMO_REQUESTS = [
    "Add a dentist appointment on December 3 2026 at 10am",
    "What do I have on December 3?",
    "Move my dentist appointment to December 4 at 2pm",
    "Hi! What can you do?",
]


def cmd_demo(a) -> int:
    from botpsy.agent.loop import Agent, approve_all

    engine = open_engine(a.model, n_ctx=a.n_ctx, threads=a.threads)
    with tempfile.TemporaryDirectory(prefix="botpsy-demo-") as tmp:
        env = _workspace(tmp, "calendar")
        say(console, ("botpsy demo", "bold"), f" · model {engine.name} · temporary workspace {tmp}")
        console.print("[dim]actions are auto-approved in the demo; `botpsy chat` asks before each one[/]\n")
        for req in DEMO_REQUESTS:
            # One fresh conversation per request keeps the tour close to what the model was trained on.
            agent = Agent(
                engine,
                env,
                _system_today(),
                _agent_config(a, engine),
                approve_all,
                on_event=_print_event,
                today=date.today(),
            )
            say(out, ("you>", "bold green"), f" {req}")
            with _working():
                trace = agent.send(req)
            say(out, ("botpsy>", "bold blue"), f" {trace.final_answer or '(no answer)'}")
            say(console, (_timing_line(trace), "dim"), "\n")
        cal = env.calendar_path
        say(out, (f"{cal.name} now holds:", "bold"))
        say(out, cal.read_text() if cal.exists() else "(no events)")
    return 0
