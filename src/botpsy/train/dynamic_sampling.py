"""DAPO's dynamic sampling (Yu et al. 2025, arXiv:2503.14476, §3.2), which TRL's GRPOTrainer lacks.

A group whose completions all earn the same reward has zero advantage everywhere: it adds tokens to
the loss's denominator and nothing to its gradient, so as accuracy rises the effective batch
shrinks. DAPO over-samples: groups whose rewards are all equal are dropped and the batch is
refilled with fresh prompts until it holds the intended number of informative groups.

This module holds the two pure pieces, table-tested without a model:

* `plan_groups` — given the rewards of the first generation batch and of any refill batches,
  which (batch, group) pairs fill the training batch. Informative groups come first, in sampling
  order. When the refill budget (`max_rounds`) runs out before the batch is full, it is topped up
  with uninformative groups of the first batch: they carry no gradient, but keep the batch shape
  TRL's buffering expects. The shortfall is reported so it shows up in the logs.
* `merge_rows` — rebuilds one TRL generation-batch dict from rows of several: prompt tensors are
  left-padded, completion-aligned tensors right-padded, scalars recomputed by the caller.

The trainer side (`botpsy.train.dapo.DynamicSamplingGRPOTrainer`) draws the refill prompts and calls
TRL's own generation and scoring on them, so refilled groups are scored exactly like the first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

EQUAL_TOL = 1e-6  # rewards closer than this count as equal


def informative(rewards: Sequence[float], group_size: int, tol: float = EQUAL_TOL) -> list[bool]:
    """Per group of `group_size` consecutive rewards: whether they differ (so advantages are non-zero)."""
    if group_size < 1 or len(rewards) % group_size:
        raise ValueError(f"{len(rewards)} rewards do not split into groups of {group_size}")
    out = []
    for g in range(len(rewards) // group_size):
        chunk = [float(r) for r in rewards[g * group_size : (g + 1) * group_size]]
        finite = [r for r in chunk if r == r]  # NaN (unscorable) rows do not make a group informative
        out.append(len(finite) >= 2 and max(finite) - min(finite) > tol)
    return out


@dataclass(frozen=True)
class Plan:
    picks: list[tuple[int, int]]  # (batch index, group index) in the order they fill the batch
    informative: int  # how many picks are informative
    shortfall: int  # uninformative groups used to top up the batch

    @property
    def full(self) -> bool:
        return self.shortfall == 0


def plan_groups(batches: Sequence[Sequence[float]], group_size: int, needed: int) -> Plan:
    """Choose `needed` groups from the batches' rewards: informative ones first, then fillers from batch 0."""
    picks: list[tuple[int, int]] = []
    for b, rewards in enumerate(batches):
        for g, ok in enumerate(informative(rewards, group_size)):
            if ok and len(picks) < needed:
                picks.append((b, g))
    n_inf = len(picks)
    if batches and len(picks) < needed:
        fillers = [(0, g) for g, ok in enumerate(informative(batches[0], group_size)) if not ok]
        picks.extend(fillers[: needed - len(picks)])
    if len(picks) < needed:
        raise ValueError(f"only {len(picks)} groups available for a batch of {needed}")
    return Plan(picks, n_inf, needed - n_inf)


def refill_needed(plan_so_far: Plan, rounds_done: int, max_rounds: int) -> bool:
    return plan_so_far.shortfall > 0 and rounds_done < max_rounds


# Tensors aligned with the prompt are left-padded; everything else with a sequence axis is
# aligned with the completion and right-padded. Pad values per key; unknown keys pad with 0.
LEFT_PADDED = ("prompt_ids", "prompt_mask")
PAD_VALUES = {"tool_mask": 1}


def merge_rows(parts: Sequence[tuple[dict[str, Any], Sequence[int]]], pad_token_id: int) -> dict[str, Any]:
    """One batch dict from chosen rows of several (dict, row indices) parts, re-padded to a common width.

    Scalars (0-d tensors, e.g. `num_items_in_batch`) are taken from the first part; the caller
    recomputes those that depend on the rows.
    """
    import torch

    first = parts[0][0]
    out: dict[str, Any] = {}
    for key, value in first.items():
        if not isinstance(value, torch.Tensor) or value.ndim == 0:
            if isinstance(value, list):
                out[key] = [d[key][i] for d, rows in parts for i in rows]
            else:
                out[key] = value
            continue
        pieces = [d[key][list(rows)] for d, rows in parts if len(rows)]
        if value.ndim >= 2:
            width = max(p.shape[1] for p in pieces)
            pad = pad_token_id if key == "prompt_ids" else PAD_VALUES.get(key, 0)
            padded = []
            for p in pieces:
                extra = width - p.shape[1]
                if extra:
                    block = torch.full((p.shape[0], extra, *p.shape[2:]), pad, dtype=p.dtype, device=p.device)
                    p = torch.cat([block, p] if key in LEFT_PADDED else [p, block], dim=1)
                padded.append(p)
            pieces = padded
        out[key] = torch.cat(pieces, dim=0)
    return out


def group_rows(groups: Sequence[int], group_size: int) -> list[int]:
    """Row indices of the given groups (groups are consecutive blocks of `group_size` rows)."""
    return [g * group_size + i for g in groups for i in range(group_size)]
