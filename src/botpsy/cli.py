"""botpsy's command line. Every failure a user can cause ends in one clear line, never a traceback.

Commands: run, chat, demo, tasks generate|check, eval worlds|bfcl|tau2|ifbench|report, recipe, serve,
bench, mcp serve, export tiny|shapes, tools list, grants list|set|unset|reset, log, undo (the last
three in `cli_control.py`).
Set BOTPSY_DEBUG=1 to see tracebacks of unexpected errors. run, chat and demo live in
`cli_agent.py`, the eval commands in `cli_eval.py`; this module builds the parser and runs `main`.

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
from pathlib import Path

from botpsy import cli_control, cli_eval
from botpsy.bench import shapes_options
from botpsy.cli_agent import cmd_chat, cmd_demo, cmd_run, open_engine
from botpsy.engine.base import BACKENDS, EngineError
from botpsy.stores import StoreError
from botpsy.term import UsageError, console, out, say, text_log


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
        bench_device.bench_model(
            m, tasks=a.tasks, threads=a.threads, log=text_log(console, "dim"), contention=a.contention
        )
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

    engine = open_engine(a.model, n_ctx=a.n_ctx, threads=a.threads)
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
    argv += ["--client-confirms"] if a.client_confirms else []
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


def top_k_arg(text: str) -> int | str:
    """--tool-top-k: "auto" or a whole number, 0 or more."""
    if text.strip().lower() == "auto":
        return "auto"
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected 'auto' or a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected 0 (all tools) or more, got {value}")
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
                help="comma-separated tool suites to offer the model, or 'all' (default: calendar; "
                "with 'all', the 12 tools most relevant to the request are shown: --tool-top-k)",
            )

    def grammar_arg(sp):
        sp.add_argument(
            "--no-grammar",
            dest="grammar",
            action="store_false",
            help="let tool calls be sampled freely (by default a grammar holds them to the tools' "
            "schemas from <tool_call> on)",
        )
        cli_eval.copy_guide_arg(sp)

    def retrieval_args(sp):
        sp.add_argument(
            "--tool-top-k",
            type=top_k_arg,
            default="auto",
            metavar="K",
            help="show the model only the K tools most relevant to the first request (0: all; "
            "default auto: all while their descriptions fill at most half the context window, else "
            "12, as the embedded model saw in training); picked once per conversation so later "
            "turns reuse the cached prompt",
        )

    sp = sub.add_parser("run", help="answer one request")
    sp.add_argument("request")
    sp.add_argument("--json", action="store_true", help="print the trace as JSON")
    sp.add_argument(
        "--dry-run", action="store_true", help="preview every action (what would change) and apply none"
    )
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
    sp.set_defaults(fn=cli_eval.cmd_eval_worlds)
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
    sp.add_argument(
        "--no-contention",
        dest="contention",
        action="store_false",
        help="skip the shared-CPU figures (bench.contention: idle CPU and decode beside a busy process "
        "for each OpenMP wait policy, in child processes); everything else is measured as usual",
    )
    sp.set_defaults(fn=cmd_bench)

    mcp = sub.add_parser("mcp", help="Model Context Protocol").add_subparsers(dest="sub", required=True)
    sp = mcp.add_parser("serve", help="serve the tool suites over MCP (stdio)")
    sp.add_argument("--workspace", help="workspace folder (default ~/.botpsy/workspace)")
    sp.add_argument("--suites", default="", help="comma-separated suites (default: all)")
    sp.add_argument(
        "--client-confirms",
        action="store_true",
        help="your MCP app confirms each call with you: let tools your grants 'ask' for run",
    )
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

    cli_control.add_parsers(sub, Path.home() / ".botpsy" / "workspace")

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
