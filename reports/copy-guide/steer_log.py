"""Record every token the copy guide chooses (imported by the two runs here)."""

import numpy as np

import botpsy.engine.copy_guide as CG

STEERS: list[list] = []  # [value so far, model's top piece, chosen piece, logit gap] per steer
_steer = CG.CopyGuide.steer


def steer(self, text, logits):
    r = _steer(self, text, logits)
    if r is not None:
        top = int(np.argmax(logits))
        gap = round(float(logits[top] - logits[r]), 2)
        STEERS.append([CG.open_value(text, self.fmt), self._piece(top), self._piece(r), gap])
    return r


CG.CopyGuide.steer = steer
