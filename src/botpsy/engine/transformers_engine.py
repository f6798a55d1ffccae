"""The training/evaluation backend: a Hugging Face model folder through transformers (torch).

Same interface as `LlamaCppEngine` (`botpsy.engine.base.Engine`), so the agent loop, evaluation
and RL rollouts run unchanged on a checkpoint that has not been exported to GGUF yet.

Greedy at temperature 0; otherwise softmax sampling from a seeded generator. Generation stops on
`<|im_end|>` or the model's eos ids.

Prefix cache: the engine keeps the ids it has fed through the model and their `DynamicCache`.
When a new prompt extends them (the agent only ever appends), only the new suffix is prefilled.
When it diverges, a pure-attention model's cache is cropped back to the common prefix; Qwen3.5's
linear-attention layers hold a recurrent state that cannot be rolled back, so a diverging prompt
on that architecture is prefilled from scratch (the same trade llama.cpp makes without
`n_rs_seq`).
"""

from __future__ import annotations

import inspect
import json
import time
from collections.abc import Callable
from pathlib import Path

from botpsy.engine.base import EngineBase, EngineError, Generation, TurnEnd, bos_ids
from botpsy.protocol.blocks import hf_encoder
from botpsy.protocol.formats import IM_END, ChatFormat, detect_format
from botpsy.protocol.messages import StepTiming


def _hf_folder(path: Path) -> tuple[Path, bool]:
    """The HF checkpoint behind `path`, and whether it thinks: the folder itself, or the `hf`
    folder a botpsy model folder's manifest.json names (`botpsy.export.release`)."""
    manifest = path / "manifest.json"
    if not (path / "config.json").exists() and manifest.exists():
        try:
            m = json.loads(manifest.read_text())
        except (OSError, json.JSONDecodeError) as e:
            raise EngineError(f"cannot read {manifest}: {e}") from None
        if not m.get("hf"):
            raise EngineError(
                f"{manifest} names no Hugging Face checkpoint ('hf'); run this model with the llama.cpp backend"
            )
        return path / m["hf"], bool(m.get("thinking", True))
    return path, True


