"""`botpsy eval worlds | bfcl | ifbench | tau2 | acebench | report | compare`: the worlds, the peer suites, comparisons.

`register(eval_subparsers)` adds the sub-commands to the `botpsy eval` group built in `cli.py`.
Each command takes `--model` once per model to compare (`oracle`, `embedded`, a .gguf, a model
folder, a transformers checkpoint, or an `http://…/v1` endpoint), shows progress on stderr, and
with `--json` prints one JSON object as its last line.

    botpsy eval bfcl --backend oracle --categories simple_python,multiple,parallel,parallel_multiple,irrelevance --json
    botpsy eval ifbench --model embedded --limit 50
    botpsy eval tau2 --backend oracle --domains retail,airline,telecom
    botpsy eval acebench --data ACEBench --backend oracle
    botpsy eval report --model embedded --model runs/tiny/model.gguf --out reports/compare
    botpsy eval compare DIR_A/worlds-all-A.jsonl DIR_B/worlds-all-B.jsonl

Each command imports its suite inside its `cmd_*` function, as in `cli.py`: building the parser
loads no evaluator.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from botpsy import term
from botpsy.engine.base import BACKENDS
from botpsy.protocol.messages import Message
from botpsy.term import UsageError


def _consoles():
    return term.console, term.out  # read at call time: tests swap them


def _say(con, *parts) -> None:
    """Print model labels, task names and report text as text, never rich markup (`term.say`)."""
    term.say(con, *parts)


def _progress_runner(label: str):
    """A rich progress bar on stderr: returns (context manager, on_category(name, n), progress(result))."""
    console, _ = _consoles()
    prog = Progress(
        TextColumn("{task.description}", markup=False),  # the label is data: `x[/]` is no markup
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[ok]} ok"),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )
    state: dict[str, Any] = {"bar": None, "ok": 0}

    def on_category(name: str, n: int) -> None:
        if state["bar"] is not None:
            prog.remove_task(state["bar"])
        state["ok"] = 0
        state["bar"] = prog.add_task(f"{label} · {name}", total=n, ok=0)

    def progress(r) -> None:
        state["ok"] += int(r.ok)
        prog.update(state["bar"], advance=1, ok=state["ok"])

    return prog, on_category, progress


def _models(a) -> list[str]:
    if a.model:
        return a.model
    return ["oracle"] if a.backend == "oracle" else ["embedded"]


def _label(spec: str, a, default: str) -> str:
    """The name results are filed under: the matching --label (in --model order), else `default`."""
    labels = getattr(a, "label", None) or []
    specs = _models(a)
    i = specs.index(spec) if spec in specs else -1
    return labels[i] if 0 <= i < len(labels) else default


def _engine_factory(spec: str, a) -> tuple[str, Any]:
    """(label, engine or None for the oracle) for one `--model` spec."""
    from botpsy.engine.load import load_engine, resolve_backend

    b = resolve_backend(spec, a.backend)
    if b.kind == "oracle":
        return _label(spec, a, "oracle"), None
    engine = load_engine(b, n_ctx=a.n_ctx, n_threads=a.threads, chat_format=a.chat_format)
    return _label(spec, a, b.label), engine


def _finish(a, summaries: list[dict[str, Any]], lines: Callable[[dict[str, Any]], str]) -> None:
    """The summaries: one JSON object, or per model its name in bold and `lines(s)` after it."""
    console, out = _consoles()
    if a.json:
        obj = summaries[0] if len(summaries) == 1 else {**summaries[0], "models": summaries}
        _say(out, json.dumps(obj, ensure_ascii=False))
        return
    for s in summaries:
        _say(out, (str(s["model"]), "bold"), lines(s))


# ---- bfcl -------------------------------------------------------------------------------------


def cmd_bfcl(a) -> int:
    from botpsy.engine.oracle import OracleEngine
    from botpsy.eval.bfcl import BfclConfig, evaluate_bfcl
    from botpsy.eval.bfcl_data import parse_categories, require_bfcl
    from botpsy.eval.bfcl_oracle import gold_messages
    from botpsy.eval.bfcl_process import BfclWorker

    categories = parse_categories(a.categories)
    require_bfcl()
    summaries = []
    with BfclWorker() as worker:
        for spec in _models(a):
            label, engine = _engine_factory(spec, a)
            thinking = engine.thinking if engine is not None else True
            config = BfclConfig(
                max_tokens=a.max_tokens,
                thinking=thinking and not a.no_thinking,
                limit=a.limit,
                grounding_guard=not a.no_grounding_guard,
                limits_guard=not a.no_grounding_guard,
                copy_guide=a.copy_guide,
            )
            if engine is None:
                fmt = a.chat_format or "qwen35"

                def engine_for(c, e, t, fmt=fmt):
                    return OracleEngine(gold_messages(c, e, t), fmt)
            else:

                def engine_for(c, e, t, engine=engine):
                    return engine

            prog, on_category, progress = _progress_runner(label)
            with prog:
                rep = evaluate_bfcl(
                    categories,
                    label,
                    engine_for,
                    config,
                    a.out,
                    progress,
                    on_category,
                    worker,
                    run_config={"format": a.chat_format, "backend": a.backend},
                )
            summaries.append(rep.to_dict())
            if a.out:
                _write(Path(a.out) / f"bfcl-{_slug(label)}.json", rep.to_dict())

    def line(s: dict[str, Any]) -> str:
        cats = ", ".join(
            f"{c} {v['accuracy']:.1%}"
            + (f" (model alone {v['model_accuracy']:.1%}, {v['held']} held)" if v.get("held") else "")
            for c, v in s["categories"].items()
        )
        fails = ", ".join(f"{k} ×{v}" for k, v in s["failures"].items())
        return (
            f" BFCL v4 over {s['n']} items: overall {s['overall']:.1%} "
            f"(leaderboard formula {s['overall_leaderboard']:.1%})\n  {cats}"
            + (f"\n  failures: {fails}" if fails else "")
        )

    _finish(a, summaries, line)
    return 0


# ---- ifbench ----------------------------------------------------------------------------------


def cmd_ifbench(a) -> int:
    from botpsy.engine.oracle import OracleEngine
    from botpsy.eval.ifbench import IfbenchConfig, evaluate_ifbench, require_ifbench, sample_responses

    require_ifbench()
    summaries = []
    for spec in _models(a):
        label, engine = _engine_factory(spec, a)
        thinking = engine.thinking if engine is not None else True
        config = IfbenchConfig(
            max_tokens=a.max_tokens, thinking=thinking and not a.no_thinking, limit=a.limit
        )
        if engine is None:
            samples = sample_responses()

            def engine_for(d, samples=samples):
                return OracleEngine(
                    [Message("assistant", samples.get(d.get("prompt"), ""), "sample")],
                    a.chat_format or "qwen35",
                )
        else:

            def engine_for(d, engine=engine):
                return engine

        prog, on_start, progress = _progress_runner(label)
        with prog:
            rep = evaluate_ifbench(
                label, engine_for, config, a.out, progress, on_start, run_config={"backend": a.backend}
            )
        summaries.append(rep.to_dict())
        if a.out:
            _write(Path(a.out) / f"ifbench-{_slug(label)}.json", rep.to_dict())

    def line(s: dict[str, Any]) -> str:
        fails = ", ".join(f"{k} ×{v}" for k, v in s["failures"].items())
        return (
            f" IFBench over {s['n']} prompts: prompt strict {s['prompt_strict']:.1%}, "
            f"instruction strict {s['instruction_strict']:.1%}, prompt loose {s['prompt_loose']:.1%}"
            + (f"\n  failures: {fails}" if fails else "")
        )

    _finish(a, summaries, line)
    return 0


# ---- tau2 -------------------------------------------------------------------------------------


def cmd_tau2(a) -> int:
    from botpsy.engine.load import resolve_backend
    from botpsy.eval.tau2 import (
        Tau2Config,
        UserSim,
        evaluate_tau2,
        oracle_engine_for,
        parse_domains,
        require_tau2,
    )

    domains = parse_domains(a.domains)
    user = None
    if a.user_model:
        if not a.user_model.startswith(("http://", "https://")):
            raise UsageError(
                f"--user-model needs an OpenAI-compatible URL like http://127.0.0.1:8080/v1#NAME, got {a.user_model!r}"
            )
        url, _, name = a.user_model.partition("#")
        user = UserSim(url, name or "user", a.user_temperature)
    for spec in _models(a):
        if resolve_backend(spec, a.backend).kind != "oracle" and user is None:
            raise UsageError(
                "τ²-bench runs of a model need an LLM user simulator: pass --user-model http://HOST:PORT/v1#NAME "
                "(botpsy serve, llama.cpp's server, vLLM), or run the gold replay with --backend oracle"
            )
    require_tau2()
    summaries = []
    for spec in _models(a):
        label, engine = _engine_factory(spec, a)
        config = Tau2Config(max_tokens=a.max_tokens, limit=a.limit)
        if engine is None:
            engine_for = oracle_engine_for(a.chat_format or "qwen35")
        else:

            def engine_for(domain, task, engine=engine):
                return engine, []

        prog, on_domain, progress = _progress_runner(label)
        with prog:
            rep = evaluate_tau2(
                domains,
                label,
                engine_for,
                config,
                a.out,
                progress,
                on_domain,
                run_config={"user": a.user_model},
                user=user,
            )
        summaries.append(rep.to_dict())
        if a.out:
            _write(Path(a.out) / f"tau2-{_slug(label)}.json", rep.to_dict())

    def line(s: dict[str, Any]) -> str:
        doms = ", ".join(f"{d} {v['pass_1']:.1%} ({v['n']})" for d, v in s["domains"].items())
        fails = ", ".join(f"{k} ×{v}" for k, v in s["failures"].items())
        return f" τ²-bench pass^1: mean {s['mean_pass_1']:.1%} — {doms}" + (
            f"\n  failures: {fails}" if fails else ""
        )

    _finish(a, summaries, line)
    return 0


# ---- acebench ---------------------------------------------------------------------------------


def cmd_acebench(a) -> int:
    from botpsy.engine.load import resolve_backend
    from botpsy.eval.acebench import AceConfig, evaluate_acebench
    from botpsy.eval.acebench_data import parse_categories, resolve_data
    from botpsy.eval.acebench_oracle import KNOWN_UNPASSABLE, oracle_engine_for
    from botpsy.eval.acebench_user import ChatUser, ScriptedUser

    try:
        categories = parse_categories(a.categories)
        data_dir, root = resolve_data(a.data)
    except ValueError as e:
        raise UsageError(str(e)) from None
    if a.user_model and not a.user_model.startswith(("http://", "https://")):
        raise UsageError(
            f"--user-model needs an OpenAI-compatible URL like http://127.0.0.1:8080/v1#NAME, got {a.user_model!r}"
        )
    summaries = []
    for spec in _models(a):
        oracle = resolve_backend(spec, a.backend).kind == "oracle"
        label, engine = _engine_factory(spec, a)
        thinking = engine.thinking if engine is not None else True
        config = AceConfig(
            max_tokens=a.max_tokens,
            thinking=thinking and not a.no_thinking,
            limit=a.limit,
            # The oracle checks the path and the checker: its gold calls carry values the
            # question does not state (an id a result gave), which the guard would hold, and
            # four break a limit their own function declares, which the limits guard would.
            grounding_guard=not (a.no_grounding_guard or oracle),
            limits_guard=not (a.no_grounding_guard or oracle),
            copy_guide=a.copy_guide,
        )
        if oracle:
            engine_for, user = oracle_engine_for(a.chat_format or "qwen35"), ScriptedUser()
        else:

            def engine_for(c, item, engine=engine):
                return engine

            user = None
            if a.user_model:
                url, _, name = a.user_model.partition("#")
                user = ChatUser(url, name or "user", a.user_temperature)
        prog, on_category, progress = _progress_runner(label)
        with prog:
            rep = evaluate_acebench(
                data_dir,
                root,
                categories,
                label,
                engine_for,
                config,
                a.out,
                progress,
                on_category,
                run_config={"format": a.chat_format, "backend": a.backend, "user": a.user_model},
                user=user,
            )
        s = rep.to_dict()
        if oracle:
            s["known_unpassable"] = sorted(r.id for r in rep.results if r.id in KNOWN_UNPASSABLE and not r.ok)
            # The self-check: every item whose answer can pass ACEBench's rules must pass.
            rest = [r for r in rep.results if r.id not in KNOWN_UNPASSABLE]
            s["passable_accuracy"] = round(sum(r.ok for r in rest) / len(rest), 4) if rest else None
        summaries.append(s)
        if a.out:
            _write(Path(a.out) / f"acebench-{_slug(label)}.json", s)
            (Path(a.out) / f"acebench-{_slug(label)}.md").write_text(_acebench_markdown(s))

    def line(s: dict[str, Any]) -> str:
        groups = ", ".join(f"{g} {v:.1%}" for g, v in s["groups"].items())
        cats = ", ".join(f"{c} {v['accuracy']:.1%}" for c, v in s["categories"].items())
        text = (
            f" ACEBench (en) over {s['n']} items: overall {s['overall']:.1%} "
            f"(ACEBench's formula, categories not run as 0: {s['overall_official']:.1%}) — {groups}\n  {cats}"
        )
        if s.get("known_unpassable"):
            text += (
                f"\n  {len(s['known_unpassable'])} items fail ACEBench's own rules whatever the output "
                f"(known_unpassable); the rest: {s['passable_accuracy']:.1%}"
            )
        for c, why in s["not_run"].items():
            text += f"\n  not run: {c} — {why}"
        fails = ", ".join(f"{k} ×{v}" for k, v in s["failures"].items())
        return text + (f"\n  failures: {fails}" if fails else "")

    _finish(a, summaries, line)
    return 0


def _acebench_markdown(s: dict[str, Any]) -> str:
    """A short markdown table of one model's ACEBench figures (ids only, never item text)."""
    rows = [
        f"# ACEBench (English) — {s['model']}",
        "",
        f"Items: {s['n']}. Overall (groups run): "
        f"{s['overall']:.1%}; ACEBench's formula with categories not run as 0: {s['overall_official']:.1%}.",
        "",
    ]
    rows += ["| group | accuracy |", "|---|---|"] + [f"| {g} | {v:.1%} |" for g, v in s["groups"].items()]
    rows += ["", "| category | items | accuracy | model alone | process |", "|---|---|---|---|---|"]
    for c, v in s["categories"].items():
        alone = f"{v['model_accuracy']:.1%}" if "model_accuracy" in v else ""
        proc = f"{v['process_accuracy']:.1%}" if "process_accuracy" in v else ""
        rows.append(f"| {c} | {v['total']} | {v['accuracy']:.1%} | {alone} | {proc} |")
    if s.get("known_unpassable"):
        rows.append(
            f"\n{len(s['known_unpassable'])} items fail ACEBench's own rules whatever the output "
            f"(ids under known_unpassable in the JSON); on the others the oracle scores {s['passable_accuracy']:.1%}."
        )
    rows += [f"\nNot run: {c} — {why}" for c, why in s["not_run"].items()]
    return "\n".join(rows) + "\n"


