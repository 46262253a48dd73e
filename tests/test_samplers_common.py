"""Shared sampler pieces: ``lowest_scores``, the one rule for which positions confidence-ordered samplers
(mask-predict, MaskGIT/LLaDA, MDLM) commit or re-mask."""

from __future__ import annotations

import torch

from mlmh import toolkit
from mlmh_builtins import samplers_diffusion, samplers_mlm


def test_lowest_scores_marks_count_lowest_per_row_leftmost_on_ties():
    scores = torch.tensor([[0.5, 0.1, 0.9, 0.1], [3.0, 2.0, 1.0, 0.0], [1.0, 1.0, 1.0, 1.0]])
    picked = toolkit.lowest_scores(scores, torch.tensor([2, 1, 3]))
    assert picked.tolist() == [[False, True, False, True], [False, False, False, True], [True, True, True, False]]
    assert not toolkit.lowest_scores(scores, torch.tensor([0, 0, 0])).any()
    assert toolkit.lowest_scores(scores, torch.tensor([4, 4, 4])).all()


def test_mlm_and_diffusion_samplers_use_the_shared_helper():
    assert samplers_mlm.lowest_scores is toolkit.lowest_scores
    assert samplers_diffusion.lowest_scores is toolkit.lowest_scores
    assert not hasattr(samplers_mlm, "_lowest")
