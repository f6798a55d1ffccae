"""Parity of an exported GGUF with the Hugging Face model it came from: next-token logits.

The reference is transformers in fp32; llama.cpp runs the GGUF on the same token ids. Pearson
correlation of the two logit vectors is the figure (1.0 is identical up to scale and shift);
the top-1 token is reported too. Measured on the tiny random-init Qwen3.5 model (537 tokens of a
rendered calendar conversation): f16 0.9999995, Q8_0 0.9996, Q4_K_M 0.966
(`tests/test_export_tiny_qwen.py` pins 0.999 / 0.99 / 0.93).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from botpsy.engine.load import load_engine


@dataclass(frozen=True)
class LogitParity:
    correlation: float
    max_abs_diff: float
    same_top1: bool


def hf_next_token_logits(model, ids: list[int]) -> np.ndarray:
    """Logits after the last of `ids`, from a transformers causal LM (fp32, no cache)."""
    import torch

    with torch.inference_mode():
        out = model(input_ids=torch.tensor([ids]), use_cache=False)
    return out.logits[0, -1].float().numpy()


def gguf_next_token_logits(llm, ids: list[int]) -> np.ndarray:
    """Logits after the last of `ids`, from a `llama_cpp.Llama` (its cache is reset first).

    Without `logits_all` the wrapper keeps no scores, so read llama.cpp's last-row logits directly.
    """
    import llama_cpp

    llm.reset()
    llm.eval(ids)
    ptr = llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1)
    return np.ctypeslib.as_array(ptr, shape=(llm.n_vocab(),)).astype(np.float32)


def compare(reference: np.ndarray, other: np.ndarray) -> LogitParity:
    n = min(len(reference), len(other))  # llama.cpp's row count is the GGUF vocabulary size
    a, b = reference[:n].astype(np.float64), other[:n].astype(np.float64)
    return LogitParity(
        correlation=float(np.corrcoef(a, b)[0, 1]),
        max_abs_diff=float(np.abs(a - b).max()),
        same_top1=int(a.argmax()) == int(b.argmax()),
    )


def gguf_parity(hf_dir: str | Path, gguf_paths: list[str | Path], ids: list[int]) -> dict[str, LogitParity]:
    """Compare each GGUF's next-token logits on `ids` with the HF model in `hf_dir`."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(hf_dir), dtype="float32").eval()
    ref = hf_next_token_logits(model, ids)
    out = {}
    for p in gguf_paths:
        eng = load_engine(p, backend="llamacpp", n_ctx=max(512, len(ids) + 16))
        out[Path(p).name] = compare(ref, gguf_next_token_logits(eng.llm, ids))
        eng.llm.close()
    return out
