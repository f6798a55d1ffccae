"""Which backend runs a `--model` spec: the gold oracle, llama.cpp, transformers, or an HTTP endpoint.

A spec is what the user typed after `--model`:
* `oracle` — the suite's own ground truth, replayed through botpsy's path (must score 100%);
* `embedded`, a `.gguf` file or a model folder with `manifest.json` — llama.cpp (the default);
* a folder with `config.json` (a Hugging Face checkpoint) — transformers;
* `http://HOST:PORT/v1[#MODEL]` — any OpenAI-compatible server (vLLM, llama.cpp's server,
  `botpsy serve`), see `botpsy.engine.openai_http`.
`--backend` forces one of these readings when the spec alone is ambiguous.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

BACKENDS = ("auto", "oracle", "llamacpp", "transformers", "openai")


@dataclass(frozen=True)
class Backend:
    kind: str  # oracle | llamacpp | transformers | openai
    target: str  # what to load: "embedded", a path, or a URL
    label: str  # the name results are filed under


def resolve_backend(spec: str | None, backend: str = "auto") -> Backend:
    spec = spec or ("oracle" if backend == "oracle" else "embedded")
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


def load_engine(
    b: Backend, n_ctx: int = 8192, threads: int | None = None, chat_format: str | None = None
) -> Any:
    """Load the engine for a non-oracle backend (the oracle is built per item from its gold)."""
    if b.kind == "oracle":
        raise ValueError("the oracle has no engine of its own; suites build one per item")
    if b.kind == "openai":
        from botpsy.engine.openai_http import OpenAIHTTPEngine

        url, _, model = b.target.partition("#")
        return OpenAIHTTPEngine(url, model=model or None, chat_format=chat_format or "qwen35")
    if b.kind == "transformers":
        from botpsy.engine.transformers_engine import TransformersEngine

        return TransformersEngine(b.target, chat_format=chat_format, n_threads=threads)
    from botpsy.models import load_engine as load_gguf

    engine = load_gguf(b.target, n_ctx=n_ctx, n_threads=threads)
    if chat_format:
        from botpsy.protocol.formats import ChatFormat

        engine.chat_format = ChatFormat(chat_format)  # type: ignore[arg-type]
    return engine
