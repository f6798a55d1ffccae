"""DAPO dynamic sampling: which groups fill a batch, and how rows of several generation batches merge."""

import math

import pytest

from botpsy.train.dynamic_sampling import group_rows, informative, merge_rows, plan_groups, refill_needed


@pytest.mark.parametrize(
    "rewards,g,expected",
    [
        ([1, 1, 0, 1], 2, [False, True]),
        ([0.5, 0.5, 0.5, 0.5], 4, [False]),
        ([0, 0, 0, 1e-9], 4, [False]),  # below the tolerance: equal
        ([0, 0, 0, 0.01], 4, [True]),
        ([math.nan, 1, math.nan, 1], 2, [False, False]),  # unscorable rows do not count
        ([math.nan, 1, 0, 1], 2, [False, True]),
        ([1, 0], 1, [False, False]),  # a group of one never has an advantage
    ],
)
def test_informative(rewards, g, expected):
    assert informative(rewards, g) == expected


def test_informative_rejects_ragged_batches():
    with pytest.raises(ValueError, match="groups of 4"):
        informative([1, 2, 3], 4)


@pytest.mark.parametrize(
    "batches,needed,picks,n_inf,shortfall",
    [
        # all informative: the first batch as is
        ([[0, 1, 1, 0]], 2, [(0, 0), (0, 1)], 2, 0),
        # one dead group, refilled from the second batch
        ([[1, 1, 0, 1], [0, 1, 0, 0]], 2, [(0, 1), (1, 0)], 2, 0),
        # refill has dead groups too: skip them
        ([[1, 1, 0, 1], [0, 0, 1, 1, 1, 0]], 2, [(0, 1), (1, 2)], 2, 0),
        # not enough informative groups anywhere: top up with first-batch fillers, report the shortfall
        ([[1, 1, 0, 0], [1, 1]], 2, [(0, 0), (0, 1)], 0, 2),
        ([[1, 1, 0, 1], [1, 1]], 2, [(0, 1), (0, 0)], 1, 1),
        # more informative than needed: take them in sampling order
        ([[0, 1, 1, 0, 0, 1]], 2, [(0, 0), (0, 1)], 2, 0),
    ],
)
def test_plan_groups(batches, needed, picks, n_inf, shortfall):
    plan = plan_groups(batches, 2, needed)
    assert plan.picks == picks and plan.informative == n_inf and plan.shortfall == shortfall
    assert len(plan.picks) == needed and len(set(plan.picks)) == needed


def test_refill_stops_when_full_or_out_of_rounds():
    short = plan_groups([[1, 1]], 2, 1)
    assert refill_needed(short, 0, 2) and refill_needed(short, 1, 2) and not refill_needed(short, 2, 2)
    assert not refill_needed(plan_groups([[0, 1]], 2, 1), 0, 2)


def test_group_rows():
    assert group_rows([0, 2], 3) == [0, 1, 2, 6, 7, 8]


def test_merge_rows_repads_prompt_left_and_completion_right():
    torch = pytest.importorskip("torch")
    a = {
        "prompt_ids": torch.tensor([[5, 6], [7, 8]]),
        "prompt_mask": torch.tensor([[1, 1], [1, 1]]),
        "completion_ids": torch.tensor([[1, 2, 3], [4, 0, 0]]),
        "completion_mask": torch.tensor([[1, 1, 1], [1, 0, 0]]),
        "tool_mask": torch.tensor([[1, 0, 1], [1, 1, 1]]),
        "advantages": torch.tensor([0.5, -0.5]),
        "num_items_in_batch": torch.tensor(4),
    }
    b = {
        "prompt_ids": torch.tensor([[9, 9, 9], [1, 2, 3]]),
        "prompt_mask": torch.tensor([[1, 1, 1], [1, 1, 1]]),
        "completion_ids": torch.tensor([[7], [8]]),
        "completion_mask": torch.tensor([[1], [1]]),
        "tool_mask": torch.tensor([[1], [1]]),
        "advantages": torch.tensor([1.0, -1.0]),
        "num_items_in_batch": torch.tensor(2),
    }
    m = merge_rows([(a, [1]), (b, [0])], pad_token_id=0)
    assert m["prompt_ids"].tolist() == [[0, 7, 8], [9, 9, 9]]
    assert m["prompt_mask"].tolist() == [[0, 1, 1], [1, 1, 1]]
    assert m["completion_ids"].tolist() == [[4, 0, 0], [7, 0, 0]]
    assert m["completion_mask"].tolist() == [[1, 0, 0], [1, 0, 0]]
    assert m["tool_mask"].tolist() == [
        [1, 1, 1],
        [1, 1, 1],
    ]  # tool mask pads with 1 (pads are masked elsewhere)
    assert m["advantages"].tolist() == [-0.5, 1.0]


