"""The comparison report: several models in one run, JSON + markdown + plots, resumable, faults counted."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("bfcl_eval")
pytest.importorskip("ifbench")
pytest.importorskip("matplotlib")

from botpsy.engine.base import EngineError  # noqa: E402
from botpsy.engine.oracle import ScriptedEngine  # noqa: E402
from botpsy.eval.report import ReportConfig, build_report, pareto_front, run_model, write_report  # noqa: E402

CONFIG = ReportConfig(
    bfcl_categories="simple_python,irrelevance",
    bfcl_limit=3,
    worlds_n=1,
    ifbench_limit=3,
    max_tokens=64,
)


class Chatty(ScriptedEngine):
    """A model that always answers in words and claims an action it never took."""

    name = "chatty"

    def __init__(self):
        super().__init__([])
        self.calls = 0

    def generate(self, prompt_ids, max_tokens=512, temperature=0.0, on_text=None):
        self.calls += 1
        self.texts = ["Easy.\n</think>\n\nI've sent it."]
        return super().generate(prompt_ids, max_tokens, temperature, on_text)


class Dead(ScriptedEngine):
    name = "dead"

    def generate(self, *a, **k):
        raise EngineError("the backend stopped responding")


class NoBar:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def no_progress(label):
    return NoBar(), (lambda name, n: None), (lambda r: None)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    chatty = Chatty()
    runs = [
        run_model("oracle", None, CONFIG, out, no_progress),
        run_model("chatty", chatty, CONFIG, out, no_progress),
        run_model("dead", Dead([]), CONFIG, out, no_progress),
    ]
    rep = build_report(runs, CONFIG)
    return out, rep, write_report(rep, out), chatty


@pytest.mark.slow  # three models through three suites, ≈15 s
def test_report_files_hold_every_model(report):
    out, rep, paths, _ = report
    names = sorted(p.name for p in paths)
    assert names == ["reasoning_tokens.png", "report.json", "report.md", "scores.png", "success_vs_turns.png"]
    for p in paths:
        if p.suffix == ".png":
            assert p.read_bytes()[:4] == b"\x89PNG"
    saved = json.loads((out / "report.json").read_text())
    assert saved["models"] == ["oracle", "chatty", "dead"]
    md = (out / "report.md").read_text()
    assert "| `oracle` | 100.0% | 100.0% |" in md and "`chatty`" in md and "`dead`" in md


@pytest.mark.slow  # three models through three suites, ≈15 s
def test_figures(report):
    _, rep, _, _ = report
    assert rep["suites"]["bfcl"]["oracle"]["overall"] == 1.0
    assert rep["suites"]["worlds"]["oracle"]["success"] == 1.0
    chatty = rep["metrics"]["chatty"]
    assert chatty["phantom_action_rate"] > 0.5  # "I've sent it." with no call, on most world tasks
    assert chatty["parse_error_rate"] == 0.0 and chatty["errors"] == 0
    # irrelevance items are solved by oracle and chatty alike, never by the dead model: nothing in common
    assert rep["cross"]["reasoning_tokens_per_correct"]["bfcl"]["items"] == 0


@pytest.mark.slow  # three models through three suites, ≈15 s
def test_a_dead_backend_is_scored_failed_with_its_reason(report):
    _, rep, _, _ = report
    dead = rep["metrics"]["dead"]
    assert dead["errors"] == dead["items"] > 0
    assert rep["failures"]["dead"] == {"error: EngineError": dead["items"]}
    assert "error: EngineError ×" in (report[0] / "report.md").read_text()


@pytest.mark.slow  # three models through three suites, ≈15 s
def test_rerun_resumes_from_the_cache(report):
    out, _, _, chatty = report
    before = chatty.calls
    again = run_model("chatty", chatty, CONFIG, out, no_progress)
    assert chatty.calls == before and again.summaries["bfcl"]["n"] == 6


def test_common_items_exclude_what_one_model_failed(tmp_path):
    runs = [
        run_model(
            "oracle",
            None,
            ReportConfig(suites=("bfcl",), bfcl_categories="irrelevance", bfcl_limit=4),
            tmp_path,
            no_progress,
        ),
        run_model(
            "chatty",
            Chatty(),
            ReportConfig(suites=("bfcl",), bfcl_categories="irrelevance", bfcl_limit=4),
            tmp_path,
            no_progress,
        ),
    ]
    rep = build_report(runs, ReportConfig(suites=("bfcl",)))
    cross = rep["cross"]["reasoning_tokens_per_correct"]["bfcl"]
    assert cross["items"] == 4 and cross["by_model"]["chatty"] == 5.0  # "Easy.": five byte tokens
    assert cross["by_model"]["oracle"] > 0


@pytest.mark.parametrize(
    "points, front",
    [
        ([(2, 50), (3, 80), (4, 70)], [(2, 50), (3, 80)]),
        ([(5, 90), (1, 10)], [(1, 10), (5, 90)]),
        ([(2, 60), (2, 40)], [(2, 60)]),
        ([], []),
    ],
)
def test_pareto_front(points, front):
    assert pareto_front(points) == front
