"""`botpsy eval bfcl | ifbench | tau2 | report` through `botpsy.cli.main`: JSON last line, one-line errors."""

from __future__ import annotations

import json

import pytest

from botpsy import cli, term
from botpsy.engine import load as engine_load


@pytest.fixture
def main():
    return cli.main


def test_bfcl_oracle_json_last_line(main, capsys):
    pytest.importorskip("bfcl_eval")
    rc = main(["eval", "bfcl", "--backend", "oracle", "--categories", "parallel", "--limit", "5", "--json"])
    last = capsys.readouterr().out.strip().splitlines()[-1]
    d = json.loads(last)
    assert rc == 0 and d["overall"] == 1.0 and d["categories"]["parallel"]["total"] == 5


@pytest.mark.parametrize("guard", [True, False])
def test_bfcl_without_the_grounding_guard_scores_the_calls_as_written(main, capsys, guard):
    """simple_python's gold holds 8 calls whose numbers the question never states (52 cards, a
    die's sides): the agent's guard holds them; `--no-grounding-guard` scores them as written."""
    pytest.importorskip("bfcl_eval")
    args = ["eval", "bfcl", "--backend", "oracle", "--categories", "simple_python", "--json"]
    assert main(args + ([] if guard else ["--no-grounding-guard"])) == 0
    cat = json.loads(capsys.readouterr().out.strip().splitlines()[-1])["categories"]["simple_python"]
    assert cat["model_accuracy"] == 1.0 and (cat["held"] > 0) == guard
    assert cat["accuracy"] == pytest.approx(1 - cat["held"] / cat["total"], abs=1e-4)


def test_two_models_in_one_json_object(main, capsys):
    pytest.importorskip("bfcl_eval")
    rc = main(
        [
            "eval",
            "bfcl",
            "--model",
            "oracle",
            "--model",
            "oracle",
            "--categories",
            "irrelevance",
            "--limit",
            "2",
            "--json",
        ]
    )
    d = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert rc == 0 and len(d["models"]) == 2


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["eval", "bfcl", "--backend", "oracle", "--categories", "web_search"],
            "unknown BFCL category 'web_search'",
        ),
        (["eval", "tau2", "--backend", "oracle", "--domains", "banking"], "unknown τ² domain 'banking'"),
        (["eval", "bfcl", "--model", "/nope/model.gguf", "--categories", "parallel"], "model not found"),
        (
            ["eval", "report", "--model", "oracle", "--suites", "bfcl,mmlu", "--out", "x"],
            "unknown suite(s) mmlu",
        ),
        (["eval", "bfcl", "--model", "ftp://host/v1", "--backend", "openai"], "needs a URL"),
    ],
)
def test_user_errors_are_one_line(main, capsys, argv, message):
    pytest.importorskip("bfcl_eval")
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == 2 and message in " ".join(err.split()) and "Traceback" not in err


def test_worlds_over_every_domain_report_each_world(main, capsys):
    from botpsy.worlds import DOMAINS

    rc = main(["eval", "worlds", "--backend", "oracle", "--domain", "all", "--n", "2", "--json"])
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert rc == 0 and summary["n"] == 2 * len(DOMAINS) and summary["success"] == 1.0
    assert set(summary["by_domain"]) == set(DOMAINS) and summary["forbidden_calls"] == 0


def test_worlds_with_an_unknown_domain_is_one_line(main, capsys):
    assert main(["eval", "worlds", "--backend", "oracle", "--domain", "calendar,nope"]) != 0
    err = capsys.readouterr().err
    assert "unknown domain 'nope'" in err and "Traceback" not in err


@pytest.mark.parametrize("as_json", [False, True])
def test_a_label_with_markup_prints_as_text(main, capsys, monkeypatch, as_json):
    """Issue 14 item 2 in `eval`: the summary line was `[bold]{model}[/] …` and the JSON line went
    through markup too, so a label like `Standup [/]` ended in rich.errors.MarkupError."""
    import io

    from rich.console import Console

    pytest.importorskip("bfcl_eval")
    screen = io.StringIO()  # a terminal, so the progress bar draws its description too
    monkeypatch.setattr(term, "console", Console(file=screen, force_terminal=True, width=200))
    argv = ["eval", "bfcl", "--backend", "oracle", "--categories", "parallel", "--limit", "2"]
    rc = main([*argv, "--label", "Standup [/] :smile:", *(["--json"] if as_json else [])])
    out = capsys.readouterr().out
    assert rc == 0, screen.getvalue()
    if as_json:
        assert json.loads(out.strip().splitlines()[-1])["model"] == "Standup [/] :smile:"
    else:
        assert out.startswith("Standup [/] :smile: BFCL v4 over 2 items: overall 100.0%")


@pytest.mark.parametrize(
    "files, argv, kind",
    [
        ({"config.json": "{}"}, ["--model", "{dir}"], "transformers"),  # a Hugging Face checkpoint
        ({"manifest.json": "{}"}, ["--model", "{dir}"], "llamacpp"),
        ({}, ["--model", "http://127.0.0.1:9/v1#m"], "openai"),
        ({"config.json": "{}"}, ["--model", "{dir}", "--backend", "llamacpp"], "llamacpp"),
    ],
)
def test_worlds_reads_model_specs_as_bfcl_does(main, capsys, monkeypatch, tmp_path, files, argv, kind):
    """Issue 15: `eval worlds` built its engine itself and knew llama.cpp and the oracle only; it
    now builds through engine/load.py, so it takes every backend `eval bfcl` takes."""
    from botpsy.engine.oracle import ScriptedEngine

    for name, text in files.items():
        (tmp_path / name).write_text(text)
    seen = []

    def fake_load(b, **kw):
        seen.append(b.kind)
        return ScriptedEngine([])

    monkeypatch.setattr(engine_load, "load_engine", fake_load)  # cmd_eval_worlds imports it when run
    argv = [x.replace("{dir}", str(tmp_path)) for x in argv]
    assert main(["eval", "worlds", "--n", "2", "--json", *argv]) == 0
    assert seen == [kind]
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["n"] == 2


def test_worlds_with_a_bad_backend_pairing_is_one_line(main, capsys):
    assert main(["eval", "worlds", "--model", "ftp://host/v1", "--backend", "openai"]) == 2
    err = capsys.readouterr().err
    assert "needs a URL" in " ".join(err.split()) and "Traceback" not in err
