"""Stage 4 — RL2: DAPO on multi-domain verifiable rewards, plus length and loop shaping.

What it does: the same trainer as RL1 (`botpsy.train.dapo`: TRL `GRPOTrainer`, `loss_type="dapo"`,
clip-higher 0.28, truncated completions masked, dynamic sampling) on a mixture of verifiable
domains from `botpsy.data.verifiable` — arithmetic word problems, multiple choice, small code
tasks run in a sandbox, IFBench-style constraints, JSON against a schema and multi-turn tool use
in the worlds. Three reward functions, weighted:

* `verifiable` — the item's checker, in [0, 1];
* `overlong` — DAPO's soft overlong punishment on the completion's token count, in [-1, 0];
* `loop` — -1 when the reasoning loops, by the evaluation's own detector.

The last two are what BotPsy credits RL2 with: fewer reasoning loops and fewer reasoning tokens
per correct answer. The verifiable reward alone rewards being right, at any length.

Changed from BotPsy and why: a LoRA and generated data instead of full fine-tuning on curated
corpora (CPU budget, offline machine); the IF domain uses the IFBench verifiers with held-out
constraint types kept out of training, so the recipe's IF figure measures transfer.

Command: `botpsy recipe --preset micro --stages rl2 --set rl2.student=PATH`.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

from botpsy.data.verifiable import Item, mixture, score
from botpsy.protocol.formats import ChatFormat
from botpsy.train.adapters import adapter_student, check_continued_student
from botpsy.train.common import parse_pairs
from botpsy.train.dapo import train_dapo
from botpsy.train.dapo_config import DAPOConfig
from botpsy.train.policy import load_policy
from botpsy.train.rewards import loop_penalty, overlong_penalty


@dataclass(frozen=True)
class RL2Config(DAPOConfig):
    """Knobs of RL2: DAPO (`DAPOConfig`) on verifiable domains, with length and loop shaping."""

    domains: tuple[str, ...] = field(
        default=("arithmetic=48", "mcq=32", "code=16", "ifeval=32", "json=16", "tools=48"),
        metadata={"help": "verifiable domains as 'name=count' prompts (botpsy.data.verifiable)"},
    )
    overlong_cache: int = field(
        default=48,
        metadata={
            "help": "DAPO's soft overlong punishment zone L_cache: tokens before max_completion_length "
            "where the length penalty ramps up (paper: 4k of 20k)"
        },
    )
    reward_weights: tuple[float, ...] = field(
        default=(1.0, 1.0, 0.5),
        metadata={
            "help": "weights of the rewards: verifiable score, overlong penalty, reasoning-loop penalty"
        },
    )


def rl2_dataset(cfg: RL2Config, fmt, split: str = "train", log=print) -> list[dict]:
    counts = {k: int(v) for k, v in parse_pairs(cfg.domains, "rl2.domains").items()}
    return [
        {"prompt": it.prompt(fmt), "item": it.to_json(), "domain": it.domain}
        for it in mixture(counts, cfg.seed, split, log)
    ]


def reward_functions(cfg: RL2Config):
    """The TRL reward functions of RL2, in the order of `cfg.reward_weights`."""

    def verifiable(prompts, completions, item, **_):
        return [score(Item.from_json(i), c) for c, i in zip(completions, item, strict=True)]

    def overlong(prompts, completions, completion_ids, **_):
        return [
            overlong_penalty(len(ids), cfg.max_completion_length, cfg.overlong_cache)
            for ids in completion_ids
        ]

    def loop(prompts, completions, **_):
        return [loop_penalty(c) for c in completions]

    return [verifiable, overlong, loop]


def run_rl2(cfg: RL2Config, student: str, out_dir: Path, log=print) -> dict:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "config.json").write_text(json.dumps({**asdict(cfg), "student": student}, indent=2))
    check_continued_student(cfg.init_adapter, student, "rl2.init_adapter")
    student = adapter_student(student, out_dir / "student", log)
    model, tok = load_policy(student, cfg.threads)
    rows = rl2_dataset(cfg, ChatFormat("qwen35"), log=log)
    by_domain = Counter(r["domain"] for r in rows)
    log(f"rl2: {len(rows)} prompts {dict(by_domain)}")
    return train_dapo(
        "rl2",
        cfg,
        model,
        tok,
        rows,
        reward_functions(cfg),
        out_dir,
        log,
        prompts=dict(by_domain),
        student=student,
    )
