"""The training half RL1 and RL2 share: DAPO on TRL's `GRPOTrainer`, plus dynamic sampling.

Each RL stage builds only its prompts and its reward functions (`rl_tools.py`: RL1, world tool-use
turns with rule rewards; `rl_verifiable.py`: RL2, multi-domain verifiable rewards) and hands them to
`train_dapo`, which trains, saves the stage's checkpoint and writes its summary. The knobs are
`dapo_config.DAPOConfig`'s.

DAPO (Yu et al. 2025, arXiv:2503.14476), as TRL provides it and as configured here:
* `loss_type="dapo"`: token-level loss normalised over all tokens of the batch (long answers are
  not down-weighted per token, as sample-level averaging would);
* clip-higher: `epsilon=0.2` low, `epsilon_high=0.28` high, so low-probability tokens can rise;
* overlong filtering: `mask_truncated_completions=True` — completions cut at the length cap get no
  loss (the runtime's token cap is a failure, not a lesson in the middle of a sentence);
* no KL term (`beta=0`): no reference model is kept;
* dynamic sampling, which TRL lacks: `DynamicSamplingGRPOTrainer` drops groups whose rewards are all
  equal and refills the batch with newly drawn prompts (`botpsy.train.dynamic_sampling`), at most
  `max_refill_rounds` times per generation batch, because each round costs a generation pass.

Changed from the paper and why: DAPO trains the full model; here a LoRA (CPU budget).
"""

from __future__ import annotations

import random
import time
from pathlib import Path

from botpsy.models import PACKAGE_BASES
from botpsy.train.adapters import continued_lora, lora_config
from botpsy.train.common import cpu_args, save_checkpoint, time_budget_callback, train, write_summary
from botpsy.train.dapo_config import DAPOConfig
from botpsy.train.dynamic_sampling import group_rows, merge_rows, plan_groups, refill_needed
from botpsy.train.llama_rollout import LlamaRollout, adapter_gguf, student_gguf
from botpsy.train.policy import rendered_prompt_ids

ROLLOUTS = ("transformers", "llamacpp")


