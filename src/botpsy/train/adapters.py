"""LoRA for every stage: its config, continuing an adapter (a GGUF one, an SFT run's), a GGUF adapter
model made a student, and writing a run's adapter as botpsy loads it (`adapter/`, `adapter.gguf`,
`manifest.json`).

Split from `train/common.py` (issue 34); `train/policy.py` loads what the adapter adapts.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from botpsy.engine.base import EngineError
from botpsy.export.lora_gguf import gguf_arch, gguf_weight_names, read_lora_gguf, write_lora_gguf
from botpsy.models import EMBEDDED, PACKAGE_BASES, embedded_dir
from botpsy.models import resolve as resolve_model
from botpsy.train.common import save_checkpoint
from botpsy.train.policy import load_base

LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def init_adapter_source(path: str, setting: str = "sft.init_adapter") -> Path:
    """The adapter a stage's `init_adapter` (`setting`, named in errors) names: a PEFT folder
    (itself, or the `adapter/` an SFT run wrote in it), or a GGUF LoRA adapter (a .gguf file, a
    model folder's manifest, or "embedded")."""
    if path == EMBEDDED:
        return resolve_model(EMBEDDED).adapter
    p = Path(path).expanduser()
    if p.is_file() and p.suffix == ".gguf":
        return p
    for cand in (p, p / "adapter"):
        if (cand / "adapter_config.json").is_file():
            return cand
    if (p / "manifest.json").is_file():
        try:
            adapter = resolve_model(str(p)).adapter
        except EngineError as e:
            raise ValueError(f"{setting}={path}: {e}") from None
        if adapter is not None and adapter.suffix == ".gguf":
            return adapter
    raise ValueError(
        f"{setting}={path}: no LoRA adapter there (adapter_config.json in it or in its adapter/ "
        "folder, a .gguf adapter, or a model folder whose manifest names one); give the folder an SFT "
        "run wrote (--out), its adapter/ folder, a .gguf adapter or 'embedded'"
    )


def continued_lora(model, path: str, work_dir: Path, setting: str):
    """`model` wrapped in the LoRA `path` names (`init_adapter_source`), trainable: a stage that
    continues an adapter rather than starting a fresh one. A GGUF adapter is written back as a PEFT
    folder in `work_dir` first (float16, as llama.cpp reads it)."""
    from peft import PeftModel

    init = init_adapter_source(path, setting)
    if init.suffix == ".gguf":
        init = peft_folder_from_gguf(init, model, Path(work_dir) / "init_adapter")
    return PeftModel.from_pretrained(model, str(init), is_trainable=True)


def check_continued_student(init_adapter: str, student: str, setting: str) -> None:
    """A continued LoRA adapts one base: the student must be that base, or the adapter's update
    would land on weights it was not trained on (twice, when the student already holds it)."""
    if not init_adapter:
        return
    folder = embedded_dir() if init_adapter == EMBEDDED else Path(init_adapter).expanduser()
    try:
        over = json.loads((folder / "manifest.json").read_text()).get("base")
    except (OSError, json.JSONDecodeError):
        return  # a bare .gguf or PEFT folder does not say which base it adapts
    if over and over != student:
        raise ValueError(
            f"{setting}={init_adapter} adapts {over}, but the student is {student or '(the previous stage)'}: "
            f"set the stage's student to {over}"
        )


def adapter_student(spec: str, dest: Path, log=print) -> str:
    """The student of an on-policy stage as something `load_policy` and the llama.cpp rollouts read.

    A model that is a GGUF LoRA adapter over a base ("embedded", or a model folder whose manifest
    names an `adapter`, like an SFT run trained on another machine) is merged into its base once, as
    the checkpoint folder `dest` (merged again only when the adapter changes); a package base or a
    checkpoint folder comes back as it is.
    """
    from peft import PeftModel

    folder = embedded_dir() if spec == EMBEDDED else Path(spec).expanduser()
    if spec in PACKAGE_BASES or not (folder / "manifest.json").is_file():
        return spec
    m = json.loads((folder / "manifest.json").read_text())
    if m.get("hf") or not m.get("adapter"):
        return spec
    base = str(m.get("base") or "")
    if base not in PACKAGE_BASES and not (Path(base).expanduser() / "config.json").is_file():
        raise ValueError(
            f"student {spec}: its adapter is over {base!r}, which is neither a package base "
            f"({', '.join(PACKAGE_BASES)}) nor a Hugging Face folder here; give a checkpoint folder"
        )
    adapter = folder / m["adapter"]
    sha = hashlib.sha256(adapter.read_bytes()).hexdigest()
    dest = Path(dest)
    done = dest / "manifest.json"
    if done.is_file() and json.loads(done.read_text()).get("adapter_sha256") == sha:
        return str(dest)
    log(f"student {spec}: merging {adapter.name} into {base} ({dest})")
    model, tok = load_base(base)
    merged = PeftModel.from_pretrained(model, str(peft_folder_from_gguf(adapter, model, dest / "adapter")))
    extra = {"merged_adapter": str(adapter), "adapter_sha256": sha}
    save_checkpoint(merged, tok, dest, f"{m.get('name') or folder.name}-merged", extra)
    return str(dest)


def lora_config(r: int, alpha: int, targets: tuple[str, ...] = LORA_TARGETS):
    from peft import LoraConfig

    return LoraConfig(
        r=r, lora_alpha=alpha, lora_dropout=0.0, target_modules=list(targets), task_type="CAUSAL_LM"
    )


def attention_heads(config) -> tuple[int, int]:
    """(attention heads, key-value heads) of a transformers config, as the GGUF adapter code needs."""
    n_head = config.num_attention_heads
    return n_head, getattr(config, "num_key_value_heads", None) or n_head


def save_adapter_model(peft_model, out_dir: Path, base: str, name: str) -> None:
    """Make `out_dir` the model folder of a LoRA over `base`: the PEFT folder `adapter/` (training
    continues from it), the same adapter as `adapter.gguf` (llama.cpp applies it at load time),
    and the `manifest.json` named `name` that `--model` reads."""
    out_dir = Path(out_dir)
    config = peft_model.base_model.model.config
    peft_model.save_pretrained(out_dir / "adapter")
    write_lora_gguf(
        out_dir / "adapter",
        out_dir / "adapter.gguf",
        gguf_arch(config),
        config.num_hidden_layers,
        attention_heads(config),
    )
    manifest = {
        "name": name,
        "base": base,
        "adapter": "adapter.gguf",
        "chat_format": "qwen35",
        "thinking": True,
    }
    (out_dir / "manifest.json").write_text(json.dumps(manifest, indent=2))


def peft_folder_from_gguf(gguf_path: Path, model, out_dir: Path) -> Path:
    """Write the PEFT folder of a GGUF LoRA adapter over `model`, the transformers base it was
    trained on, so that `PeftModel.from_pretrained` can continue training it. Names map back through
    the base's own linear layers; a different architecture or a shape that does not fit is an error."""
    from safetensors.numpy import save_file

    arch, alpha, tensors = read_lora_gguf(gguf_path, attention_heads(model.config))
    want = gguf_arch(model.config)
    if arch != want:
        raise ValueError(f"{gguf_path} adapts a {arch} model; the base is {want}")
    weight_name = gguf_weight_names(arch, model.config.num_hidden_layers)
    linears = {}
    for name, module in model.named_modules():
        weight = getattr(module, "weight", None)
        if weight is not None and weight.ndim == 2 and name:
            gguf_name = weight_name(name)
            if gguf_name is not None:
                linears[gguf_name] = (name, tuple(weight.shape))
    peft_tensors, targets, ranks = {}, set(), set()
    for key, data in tensors.items():
        stem, _, which = key.rpartition(".lora_")
        if which not in ("a", "b") or stem not in linears:
            raise ValueError(f"{gguf_path}: tensor {key} adapts no linear layer of the base")
        name, (out_f, in_f) = linears[stem]
        rank = data.shape[0] if which == "a" else data.shape[1]
        if data.shape != ((rank, in_f) if which == "a" else (out_f, rank)):
            raise ValueError(
                f"{gguf_path}: {key} has shape {data.shape}, which does not fit {name} {(out_f, in_f)}"
            )
        peft_tensors[f"base_model.model.{name}.lora_{which.upper()}.weight"] = data
        targets.add(name.rsplit(".", 1)[-1])
        ranks.add(rank)
    if len(ranks) != 1:
        raise ValueError(f"{gguf_path}: LoRA ranks differ across layers ({sorted(ranks)})")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    save_file(peft_tensors, str(out_dir / "adapter_model.safetensors"))
    cfg = lora_config(ranks.pop(), int(alpha) if alpha.is_integer() else alpha, tuple(sorted(targets)))
    cfg.save_pretrained(str(out_dir))
    return out_dir
