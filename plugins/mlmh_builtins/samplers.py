"""Builtin samplers, registered through the public hook exactly as a third-party plugin would."""

from __future__ import annotations

from mlmh import hookimpl
from mlmh_builtins.samplers_diffusion import AdaptiveGibbs, Llada, Mdlm, Remdm
from mlmh_builtins.samplers_infill import ClmInfill, Seq2SeqInfill
from mlmh_builtins.samplers_mlm import Confidence, Gibbs, LeftToRight, MaskPredict, OneShot


@hookimpl
def register_samplers(register):
    for sampler in (OneShot, LeftToRight, MaskPredict, Confidence, Gibbs, Mdlm, Llada, Remdm, AdaptiveGibbs, ClmInfill,
                    Seq2SeqInfill):
        register(sampler())
