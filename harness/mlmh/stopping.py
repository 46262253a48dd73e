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
  yet is not done.
- **Selection**: while on the plateau, the lowest validation loss; from the first evaluation off the
  plateau on, only evaluations off it compete, and the one of the highest validation accuracy is kept
  (ties: the lower loss). Before it leaves the plateau a model's accuracy is the baseline's give or take
  noise, so its loss is the better guide there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

SELECTION = ("lowest validation loss while on the unigram plateau; once off it, the highest validation "
             "accuracy among the evaluations off it (ties: the lower loss)")


@dataclass(frozen=True)
class Validation:
    """One evaluation on the fixed validation batches: the training objective's loss and the accuracy of
    the tokens it is judged on, beside always predicting the commonest train token (the unigram plateau)."""

    loss: float
    accuracy: float | None
    baseline_accuracy: float | None
    targets: int = 0  # judged tokens

    @property
    def off_plateau(self) -> bool:
        """Whether the model predicts clearly better than the unigram baseline (it has learned some context):
        its accuracy exceeds the baseline's by more than two binomial standard errors of the baseline's rate
        over the judged tokens, so a few lucky tokens on a flat curve do not count."""
        if self.accuracy is None or not self.targets:
            return False
        base = self.baseline_accuracy or 0.0
        return self.accuracy - base > 2 * math.sqrt(max(base * (1 - base), 1e-12) / self.targets)


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
            return ("budget spent while still on the unigram plateau (validation accuracy never beat the unigram "
                    "baseline)")
        return "budget spent before the patience ran out"
