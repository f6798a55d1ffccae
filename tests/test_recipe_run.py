"""The whole recipe, sft → mopd → rl1 → rl2, on a tiny random llama: run layout, selection, resume, report."""

import json

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")
pytestmark = pytest.mark.slow

ONE_THREAD = ["sft.threads=1", "mopd.threads=1", "rl1.threads=1", "rl2.threads=1", "eval.threads=1"]
DEV_SPLIT = ["eval.dev_tasks=1", "eval.dev_items=1"]  # the micro preset skips selection; this test covers it


@pytest.fixture(scope="module")
def tiny_base(tiny_llama_dir):
    return str(tiny_llama_dir)


def test_recipe_runs_all_stages_resumes_and_reports(tiny_base, tmp_path):
    from botpsy.train.presets import STAGES, resolve
    from botpsy.train.runner import run_stages

    overrides = [
        *ONE_THREAD,
        *DEV_SPLIT,
        f"sft.base={tiny_base}",
        "mopd.teachers=tool_use=rl:sft,reasoning=rl:base,instruction_following=base",
        "mopd.specialist_steps=1",
    ]
    plan = resolve("micro", list(STAGES), overrides)
    plan["base"] = tiny_base
    plan["export"] = {"quants": ["Q8_0"], "check_parity": False}
    root = tmp_path / "micro"
    report = run_stages("micro", plan, root, log=lambda *_: None)
    assert [s["stage"] for s in report["stages"]] == ["base", *STAGES]
    for stage in STAGES:
        done = json.loads((root / stage / "done.json").read_text())
        selection = json.loads((root / stage / "selection.json").read_text())
        assert selection["best"] in selection["scores"] and "final" in selection["scores"]
        if stage != "sft":  # sft saves every 20 steps: only its final weights compete
            assert "checkpoint-1" in selection["scores"] and "checkpoint-2" not in selection["scores"]
        assert done["best"].startswith(str(root / stage))
        figures = json.loads((root / stage / "eval.json").read_text())
        for key in (
            "success",
            "by_kind",
            "instruction_following_accuracy",
            "reasoning_accuracy",
            "reasoning_loop_rate",
        ):
            assert key in figures
    # the rl: teachers were trained first, each a short RL run on its own skill
    sft_best = json.loads((root / "sft" / "done.json").read_text())["best"]
    assert json.loads((root / "teachers" / "tool_use" / "done.json").read_text())["start"] == sft_best
    reasoning = json.loads((root / "teachers" / "reasoning" / "train_summary.json").read_text())
    assert set(reasoning["prompts"]) <= {"arithmetic", "mcq", "code"} and reasoning["steps"] == 1
    assert not (root / "teachers" / "instruction_following").exists()  # "base" needs no training
    # the teachers the run trained were measured on the held-out items, beside the student they taught
    mopd_row = next(s for s in report["stages"] if s["stage"] == "mopd")
    assert sorted(mopd_row["teachers"]) == ["reasoning", "tool_use"]
    assert all(t["eval_engine"] == "llamacpp" and "success" in t for t in mopd_row["teachers"].values())
    # each stage started from the previous stage's choice
    assert (
        json.loads((root / "mopd" / "done.json").read_text())["start"]
        == json.loads((root / "sft" / "done.json").read_text())["best"]
    )
    # the last stage's checkpoint is exported as GGUF, loadable as a botpsy model folder
    assert report["stages"][-1]["export"] == {"manifest": str(root / "release" / "manifest.json")}
    assert (root / "release" / "model-Q8_0.gguf").read_bytes()[:4] == b"GGUF"
    md = (root / "recipe-micro.md").read_text()
    assert "| rl2 |" in md and "world success" in md
    # held-out figures came from llama.cpp on each chosen checkpoint's f16 GGUF
    for stage in ("base", *STAGES):
        figures = json.loads((root / stage / "eval.json").read_text())
        assert figures["eval_engine"] == "llamacpp" and figures["eval_seconds"] > 0
    assert (root / "base" / "eval-f16.gguf").read_bytes()[:4] == b"GGUF"
    # wall time per stage and phase, and the whole run's, in the folder and the report
    wall = json.loads((root / "timings.json").read_text())
    assert set(wall) == {"base", *STAGES, "export"}
    assert all(wall[s]["train"] > 0 and wall[s]["select"] > 0 and wall[s]["eval"] > 0 for s in STAGES)
    assert report["wall_seconds_total"] == pytest.approx(sum(sum(w.values()) for w in wall.values()), abs=0.5)
    assert "## Wall time" in md and "Whole run: **" in md
    assert wall["mopd"]["teacher eval"] > 0 and "## MOPD's specialist teachers" in md
    # resume: everything is done, a second run only re-reads and re-reports
    mtime = (root / "rl1" / "hf" / "config.json").stat().st_mtime
    again = run_stages("micro", plan, root, log=lambda *_: None)
    assert again["stages"] == report["stages"]
    assert (root / "rl1" / "hf" / "config.json").stat().st_mtime == mtime
    assert json.loads((root / "timings.json").read_text())["rl1"]["train"] == wall["rl1"]["train"]
