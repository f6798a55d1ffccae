"""engine/load.py: how a `--model` spec picks its backend, the one reading every command shares."""

import pytest

from botpsy.engine.load import Backend, load_engine, resolve_backend


@pytest.mark.parametrize(
    "spec, backend, expected",
    [
        (None, "auto", Backend("llamacpp", "embedded", "embedded")),
        ("embedded", "auto", Backend("llamacpp", "embedded", "embedded")),
        (None, "oracle", Backend("oracle", "oracle", "oracle")),
        ("oracle", "auto", Backend("oracle", "oracle", "oracle")),
        ("models/x.gguf", "auto", Backend("llamacpp", "models/x.gguf", "x.gguf")),
        (
            "http://127.0.0.1:8080/v1",
            "auto",
            Backend("openai", "http://127.0.0.1:8080/v1", "127.0.0.1:8080/v1"),
        ),
        ("http://h:1/v1#qwen", "auto", Backend("openai", "http://h:1/v1#qwen", "qwen")),
        ("some/folder", "transformers", Backend("transformers", "some/folder", "folder")),
    ],
)
def test_resolve_backend(spec, backend, expected):
    assert resolve_backend(spec, backend) == expected


def test_a_hugging_face_folder_goes_to_transformers_and_a_model_folder_to_llamacpp(tmp_path):
    (tmp_path / "hf").mkdir()
    (tmp_path / "hf" / "config.json").write_text("{}")
    assert resolve_backend(tmp_path / "hf").kind == "transformers"
    (tmp_path / "hf" / "manifest.json").write_text("{}")
    assert resolve_backend(tmp_path / "hf").kind == "llamacpp"


@pytest.mark.parametrize(
    "spec, backend, message",
    [("x", "vllm", "unknown backend 'vllm'"), ("models/x.gguf", "openai", "needs a URL")],
)
def test_impossible_pairings_say_what_was_expected(spec, backend, message):
    with pytest.raises(ValueError, match=message):
        resolve_backend(spec, backend)


def test_the_oracle_has_no_engine_of_its_own():
    with pytest.raises(ValueError, match="oracle has no engine"):
        load_engine("oracle")
