"""The recipe report's verdicts on BotPsy's published pattern (no training: figures given)."""

import json

import pytest

from botpsy.train.recipe import run_recipe
from botpsy.train.report import markdown, stage_effects


def _items(n_if: int, n_reason: int) -> list[dict]:
    return [{"id": f"i{k}", "domain": "ifeval", "score": 0.0, "reasoning_tokens": 5} for k in range(n_if)] + [
        {"id": f"r{k}", "domain": "arithmetic", "score": 1.0, "reasoning_tokens": 5} for k in range(n_reason)
    ]


def _row(stage, success, exact, if_acc, reason, loops, tokens, n=400, items=(200, 200)):
    return {
        "stage": stage,
        "n": n,
        "success": success,
        "tool_call_exact": exact,
        "instruction_following_accuracy": if_acc,
        "reasoning_accuracy": reason,
        "reasoning_loop_rate": loops,
        "reasoning_tokens_per_correct": tokens,
        "items": _items(*items),
    }


def test_verdicts_follow_the_sign_and_the_noise_bound():
    rows = [
        _row("base", 0.05, 0.05, 0.30, 0.40, 0.20, 80.0),
        _row("sft", 0.45, 0.40, 0.20, 0.30, 0.20, 80.0),  # success +40 points over 400 tasks: real
        _row("mopd", 0.46, 0.41, 0.21, 0.10, 0.20, 80.0),  # IF +1 point: noise; reasoning -20: opposite
        _row("rl1", 0.46, 0.41, 0.21, 0.10, 0.20, 80.0),  # no change in exact calls
        _row("rl2", 0.46, 0.41, 0.21, 0.10, 0.05, 60.0),  # loops and tokens cut
    ]
    got = {(e["stage"], e["metric"]): e["verdict"] for e in stage_effects(rows)}
    assert got[("sft", "success")] == "as published"
    assert got[("mopd", "instruction_following_accuracy")] == "within noise (as published)"
    assert got[("mopd", "reasoning_accuracy")] == "opposite"
    assert got[("rl1", "tool_call_exact")] == "no change"
    assert got[("rl2", "reasoning_loop_rate")] == "as published"
    assert got[("rl2", "reasoning_tokens_per_correct")] == "as published"
    text = markdown(rows, "tiny", {"items": 0, "by_model": {}})
    assert (
        "against the published pattern" in text
        and "| sft | SFT raises tool success | 0.050 → 0.450 |" in text
    )


def test_small_samples_make_a_large_change_noise_and_missing_values_are_said():
    rows = [
        _row("base", 0.10, 0.10, None, 0.40, 0.0, None, n=20, items=(0, 20)),
        _row("sft", 0.30, 0.30, None, 0.40, 0.0, None, n=20, items=(0, 20)),
    ]
    effects = {e["metric"]: e for e in stage_effects(rows)}
    assert effects["success"]["verdict"] == "within noise (as published)"  # +20 points on 20 tasks
    assert effects["success"]["two_se"] > 0.2
    only_sft = [e for e in stage_effects(rows) if e["stage"] != "sft"]
    assert only_sft == []  # the later stages did not run: no claim is judged
    rows.append(_row("mopd", 0.30, 0.30, None, 0.40, 0.0, None, n=20, items=(0, 20)))
    mopd_if = next(e for e in stage_effects(rows) if e["metric"] == "instruction_following_accuracy")
    assert mopd_if["verdict"].startswith("not measurable")


def test_report_only_reports_the_finished_stages_and_names_the_rest(tmp_path):
    root = tmp_path / "micro"
    with pytest.raises(ValueError, match="no evaluated base"):
        run_recipe(
            "micro", "sft,mopd,rl1,rl2", str(tmp_path), False, [], log=lambda s: None, report_only=True
        )
    (root / "base").mkdir(parents=True)
    (root / "sft").mkdir()
    (root / "mopd").mkdir()  # started, not finished: no done.json
    (root / "base" / "eval.json").write_text(json.dumps(_row("base", 0.0, 0.25, 0.0, 0.0, 0.1, None)))
    (root / "sft" / "eval.json").write_text(json.dumps(_row("sft", 0.25, 0.29, 0.0, 0.08, 0.04, 34.0)))
    (root / "sft" / "done.json").write_text(json.dumps({"best": str(root / "sft")}))
    (root / "sft" / "train_summary.json").write_text(json.dumps({"steps": 28}))
    assert (
        run_recipe(
            "micro", "sft,mopd,rl1,rl2", str(tmp_path), False, [], log=lambda s: None, report_only=True
        )
        == 0
    )
    report = json.loads((root / "recipe-micro.json").read_text())
    assert report["complete"] is False and report["stages_not_run"] == ["mopd", "rl1", "rl2"]
    assert [s["stage"] for s in report["stages"]] == ["base", "sft"] and report["stages"][1]["train"] == {
        "steps": 28
    }
    text = (root / "recipe-micro.md").read_text()
    assert "Partial run: mopd, rl1, rl2 not run yet." in text and "| sft | SFT raises tool success |" in text


