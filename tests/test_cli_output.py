"""What `botpsy run` and `botpsy chat` print and accept, on a scripted engine (no model).

Pins issue 14 items 2 and 6: data from the user's stores, the model or a tool prints as text,
never as rich markup (an event titled `Standup [/]` ended `run` in a MarkupError; the
confirmation prompt swallowed its `[y/N]` and an argument like `rent[conceal]`); `--n-ctx`, which
the context-window error advises, is accepted by run, chat and demo; the model's thinking mode
(a manifest's `thinking: false`, a GGUF template without <think>) is honoured; `run ""` is a usage
error before any model loads; chat shows each turn's own ttft and Ctrl-C drops the request in
flight instead of ending the chat; chat streams the answer as it is generated, but never the
reasoning, a tool call, or a claim the phantom guard then replaces; `serve --help` explains every
option.
"""

from __future__ import annotations

import builtins
import io
import json

import pytest
from rich.console import Console

from botpsy import cli, cli_agent
from botpsy.engine.oracle import ScriptedEngine
from botpsy.protocol.messages import StepTiming
from botpsy.stores.workspace import Workspace

LIST_DEC_3 = (
    "look it up\n</think>\n\n<tool_call>\n<function=list_events>\n<parameter=date>\n2026-12-03\n"
    "</parameter>\n</function>\n</tool_call>"
)


@pytest.fixture
def workspace(tmp_path):
    ws = Workspace(tmp_path / "ws", suites=["calendar"])
    out = json.loads(ws.call("create_event", {"title": "Standup [/]", "start": "2026-12-03T09:00"}))
    assert "error" not in out, out
    return ws


def use_engine(monkeypatch, engine):
    seen = {}

    def fake(model, n_ctx=4096, threads=None):
        seen["n_ctx"] = n_ctx
        return engine

    monkeypatch.setattr(cli_agent, "open_engine", fake)
    return seen


def test_markup_in_stored_data_and_answers_prints_as_text(monkeypatch, workspace, capsys):
    answer = "done\n</think>\n\nYou have Standup [/] at 09:00, and [bold]rent[conceal] is due :smile:."
    use_engine(monkeypatch, ScriptedEngine([LIST_DEC_3, answer]))
    code = cli.main(["run", "What do I have on December 3 2026?", "--workspace", str(workspace.root)])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and "internal error" not in captured.err
    assert "You have Standup [/] at 09:00, and [bold]rent[conceal] is due :smile:." in captured.out
    assert "Standup [/]" in captured.err  # the tool result line
    assert code == 0


@pytest.mark.parametrize(
    "kind,data,shown",
    [
        ("tool", {"result": '{"title": "Standup [/]"}'}, '← {"title": "Standup [/]"}'),
        (
            "model",
            {"calls": [json.dumps({"name": "pay", "arguments": {"memo": "rent[conceal]"}})]},
            "rent[conceal]",
        ),
        ("model", {"errors": ["bad [/red] tag"]}, "bad [/red] tag"),
        ("error", {"message": "engine [/] died"}, "engine [/] died"),
        ("tool_retrieval", {"tools": ["a[b]"], "installed": 3}, "tools: a[b] (of 3)"),
    ],
)
def test_print_event_shows_data_verbatim(kind, data, shown, capsys):
    from botpsy.protocol.messages import Event

    cli_agent._print_event(Event(kind, data))
    assert shown in capsys.readouterr().err


def test_confirmation_prompt_keeps_its_hint_and_the_arguments(monkeypatch):
    from botpsy.protocol.messages import ToolCall
    from botpsy.tools.registry import SUITES

    buffer = io.StringIO()
    monkeypatch.setattr(cli_agent, "console", Console(file=buffer, highlight=False, width=200))
    monkeypatch.setattr(cli_agent.sys.stdin, "isatty", lambda: True, raising=False)
    monkeypatch.setattr(builtins, "input", lambda prompt="": "y")
    tool = next(t for s in SUITES.values() for t in s.tools if t.name == "create_event")
    ask = cli_agent._confirm_fn(False)
    assert ask(ToolCall("create_event", {"title": "rent[conceal]", "start": "[/]"}), tool) is True
    shown = buffer.getvalue()
    assert "Allow create_event(title='rent[conceal]', start='[/]') (mutates)? [y/N] " in shown, shown


def test_recipe_progress_lines_print_as_text(monkeypatch, capsys):
    """The recipe's log lines hold paths, model names and errors; `cmd_recipe` printed them as
    markup, so a base model at `models/x[/]` ended the run in a MarkupError."""
    import botpsy.train.recipe as recipe

    lines = ["base: models/x[/] → runs/micro/base", "export failed: ValueError: token [red] :smile:"]

    def fake_run(preset, stages, out, dry_run, overrides, log, report_only):
        for line in lines:
            log(line)
        return 0

    monkeypatch.setattr(recipe, "run_recipe", fake_run)
    assert cli.main(["recipe", "--preset", "micro"]) == 0
    err = capsys.readouterr().err
    assert all(line in err for line in lines), err


