"""The command line: exit codes and one-line errors for bad input."""

import json

import pytest

from botpsy.cli import main


def test_tasks_generate_and_check(tmp_path, capsys):
    f = tmp_path / "t.jsonl"
    assert (
        main(["tasks", "generate", "--domain", "calendar", "--n", "12", "--seed", "11", "--out", str(f)]) == 0
    )
    assert len(f.read_text().splitlines()) == 12
    assert main(["tasks", "check", str(f)]) == 0
    assert "12/12" in capsys.readouterr().out


def test_tasks_check_catches_a_tampered_task(tmp_path, capsys):
    f = tmp_path / "t.jsonl"
    main(["tasks", "generate", "--n", "5", "--seed", "2", "--out", str(f)])
    lines = f.read_text().splitlines()
    task = json.loads(lines[0])
    task["expected_hash"] = "0" * 16
    lines[0] = json.dumps(task)
    lines.append("{not json")
    f.write_text("\n".join(lines) + "\n")
    assert main(["tasks", "check", str(f)]) == 1
    out = capsys.readouterr().out
    assert "FAIL" in out and "1 unparseable" in out


def test_eval_worlds_oracle_json(capsys):
    assert main(["eval", "worlds", "--backend", "oracle", "--n", "15", "--json"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    figures = json.loads(last)
    assert figures["success"] == 1.0
    assert {"success", "tool_call_exact", "parse_error_rate", "no_call_accuracy"} <= set(figures)


@pytest.mark.parametrize(
    "argv,msg",
    [
        (["run", "hi", "--model", "/nonexistent/model.gguf"], "model not found"),
        (["eval", "worlds", "--domain", "nowhere", "--backend", "oracle"], "unknown domain"),
        (["tasks", "check", "/nonexistent.jsonl"], "task file not found"),
        (["recipe", "--stages", "sft,warp", "--dry-run"], "unknown stage"),
        (["recipe", "--dry-run", "--set", "sft.nonsense=1"], "no setting"),
    ],
)
def test_bad_input_gives_one_line_errors(argv, msg, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert msg in err and "Traceback" not in err


def test_not_a_gguf(tmp_path, capsys):
    fake = tmp_path / "m.gguf"
    fake.write_bytes(b"PK\x03\x04 this is a zip")
    assert main(["run", "hi", "--model", str(fake), "--workspace", str(tmp_path)]) == 2
    assert "not a GGUF file" in capsys.readouterr().err


def test_truncated_gguf(tmp_path, capsys):
    fake = tmp_path / "m.gguf"
    fake.write_bytes(b"GGUF\x03\x00\x00\x00")
    assert main(["run", "hi", "--model", str(fake), "--workspace", str(tmp_path)]) == 2
    assert "could not load" in capsys.readouterr().err


def test_recipe_dry_run_prints_resolved_config(capsys):
    assert main(["recipe", "--preset", "tiny", "--dry-run", "--set", "sft.learning_rate=5e-4"]) == 0
    row = json.loads(capsys.readouterr().out.strip().splitlines()[0])
    assert row["stage"] == "sft" and row["config"]["learning_rate"] == 5e-4


def test_tools_list_json(capsys):
    assert main(["tools", "list", "--json"]) == 0
    tools = json.loads(capsys.readouterr().out)["tools"]
    names = {t["name"] for t in tools}
    assert {"create_event", "delete_event", "find_free_slots"} <= names
    assert all(set(t["labels"]) == {"mutates", "egress", "sensitive"} for t in tools)


# What building the parser must not load: the optional extras, llama.cpp's native library (loaded
# with a model), the MCP SDK (only `chat --mcp` and `mcp serve` use it), and every command's own
# modules, which each command imports when it runs (the entry-point exception, tests/test_layers.py).
NOT_AT_START = (
    "torch",
    "transformers",
    "trl",
    "peft",
    "datasets",
    "matplotlib",
    "llama_cpp",
    "mcp",
    "numpy",
    "pydantic",
    "botpsy.agent.loop",
    "botpsy.bench.device",
    "botpsy.bench.shapes",
    "botpsy.engine.load",
    "botpsy.eval.bfcl",
    "botpsy.eval.report",
    "botpsy.eval.worlds",
    "botpsy.export.release",
    "botpsy.export.shapes",
    "botpsy.serve",
    "botpsy.stores.common",
    "botpsy.tools.registry",
    "botpsy.train",
    "botpsy.worlds",
)


def test_the_command_line_starts_without_the_commands_modules():
    """Issue 15: with every command's module imported at the top of cli.py and cli_eval.py,
    `botpsy --help` took 1.25 s (0.2 s before) and `botpsy run` loaded the trainer and the
    evaluators. Importing cli and building its parser now loads none of them."""
    import subprocess
    import sys

    code = (
        "import sys; from botpsy import cli; cli.build_parser(); "
        f"print(sorted(m for m in {NOT_AT_START!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_command_loads_its_own_modules_only():
    # `tools list` needs the tool registry, not the trainer, the evaluators or the exporter.
    import subprocess
    import sys

    code = (
        "import sys; from botpsy import cli; cli.main(['tools', 'list']); "
        "print(sorted(m for m in ('botpsy.tools.registry', 'botpsy.train', 'botpsy.eval.bfcl', "
        "'botpsy.export.release', 'botpsy.bench.device', 'torch') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "['botpsy.tools.registry']"