def test_wall_time_table_sums_phases_per_stage_and_for_the_run():
    from botpsy.train.report import wall_markdown

    lines = wall_markdown({"base": {"prepare": 6.0, "eval": 54.0}, "sft": {"train": 1800.0, "eval": 120.0}})
    text = "\n".join(lines)
    assert "| stage | prepare | train | eval | total |" in text
    assert "| base | 0.1 | – | 0.9 | 1.0 |" in text and "| sft | – | 30.0 | 2.0 | 32.0 |" in text
    assert "Whole run: **33.0 minutes** (0.55 h)." in text
    assert wall_markdown({}) == []


def test_mopd_teachers_are_reported_beside_their_student_and_explain_the_verdict(tmp_path):
    root = tmp_path / "micro"
    for stage, row, steps in (
        ("sft", _row("sft", 0.33, 0.33, 0.33, 0.0, 0.08, None, n=24, items=(12, 12)), 27),
        ("mopd", _row("mopd", 0.29, 0.33, 0.25, 0.0, 0.04, None, n=24, items=(12, 12)), 5),
    ):
        (root / stage).mkdir(parents=True)
        (root / stage / "eval.json").write_text(json.dumps(row))
        (root / stage / "done.json").write_text(json.dumps({"best": str(root / stage)}))
        (root / stage / "train_summary.json").write_text(json.dumps({"steps": steps}))
    (root / "base").mkdir()
    (root / "base" / "eval.json").write_text(json.dumps(_row("base", 0.0, 0.25, 0.0, 0.0, 0.1, None)))
    teachers = root / "teachers"
    for skill, if_acc in (("instruction_following", 0.083), ("reasoning", 0.0)):
        (teachers / skill).mkdir(parents=True)
        (teachers / skill / "done.json").write_text("{}")
        figures = _row(skill, 0.0, 0.25, if_acc, 0.0, 0.2, None, n=24, items=(12, 12))
        (teachers / skill / "eval.json").write_text(json.dumps(figures))
    (teachers / "tool_use").mkdir()  # trained, never measured: --report-only measures nothing
    (teachers / "tool_use" / "done.json").write_text("{}")

    run_recipe("micro", "sft,mopd", str(tmp_path), False, [], log=lambda s: None, report_only=True)
    report = json.loads((root / "recipe-micro.json").read_text())
    mopd = report["stages"][2]
    assert sorted(mopd["teachers"]) == ["instruction_following", "reasoning"]
    assert "items" not in mopd["teachers"]["reasoning"]
    effects = {e["metric"]: e for e in report["stage_effects"] if e["stage"] == "mopd"}
    assert (
        effects["instruction_following_accuracy"]["context"] == "5 steps; instruction_following teacher 0.083"
    )
    assert effects["reasoning_accuracy"]["context"] == "5 steps; reasoning teacher 0.000"
    text = (root / "recipe-micro.md").read_text()
    assert "## MOPD's specialist teachers" in text
    assert "| student (sft) | 0.330 | 0.330 | 0.330 |" in text
    assert "| teacher: instruction_following | 0.000 | 0.250 | 0.083 |" in text
    assert "| after MOPD | 0.290 |" in text


def test_teacher_figures_measure_each_trained_teacher_once(tmp_path):
    from botpsy.train.runner import teacher_figures

    for skill in ("reasoning", "tool_use"):
        (tmp_path / "teachers" / skill).mkdir(parents=True)
        (tmp_path / "teachers" / skill / "done.json").write_text("{}")
    (tmp_path / "teachers" / "half_trained").mkdir()  # interrupted: no done.json, not measured
    seen = []

    def evaluate(folder):
        seen.append(folder.name)
        return {"success": 0.5, "items": [1, 2]}

    got = teacher_figures(tmp_path, evaluate)
    assert seen == ["reasoning", "tool_use"]
    assert got == {"reasoning": {"success": 0.5}, "tool_use": {"success": 0.5}}
    assert teacher_figures(tmp_path / "elsewhere", evaluate) == {}
