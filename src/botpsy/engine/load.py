"""Building an engine from what the user typed: the one place every command and stage uses.

A spec is what the user typed after `--model`:
* `oracle` — the suite's own ground truth, replayed through botpsy's path (must score 100%); it has
  no engine of its own, suites build one per item from the gold;
* `embedded`, a `.gguf` file or a model folder with `manifest.json` — llama.cpp (the default);
* a folder with `config.json` (a Hugging Face checkpoint) — transformers;
* `http://HOST:PORT/v1[#MODEL]` — any OpenAI-compatible server (vLLM, llama.cpp's server,
  `botpsy serve`), see `botpsy.engine.openai_http`.
`--backend` forces one of these readings when the spec alone is ambiguous.

Before this module five places built engines, each reading the spec its own way, so `eval worlds`
accepted fewer backends than `eval bfcl` (issue 15).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from botpsy.engine.base import BACKENDS, Engine
from botpsy.engine.llamacpp import LlamaCppEngine
from botpsy.engine.openai_http import OpenAIHTTPEngine
from botpsy.engine.state_cache import StateCache
from botpsy.engine.transformers_engine import TransformersEngine
from botpsy.models import resolve, thinking_from_template
from botpsy.protocol.formats import ChatFormat


@dataclass(frozen=True)
class Backend:
    kind: str  # oracle | llamacpp | transformers | openai
    target: str  # what to load: "embedded", a path, or a URL
    label: str  # the name results are filed under


def resolve_backend(spec: str | Path | None, backend: str = "auto") -> Backend:
    """Which backend runs `spec` (see the module docstring); ValueError for an impossible pairing."""
    spec = str(spec) if spec is not None else ("oracle" if backend == "oracle" else "embedded")
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend {backend!r}; expected one of {', '.join(BACKENDS)}")
    if backend == "oracle" or spec == "oracle":
        return Backend("oracle", "oracle", "oracle")
    if backend == "openai" or spec.startswith(("http://", "https://")):
        if not spec.startswith(("http://", "https://")):
            raise ValueError(f"the openai backend needs a URL like http://127.0.0.1:8080/v1, got {spec!r}")
        url, _, model = spec.partition("#")
        return Backend("openai", spec, model or url.rstrip("/").split("//", 1)[-1])
    path = Path(spec).expanduser()
    if backend == "transformers" or (
        backend == "auto"
        and path.is_dir()
        and (path / "config.json").exists()
        and not (path / "manifest.json").exists()
    ):
        return Backend("transformers", str(path), path.name)
    return Backend("llamacpp", spec, "embedded" if spec == "embedded" else path.name)


def _state_cache(spec: StateCache | str | Path | None) -> StateCache | None:
    if spec is None or isinstance(spec, StateCache):
        return spec
    if spec == "auto":
        return StateCache.default()
    return StateCache(spec)


def load_engine(
    spec: str | Path | Backend | None = None,
    backend: str = "auto",
    n_ctx: int = 4096,
    n_threads: int | None = None,
    chat_format: str | None = None,
    seed: int = 0,
    state_cache: StateCache | str | Path | None = "auto",
) -> Engine:
    """The engine for a spec (or a resolved `Backend`); `chat_format` overrides the detected one.

    llama.cpp: the GGUF or model folder `botpsy.models.resolve` finds, its LoRA adapter applied,
    prompts batched on `n_threads` too, and `thinking` from the manifest or the GGUF's template.
    `state_cache`: where the state after the system block is kept across processes
    (`engine.state_cache`): "auto" is `$BOTPSY_STATE_CACHE` or ~/.cache/botpsy/state; a folder
    or a `StateCache` is used as given; None turns it off.
    """
    b = spec if isinstance(spec, Backend) else resolve_backend(spec, backend)
    if b.kind == "oracle":
        raise ValueError("the oracle has no engine of its own; suites build one per item")
    if b.kind == "openai":
        url, _, model = b.target.partition("#")
        return OpenAIHTTPEngine(url, model=model or None, chat_format=chat_format or "qwen35")
    if b.kind == "transformers":
        return TransformersEngine(b.target, chat_format=chat_format, n_threads=n_threads, seed=seed)
    ms = resolve(b.target)
    # `--threads N` means N for prompts too: llama.cpp would otherwise batch on every core.
    engine = LlamaCppEngine(
        ms.base,
        ms.adapter,
        n_ctx=n_ctx,
        n_threads=n_threads,
        n_threads_batch=n_threads,
        chat_format=ms.chat_format,
        seed=seed,
        state_cache=_state_cache(state_cache),
    )
    if ms.thinking is None:
        ms.thinking = thinking_from_template(engine.llm.metadata.get("tokenizer.chat_template"))
    engine.thinking = ms.thinking
    if ms.name:
        engine.name = ms.name
    if chat_format:
        engine.chat_format = ChatFormat(chat_format)  # type: ignore[arg-type]
    return engine
