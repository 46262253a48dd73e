"""When training stops and which checkpoint it keeps: one rule, fed one validation at a time.

Design decision: held-out accuracy decides, not held-out loss alone. On a small validation set of unseen
authors the loss of a small model rises while its accuracy rises (measured on official-format PAN text,
the gmlm preset: the fixed-ratio MLMs' validation loss went from 7.4 at step 10 to 9.2 at step 190 while
their masked-token accuracy went from the unigram baseline's 0.03 to 0.06): the model grows confident
on the tokens it gets wrong, which the loss punishes and a generator never sees. Stopping on the loss
ended those models 60-130 steps into a budget of 250, while they still improved.

- **Improvement** is a new lowest validation loss *or* a new highest validation accuracy over all
  evaluations so far; either resets the patience.
- **Stopping**: once ``patience_tokens`` training tokens pass without an improvement, and never while the
  model is on the unigram plateau (:attr:`Validation.off_plateau`): a model that has learned nothing
  yet is not done. Off the plateau means beating the best constant predictor on the same validation
  targets by a paired test (:func:`beats_constant`); comparing with the train split's commonest token
  alone let a model that always predicts another frequent token count as learning (measured on real
  PAN text: "off the plateau" at step 85, held-out accuracy exactly the unigram baseline's).
- **Selection**: while on the plateau, the lowest validation loss; from the first evaluation off the
  plateau on, only evaluations off it compete, and the one of the highest validation accuracy is kept
  (ties: the lower loss). Before it leaves the plateau a model's accuracy is the baseline's give or take
  noise, so its loss is the better guide there.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

SELECTION = ("lowest validation loss while on the unigram plateau; once off it, the highest validation "
             "accuracy among the evaluations off it (ties: the lower loss)")


@dataclass(frozen=True)
class Validation:
    """One evaluation on the fixed validation batches: the training objective's loss and the accuracy of
    the tokens it is judged on, beside the best constant predictor on those same targets (the unigram plateau).

    ``baseline_accuracy`` is the accuracy of the single token that is right most often among the judged
    targets; ``model_only`` counts the targets the model got right and that token did not, ``constant_only``
    the reverse (both None when only the rates are known)."""

    loss: float
    accuracy: float | None
    baseline_accuracy: float | None
    targets: int = 0  # judged tokens
    model_only: int | None = None
    constant_only: int | None = None

    @property
    def off_plateau(self) -> bool:
        """Whether the model predicts clearly better than the best constant predictor (:func:`beats_constant`)."""
        return beats_constant(self.accuracy, self.baseline_accuracy, self.targets, self.model_only, self.constant_only)


def beats_constant(accuracy: float | None, constant_accuracy: float | None, targets: int,
                   model_only: int | None = None, constant_only: int | None = None) -> bool:
    """The one rule for "off the unigram plateau": the model beats the best constant predictor on the same targets.

    With the paired counts (McNemar 1947): the targets only the model gets right must outnumber those only the
    constant gets right by more than two standard errors of their difference, ``b - c > 2 sqrt(b + c)``. The
    two predictors are judged on the same tokens, so the paired test is the exact one; comparing rates with a
    binomial error (the fallback, when only rates are known) ignores that pairing. A model that always predicts
    some other frequent token, or the commonest one, never passes: its right answers are a subset of one
    constant's, and the best constant is right at least as often."""
    if accuracy is None or not targets:
        return False
    if model_only is not None and constant_only is not None:
        return model_only - constant_only > 2 * math.sqrt(model_only + constant_only) if model_only + constant_only else False
    base = constant_accuracy or 0.0
    return accuracy - base > 2 * math.sqrt(max(base * (1 - base), 1e-12) / targets)