def test_tools_list_shows_the_labels(capsys):
    assert cli.main(["tools", "list"]) == 0
    assert "[mutates]" in capsys.readouterr().out


# ---- run ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("request_text", ["", "   ", "\n"])
def test_an_empty_request_is_a_usage_error_without_loading_a_model(
    monkeypatch, tmp_path, request_text, capsys
):
    def no_model(*a, **k):
        raise AssertionError("the model was loaded")

    monkeypatch.setattr(cli_agent, "open_engine", no_model)
    assert cli.main(["run", request_text, "--workspace", str(tmp_path)]) == 2
    assert "request is empty" in capsys.readouterr().err


@pytest.mark.parametrize("command", [["run", "hi"], ["chat"], ["demo"]])
def test_n_ctx_is_accepted_and_reaches_the_engine(command, monkeypatch, tmp_path):
    args = cli.build_parser().parse_args([*command, "--n-ctx", "8192"])
    assert args.n_ctx == 8192
    assert cli.build_parser().parse_args(command).n_ctx == 4096
    if command[0] == "run":
        seen = use_engine(monkeypatch, ScriptedEngine(["ok\n</think>\n\nHi."]))
        cli.main([*command, "--n-ctx", "8192", "--workspace", str(tmp_path)])
        assert seen["n_ctx"] == 8192


@pytest.mark.parametrize("bad", ["0", "-5", "lots"])
def test_a_bad_n_ctx_is_an_argparse_error(bad, capsys):
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(["run", "hi", "--n-ctx", bad])
    assert "--n-ctx" in capsys.readouterr().err


def test_a_model_without_thinking_gets_an_empty_think_block(monkeypatch, tmp_path, capsys):
    engine = ScriptedEngine(["Hello! I can manage your calendar."])  # no <think> at all
    engine.thinking = False
    use_engine(monkeypatch, engine)
    assert cli.main(["run", "Hi", "--workspace", str(tmp_path)]) == 0
    assert engine.prompts[0].endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    assert "Hello! I can manage your calendar." in capsys.readouterr().out


# ---- chat -----------------------------------------------------------------------------------------


class TimedEngine(ScriptedEngine):
    """Each generation reports a ttft of 100 ms × its number; `interrupt` raises Ctrl-C once."""

    def __init__(self, texts, interrupt_at: int | None = None):
        super().__init__(texts)
        self.n, self.interrupt_at = 0, interrupt_at

    def generate(self, prompt_ids, max_tokens=512, temperature=0.0, on_text=None):
        self.n += 1
        if self.n == self.interrupt_at:
            self.prompts.append(self.detokenize(prompt_ids))
            raise KeyboardInterrupt
        gen = super().generate(prompt_ids, max_tokens, temperature, on_text)
        gen.timing = StepTiming(ttft_s=0.1 * self.n, generated_tokens=3)
        return gen


def chat(monkeypatch, tmp_path, engine, inputs):
    use_engine(monkeypatch, engine)
    queue = list(inputs)
    asked = []

    def fake_input(prompt="", **k):
        asked.append(prompt)
        item = queue.pop(0)
        if isinstance(item, BaseException):
            raise item
        return item

    monkeypatch.setattr(cli.console, "input", fake_input)
    code = cli.main(["chat", "--workspace", str(tmp_path)])
    return code, asked


def test_chat_shows_each_turns_own_ttft(monkeypatch, tmp_path, capsys):
    engine = TimedEngine(["a\n</think>\n\nOne.", "b\n</think>\n\nTwo."])
    code, _ = chat(monkeypatch, tmp_path, engine, ["first", "second", ""])
    err = capsys.readouterr().err
    assert code == 0
    assert "ttft 100 ms" in err and "ttft 200 ms" in err and err.count("ttft 100 ms") == 1


def test_ctrl_c_while_generating_drops_the_request_and_returns_to_the_prompt(monkeypatch, tmp_path, capsys):
    engine = TimedEngine(["b\n</think>\n\nAnswer to the second."], interrupt_at=1)
    code, asked = chat(monkeypatch, tmp_path, engine, ["first request", "second request", ""])
    captured = capsys.readouterr()
    assert code == 0 and len(asked) == 3
    assert "interrupted" in captured.err and "Answer to the second." in captured.out
    # the dropped request is gone from the conversation the model sees next
    assert "first request" not in engine.prompts[-1] and "second request" in engine.prompts[-1]
    assert engine.prompts[-1].count("<|im_start|>user") == 1


