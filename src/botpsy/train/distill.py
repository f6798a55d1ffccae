"""Stage 2 — MOPD: multi-teacher on-policy distillation with TRL's `DistillationTrainer`.

What it does: prompts from three skills — tool use (world turns), reasoning (arithmetic, multiple
choice, code) and instruction following (IFBench-style constraints, JSON) — each tagged with its
skill (`botpsy.data.verifiable`). The student samples its own completion for every prompt
(on-policy, as in GKD with λ=1, Agarwal et al. 2024, arXiv:2306.13649); the loss is the per-token
reverse KL, KL(student ‖ teacher) (`beta=1.0`), to the teacher of the prompt's skill. The student
is a LoRA on the previous stage's checkpoint; it is folded in and saved as a stage checkpoint.

How the routing is done, and why this way: TRL's `DistillationTrainer` (TRL ≥ 1.0; the older GKD
trainer is now in `trl.experimental`) holds one teacher. `RoutedDistillationTrainer` keeps one
teacher per skill, tags each generated row with its teacher index, and in the loss splits every
micro-batch by teacher: the student's and that teacher's hidden states for those rows go through
TRL's own chunked divergence, and the per-group sums are added and normalised by the tokens of the
whole batch. So a mixed batch is trained on exactly the routed per-token KL, with one generation
pass and no change to TRL's sampling, buffering or loss code.
Rejected: one GKD pass per teacher over its routed prompts (three sequential runs: the student
forgets skill A while distilling skill C, which is the interference MOPD exists to avoid), and a
skill-homogeneous batch sampler (batches then alternate skills, with the same drift at small batch).

Teachers must share the student's tokenizer: the KL compares distributions token by token over
one vocabulary. Any other teacher is refused before training (`TokenizerMismatch`).

Changed from BotPsy and why: its teachers are larger specialists trained for each skill; in the
tiny preset the tool-use teacher is the SFT checkpoint and the other two are the pre-SFT instruct
base, which still has the reasoning and instruction-following SFT eroded (that erosion is what
MOPD is meant to repair); the scale preset names Qwen3.5-4B specialists on the command line.

Command: `botpsy recipe --preset micro --stages mopd --set mopd.student=PATH`.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

from botpsy.data.verifiable import SKILLS, mixture
from botpsy.protocol.formats import ChatFormat
from botpsy.train.adapters import lora_config
from botpsy.train.common import (
    cpu_args,
    parse_pairs,
    save_checkpoint,
    time_budget_callback,
    train,
    write_summary,
)
from botpsy.train.dapo_config import OnPolicyConfig
from botpsy.train.policy import check_same_tokenizer, load_policy, rendered_prompt_ids


@dataclass(frozen=True)
class MOPDConfig(OnPolicyConfig):
    """Knobs of MOPD (`OnPolicyConfig` plus teachers). `teachers` and `prompts` are "key=value"
    strings so presets and --set can name them."""

    learning_rate: float = field(default=5e-5, metadata={"help": "LoRA learning rate"})
    max_completion_length: int = field(
        default=128, metadata={"help": "tokens the student samples per prompt (the teachers score them)"}
    )
    temperature: float = field(default=1.0, metadata={"help": "sampling and distillation temperature"})
    teachers: tuple[str, ...] = field(
        default=("tool_use=sft", "reasoning=base", "instruction_following=base"),
        metadata={
            "help": "skill=source for each of the three skills. Sources: 'sft' (the SFT stage's "
            "checkpoint), 'base' (the recipe's base model), 'student', a checkpoint folder, "
            "'rl:SOURCE' (a specialist: a short RL run on the skill's own data from SOURCE, RL1 on "
            "world turns for tool use, RL2 on the skill's verifiable domains otherwise), or "
            "'tiny-random' (a small random model on the student's tokenizer; micro preset only)"
        },
    )
    prompts: tuple[str, ...] = field(
        default=("tools=64", "arithmetic=24", "mcq=16", "code=8", "ifeval=24", "json=16"),
        metadata={"help": "verifiable domains as 'name=count' prompts (botpsy.data.verifiable)"},
    )
    beta: float = field(
        default=1.0,
        metadata={
            "help": "generalised JSD interpolation (GKD, Agarwal et al. 2024, arXiv:2306.13649); "
            "1.0: reverse KL(student || teacher), on the student's own samples"
        },
    )
    batch_size: int = field(default=4, metadata={"help": "prompts per micro-batch"})
    grad_accum: int = field(
        default=1, metadata={"help": "micro-batches per optimizer step (gradient accumulation)"}
    )
    specialist_steps: int = field(
        default=8, metadata={"help": "RL steps of each 'rl:SOURCE' specialist teacher"}
    )


def teacher_sources(cfg: MOPDConfig) -> dict[str, str]:
    sources = parse_pairs(cfg.teachers, "mopd.teachers")
    missing = [s for s in SKILLS if s not in sources]
    unknown = [s for s in sources if s not in SKILLS]
    if missing or unknown:
        raise ValueError(
            f"mopd.teachers must name one teacher per skill ({', '.join(SKILLS)}); "
            f"missing {missing or 'none'}, unknown {unknown or 'none'}"
        )
    return sources


def tiny_random_teacher(tok, seed: int = 0, max_positions: int = 2048):
    """A small random llama on the student's tokenizer: proves the routing in the micro preset, teaches
    nothing. The tests' tiny student is the same model with 4,096 positions."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    cfg = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=max_positions,
        pad_token_id=tok.pad_token_id,
        eos_token_id=tok.eos_token_id,
    )
    return LlamaForCausalLM(cfg).eval()