# ---- report -----------------------------------------------------------------------------------


def cmd_report(a) -> int:
    from botpsy.eval.report import SUITES, ReportConfig, build_report, run_model, write_report

    suites = tuple(x.strip() for x in a.suites.split(",") if x.strip())
    bad = [x for x in suites if x not in SUITES]
    if bad:
        raise UsageError(f"unknown suite(s) {', '.join(bad)}; expected some of {', '.join(SUITES)}")
    if not a.out:
        raise UsageError("--out is required: the report folder (its cache/ lets an interrupted run resume)")
    config = ReportConfig(
        suites=suites,
        bfcl_categories=a.bfcl_categories,
        bfcl_limit=a.bfcl_limit or None,
        worlds_n=a.worlds_n,
        worlds_if_n=a.worlds_if_n,
        ifbench_limit=a.ifbench_limit or None,
        trials=a.trials,
        max_tokens=a.max_tokens,
        temperature=a.temperature,
    )
    out = Path(a.out)
    runs = []
    for spec in _models(a):
        label, engine = _engine_factory(spec, a)
        runs.append(run_model(label, engine, config, out, _progress_runner))
    rep = build_report(runs, config)
    paths = write_report(rep, out)
    console, printer = _consoles()
    if a.json:
        summary = {
            "report": str(out),
            "files": [str(p) for p in paths],
            "models": rep["models"],
            "metrics": rep["metrics"],
        }
        _say(printer, json.dumps(summary))
    else:
        _say(printer, (out / "report.md").read_text())
        _say(console, "wrote " + ", ".join(str(p) for p in paths))
    return 0


