"""botpsy's command line. Every failure a user can cause ends in one clear line, never a traceback.

Commands: run, chat, demo, tasks generate|check, eval worlds|bfcl|tau2|ifbench|report, recipe, serve,
bench, mcp serve, export tiny|shapes, tools list.
Set BOTPSY_DEBUG=1 to see tracebacks of unexpected errors.

Each command imports what it runs inside its `cmd_*` function (and the helpers it calls), the
entry-point exception tests/test_layers.py allows the CLI modules alone: `botpsy --help` builds the
parser from light modules only, and `botpsy run` does not load the trainer, the evaluators, the
exporter or the benchmark.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import tempfile
from contextlib import contextmanager
from datetime import date
from pathlib import Path

from rich.progress import Progress, TextColumn

from botpsy import cli_eval
from botpsy.bench import shapes_options
from botpsy.engine.base import BACKENDS, EngineError
from botpsy.stores import StoreError
from botpsy.term import UsageError, console, out, say, styled, text_log

# ---- helpers -------------------------------------------------------------------------------------


def _engine(model: str | None, n_ctx: int = 4096, threads: int | None = None):
    from botpsy.engine.load import load_engine

    return load_engine(model, backend="llamacpp", n_ctx=n_ctx, n_threads=threads)


def _confirm_fn(yes: bool):
    from botpsy.agent.loop import approve_all, decline_all

    if yes:
        return approve_all
    if not sys.stdin.isatty():
        return decline_all

    def ask(call, tool) -> bool:
        labels = ", ".join(k for k, v in tool.labels.as_dict().items() if v)
        args = ", ".join(f"{k}={v!r}" for k, v in call.arguments.items())
        prompt = styled(
            ("Allow", "bold yellow"), f" {call.name}({args}) ", (f"({labels})", "dim"), "? [y/N] "
        )
        with _paused():
            answer = console.input(prompt)
        return answer.strip().lower() in ("y", "yes")

    return ask


def _workspace(root: str, suites: str, extra_tools=None):
    from botpsy.stores.workspace import Workspace

    names = [x.strip() for x in suites.split(",") if x.strip()]
    if names == ["all"]:
        names = []
    return Workspace(root, suites=names or None, extra_tools=extra_tools)


def _system_today() -> str:
    from botpsy.worlds.calendar import system_prompt

    return system_prompt(date.today())


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
        tool_top_k=getattr(a, "tool_top_k", 0),
        tool_grammar=a.grammar,
        thinking=engine.thinking,
    )


# ---- commands -----------------------------------------------------------------------------------


def cmd_run(a) -> int:
    from botpsy.agent.loop import Agent

    if not a.request.strip():
        raise UsageError(
            'the request is empty; say what you want, e.g. botpsy run "What do I have tomorrow?"'
        )
    engine = _engine(a.model, n_ctx=a.n_ctx, threads=a.threads)
    env = _workspace(a.workspace, a.suites)
    agent = Agent(
        engine,
        env,
        _system_today(),
        _agent_config(a, engine),
        _confirm_fn(a.yes),
        on_event=None if a.json else _print_event,
        today=date.today(),
    )
    trace = agent.send(a.request)
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
    return 0 if trace.stopped == "answer" else 1


def cmd_chat(a) -> int:
    from botpsy.agent.loop import Agent

    engine = _engine(a.model, n_ctx=a.n_ctx, threads=a.threads)
    conn, extra = None, []
    if a.mcp:
        from botpsy.tools.mcp_client import McpStartError, connect

        try:
            conn, extra = connect(a.mcp)
        except McpStartError as e:
            raise UsageError(f"cannot start the MCP server {a.mcp!r}: {e}") from None
        say(console, (f"MCP: {len(extra)} tool(s) from {a.mcp}", "dim"))
    env = _workspace(a.workspace, a.suites, extra)
    config = _agent_config(a, engine)
    printer = _ChatPrinter(config.thinking)
    agent = Agent(
        engine,
        env,
        _system_today(),
        config,
        _confirm_fn(a.yes),
        on_event=printer.event,
        on_text=printer.stream.feed,
        today=date.today(),
    )
    say(
        console,
        ("botpsy", "bold"),
        f" · {engine.name} · workspace {env.root} · empty line or Ctrl-D to quit, Ctrl-C to interrupt",
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
        mark = _mark(agent)
        printer.new_turn()
        try:
            with _working():
                trace = agent.send(text)
        except KeyboardInterrupt:
            _restore(agent, mark)
            printer.close()
            say(
                console,
                ("interrupted: that request is dropped (actions already approved stay done)", "yellow"),
            )
            continue
        printer.finish(_turn_answer(trace, mark["messages"]) or "(no answer)")
        say(console, (_timing_line(trace, since=mark["timings"]), "dim"))
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


def _mark(agent) -> dict:
    """Where the conversation stands, to drop a request interrupted half-way (`_restore`)."""
    t = agent.trace
    lists = ("messages", "events", "timings", "token_ids", "generated_mask")
    mark = {name: len(getattr(t, name)) for name in lists}
    mark["_state"] = (t.parse_errors, t.stopped, agent._after_completion, agent._system)
    return mark


def _restore(agent, mark: dict) -> None:
    t = agent.trace
    for name, n in mark.items():
        if name != "_state":
            del getattr(t, name)[n:]
    t.parse_errors, t.stopped, agent._after_completion, agent._system = mark["_state"]


DEMO_REQUESTS = [
    "Add a dentist appointment on December 3 2026 at 10am",
    "What do I have on December 3?",
    "Move my dentist appointment to December 4 at 2pm",
    "Hi! What can you do?",
]


def cmd_demo(a) -> int:
    from botpsy.agent.loop import Agent, approve_all

    engine = _engine(a.model, n_ctx=a.n_ctx, threads=a.threads)
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


def cmd_tasks_generate(a) -> int:
    from botpsy.worlds.tasks import generate_tasks

    tasks = generate_tasks(a.domain, a.n, a.seed, a.split)
    lines = "".join(t.to_json() + "\n" for t in tasks)
    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text(lines)
        say(console, f"wrote {len(tasks)} tasks to {a.out}")
    else:
        sys.stdout.write(lines)
    return 0


def _read_tasks(path: str):
    from botpsy.worlds.base import Task

    p = Path(path)
    if not p.exists():
        raise UsageError(f"task file not found: {path}")
    tasks, bad = [], 0
    for line in p.read_text().splitlines():
        if not line.strip():
            continue
        try:
            tasks.append(Task.from_json(line))
        except (json.JSONDecodeError, TypeError, KeyError):
            bad += 1
    return tasks, bad


def cmd_tasks_check(a) -> int:
    from botpsy.worlds.tasks import check_tasks

    tasks, bad = _read_tasks(a.file)
    failed = 0
    for r in check_tasks(tasks):
        if not r.ok:
            failed += 1
            say(out, ("FAIL", "red"), f" {r.task_id}: {r.reason}")
    out.print(
        f"{len(tasks) - failed}/{len(tasks)} gold trajectories reach their expected state"
        + (f"; {bad} unparseable line(s) skipped" if bad else "")
    )
    return 0 if failed == 0 and bad == 0 and tasks else 1


def cmd_eval_worlds(a) -> int:
    from botpsy.agent.loop import AgentConfig
    from botpsy.engine.load import load_engine, resolve_backend
    from botpsy.engine.oracle import OracleEngine
    from botpsy.eval.worlds import evaluate_items
    from botpsy.worlds import get_domain
    from botpsy.worlds.tasks import domain_names

    try:
        names = domain_names(a.domain)
    except KeyError as e:
        raise UsageError(str(e).strip("'\"")) from None
    items = [(get_domain(d), t) for d in names for t in get_domain(d).generate(a.n, a.seed, "eval")]
    models = a.model or (["oracle"] if a.backend == "oracle" else ["embedded"])
    summaries = []
    for m in models:
        thinking = True  # the oracle replays gold turns, which carry think blocks
        b = resolve_backend(m, a.backend)
        if b.kind == "oracle":
            engine_for, name = (lambda t: OracleEngine(t.gold_messages())), "oracle"
        else:
            engine = load_engine(b, n_threads=a.threads)
            engine_for, name, thinking = (lambda t, e=engine: e), engine.name, engine.thinking
        columns = (TextColumn("{task.description}", markup=False), *Progress.get_default_columns()[1:])
        with Progress(*columns, console=console, transient=True) as prog:
            bar = prog.add_task(name, total=len(items))  # a model's name: text, not markup
            rep = evaluate_items(
                engine_for,
                items,
                name,
                AgentConfig(max_tokens=a.max_tokens, tool_grammar=a.grammar, thinking=thinking),
                progress=lambda r, b=bar: prog.advance(b),
            )
        summaries.append(rep.summary())
        if a.out:
            Path(a.out).mkdir(parents=True, exist_ok=True)
            rows = [r.__dict__ for r in rep.results]
            (Path(a.out) / f"worlds-{a.domain}-{name}.jsonl").write_text(
                "".join(json.dumps(r) + "\n" for r in rows)
            )
        if not a.json:
            s = rep.summary()
            say(
                out,
                (name, "bold"),
                f" on {s['n']} held-out {a.domain} tasks: success {s['success']:.1%}, "
                f"exact calls {s['tool_call_exact']:.1%}, parse errors {s['parse_error_rate']:.1%}, "
                f"no-call accuracy {s['no_call_accuracy']:.1%}",
            )
            out.print("  by kind: " + ", ".join(f"{k} {v:.0%}" for k, v in s["by_kind"].items()))
            if s.get("by_domain"):
                out.print("  by world: " + ", ".join(f"{k} {v:.0%}" for k, v in s["by_domain"].items()))
            if s["failures"]:
                say(out, "  failures: " + ", ".join(f"{k} ×{v}" for k, v in s["failures"].items()))
    if a.json:
        say(out, json.dumps(summaries[0] if len(summaries) == 1 else {**summaries[0], "models": summaries}))
    return 0


def cmd_recipe(a) -> int:
    from botpsy.train import recipe

    return recipe.run_recipe(
        a.preset,
        a.stages,
        a.out,
        a.dry_run,
        overrides=a.set or [],
        log=text_log(console),
        report_only=a.report_only,
    )


def cmd_bench(a) -> int:
    from botpsy.bench import device as bench_device

    models = a.model or [None]
    results = [
        bench_device.bench_model(m, tasks=a.tasks, threads=a.threads, log=text_log(console, "dim"))
        for m in models
    ]
    folder = bench_device.write_report(results, Path(a.out))
    if not a.json:
        say(out, (folder / "bench.md").read_text())
        say(out, f"report: {folder / 'bench.md'}, {folder / 'bench.png'}")
    else:
        rows = [dataclasses.asdict(r) for r in results]
        say(out, json.dumps(rows[0] if len(rows) == 1 else {**rows[0], "models": rows}))
    return 0


def cmd_serve(a) -> int:
    from botpsy.serve import make_server

    engine = _engine(a.model, n_ctx=a.n_ctx, threads=a.threads)
    server = make_server(
        engine,
        a.host,
        a.port,
        api_key=a.api_key,
        allowed_hosts=a.allow_host,
        max_connections=a.max_connections,
    )
    say(console, f"serving {engine.name} at http://{a.host}:{server.server_port}/v1 (Ctrl-C to stop)")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


def cmd_export_tiny(a) -> int:
    from botpsy.export.release import export_tiny

    manifest = export_tiny(a.out, seed=a.seed, train_steps=a.train_steps)
    report = json.loads((Path(manifest).parent / "export_report.json").read_text())
    say(out, json.dumps(report, indent=2))
    say(out, f"model folder: {Path(manifest).parent} (use it with --model)")
    return 0


def cmd_export_shapes(a) -> int:
    from botpsy.bench import shapes

    return shapes.run(a, " ".join(["botpsy", *sys.argv[1:]]))


def cmd_tools_list(a) -> int:
    from botpsy.tools.registry import tools_json, tools_table

    if a.json:
        say(out, json.dumps(tools_json()))
    else:
        for suite, name, labels, description in tools_table():
            say(out, f"{suite:10} {name:24} [{labels}] {description}")
    return 0


def cmd_mcp_serve(a) -> int:
    from botpsy.mcp_server import main as mcp_main

    argv = ["--suites", a.suites] + (["--workspace", a.workspace] if a.workspace else [])
    return mcp_main(argv)


# ---- parser -------------------------------------------------------------------------------------


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a number above 0, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="botpsy", description="An on-device personal assistant.")
    sub = p.add_subparsers(dest="cmd", required=True)

    def model_args(sp, workspace=True):
        sp.add_argument("--model", help="GGUF file or model folder (default: the embedded model)")
        sp.add_argument("--threads", type=int, help="CPU threads for llama.cpp")
        sp.add_argument("--max-tokens", type=int, default=384, help="token cap per model step")
        sp.add_argument(
            "--n-ctx",
            type=positive_int,
            default=4096,
            help="context window in tokens; raise it when a long chat fills it (default 4096)",
        )
        grammar_arg(sp)
        if workspace:
            sp.add_argument(
                "--workspace",
                default=str(Path.home() / ".botpsy" / "workspace"),
                help="folder with your calendar.ics (default ~/.botpsy/workspace)",
            )
            sp.add_argument("--yes", action="store_true", help="approve every action without asking")
            sp.add_argument(
                "--suites",
                default="calendar",
                help="comma-separated tool suites to offer the model, or 'all' (default: calendar, "
                "what the embedded model was trained on)",
            )

    def grammar_arg(sp):
        sp.add_argument(
            "--no-grammar",
            dest="grammar",
            action="store_false",
            help="let tool calls be sampled freely (by default a grammar holds them to the tools' "
            "schemas from <tool_call> on)",
        )

    def retrieval_args(sp):
        sp.add_argument(
            "--tool-top-k",
            type=int,
            default=0,
            metavar="K",
            help="show the model only the K tools most relevant to the first request (0: all); "
            "picked once per conversation so later turns reuse the cached prompt",
        )

    sp = sub.add_parser("run", help="answer one request")
    sp.add_argument("request")
    sp.add_argument("--json", action="store_true", help="print the trace as JSON")
    model_args(sp)
    retrieval_args(sp)
    sp.set_defaults(fn=cmd_run)

    sp = sub.add_parser("chat", help="interactive assistant")
    model_args(sp)
    retrieval_args(sp)
    sp.add_argument("--mcp", metavar="COMMAND", help="also offer the tools of this MCP server (stdio)")
    sp.set_defaults(fn=cmd_chat)

    sp = sub.add_parser("demo", help="a short scripted tour in a temporary workspace")
    model_args(sp, workspace=False)
    sp.set_defaults(fn=cmd_demo)

    tasks = sub.add_parser("tasks", help="world tasks").add_subparsers(dest="sub", required=True)
    sp = tasks.add_parser("generate", help="generate tasks with gold actions")
    sp.add_argument("--domain", default="calendar", help="a domain, comma-separated domains, or 'all'")
    sp.add_argument("--n", type=int, default=10, help="tasks per domain")
    sp.add_argument("--seed", type=int, default=0)
    sp.add_argument("--split", choices=["train", "eval"], default="eval")
    sp.add_argument("--out", help="JSONL file (default: stdout)")
    sp.set_defaults(fn=cmd_tasks_generate)
    sp = tasks.add_parser("check", help="replay every gold trajectory to its expected state hash")
    sp.add_argument("file")
    sp.set_defaults(fn=cmd_tasks_check)

    ev = sub.add_parser("eval", help="evaluation").add_subparsers(dest="sub", required=True)
    sp = ev.add_parser("worlds", help="held-out world tasks")
    sp.add_argument("--domain", default="calendar", help="a world, comma-separated worlds, or 'all'")
    sp.add_argument("--n", type=int, default=50, help="held-out tasks per world")
    sp.add_argument("--seed", type=int, default=1000)
    sp.add_argument(
        "--model",
        action="append",
        help="repeat to compare: oracle, embedded, a .gguf, a model folder, an HF checkpoint, or "
        "http://HOST:PORT/v1[#MODEL]",
    )
    sp.add_argument(
        "--backend", choices=BACKENDS, default="auto", help="how to read --model (default: from its form)"
    )
    sp.add_argument("--threads", type=int)
    sp.add_argument("--max-tokens", type=int, default=256)
    grammar_arg(sp)
    sp.add_argument("--out", help="folder for per-task results")
    sp.add_argument("--json", action="store_true", help="last line: one JSON object with the figures")
    sp.set_defaults(fn=cmd_eval_worlds)
    cli_eval.register(ev)

    sp = sub.add_parser(
        "recipe",
        help="the training recipe: SFT, then distillation, then RL on tools, then RL on verifiable rewards",
    )
    sp.add_argument("--preset", choices=["tiny", "scale", "micro"], default="tiny")
    sp.add_argument(
        "--stages",
        default="sft,mopd,rl1,rl2",
        help="comma-separated, in order (default: all four): sft (supervised on the worlds' gold "
        "trajectories), mopd (multi-teacher on-policy distillation), rl1 (DAPO on world tool-use turns, "
        "rule rewards), rl2 (DAPO on multi-domain verifiable rewards)",
    )
    sp.add_argument("--out", default="runs")
    sp.add_argument("--dry-run", action="store_true", help="print the resolved stages and configs only")
    sp.add_argument(
        "--report-only",
        action="store_true",
        help="write the report from the stages the run folder already finished, training nothing",
    )
    sp.add_argument("--set", action="append", metavar="STAGE.KEY=VALUE", help="override a config field")
    sp.set_defaults(fn=cmd_recipe)

    sp = sub.add_parser("serve", help="OpenAI-compatible chat-completions server on the same engine")
    sp.add_argument("--model", help="GGUF file or model folder (default: the embedded model)")
    sp.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default 127.0.0.1: this machine only; 0.0.0.0 opens it to the network)",
    )
    sp.add_argument("--port", type=int, default=8080, help="TCP port (default 8080; 0 picks a free one)")
    sp.add_argument(
        "--n-ctx", type=positive_int, default=8192, help="context window in tokens per request (default 8192)"
    )
    sp.add_argument("--threads", type=int, help="CPU threads for llama.cpp (default: up to 8)")
    sp.add_argument("--api-key", help="require 'Authorization: Bearer KEY' (default: $BOTPSY_API_KEY)")
    sp.add_argument(
        "--allow-host",
        action="append",
        metavar="NAME",
        help="also accept this Host/Origin; repeat; '*' = any (default: $BOTPSY_ALLOWED_HOSTS)",
    )
    sp.add_argument(
        "--max-connections",
        type=positive_int,
        default=16,
        metavar="N",
        help="connections served at once (their requests queue for the model); more get a 503 with "
        "Retry-After (default 16)",
    )
    sp.set_defaults(fn=cmd_serve)

    sp = sub.add_parser("bench", help="device benchmark: latency, throughput, memory, roofline")
    sp.add_argument(
        "--model", action="append", help="GGUF file or model folder; repeat to compare (default: embedded)"
    )
    sp.add_argument("--tasks", type=int, default=3, help="world tasks for the end-to-end timings")
    sp.add_argument("--threads", type=int)
    sp.add_argument("--out", default="reports/bench", help="folder for bench.json, bench.md, bench.png")
    sp.add_argument("--json", action="store_true", help="last line: one JSON object with the figures")
    sp.set_defaults(fn=cmd_bench)

    mcp = sub.add_parser("mcp", help="Model Context Protocol").add_subparsers(dest="sub", required=True)
    sp = mcp.add_parser("serve", help="serve the tool suites over MCP (stdio)")
    sp.add_argument("--workspace", help="workspace folder (default ~/.botpsy/workspace)")
    sp.add_argument("--suites", default="", help="comma-separated suites (default: all)")
    sp.set_defaults(fn=cmd_mcp_serve)

    exp = sub.add_parser("export", help="build and export models to GGUF").add_subparsers(
        dest="sub", required=True
    )
    sp = exp.add_parser(
        "tiny", help="a tiny random-init Qwen3.5-architecture model: HF + f16/Q8_0/Q4_K_M GGUF"
    )
    sp.add_argument("--out", default="runs/tiny-qwen35")
    sp.add_argument("--seed", type=int, default=0)
    sp.add_argument(
        "--train-steps", type=int, default=0, help="language-model steps on the world corpus (0: random)"
    )
    sp.set_defaults(fn=cmd_export_tiny)
    sp = exp.add_parser(
        "shapes", help="BotPsy's 0.8B shape, random-init: bf16/Q8_0/Q4_K_M GGUF sizes and bench report"
    )
    shapes_options.add_arguments(sp)
    sp.set_defaults(fn=cmd_export_shapes)

    tools = sub.add_parser("tools", help="the installed tools").add_subparsers(dest="sub", required=True)
    sp = tools.add_parser("list")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(fn=cmd_tools_list)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.fn(args)
    except (UsageError, EngineError, StoreError, ValueError) as e:
        say(console, ("error:", "red"), f" {e}")
        return 2
    except KeyError as e:
        say(console, ("error:", "red"), f" {e.args[0] if e.args else e}")
        return 2
    except KeyboardInterrupt:
        console.print("interrupted")
        return 130
    except Exception as e:
        if os.environ.get("BOTPSY_DEBUG"):
            raise
        say(console, ("internal error:", "red"), f" {type(e).__name__}: {e} (set BOTPSY_DEBUG=1 for details)")
        return 1


if __name__ == "__main__":
    sys.exit(main())