def load_teachers(
    sources: dict[str, str], resolve, student_tok, threads: int = 0, log=print
) -> dict[str, object]:
    """One model per distinct source, checked against the student's tokenizer. `resolve` maps a source to a path."""
    loaded: dict[str, object] = {}
    out = {}
    for skill, source in sources.items():
        key = f"{source}@{skill}" if source.startswith("rl:") else source  # specialists differ per skill
        if key not in loaded:
            if source == "tiny-random":
                loaded[key] = tiny_random_teacher(student_tok, seed=len(loaded))
            else:
                path = resolve(source, skill)
                log(f"mopd: teacher for {skill}: {source} ({path})")
                model, tok = load_policy(path, threads)
                check_same_tokenizer(student_tok, tok, source)
                loaded[key] = model.eval()
        out[skill] = loaded[key]
    return out


def make_routed_trainer():
    """`DistillationTrainer` whose teacher is chosen per row by the prompt's skill (see the module docstring)."""
    import torch
    from trl import DistillationTrainer

    class RoutedDistillationTrainer(DistillationTrainer):
        def __init__(self, *args, teachers: dict, **kwargs):
            self.skills = list(SKILLS)
            super().__init__(*args, teacher_model=teachers[self.skills[0]], **kwargs)
            prepared: dict[int, object] = {id(teachers[self.skills[0]]): self.teacher_model}
            vocab = self.model.config.get_text_config().vocab_size
            self.teachers = {}
            for skill in self.skills:
                t = teachers[skill]
                if t.config.get_text_config().vocab_size != vocab:
                    raise ValueError(
                        f"the {skill} teacher has vocab_size {t.config.get_text_config().vocab_size}, the "
                        f"student {vocab}: per-token distillation needs one vocabulary"
                    )
                if id(t) not in prepared:
                    prepared[id(t)] = self.accelerator.prepare_model(t, evaluation_mode=True)
                self.teachers[skill] = prepared[id(t)]

        def _tokenize_prompts(self, prompts):
            if isinstance(prompts[0], str):
                return rendered_prompt_ids(self.processing_class, prompts), None, {}
            return super()._tokenize_prompts(prompts)

        def _generate_and_score_completions(self, inputs):
            out = super()._generate_and_score_completions(inputs)
            out["teacher_index"] = torch.tensor(
                [self.skills.index(x["skill"]) for x in inputs], device=out["completion_ids"].device
            )
            return out

        def _compute_loss(self, unwrapped_student, inputs, num_items_in_batch):
            index = inputs["teacher_index"]
            rows_total = index.shape[0]
            if num_items_in_batch is None:
                mask = inputs["completion_mask"] * inputs.get("tool_mask", 1)
                num_items_in_batch = mask.sum().clamp(min=1)
            loss = entropy = n_valid = 0
            for t in index.unique().tolist():
                rows = (index == t).nonzero().squeeze(1)
                sub = {
                    k: v[rows]
                    if isinstance(v, torch.Tensor) and v.ndim >= 1 and v.shape[0] == rows_total
                    else v
                    for k, v in inputs.items()
                    if k != "teacher_index"
                }
                self.teacher_model = self.teachers[self.skills[t]]
                part, ent, n = super()._compute_loss(unwrapped_student, sub, num_items_in_batch)
                loss, entropy, n_valid = loss + part, entropy + ent, n_valid + n
            return loss, entropy, n_valid

    return RoutedDistillationTrainer


def mopd_dataset(cfg: MOPDConfig, fmt, split: str = "train", log=print) -> list[dict]:
    counts = {k: int(v) for k, v in parse_pairs(cfg.prompts, "mopd.prompts").items()}
    items = mixture(counts, cfg.seed, split, log)
    return [{"prompt": it.prompt(fmt), "skill": it.skill, "item": it.to_json()} for it in items]


def run_mopd(cfg: MOPDConfig, student: str, out_dir: Path, resolve, log=print) -> dict:
    """Train; `resolve(source, skill)` turns a teacher source ("sft", "base", "rl:…", a path) into a checkpoint path."""
    from datasets import Dataset
    from trl import DistillationConfig

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "config.json").write_text(json.dumps({**asdict(cfg), "student": student}, indent=2))
    sources = teacher_sources(cfg)
    model, tok = load_policy(student, cfg.threads)
    teachers = load_teachers(sources, resolve, tok, cfg.threads, log)
    rows = mopd_dataset(cfg, ChatFormat("qwen35"), log=log)
    by_skill = Counter(r["skill"] for r in rows)
    log(f"mopd: {len(rows)} prompts {dict(by_skill)}; teachers {sources}")
    args = DistillationConfig(
        output_dir=str(out_dir / "checkpoints"),
        per_device_train_batch_size=cfg.batch_size,
        gradient_accumulation_steps=cfg.grad_accum,
        learning_rate=cfg.learning_rate,
        max_steps=cfg.max_steps,
        max_completion_length=cfg.max_completion_length,
        temperature=cfg.temperature,
        beta=cfg.beta,
        save_strategy="steps",
        save_steps=cfg.save_steps,
        seed=cfg.seed,
        use_vllm=cfg.use_vllm,
        **cpu_args(),
    )
    trainer = make_routed_trainer()(
        model=model,
        teachers=teachers,
        args=args,
        train_dataset=Dataset.from_list(rows),
        processing_class=tok,
        peft_config=lora_config(cfg.lora_r, cfg.lora_alpha),
        callbacks=time_budget_callback(cfg.time_budget_min),
    )
    t0 = time.time()
    train(trainer, out_dir, "mopd", log)
    save_checkpoint(trainer.model, tok, out_dir, "botpsy-mopd-" + out_dir.parent.name)
    return write_summary(out_dir, trainer, t0, {"prompts": dict(by_skill), "teachers": sources})