def make_dynamic_sampling_trainer():
    """`GRPOTrainer` with DAPO dynamic sampling (see the module docstring)."""
    import torch
    from trl import GRPOTrainer

    class DynamicSamplingGRPOTrainer(GRPOTrainer):
        max_refill_rounds: int = 2
        refill_seed: int = 0

        def _tokenize_prompts(self, prompts):
            if isinstance(prompts[0], str):
                return rendered_prompt_ids(self.processing_class, prompts), None, {}
            return super()._tokenize_prompts(prompts)

        def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
            per_func = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
            weights = self.reward_weights.to(per_func.device).unsqueeze(0)
            self._last_rewards = (per_func * weights).nansum(dim=1)  # gathered across processes
            return per_func

        def _refill_inputs(self, n_groups: int) -> list[dict]:
            if not hasattr(self, "_refill_rng"):
                self._refill_rng = random.Random(self.refill_seed)
            ds = self.train_dataset
            rows = [ds[self._refill_rng.randrange(len(ds))] for _ in range(n_groups)]
            return [dict(r) for r in rows for _ in range(self.num_generations)]

        def _local(self, rewards: torch.Tensor, n_local: int) -> list[float]:
            start = self.accelerator.process_index * n_local
            return rewards[start : start + n_local].tolist()

        def _generate_and_score_completions(self, inputs):
            first = super()._generate_and_score_completions(inputs)
            if not self.model.training or self.max_refill_rounds <= 0:
                return first
            g, n = self.num_generations, len(inputs)
            needed = n // g
            outs, local = [first], [self._local(self._last_rewards, n)]
            global_batches = [self._last_rewards.tolist()]
            plan = plan_groups(local, g, needed)
            # The refill decision is taken on the gathered rewards, identical on every process, so
            # all processes run the same number of (collective) generation passes.
            global_plan = plan_groups(global_batches, g, len(global_batches[0]) // g)
            rounds = 0
            while refill_needed(global_plan, rounds, self.max_refill_rounds):
                more = self._refill_inputs(max(plan.shortfall, 1))
                outs.append(super()._generate_and_score_completions(more))
                local.append(self._local(self._last_rewards, len(more)))
                global_batches.append(self._last_rewards.tolist())
                rounds += 1
                plan = plan_groups(local, g, needed)
                global_plan = plan_groups(global_batches, g, len(global_batches[0]) // g)
            mode = "train"
            self._metrics[mode]["dynamic_sampling/refill_rounds"].append(float(rounds))
            self._metrics[mode]["dynamic_sampling/informative_groups"].append(
                plan.informative / max(needed, 1)
            )
            if rounds == 0 and plan.picks == [(0, i) for i in range(needed)]:
                return first
            parts = []
            for b, out in enumerate(outs):
                groups = [gi for bi, gi in plan.picks if bi == b]
                if groups:
                    parts.append((out, group_rows(groups, g)))
            merged = merge_rows(parts, self.processing_class.pad_token_id)
            mask = merged["completion_mask"]
            if "tool_mask" in merged:
                mask = mask * merged["tool_mask"]
            merged["num_items_in_batch"] = self.accelerator.gather(mask.sum()).sum()
            return merged

    return DynamicSamplingGRPOTrainer


def train_dapo(
    stage: str,
    cfg: DAPOConfig,
    model,
    tok,
    rows: list[dict],
    reward_funcs: list,
    out_dir: Path,
    log,
    prompts: int | dict[str, int],
    student: str = "",
) -> dict:
    """The training half RL1 and RL2 share: TRL's GRPO with DAPO's settings from `cfg` (its stage
    config's `reward_weights` too) and dynamic sampling, on `rows`, then the stage's checkpoint and
    summary (`prompts` is what the summary records of the data). `student` is what `model` was
    loaded from; llama.cpp rollouts (`cfg.rollout`) sample from its GGUF."""
    from datasets import Dataset
    from trl import GRPOConfig

    if cfg.rollout not in ROLLOUTS:
        raise ValueError(f"rollout must be one of {', '.join(ROLLOUTS)}, got {cfg.rollout!r}")
    if cfg.rollout == "llamacpp" and cfg.use_vllm:
        raise ValueError("rollout=llamacpp and use_vllm both choose the sampler; set one")
    if cfg.init_adapter:
        model = continued_lora(model, cfg.init_adapter, out_dir, f"{stage}.init_adapter")
        lora = model.peft_config["default"]
        log(f"{stage}: continuing the LoRA of {cfg.init_adapter} (r {lora.r}, alpha {lora.lora_alpha})")
    rollout = None
    if cfg.rollout == "llamacpp":
        longest = max(len(ids) for ids in rendered_prompt_ids(tok, [r["prompt"] for r in rows]))
        rollout = LlamaRollout(
            student_gguf(student),
            n_ctx=longest + cfg.max_completion_length + 16,
            n_threads=cfg.threads or None,
            seed=cfg.seed,
        )
    g = cfg.num_generations
    args = GRPOConfig(
        output_dir=str(out_dir / "checkpoints"),
        per_device_train_batch_size=cfg.prompts_per_step * g,
        gradient_accumulation_steps=1,
        num_generations=g,
        max_completion_length=cfg.max_completion_length,
        temperature=cfg.temperature,
        learning_rate=cfg.learning_rate,
        max_steps=cfg.max_steps,
        beta=cfg.beta,
        epsilon=cfg.epsilon,
        epsilon_high=cfg.epsilon_high,
        loss_type=cfg.loss_type,
        mask_truncated_completions=cfg.mask_truncated_completions,
        scale_rewards="group",
        reward_weights=list(cfg.reward_weights),
        save_strategy="steps",
        save_steps=cfg.save_steps,
        seed=cfg.seed,
        use_vllm=cfg.use_vllm,
        **cpu_args(),
    )
    trainer_cls = make_dynamic_sampling_trainer()
    trainer_cls.max_refill_rounds = cfg.max_refill_rounds if cfg.dynamic_sampling else 0
    trainer_cls.refill_seed = cfg.seed
    trainer = trainer_cls(
        model=model,
        reward_funcs=reward_funcs,
        args=args,
        train_dataset=Dataset.from_list(rows),
        processing_class=tok,
        peft_config=None if cfg.init_adapter else lora_config(cfg.lora_r, cfg.lora_alpha),
        callbacks=time_budget_callback(cfg.time_budget_min),
        **({"rollout_func": rollout} if rollout else {}),
    )
    t0 = time.time()
    try:
        train(trainer, out_dir, stage, log)
    finally:
        if rollout:
            rollout.cleanup()
    extra = {}
    if cfg.init_adapter:
        # the continued LoRA, as the embedded model's is kept; over a package base the folder runs
        # on llama.cpp as that model does (base GGUF + adapter), while `hf` (the LoRA folded in)
        # feeds the next stage
        adapter_gguf(trainer.accelerator.unwrap_model(trainer.model), out_dir / "adapter.gguf")
        if student in PACKAGE_BASES:
            extra = {"base": student, "adapter": "adapter.gguf"}
    save_checkpoint(trainer.model, tok, out_dir, f"botpsy-{stage}-" + out_dir.parent.name, extra)
    hist = [h for h in trainer.state.log_history if "reward" in h]
    return write_summary(
        out_dir,
        trainer,
        t0,
        {
            "prompts": prompts,
            "first_reward": hist[0]["reward"] if hist else None,
            "last_reward": hist[-1]["reward"] if hist else None,
            "rollout": cfg.rollout if not cfg.use_vllm else "vllm",
            **({"rollout_loads": rollout.loads, "rollout_completions": rollout.sampled} if rollout else {}),
        },
    )