# ---- compare ----------------------------------------------------------------------------------


def cmd_compare(a) -> int:
    from botpsy.eval.paired import RowsError, compare, load_rows, markdown, to_json

    try:
        rows_a, rows_b = load_rows(a.a), load_rows(a.b)
        paired = compare(rows_a, rows_b)
    except RowsError as e:
        raise UsageError(str(e)) from None
    label_a, label_b = a.label_a or Path(a.a).stem, a.label_b or Path(a.b).stem
    only_a, only_b = len(rows_a.keys() - rows_b.keys()), len(rows_b.keys() - rows_a.keys())
    console, printer = _consoles()
    if a.json:
        _say(printer, json.dumps(to_json(paired, label_a, label_b, only_a, only_b)))
        return 0
    _say(printer, markdown(paired, label_a, label_b))
    if only_a or only_b:
        _say(console, f"left out: {only_a} tasks only in A, {only_b} only in B")
    return 0


def _slug(text: str) -> str:
    from botpsy.eval.runs import slug

    return slug(text)


def _write(path: Path, obj: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=1, ensure_ascii=False, default=str))


# ---- parser -----------------------------------------------------------------------------------


def copy_guide_arg(sp: argparse.ArgumentParser) -> None:
    sp.add_argument(
        "--no-copy-guide",
        dest="copy_guide",
        action="store_false",
        help="let the model copy the user's words into calls unaided (by default a value that began to "
        "copy them goes on copying them where the model garbles them: engine/copy_guide.py)",
    )


