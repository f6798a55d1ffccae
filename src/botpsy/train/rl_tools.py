"""Stage 3 — RL1: DAPO on tool-use turns of the worlds, with rule rewards.

What it does: turns world tasks into single-turn prompts (every gold assistant turn, so later
turns are multi-turn tool use: the prompt holds earlier calls and their results), samples a group
of completions per prompt from the policy (LoRA on the previous stage's checkpoint), scores them
with `botpsy.data.turns`' rule rewards (format check, partial credit on calls, world success),
and updates with DAPO's objective through the training half RL1 and RL2 share
(`botpsy.train.dapo.train_dapo`: TRL's `GRPOTrainer` with DAPO's settings and dynamic sampling).
The LoRA is folded in and saved as a stage checkpoint.

Changed from the paper and why: DAPO trains the full model; here a LoRA (CPU budget). Rewards are
rule rewards from the world checker, not answer matching.

Command: `botpsy recipe --preset micro --stages rl1` (after sft, or `--set rl1.student=PATH`).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from botpsy.data.turns import TurnItem, call_reward, format_reward, success_reward, turn_items
from botpsy.protocol.formats import ChatFormat
from botpsy.train.adapters import adapter_student, check_continued_student
from botpsy.train.dapo import train_dapo
from botpsy.train.dapo_config import DAPOConfig
from botpsy.train.policy import load_policy
from botpsy.worlds import get_domain


@dataclass(frozen=True)
class RL1Config(DAPOConfig):
    """Knobs of RL1: DAPO (`DAPOConfig`) on tool-use turns of the worlds, with rule rewards."""

    domains: tuple[str, ...] = field(
        default=("calendar",), metadata={"help": "worlds whose train-split tasks become prompts"}
    )
    tasks: int = field(default=64, metadata={"help": "world tasks drawn per domain (train split)"})
    all_turns: bool = field(
        default=True,
        metadata={"help": "a prompt per gold assistant turn (multi-turn tool use), not only the first"},
    )
    reward_weights: tuple[float, ...] = field(
        default=(0.2, 0.4, 0.4),
        metadata={"help": "weights of the rewards: format, partial credit on the calls, world success"},
    )


def rl1_dataset(cfg: RL1Config, fmt, split: str = "train", seed: int | None = None):
    """Rows {"prompt", "item"}: the rendered prompt and the turn item its rewards read."""
    rows = []
    for name in cfg.domains:
        tasks = get_domain(name).generate(cfg.tasks, cfg.seed if seed is None else seed, split)
        for item in turn_items(tasks, cfg.all_turns):
            rows.append({"prompt": item.prompt(fmt), "item": item.to_json()})
    return rows


def trl_reward(fn, name: str):
    """A TRL reward function (prompts, completions, item=…) around a pure reward of (text, TurnItem)."""

    def reward(prompts, completions, item, **_):
        return [
            fn(c if isinstance(c, str) else c[-1]["content"], TurnItem.from_json(i))
            for c, i in zip(completions, item, strict=True)
        ]

    reward.__name__ = name
    return reward


def run_rl1(cfg: RL1Config, student: str, out_dir: Path, log=print) -> dict:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "config.json").write_text(json.dumps({**asdict(cfg), "student": student}, indent=2))
    check_continued_student(cfg.init_adapter, student, "rl1.init_adapter")
    student = adapter_student(student, out_dir / "student", log)
    model, tok = load_policy(student, cfg.threads)
    rows = rl1_dataset(cfg, ChatFormat("qwen35"))
    log(f"rl1: {len(rows)} tool-use turns from {', '.join(cfg.domains)}")
    funcs = [
        trl_reward(format_reward, "format"),
        trl_reward(call_reward, "calls"),
        trl_reward(success_reward, "success"),
    ]
    return train_dapo("rl1", cfg, model, tok, rows, funcs, out_dir, log, prompts=len(rows), student=student)