def test_ctrl_c_at_the_prompt_gives_a_fresh_prompt(monkeypatch, tmp_path):
    engine = TimedEngine(["a\n</think>\n\nOne."])
    code, asked = chat(monkeypatch, tmp_path, engine, [KeyboardInterrupt(), "hello", EOFError()])
    assert code == 0 and len(asked) == 3 and engine.n == 1


class StreamingEngine(ScriptedEngine):
    """Streams each reply in 5-character pieces and records what stdout shows after each piece."""

    def __init__(self, texts, screen: io.StringIO):
        super().__init__(texts)
        self.screen, self.seen = screen, []

    def generate(self, prompt_ids, max_tokens=512, temperature=0.0, on_text=None):
        gen = super().generate(prompt_ids, max_tokens, temperature, None)
        for i in range(0, len(gen.text), 5):
            on_text(gen.text[i : i + 5])
            self.seen.append(self.screen.getvalue())
        return gen


def streaming_chat(monkeypatch, tmp_path, replies, inputs):
    screen = io.StringIO()
    monkeypatch.setattr(cli_agent, "out", Console(file=screen, highlight=False, soft_wrap=True))
    engine = StreamingEngine(replies, screen)
    code, _ = chat(monkeypatch, tmp_path, engine, inputs)
    return code, engine, screen.getvalue()


def test_chat_streams_the_answer_as_it_is_generated(monkeypatch, workspace, capsys):
    """Issue 14 item 6: chat printed nothing until the turn ended; the reasoning and the call stay hidden."""
    answer = "checking the result\n</think>\n\nYou have Standup [/] at 09:00. Anything else for December 3?"
    code, engine, shown = streaming_chat(monkeypatch, workspace.root, [LIST_DEC_3, answer], ["dec 3?", ""])
    assert code == 0
    # the first sentence is on screen while the rest of the answer is still being generated
    assert "You have Standup [/] at 09:00." in engine.seen[-2]
    assert "Anything else" not in engine.seen[-2]
    for screen in engine.seen:
        assert "look it up" not in screen and "checking the result" not in screen
        assert "<tool_call>" not in screen and "function=" not in screen
    assert shown.count("You have Standup [/] at 09:00.") == 1
    assert "botpsy> You have Standup [/] at 09:00. Anything else for December 3?\n" in shown


def test_chat_never_streams_a_claim_the_guard_replaces(monkeypatch, tmp_path, capsys):
    """Issue 14 item 1 under streaming: a claim after a declined call is never on screen, and the
    'not done' line that replaces the answer is marked as a correction of what was shown."""
    create = (
        "add\n</think>\n\n<tool_call>\n<function=create_event>\n<parameter=title>\nDentist\n</parameter>\n"
        "<parameter=start>\n2026-12-03T10:00\n</parameter>\n</function>\n</tool_call>"
    )
    done = "ok\n</think>\n\nAll right. Done: the dentist appointment is on your calendar. Bye now."
    monkeypatch.setattr(cli_agent.sys.stdin, "isatty", lambda: False, raising=False)  # no terminal: declined
    code, engine, shown = streaming_chat(monkeypatch, tmp_path, [create, done, done], ["add a dentist", ""])
    err = " ".join(capsys.readouterr().err.split())
    assert code == 0
    for screen in engine.seen:
        assert "Done" not in screen and "on your calendar" not in screen
    assert "Done" not in shown and "on your calendar" not in shown
    assert "botpsy> (corrected) This was not done: create_event was declined or failed" in shown
    assert "it is replaced" in err


# ---- serve --help ---------------------------------------------------------------------------------


def test_every_serve_option_has_help_text():
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.dest == "cmd")
    serve = sub.choices["serve"]
    missing = [a.option_strings for a in serve._actions if a.option_strings and not a.help]
    assert missing == []


def test_run_without_a_terminal_declines_and_never_reports_done(monkeypatch, tmp_path, capsys):
    """Issue 14 item 1: `run ... </dev/null` declined the call, printed "Done: ..." and exited 0."""
    create = (
        "add\n</think>\n\n<tool_call>\n<function=create_event>\n<parameter=title>\nDentist\n</parameter>\n"
        "<parameter=start>\n2026-12-03T10:00\n</parameter>\n</function>\n</tool_call>"
    )
    done = "ok\n</think>\n\nDone: the dentist appointment is on your calendar."
    use_engine(monkeypatch, ScriptedEngine([create, done, done]))
    monkeypatch.setattr(cli_agent.sys.stdin, "isatty", lambda: False, raising=False)
    ws = tmp_path / "ws"
    code = cli.main(["run", "Add a dentist appointment on December 3 2026 at 10am", "--workspace", str(ws)])
    captured = capsys.readouterr()
    assert code == 1
    assert "Done:" not in captured.out and "not done" in captured.out
    assert "not carried out: create_event was declined or failed" in captured.err
    assert not (ws / "calendar.ics").exists()
