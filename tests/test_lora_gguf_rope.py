"""GGUF LoRA adapters of llama models: q/k rows in llama.cpp's RoPE order (export/lora_gguf.py).

llama.cpp stores a llama model's attn_q/attn_k rows permuted per head; an adapter whose lora_b rows
are not permuted the same way adds the update to the wrong rows (the embedded default shipped so
until this fix). The llama.cpp side is checked in test_llama_rollout.py.
"""

import numpy as np
import pytest

from botpsy.export.lora_gguf import ROPE_KEY, read_lora_gguf, rope_heads, rope_permute, rope_unpermute

pytest.importorskip("gguf")
pytest.importorskip("conversion")


@pytest.mark.parametrize("n_head,head_dim,cols", [(9, 64, 16), (3, 64, 16), (4, 16, 2), (1, 8, 3)])
def test_unpermute_undoes_the_converters_permutation(n_head, head_dim, cols):
    rows = np.arange(n_head * head_dim * cols, dtype=np.float32).reshape(n_head * head_dim, cols)
    permuted = rope_permute(rows, n_head)
    assert not np.array_equal(permuted, rows)  # it does move rows
    assert np.array_equal(rope_unpermute(permuted, n_head), rows)


def test_only_q_and_k_rows_are_permuted():
    assert rope_heads("blk.0.attn_q.weight", 9, 3) == 9
    assert rope_heads("blk.12.attn_k.weight", 9, 3) == 3
    assert rope_heads("blk.0.attn_v.weight", 9, 3) is None
    assert rope_heads("blk.0.ffn_up.weight", 9, 3) is None


def _peft_folder(tmp_path, model, rank=2):
    from peft import get_peft_model

    from botpsy.train.adapters import lora_config

    torch = pytest.importorskip("torch")
    peft_model = get_peft_model(model, lora_config(rank, 2 * rank))
    torch.manual_seed(1)
    with torch.no_grad():
        for name, p in peft_model.named_parameters():
            if "lora_" in name:
                p.normal_()
    peft_model.save_pretrained(tmp_path / "peft")
    return tmp_path / "peft"


def test_a_llama_adapter_round_trips_in_hugging_face_order(tiny_llama_dir, tmp_path):
    pytest.importorskip("peft")
    import gguf
    from safetensors.numpy import load_file
    from transformers import AutoModelForCausalLM

    from botpsy.export.lora_gguf import write_lora_gguf
    from botpsy.train.adapters import attention_heads, peft_folder_from_gguf

    model = AutoModelForCausalLM.from_pretrained(tiny_llama_dir)
    heads = attention_heads(model.config)
    folder = _peft_folder(tmp_path, model)
    out = write_lora_gguf(folder, tmp_path / "a.gguf", "llama", model.config.num_hidden_layers, heads)
    assert gguf.GGUFReader(str(out)).fields[ROPE_KEY].contents() is True
    with pytest.raises(ValueError, match="heads"):
        read_lora_gguf(out)  # a marked file cannot be read without the heads
    base = AutoModelForCausalLM.from_pretrained(tiny_llama_dir)
    back = load_file(str(peft_folder_from_gguf(out, base, tmp_path / "back") / "adapter_model.safetensors"))
    want = load_file(str(folder / "adapter_model.safetensors"))
    assert set(back) == set(want)
    for key, value in want.items():
        assert np.allclose(back[key], value.astype(np.float16).astype(np.float32)), key
    # in the file itself, q's lora_b rows are in llama.cpp's order, v's as they were
    stored = {t.name: np.array(t.data, dtype=np.float32) for t in gguf.GGUFReader(str(out)).tensors}
    q_b = want["base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight"].astype(np.float16)
    v_b = want["base_model.model.model.layers.0.self_attn.v_proj.lora_B.weight"].astype(np.float16)
    assert np.array_equal(
        stored["blk.0.attn_q.weight.lora_b"], rope_permute(q_b, heads[0]).astype(np.float32)
    )
    assert np.array_equal(stored["blk.0.attn_v.weight.lora_b"], v_b.astype(np.float32))


def test_a_llama_adapter_needs_the_heads_to_be_written(tiny_llama_dir, tmp_path):
    pytest.importorskip("peft")
    from transformers import AutoModelForCausalLM

    from botpsy.export.lora_gguf import write_lora_gguf

    folder = _peft_folder(tmp_path, AutoModelForCausalLM.from_pretrained(tiny_llama_dir))
    with pytest.raises(ValueError, match="heads"):
        write_lora_gguf(folder, tmp_path / "a.gguf", "llama", 2)


def test_the_embedded_adapter_is_written_in_llamacpp_order():
    import gguf

    from botpsy.models import embedded_dir

    reader = gguf.GGUFReader(str(embedded_dir() / "adapter.gguf"))
    assert reader.fields["general.architecture"].contents() == "llama"
    assert reader.fields[ROPE_KEY].contents() is True