def _common(sp: argparse.ArgumentParser, max_tokens: int) -> None:
    sp.add_argument(
        "--model",
        action="append",
        help="repeat to compare: oracle, embedded, a .gguf, a model folder, an HF checkpoint, or http://HOST:PORT/v1[#MODEL]",
    )
    sp.add_argument(
        "--backend", choices=BACKENDS, default="auto", help="how to read --model (default: from its form)"
    )
    sp.add_argument(
        "--label", action="append", help="a name per --model, in the same order (default: from the spec)"
    )
    sp.add_argument(
        "--chat-format", choices=["qwen35", "hermes"], help="override the model's tool-call format"
    )
    sp.add_argument("--threads", type=int, help="CPU threads for llama.cpp / torch")
    sp.add_argument("--n-ctx", type=int, default=8192, help="context window for llama.cpp")
    sp.add_argument("--max-tokens", type=int, default=max_tokens, help="token cap per model step")
    sp.add_argument("--no-thinking", action="store_true", help="render an empty <think> block (thinking off)")
    sp.add_argument("--limit", type=int, help="items per category / domain, spread evenly (default: all)")
    sp.add_argument("--out", help="folder for results; per-item results are cached there so a rerun resumes")
    sp.add_argument("--json", action="store_true", help="last line: one JSON object with the figures")
    copy_guide_arg(sp)