def test_trainer_drops_equal_reward_groups_and_refills(monkeypatch):
    """The GRPOTrainer subclass replaces an all-equal group with an informative one from a refill pass."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("trl")
    from collections import defaultdict
    from types import SimpleNamespace

    from trl import GRPOTrainer

    from botpsy.train.dapo import make_dynamic_sampling_trainer

    # Fake generation: each prompt row's reward is read from the row; completion width varies per pass.
    def fake_generate(self, inputs):
        rewards = torch.tensor([float(r["r"]) for r in inputs])
        self._last_rewards = rewards
        n, width = len(inputs), 2 + len(self._calls)
        self._calls.append([r["name"] for r in inputs])
        return {
            "prompt_ids": torch.tensor([[r["id"]] * 3 for r in inputs]),
            "prompt_mask": torch.ones(n, 3, dtype=torch.long),
            "completion_ids": torch.tensor([[r["id"]] * width for r in inputs]),
            "completion_mask": torch.ones(n, width, dtype=torch.long),
            "advantages": rewards - rewards.mean(),
            "num_items_in_batch": torch.tensor(n * width),
        }

    monkeypatch.setattr(GRPOTrainer, "_generate_and_score_completions", fake_generate)
    cls = make_dynamic_sampling_trainer()
    trainer = object.__new__(cls)
    refill = [{"name": "fresh", "id": 9, "r": r} for r in (0.0, 1.0)]  # one informative group per draw
    trainer.__dict__.update(
        num_generations=2,
        max_refill_rounds=2,
        model=SimpleNamespace(training=True),
        accelerator=SimpleNamespace(process_index=0, gather=lambda t: t),
        processing_class=SimpleNamespace(pad_token_id=0),
        _metrics={"train": defaultdict(list)},
        _calls=[],
    )
    trainer._refill_inputs = lambda n_groups: [dict(row) for _ in range(n_groups) for row in refill]
    batch = [
        {"name": "dead", "id": 1, "r": 1.0},
        {"name": "dead", "id": 1, "r": 1.0},
        {"name": "alive", "id": 2, "r": 0.0},
        {"name": "alive", "id": 2, "r": 1.0},
    ]
    out = trainer._generate_and_score_completions(batch)
    assert trainer._calls == [["dead", "dead", "alive", "alive"], ["fresh", "fresh"]]
    assert out["prompt_ids"][:, 0].tolist() == [
        2,
        2,
        9,
        9,
    ]  # the dead group is gone, the refill took its place
    assert out["completion_ids"].shape == (4, 3)  # re-padded to the widest pass
    assert out["completion_mask"].tolist() == [[1, 1, 0], [1, 1, 0], [1, 1, 1], [1, 1, 1]]
    assert int(out["num_items_in_batch"]) == 10
    assert trainer._metrics["train"]["dynamic_sampling/refill_rounds"] == [1.0]
    assert trainer._metrics["train"]["dynamic_sampling/informative_groups"] == [1.0]
