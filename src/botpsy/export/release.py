"""A model folder botpsy can run: GGUF files in three precisions, a manifest, and their parity.

`export_model(hf_dir, out_dir)` writes

    out_dir/model-f16.gguf        (or bf16 / f32: the converter's output)
    out_dir/model-Q8_0.gguf       (the default, as BotPsy ships)
    out_dir/model-Q4_K_M.gguf
    out_dir/manifest.json         (read by botpsy.models.resolve: base, adapter, chat_format, thinking, name)
    out_dir/export_report.json    (sizes, tensor types, next-token logit parity against transformers)

`export_tiny(out_dir)` first builds the tiny random-init Qwen3.5 model (`tiny_qwen`) into
`out_dir/hf` — the untrained baseline evaluation compares against — then exports it:

    python -c "from botpsy.export.release import export_tiny; export_tiny('runs/tiny-qwen35')"
"""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import asdict
from pathlib import Path

from botpsy.data.sft import conversation_messages
from botpsy.export.gguf import convert_hf_to_gguf, quantize_gguf, tensor_types
from botpsy.export.parity import gguf_parity
from botpsy.export.tiny_qwen import build_tiny_qwen35
from botpsy.protocol.formats import ChatFormat, detect_format
from botpsy.worlds import get_domain

DEFAULT_QUANTS = ("Q8_0", "Q4_K_M")


def parity_ids(tokenize) -> list[int]:
    """Token ids of a short rendered calendar conversation (system, request, call, result, answer)."""
    tasks = get_domain("calendar").generate(2, seed=7, split="eval")
    text = ChatFormat("qwen35").render(conversation_messages(tasks), None, add_generation_prompt=True)
    return tokenize(text)


def export_model(
    hf_dir: str | Path,
    out_dir: str | Path,
    name: str | None = None,
    outtype: str = "f16",
    quants: tuple[str, ...] = DEFAULT_QUANTS,
    default: str = "Q8_0",
    pre_tokenizer: str = "auto",
    thinking: bool = True,
    check_parity: bool = True,
) -> Path:
    """Convert, quantize and describe `hf_dir` in `out_dir`; returns the manifest path."""
    hf_dir, out_dir = Path(hf_dir), Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    name = name or hf_dir.name
    f16 = convert_hf_to_gguf(
        hf_dir, out_dir / f"model-{outtype}.gguf", outtype, pre_tokenizer, model_name=name
    )
    files = {outtype: f16}
    for q in quants:
        files[q] = quantize_gguf(files[outtype], out_dir / f"model-{q}.gguf", q)
    export_s = time.perf_counter() - t0
    base = files.get(default) or files[outtype]
    chat_template = _chat_template(hf_dir)
    report = {
        "source": str(hf_dir),
        "export_s": round(export_s, 2),
        "files": {
            k: {
                "path": p.name,
                "bytes": p.stat().st_size,
                "tensor_types": dict(Counter(tensor_types(p).values())),
            }
            for k, p in files.items()
        },
    }
    if check_parity:
        report["parity"] = _parity(hf_dir, files)
    (out_dir / "export_report.json").write_text(json.dumps(report, indent=2) + "\n")
    manifest = {
        "base": base.name,
        "adapter": None,
        "chat_format": detect_format(chat_template),
        "thinking": thinking,
        "name": name,
        "hf": _relative(hf_dir, out_dir),
        "files": {k: p.name for k, p in files.items()},
    }
    path = out_dir / "manifest.json"
    path.write_text(json.dumps(manifest, indent=2) + "\n")
    return path


def export_tiny(out_dir: str | Path, seed: int = 0, train_steps: int = 0, check_parity: bool = True) -> Path:
    """Build the tiny Qwen3.5 model into `out_dir/hf` and export it; returns the manifest path."""
    out_dir = Path(out_dir)
    hf_dir = build_tiny_qwen35(out_dir / "hf", seed=seed, train_steps=train_steps)
    name = "tiny-qwen35-random" if train_steps == 0 else f"tiny-qwen35-{train_steps}steps"
    return export_model(hf_dir, out_dir, name=name, pre_tokenizer="auto", check_parity=check_parity)


def _parity(hf_dir: Path, files: dict[str, Path]) -> dict[str, dict]:
    from transformers import AutoTokenizer

    ids = parity_ids(lambda t: AutoTokenizer.from_pretrained(str(hf_dir)).encode(t, add_special_tokens=False))
    result = gguf_parity(hf_dir, list(files.values()), ids)
    return {"tokens": len(ids), **{k: asdict(v) for k, v in result.items()}}


def _chat_template(hf_dir: Path) -> str | None:
    jinja = hf_dir / "chat_template.jinja"
    if jinja.exists():
        return jinja.read_text()
    try:
        return json.loads((hf_dir / "tokenizer_config.json").read_text()).get("chat_template")
    except (OSError, json.JSONDecodeError):
        return None


def _relative(path: Path, start: Path) -> str:
    try:
        return str(path.resolve().relative_to(start.resolve()))
    except ValueError:
        return str(path.resolve())