def cmd_eval_worlds(a) -> int:
    from botpsy.agent.loop import AgentConfig
    from botpsy.engine.load import load_engine, resolve_backend
    from botpsy.engine.oracle import OracleEngine
    from botpsy.eval.worlds import evaluate_items
    from botpsy.worlds import get_domain
    from botpsy.worlds.tasks import domain_names

    console, out = _consoles()
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
                AgentConfig(
                    max_tokens=a.max_tokens,
                    tool_grammar=a.grammar,
                    thinking=thinking,
                    copy_guide=a.copy_guide,
                ),
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
            _say(
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
                _say(out, "  failures: " + ", ".join(f"{k} ×{v}" for k, v in s["failures"].items()))
    if a.json:
        _say(out, json.dumps(summaries[0] if len(summaries) == 1 else {**summaries[0], "models": summaries}))
    return 0


def cmd_phrasings(a) -> int:
    from botpsy.engine.load import load_engine, resolve_backend
    from botpsy.eval.phrasings import evaluate_phrasings

    console, out = _consoles()
    summaries = []
    for m in a.model or ["embedded"]:
        engine = load_engine(resolve_backend(m, "auto"), n_threads=a.threads)
        s = evaluate_phrasings(engine)
        summaries.append(s)
        if a.out:
            Path(a.out).mkdir(parents=True, exist_ok=True)
            (Path(a.out) / f"phrasings-{engine.name}.json").write_text(json.dumps(s, indent=2))
        if not a.json:
            _say(
                out,
                (s["model"], "bold"),
                f": first call right on {s['passed']} of {s['n']} new-user phrasings",
            )
            for r in s["items"]:
                mark = "ok " if r["ok"] else "no "
                _say(out, f"  {mark}{r['request']!r} → {r['first_call'] or 'no call'}")
        engine.close()
    if a.json:
        _say(out, json.dumps(summaries[0] if len(summaries) == 1 else {**summaries[0], "models": summaries}))
    return 0


def register(eval_subparsers) -> None:
    """Add bfcl, ifbench, tau2, acebench and report to the `botpsy eval` sub-parser group."""
    sp = eval_subparsers.add_parser("bfcl", help="BFCL v4 with the official data and checkers")
    sp.add_argument(
        "--categories",
        default="non_live",
        help="comma-separated categories or groups (all, single_turn, non_live, live, multi_turn, python)",
    )
    sp.add_argument(
        "--no-grounding-guard",
        action="store_true",
        help="score the calls as the model wrote them: the agent's grounding and limits guards "
        "(agent/grounding.py, agent/limits.py) hold none (the oracle's self-check: gold calls with a "
        "number from world knowledge)",
    )
    _common(sp, 512)
    sp.set_defaults(fn=cmd_bfcl)

    sp = eval_subparsers.add_parser(
        "report", help="compare models over BFCL, the worlds and IFBench: markdown, JSON, plots"
    )
    sp.add_argument("--suites", default="bfcl,worlds,ifbench", help="comma-separated: bfcl, worlds, ifbench")
    sp.add_argument(
        "--bfcl-categories",
        default="simple_python,multiple,parallel,parallel_multiple,irrelevance,live_simple,multi_turn_base",
    )
    sp.add_argument("--bfcl-limit", type=int, default=20, help="items per BFCL category (0: all)")
    sp.add_argument("--worlds-n", type=int, default=4, help="held-out tasks per world domain")
    sp.add_argument(
        "--worlds-if-n",
        type=int,
        default=0,
        help="per world domain, held-out tasks that also carry an IFBench constraint on the answer",
    )
    sp.add_argument("--ifbench-limit", type=int, default=30, help="IFBench prompts (0: all 294)")
    sp.add_argument(
        "--trials", type=int, default=1, help="repeat the worlds for pass^k (with --temperature > 0)"
    )
    sp.add_argument("--temperature", type=float, default=0.0)
    _common(sp, 256)
    sp.set_defaults(fn=cmd_report)

    sp = eval_subparsers.add_parser(
        "compare",
        help="two models' per-task rows (eval worlds --out): wins, losses, sign test, per world and kind",
    )
    sp.add_argument("a", help="per-task .jsonl of model A")
    sp.add_argument("b", help="per-task .jsonl of model B (the same tasks)")
    sp.add_argument("--label-a", help="name for A (default: the file name)")
    sp.add_argument("--label-b", help="name for B")
    sp.add_argument("--json", action="store_true", help="one JSON object instead of markdown")
    sp.set_defaults(fn=cmd_compare)

    sp = eval_subparsers.add_parser(
        "tau2", help="τ²-bench with the official data and evaluator (gold replay)"
    )
    sp.add_argument(
        "--domains", default="retail,airline,telecom", help="comma-separated: retail, airline, telecom"
    )
    sp.add_argument(
        "--user-model", help="the user simulator: http://HOST:PORT/v1#NAME (needed for a model's run)"
    )
    sp.add_argument("--user-temperature", type=float, default=0.0)
    _common(sp, 512)
    sp.set_defaults(fn=cmd_tau2)

    sp = eval_subparsers.add_parser(
        "acebench", help="ACEBench (English: normal, special, agent) from your checkout, ACEBench's scoring"
    )
    sp.add_argument(
        "--data",
        required=True,
        help="your clone of github.com/chenchen0103/ACEBench (the root; data_all/data_en also works for normal/special)",
    )
    sp.add_argument(
        "--categories",
        default="all",
        help="comma-separated categories or groups (all, normal, special, agent, atom, multi_turn, single_turn)",
    )
    sp.add_argument(
        "--user-model",
        help="the agent multi-turn user simulator: http://HOST:PORT/v1#NAME (needed for a model's run)",
    )
    sp.add_argument("--user-temperature", type=float, default=0.0)
    sp.add_argument(
        "--no-grounding-guard",
        action="store_true",
        help="score the calls as the model wrote them (the agent's grounding and limits guards hold none)",
    )
    _common(sp, 512)
    sp.set_defaults(fn=cmd_acebench)

    sp = eval_subparsers.add_parser(
        "phrasings", help="new users' phrasings with --suites all: is the first tool call the right one?"
    )
    sp.add_argument("--model", action="append", help="GGUF, model folder or 'embedded' (repeatable)")
    sp.add_argument("--threads", type=int, help="CPU threads for llama.cpp")
    sp.add_argument("--out", help="folder for the per-item JSON")
    sp.add_argument("--json", action="store_true", help="print one JSON object with the figures")
    sp.set_defaults(fn=cmd_phrasings)

    sp = eval_subparsers.add_parser(
        "ifbench", help="IFBench with the official data and verifiers (offline NLTK data)"
    )
    _common(sp, 1024)
    sp.set_defaults(fn=cmd_ifbench)
