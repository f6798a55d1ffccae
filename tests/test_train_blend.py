"""Blending LoRA adapters in weight space (train/blend.py), on the tiny 2-layer llama (≈3 s)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from botpsy.train.blend import blend_adapters, main, parse_part


def _random_adapter(base_dir, out, rank, seed):
    """A PEFT folder with random A and B (a fresh LoRA's B is 0, which would hide a wrong sum)."""
    torch = pytest.importorskip("torch")
    from peft import get_peft_model
    from transformers import AutoModelForCausalLM

    from botpsy.train.adapters import lora_config

    peft_model = get_peft_model(AutoModelForCausalLM.from_pretrained(base_dir), lora_config(rank, 3 * rank))
    torch.manual_seed(seed)
    with torch.no_grad():
        for name, p in peft_model.named_parameters():
            if "lora_" in name:
                p.normal_(std=0.1)
    peft_model.save_pretrained(out)
    return out


def _updates(peft_dir) -> dict[str, np.ndarray]:
    """{module: its update alpha/r · B·A} of a PEFT folder."""
    from safetensors.numpy import load_file

    cfg = json.loads((peft_dir / "adapter_config.json").read_text())
    tensors = load_file(str(peft_dir / "adapter_model.safetensors"))
    scale = cfg["lora_alpha"] / cfg["r"]
    return {
        key.removesuffix(".lora_A.weight"): scale
        * tensors[key.replace("lora_A", "lora_B")].astype(np.float64)
        @ tensors[key].astype(np.float64)
        for key in tensors
        if key.endswith(".lora_A.weight")
    }


def test_the_blend_is_the_weighted_sum_of_the_updates(tiny_llama_dir, tmp_path, one_torch_thread):
    pytest.importorskip("peft")
    from transformers import AutoModelForCausalLM

    from botpsy.export.lora_gguf import write_lora_gguf
    from botpsy.train.adapters import attention_heads, peft_folder_from_gguf

    base = AutoModelForCausalLM.from_pretrained(tiny_llama_dir)
    heads, layers = attention_heads(base.config), base.config.num_hidden_layers
    first = _random_adapter(tiny_llama_dir, tmp_path / "first", rank=4, seed=1)
    second = _random_adapter(tiny_llama_dir, tmp_path / "second", rank=2, seed=2)
    # one source as a PEFT folder, one as a GGUF file only (how the embedded default is kept)
    second_gguf = write_lora_gguf(second, tmp_path / "second.gguf", "llama", layers, heads)

    record = blend_adapters(
        str(tiny_llama_dir),
        [(str(first), 0.7), (str(second_gguf), -0.4)],
        tmp_path / "blend",
        log=lambda *_: None,
    )

    assert record["rank"] == 6 and [s["weight"] for s in record["sources"]] == [0.7, -0.4]
    out = tmp_path / "blend"
    assert json.loads((out / "manifest.json").read_text())["adapter"] == "adapter.gguf"
    assert json.loads((out / "blend.json").read_text()) == record
    a, b = _updates(first), _updates(second)
    want = {k: 0.7 * a[k] - 0.4 * b[k] for k in a}
    # what llama.cpp will read: the GGUF, q/k rows back in Hugging Face order
    got = _updates(peft_folder_from_gguf(out / "adapter.gguf", base, tmp_path / "back"))
    assert got.keys() == want.keys() and len(want) == 7 * layers
    for k in want:
        assert np.abs(want[k]).max() > 0.01  # every module really is adapted
        np.testing.assert_allclose(got[k], want[k], atol=2e-3 * np.abs(want[k]).max())
    # the PEFT folder beside it is the same adapter (the GGUF source was float16 already)
    peft_got = _updates(out / "adapter")
    for k in want:
        np.testing.assert_allclose(peft_got[k], want[k], atol=1e-3 * np.abs(want[k]).max())


@pytest.mark.parametrize("spec", ["runs/near2", "runs/near2=", "=0.5", "runs/near2=half", "x=nan", "x=inf"])
def test_an_adapter_without_a_finite_weight_is_a_clear_error(spec):
    with pytest.raises(ValueError, match="expected PATH=WEIGHT"):
        parse_part(spec)


def test_a_path_with_an_equals_sign_keeps_it():
    assert parse_part("runs/lr=3e-4=0.25") == ("runs/lr=3e-4", 0.25)


def test_bad_blends_fail_before_any_work_with_a_clear_message(tmp_path, capsys):
    (tmp_path / "empty").mkdir()
    other = tmp_path / "other-base"
    other.mkdir()
    (other / "manifest.json").write_text(json.dumps({"base": "llm-gemma3", "adapter": "adapter.gguf"}))
    cases = [
        (["--adapter", "embedded=1"], "at least two adapters"),
        (["--adapter", "embedded=0.5", "--adapter", f"{tmp_path / 'empty'}=0.5"], "no LoRA adapter there"),
        (["--adapter", "embedded=0.5", "--adapter", f"{other}=0.5"], "adapts llm-gemma3"),
        (["--adapter", "embedded=0.5", "--adapter", "embedded"], "expected PATH=WEIGHT"),
    ]
    for argv, message in cases:
        assert main([*argv, "--out", str(tmp_path / "out")]) == 2
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()  # nothing written
