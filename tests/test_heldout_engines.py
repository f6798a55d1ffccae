"""Held-out figures through llama.cpp (the default) and transformers measure the same things."""

import json

import pytest

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def checkpoint(tiny_llama_dir, tmp_path_factory):
    """The shared tiny Llama as a model folder: manifest.json beside an `hf/` link to it."""
    folder = tmp_path_factory.mktemp("ckpt")
    (folder / "hf").symlink_to(tiny_llama_dir, target_is_directory=True)
    (folder / "manifest.json").write_text(json.dumps({"hf": "hf", "name": "tiny"}))
    return folder


SIZES = dict(world_tasks=2, if_items=1, reasoning_items=2, max_tokens=8, max_steps=2, threads=1)


def test_both_engines_give_the_same_figures_and_llamacpp_keeps_its_gguf(checkpoint):
    from botpsy.train.heldout import EVAL_GGUF, EvalSpec, heldout_figures

    by_engine = {
        name: heldout_figures(checkpoint, EvalSpec(engine=name, **SIZES), log=lambda *_: None)
        for name in ("llamacpp", "transformers")
    }
    llama, hf = by_engine["llamacpp"], by_engine["transformers"]
    assert (checkpoint / EVAL_GGUF).read_bytes()[:4] == b"GGUF"
    assert llama["eval_engine"] == "llamacpp" and hf["eval_engine"] == "transformers"
    assert set(llama) == set(hf) and llama["n"] == hf["n"] == 2
    assert [i["id"] for i in llama["items"]] == [i["id"] for i in hf["items"]]
    # the same greedy outputs: f16 in llama.cpp and f32 in torch agree on this model
    assert [(i["reasoning_tokens"], i["cap"]) for i in llama["items"]] == [
        (i["reasoning_tokens"], i["cap"]) for i in hf["items"]
    ]
    mtime = (checkpoint / EVAL_GGUF).stat().st_mtime
    heldout_figures(checkpoint, EvalSpec(**SIZES), log=lambda *_: None)
    assert (checkpoint / EVAL_GGUF).stat().st_mtime == mtime  # converted once


def test_an_unknown_engine_is_refused_by_name():
    from botpsy.train.heldout import EvalSpec

    with pytest.raises(ValueError, match="llamacpp, transformers"):
        EvalSpec(engine="vllm")
