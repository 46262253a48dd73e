"""A training's model saved at points of its training, so that a face can generate with it while it goes on (the
TUI's playground on a cold cache: :mod:`mlmh.tui.playground_job`).

The saved weights are the training's own at that step, as they were (saving changes neither them nor the training:
the finished model, its card and its cache key are a training's without previews; tests/test_training_previews.py).
A preview is saved only once the model beats the best constant predictor on its validation targets (off the unigram
plateau, :attr:`mlmh.training.stopping.Validation.off_plateau`: it has learned something), and then each time its step
count has doubled, so they come often while the model changes fastest and a few times in all (a 500-step training
that leaves the plateau at step 10: steps 10, 20, 40, 80, 160 and 320). The last step saves none: the training saves
its kept weights into the model cache then.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

#: a preview is saved each time the training's step count has grown this many times since the last one
GROWTH = 2


class Previews:
    """The :data:`mlmh.training.loop.CheckpointFn` of a training that saves its previews into ``folder``, one directory
    per preview (``step-000040``: the model and its tokenizer, as the model cache holds a finished one), written under
    another name and renamed when whole. It returns what the progress event then says of the preview: ``{"preview":
    {"path", "step", "total", "validation_loss", "validation_accuracy", "constant_accuracy"}}``."""

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder)
        self.last = 0  # the step of the last preview saved

    def due(self, step: int, total: int, off_plateau: bool) -> bool:
        """Whether the model at ``step`` of ``total`` is saved as a preview."""
        return off_plateau and step < total and (not self.last or step >= GROWTH * self.last)

    def __call__(self, model: Any, tokenizer: Any, event: dict[str, Any], validation: Any) -> dict[str, Any]:
        step, total = int(event["step"]), int(event["total"])
        if not self.due(step, total, validation.off_plateau):
            return {}
        path = self.folder / f"step-{step:06d}"
        partial = self.folder / f".partial-step-{step:06d}"
        partial.mkdir(parents=True, exist_ok=True)
        model.save_pretrained(partial)
        tokenizer.save_pretrained(partial)
        os.replace(partial, path)
        self.last = step
        return {"preview": {"path": str(path), "step": step, "total": total, "validation_loss": validation.loss,
                            "validation_accuracy": validation.accuracy,
                            "constant_accuracy": validation.baseline_accuracy}}
