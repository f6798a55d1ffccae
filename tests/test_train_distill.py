"""MOPD: teachers must share the student's tokenizer, and the routed loss is each row's KL to its own teacher."""

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("trl")


def _tokenizer(vocab: int, seed: int = 0):
    from botpsy.export.tiny_qwen import corpus_texts, hf_tokenizer, train_tokenizer
    from botpsy.protocol.formats import template_text

    return hf_tokenizer(train_tokenizer(corpus_texts(20, seed=seed), vocab), template_text("qwen35"))


def _llama(tok, seed: int):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    return LlamaForCausalLM(
        LlamaConfig(
            vocab_size=len(tok),
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=1,
            num_attention_heads=2,
            num_key_value_heads=1,
            pad_token_id=tok.pad_token_id,
            eos_token_id=tok.eos_token_id,
        )
    ).eval()


@pytest.fixture(scope="module")
def toks():
    a = _tokenizer(400)
    a.pad_token = a.pad_token or a.eos_token
    return a, _tokenizer(520)


def test_teacher_with_other_tokenizer_is_refused(toks, tmp_path):
    from botpsy.train.distill import load_teachers
    from botpsy.train.policy import TokenizerMismatch, check_same_tokenizer

    student_tok, other_tok = toks
    check_same_tokenizer(student_tok, student_tok, "same")  # no error
    with pytest.raises(TokenizerMismatch, match="different tokenizer than the student"):
        check_same_tokenizer(student_tok, other_tok, "qwen-other")
    folder = tmp_path / "teacher"
    _llama(other_tok, 1).save_pretrained(folder)
    other_tok.save_pretrained(folder)
    sources = {"tool_use": str(folder), "reasoning": "tiny-random", "instruction_following": "tiny-random"}
    with pytest.raises(TokenizerMismatch, match="different tokenizer"):
        load_teachers(sources, lambda s, skill: s, student_tok, log=lambda *_: None)


def test_teacher_sources_need_one_per_skill():
    from botpsy.train.distill import MOPDConfig, teacher_sources

    assert set(teacher_sources(MOPDConfig())) == {"tool_use", "reasoning", "instruction_following"}
    with pytest.raises(ValueError, match="one teacher per skill"):
        teacher_sources(MOPDConfig(teachers=("tool_use=sft",)))
    with pytest.raises(ValueError, match="key=value"):
        teacher_sources(MOPDConfig(teachers=("tool_use",)))


def test_routed_loss_is_each_rows_kl_to_its_own_teacher(toks, tmp_path):
    from datasets import Dataset
    from trl import DistillationConfig

    from botpsy.train.common import cpu_args
    from botpsy.train.distill import make_routed_trainer

    tok = toks[0]
    student = _llama(tok, 0)
    teachers = {
        "tool_use": _llama(tok, 1),
        "reasoning": _llama(tok, 2),
        "instruction_following": _llama(tok, 3),
    }
    args = DistillationConfig(
        output_dir=str(tmp_path), max_steps=1, per_device_train_batch_size=3, **cpu_args(True)
    )
    trainer = make_routed_trainer()(
        model=student,
        teachers=teachers,
        args=args,
        train_dataset=Dataset.from_list([{"prompt": "hi", "skill": "tool_use"}]),
        processing_class=tok,
    )
    g = torch.Generator().manual_seed(0)
    inputs = {
        "prompt_ids": torch.randint(5, len(tok), (3, 4), generator=g),
        "prompt_mask": torch.ones(3, 4, dtype=torch.long),
        "completion_ids": torch.randint(5, len(tok), (3, 5), generator=g),
        "completion_mask": torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 1, 1, 1, 0]]),
        "teacher_index": torch.tensor([0, 2, 0]),
    }
    n = inputs["completion_mask"].sum()
    routed, _, n_valid = trainer._compute_loss(student, inputs, n)
    assert int(n_valid) == int(n)
    expected = 0.0
    base_compute = type(trainer).__mro__[1]._compute_loss
    for row, t in enumerate(inputs["teacher_index"].tolist()):
        trainer.teacher_model = trainer.teachers[trainer.skills[t]]
        one = {k: v[row : row + 1] for k, v in inputs.items() if k != "teacher_index"}
        expected = expected + base_compute(trainer, student, one, n)[0]
    assert torch.allclose(routed, expected, atol=1e-5)
    # routing matters: sending every row to one teacher gives another loss
    same = {**inputs, "teacher_index": torch.tensor([1, 1, 1])}
    assert not torch.allclose(trainer._compute_loss(student, same, n)[0], routed)
