"""RL rollouts through llama.cpp: the policy's completions sampled by the engine botpsy ships.

Why: on 2 CPU cores, transformers' `generate` is what limited the tiny run's RL to a couple of
steps; llama.cpp samples the same 135M model many times faster. TRL's `GRPOTrainer` takes a
`rollout_func` (experimental in TRL 1.x) that returns the token ids of prompts and completions; the
loss is still computed by the torch policy on those ids, so the rollout only has to sample from
the same distribution. No library bridges a PEFT policy under training to llama.cpp, hence this
module.

How:
* The student (a checkpoint folder, or a package base's de-quantized copy) is converted once to
  an f16 GGUF, the one the held-out evaluation uses (`train.heldout.eval_gguf`).
* Before the first generation of each optimizer step, the trainable LoRA as it is at that moment
  is saved and written as a GGUF adapter (`export.lora_gguf`), and llama.cpp loads student +
  adapter: llama.cpp applies the same `alpha / r` scaling as PEFT.
* Each prompt is tokenized by the policy's tokenizer (the same ids on both sides) and sampled with
  the trainer's temperature, top-k, top-p, min-p and repetition penalty, up to
  `max_completion_length` tokens, ending at the first stop token (`<|im_end|>` or end of text),
  which stays in the completion as TRL's generate path keeps it.
* Logprobs: TRL reads a rollout's logprobs only for vLLM's importance-sampling correction, which is
  off here (`use_vllm` is false), so none are returned.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from botpsy.export.lora_gguf import gguf_arch, write_lora_gguf
from botpsy.models import PACKAGE_BASES, base_gguf
from botpsy.train.adapters import attention_heads
from botpsy.train.heldout import eval_gguf
from botpsy.train.policy import base_cache_dir, rendered_prompt_ids


def student_gguf(student: str) -> Path:
    """The f16 GGUF llama.cpp samples the student from: converted once beside its HF weights."""
    if student in PACKAGE_BASES:
        folder = base_cache_dir(student, base_gguf(student))
        if not (folder / "config.json").exists():
            raise FileNotFoundError(
                f"{folder} holds no de-quantized copy of {student}; load the policy first"
            )
        return eval_gguf(folder)
    return eval_gguf(student)


def adapter_gguf(peft_model, out_path: Path) -> Path:
    """The PEFT model's trainable LoRA, as it is now, as a llama.cpp GGUF adapter at `out_path`."""
    config = peft_model.base_model.model.config
    with tempfile.TemporaryDirectory(prefix="botpsy-lora-") as tmp:
        peft_model.save_pretrained(tmp)
        return write_lora_gguf(
            Path(tmp), out_path, gguf_arch(config), config.num_hidden_layers, attention_heads(config)
        )


@dataclass
class LlamaRollout:
    """A TRL `rollout_func`: `(prompts, trainer) -> {"prompt_ids", "completion_ids", "logprobs"}`.

    `prompts` are rendered prompt strings (the stage's rows), one completion each: the trainer's
    sampler already repeats every prompt `num_generations` times."""

    model_path: Path
    n_ctx: int = 4096
    n_threads: int | None = None
    seed: int = 0
    work_dir: Path | None = None
    loads: int = 0  # how many times llama.cpp (re)loaded student + adapter
    sampled: int = 0  # completions sampled
    _llm: object = field(default=None, repr=False)
    _step: int = field(default=-1, repr=False)

    def _sync(self, trainer) -> None:
        """Reload llama.cpp with the LoRA as trained so far, once per optimizer step."""
        from llama_cpp import Llama

        step = trainer.state.global_step
        if self._llm is not None and step == self._step:
            return
        if self.work_dir is None:
            self.work_dir = Path(tempfile.mkdtemp(prefix="botpsy-rollout-"))
        adapter = adapter_gguf(
            trainer.accelerator.unwrap_model(trainer.model), self.work_dir / "policy-lora.gguf"
        )
        self.close()
        self._llm = Llama(
            model_path=str(self.model_path),
            lora_path=str(adapter),
            n_ctx=self.n_ctx,
            n_threads=self.n_threads,
            seed=self.seed + step,
            verbose=False,
        )
        self._step = step
        self.loads += 1

    def _stops(self, tok) -> set[int]:
        ids = {self._llm.token_eos()}
        for name in ("<|im_end|>", "<|endoftext|>"):
            i = tok.convert_tokens_to_ids(name)
            if isinstance(i, int) and i != tok.unk_token_id:
                ids.add(i)
        return ids

    def __call__(self, prompts: list[str], trainer) -> dict[str, list]:
        self._sync(trainer)
        tok = trainer.processing_class
        stops = self._stops(tok)
        args = trainer.args
        sampling = {
            "temp": args.temperature,
            "top_k": args.top_k or 0,
            "top_p": args.top_p,
            "min_p": args.min_p or 0.0,
            "repeat_penalty": args.repetition_penalty,
        }
        prompt_ids = rendered_prompt_ids(tok, list(prompts))
        completions = []
        for ids in prompt_ids:
            if len(ids) + args.max_completion_length > self.n_ctx:
                raise ValueError(
                    f"a prompt of {len(ids)} tokens plus {args.max_completion_length} to generate does "
                    f"not fit the rollout context of {self.n_ctx}"
                )
            self._llm.reset()
            out: list[int] = []
            for t in self._llm.generate(ids, reset=True, **sampling):
                out.append(int(t))
                if t in stops or len(out) >= args.max_completion_length:
                    break
            completions.append(out)
        self.sampled += len(completions)
        return {"prompt_ids": prompt_ids, "completion_ids": completions, "logprobs": None}

    def close(self) -> None:
        if self._llm is not None:
            self._llm.close()
            self._llm = None

    def cleanup(self) -> None:
        self.close()
        if self.work_dir is not None:
            shutil.rmtree(self.work_dir, ignore_errors=True)