class TransformersEngine(EngineBase):
    def __init__(
        self,
        model_dir: str | Path,
        chat_format: str | None = None,
        dtype: str = "float32",
        device: str = "cpu",
        seed: int = 0,
        n_threads: int | None = None,
        name: str | None = None,
    ):
        model_dir, self.thinking = _hf_folder(Path(model_dir))
        if not (model_dir / "config.json").exists():
            raise EngineError(
                f"{model_dir} is not a Hugging Face model folder (no config.json); "
                "pass the folder written by save_pretrained, or use a .gguf with the llama.cpp backend"
            )
        try:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError:
            raise EngineError(
                "the transformers backend needs the 'train' extra: pip install 'botpsy[train]'"
            ) from None
        if n_threads:
            torch.set_num_threads(n_threads)
        t0 = time.perf_counter()
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(str(model_dir))
            self.model = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=dtype).to(device).eval()
        except (OSError, ValueError) as e:
            raise EngineError(f"transformers could not load {model_dir}: {e}") from None
        self.load_s = time.perf_counter() - t0
        self._encode = hf_encoder(self.tokenizer)
        self.torch = torch
        self.device = device
        self.name = name or model_dir.name
        self.chat_format = ChatFormat(chat_format or detect_format(self.tokenizer.chat_template))
        self.generator = torch.Generator(device="cpu").manual_seed(seed)
        self.n_ctx = int(getattr(self.model.config, "max_position_embeddings", 4096) or 4096)
        eos = self.model.generation_config.eos_token_id
        eos_ids = eos if isinstance(eos, list) else [eos] if eos is not None else []
        self.turn_end = TurnEnd(self.tokenize(IM_END), [*eos_ids, self.tokenizer.eos_token_id])
        self.stop_ids = self.turn_end.stop_ids
        self.bos_ids = bos_ids(self.tokenizer)
        # transformers 5.x renamed `past_key_values` to `cache` (the old name warns until 5.40).
        params = inspect.signature(self.model.forward).parameters
        self._cache_kw = "cache" if "cache" in params else "past_key_values"
        self._cache = None
        self._fed: list[int] = []  # ids whose keys/values (or recurrent state) are in _cache

    # ---- tokens -------------------------------------------------------------------------------
    def tokenize(self, text: str) -> list[int]:
        """Markup parses special tokens; the data pieces of a `Block` never do (protocol.blocks)."""
        return self._encode(text)

    def detokenize(self, ids: list[int]) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=False, clean_up_tokenization_spaces=False)

    # ---- cache --------------------------------------------------------------------------------
    def reset(self) -> None:
        self._cache, self._fed = None, []

    def cached_prefix(self, ids: list[int]) -> int:
        n = 0
        for a, b in zip(self._fed, ids, strict=False):
            if a != b:
                break
            n += 1
        return n

    def _reuse(self, prompt_ids: list[int]) -> int:
        """Make the cache hold a prefix of `prompt_ids` (leaving at least one id to feed); its length."""
        keep = min(self.cached_prefix(prompt_ids), len(prompt_ids) - 1)
        if keep == len(self._fed):
            return keep
        if keep > 0 and self._cache is not None:
            try:
                self._cache.crop(-(len(self._fed) - keep))
                self._fed = self._fed[:keep]
                return keep
            except (RuntimeError, ValueError, AttributeError):
                pass  # recurrent (linear-attention) state cannot be rolled back
        self.reset()
        return 0

    def _forward(self, ids: list[int]):
        from transformers import DynamicCache

        torch = self.torch
        if self._cache is None:
            self._cache = DynamicCache(config=self.model.config)
        x = torch.tensor([ids], device=self.device)
        try:
            with torch.inference_mode():
                kw = {self._cache_kw: self._cache}
                out = self.model(input_ids=x, use_cache=True, logits_to_keep=1, **kw)
        except BaseException:
            self.reset()  # a half-updated cache would silently corrupt the next call
            raise
        self._fed.extend(ids)
        return out.logits[0, -1].float()

    def _pick(self, logits, temperature: float) -> int:
        if temperature <= 0:
            return int(logits.argmax())
        probs = self.torch.softmax(logits / temperature, dim=-1).cpu()
        return int(self.torch.multinomial(probs, 1, generator=self.generator))

    # ---- generation ---------------------------------------------------------------------------
    def generate(
        self,
        prompt_ids: list[int],
        max_tokens: int = 512,
        temperature: float = 0.0,
        on_text: Callable[[str], None] | None = None,
    ) -> Generation:
        if not prompt_ids:
            raise EngineError("the prompt is empty; render at least the first turn before generating")
        room = self.n_ctx - len(prompt_ids)
        if room <= 8:
            raise EngineError(
                f"the conversation ({len(prompt_ids)} tokens) fills the context window ({self.n_ctx}); "
                "start a new conversation"
            )
        max_tokens = min(max_tokens, room - 1)
        t0 = time.perf_counter()
        cached = self._reuse(prompt_ids)
        logits = self._forward(prompt_ids[cached:])
        out: list[int] = []
        stop = "length"
        emitted = ""
        first = None
        while True:
            tok = self._pick(logits, temperature)
            if first is None:
                first = time.perf_counter()
            if tok in self.stop_ids:
                stop = "eos"
                break
            out.append(tok)
            if on_text is not None:
                text = self.detokenize(out)
                if not text.endswith("\ufffd"):  # wait for the rest of a split UTF-8 character
                    on_text(text[len(emitted) :])
                    emitted = text
            if self.turn_end.reached(out, self.detokenize):
                stop = "eos"
                break
            if len(out) >= max_tokens:
                break
            logits = self._forward([tok])
        end = time.perf_counter()
        first = first or end
        new_prompt = len(prompt_ids) - cached
        n_gen = len(out) + (1 if stop == "eos" else 0)
        timing = StepTiming(
            prompt_tokens=new_prompt,
            cached_tokens=cached,
            generated_tokens=n_gen,
            ttft_s=first - t0,
            prefill_tok_s=new_prompt / max(first - t0, 1e-9),
            decode_tok_s=(n_gen - 1) / (end - first) if n_gen > 1 and end > first else 0.0,
            total_s=end - t0,
        )
        ids, text = self.turn_end.cut(out, self.detokenize, self.tokenize)
        return Generation(ids, text, stop, timing)
