"""One effect measured on several datasets, pooled: the random-effects estimate, its interval and heterogeneity, and
the cross-dataset verdict a study states beside each dataset's own.

Random effects because the datasets differ (clinical notes, plot synopses, essays): each has its own true effect,
drawn around the pooled one with between-dataset variance tau^2. tau^2 is DerSimonian & Laird's (1986) moment
estimate, I^2 (Higgins & Thompson 2002) the share of the spread that heterogeneity, not sampling, explains. A study
has three datasets, where the usual normal interval of the pooled estimate covers far below 95%; the interval is
Hartung & Knapp's (2001) t interval on k - 1 degrees of freedom, its variance never below DerSimonian & Laird's
(the modification IntHout et al. 2014 and Jackson et al. 2017 recommend for few studies).
"""

from __future__ import annotations

import math
from typing import NamedTuple, Sequence

from mlmh.findings.verdicts import verdict
from mlmh.stats import DEFAULT_CONFIDENCE, critical
from mlmh.types import FAILS, HOLDS, INCONCLUSIVE


class Pooled(NamedTuple):
    """The random-effects estimate of ``k`` datasets' effects, its interval and heterogeneity."""

    value: float
    low: float
    high: float
    se: float  # the Hartung-Knapp standard error the interval is built on
    tau2: float  # between-dataset variance (DerSimonian-Laird)
    i2: float  # share of the spread beyond sampling error, 0 to 1
    q: float  # Cochran's Q
    k: int  # datasets pooled


def random_effects(values: Sequence[float], ses: Sequence[float], confidence: float = DEFAULT_CONFIDENCE) -> Pooled:
    """Pool ``values`` (one per dataset) with standard errors ``ses``: DerSimonian-Laird weights, Hartung-Knapp t
    interval on k - 1 degrees of freedom; ValueError for fewer than two datasets or a standard error that is not
    positive (a dataset without spread cannot be weighted)."""
    k = len(values)
    if k != len(ses) or k < 2:
        raise ValueError(f"pooling needs an estimate and a standard error for each of at least 2 datasets, got {k}")
    if any(not (math.isfinite(s) and s > 0) for s in ses) or any(not math.isfinite(v) for v in values):
        raise ValueError("pooling needs finite estimates and positive standard errors")
    w = [1.0 / s ** 2 for s in ses]
    fixed = sum(wi * y for wi, y in zip(w, values)) / sum(w)
    q = sum(wi * (y - fixed) ** 2 for wi, y in zip(w, values))
    c = sum(w) - sum(wi ** 2 for wi in w) / sum(w)
    tau2 = max(0.0, (q - (k - 1)) / c)
    i2 = max(0.0, (q - (k - 1)) / q) if q > 0 else 0.0
    w_star = [1.0 / (s ** 2 + tau2) for s in ses]
    mu = sum(wi * y for wi, y in zip(w_star, values)) / sum(w_star)
    spread = sum(wi * (y - mu) ** 2 for wi, y in zip(w_star, values)) / (k - 1)
    se = math.sqrt(max(1.0, spread) / sum(w_star))
    half = critical(k - 1, confidence) * se
    return Pooled(mu, mu - half, mu + half, se, tau2, i2, q, k)


#: the cross-dataset verdicts, defined once
EVERY = "holds on every dataset"
NONE = "does not hold on any dataset"
POOLED = "holds pooled, not on every dataset"
POOLED_FAILS = "does not hold pooled, nor on every dataset"
MIXED = "mixed: holds on some datasets, does not hold on others"
UNDECIDED = "inconclusive across datasets"
UNTESTED = "not decided on any dataset"
ACROSS = (EVERY, NONE, POOLED, POOLED_FAILS, MIXED, UNDECIDED, UNTESTED)


def across(verdicts: Sequence[str], pooled: Pooled | None, direction: int = 1) -> str:
    """The claim across datasets from each dataset's verdict and, where it was pooled, the pooled interval
    (``direction`` +1: the claim is that the effect is above 0, -1 below): "holds on every dataset" only when every
    dataset's own verdict holds; else the pooled interval decides ("holds pooled, not on every dataset"); else the
    datasets' verdicts, as they stand."""
    decided = [v for v in verdicts if v in (HOLDS, FAILS, INCONCLUSIVE)]
    if not decided:
        return UNTESTED
    if all(v == HOLDS for v in verdicts):
        return EVERY
    if all(v == FAILS for v in verdicts):
        return NONE
    if pooled is not None:
        said = verdict(pooled.low, pooled.high, direction)
        if said == HOLDS:
            return POOLED
        if said == FAILS:
            return POOLED_FAILS
    if HOLDS in decided and FAILS in decided:
        return MIXED
    return UNDECIDED