class TargetTally:
    """What one evaluation pass learns of its judged targets, batch by batch: how often each gold token occurs,
    how often the model got it right, and how often the train split's commonest token would have. After the
    pass the best constant predictor (the gold token that occurs most) and the paired counts are known."""

    def __init__(self, train_commonest: int | None = None) -> None:
        self.train_commonest = train_commonest
        self.occurs: Counter[int] = Counter()
        self.right: Counter[int] = Counter()
        self.correct = 0
        self.targets = 0

    def add(self, predicted: "torch.Tensor", gold: "torch.Tensor") -> None:
        import torch

        hit = predicted == gold
        for tokens, counter in ((gold, self.occurs), (gold[hit], self.right)):
            values, counts = torch.unique(tokens, return_counts=True)
            counter.update(dict(zip(values.tolist(), counts.tolist())))
        self.correct += int(hit.sum())
        self.targets += int(gold.numel())

    @property
    def accuracy(self) -> float | None:
        return self.correct / self.targets if self.targets else None

    @property
    def train_commonest_accuracy(self) -> float | None:
        """The accuracy of always predicting the train split's commonest token (the older, train-side baseline)."""
        if not self.targets or self.train_commonest is None:
            return None
        return self.occurs.get(self.train_commonest, 0) / self.targets

    def paired(self) -> tuple[float | None, int | None, int | None]:
        """(best constant's accuracy, targets only the model got right, targets only the constant got right)."""
        if not self.targets:
            return None, None, None
        token, occurs = max(self.occurs.items(), key=lambda item: (item[1], -item[0]))
        right = self.right.get(token, 0)
        return occurs / self.targets, self.correct - right, occurs - right

    def validation(self, loss: float) -> Validation:
        constant, model_only, constant_only = self.paired()
        return Validation(loss, self.accuracy, constant, self.targets, model_only, constant_only)

    def facts(self) -> dict[str, object]:
        """The card's held-out check: accuracy beside both baselines, and whether it beat the best constant."""
        constant, model_only, constant_only = self.paired()
        return {"heldout_accuracy": self.accuracy, "unigram_baseline_accuracy": self.train_commonest_accuracy,
                "best_constant_accuracy": constant,
                "beats_constant": beats_constant(self.accuracy, constant, self.targets, model_only, constant_only),
                "heldout_targets": self.targets}


@dataclass
class EarlyStopping:
    """The stopping and selection rule of the module docstring, as state updated by :meth:`observe`."""

    patience_tokens: int  # 0 = never stop early
    left_plateau_at: int | None = None  # the step of the first evaluation off the plateau
    kept: Validation | None = None
    step_kept: int = 0
    tokens_at_kept: int = 0
    tokens_at_improvement: int = 0
    lowest_loss: float = math.inf
    highest_accuracy: float = -math.inf
    _last_tokens: int = field(default=0, repr=False)

    def observe(self, step: int, tokens: int, current: Validation) -> bool:
        """Take the evaluation at ``step`` (``tokens`` training tokens seen); True when its weights are now
        the kept ones."""
        self._last_tokens = tokens
        improved = current.loss < self.lowest_loss or (current.accuracy is not None
                                                       and current.accuracy > self.highest_accuracy)
        self.lowest_loss = min(self.lowest_loss, current.loss)
        if current.accuracy is not None:
            self.highest_accuracy = max(self.highest_accuracy, current.accuracy)
        if improved:
            self.tokens_at_improvement = tokens
        if self.left_plateau_at is None and current.off_plateau:
            self.left_plateau_at, self.kept = step, None  # checkpoints on the plateau no longer compete
            self.tokens_at_improvement = tokens  # the patience starts counting here
        if self.left_plateau_at is not None and not current.off_plateau:
            return False
        if self.kept is not None and not self._better(current, self.kept):
            return False
        self.kept, self.step_kept, self.tokens_at_kept = current, step, tokens
        return True

    def _better(self, current: Validation, kept: Validation) -> bool:
        if self.left_plateau_at is None or current.accuracy is None or kept.accuracy is None:
            return current.loss < kept.loss
        return (current.accuracy, -current.loss) > (kept.accuracy, -kept.loss)

    def should_stop(self) -> bool:
        """Whether the patience ran out (off the plateau) at the last evaluation observed."""
        return (bool(self.patience_tokens) and self.left_plateau_at is not None
                and self._last_tokens - self.tokens_at_improvement >= self.patience_tokens)

    def stop_reason(self, stopped_early: bool, validated: bool) -> str:
        """Why training ended, in a sentence for the card."""
        if stopped_early:
            return (f"stopped early: neither validation loss nor validation accuracy improved for "
                    f"{self.patience_tokens:,} training tokens, after the model left the unigram plateau at step "
                    f"{self.left_plateau_at}")
        if not validated:
            return "budget spent (no validation data: the last weights were kept)"
        if not self.patience_tokens:
            return "budget spent (early stopping off)"
        if self.left_plateau_at is None:
            return ("budget spent while still on the unigram plateau (validation accuracy never beat the best constant "
                    "predictor)")
        return "budget spent before the patience ran out"
