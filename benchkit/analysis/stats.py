"""Statistics over small counts, kept honest about how few there are."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from benchkit.gate.intervals import Z95

BOOTSTRAP_SAMPLES = 2000
NORMAL_ABOVE = 1000  # values past which a mean's bootstrap gives way to its normal limit
ALPHA = 0.05


def bootstrap_mean(
    values: Sequence[float] | np.ndarray[Any, Any],
    *,
    samples: int = BOOTSTRAP_SAMPLES,
    seed: int = 0,
) -> tuple[float, float, str] | None:
    """95% percentile bootstrap interval of a mean, and the method used.

    Values that are all 0 or 1 (pass rates) are resampled exactly through the
    binomial; past `NORMAL_ABOVE` values the bootstrap distribution of a mean is its
    normal limit, used instead (the method says so). None for fewer than 2 values.
    """
    x = np.asarray(values, dtype=float)
    x = x[~np.isnan(x)]
    n = len(x)
    if n < 2:
        return None
    rng = np.random.default_rng(seed)
    if np.isin(x, (0.0, 1.0)).all():
        means = rng.binomial(n, x.mean(), size=samples) / n
        method = "bootstrap"
    elif n > NORMAL_ABOVE:
        half = Z95 * x.std(ddof=1) / math.sqrt(n)
        return float(x.mean() - half), float(x.mean() + half), "normal"
    else:
        means = x[rng.integers(0, n, size=(samples, n))].mean(axis=1)
        method = "bootstrap"
    low, high = np.percentile(means, [2.5, 97.5])
    return float(low), float(high), method


def sign_test(wins: int, losses: int) -> float:
    """Exact two-sided sign test p-value (ties left out): 2 * P(X <= min) under p=1/2."""
    n = wins + losses
    if n == 0:
        return 1.0
    k = min(wins, losses)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
    return float(min(1.0, 2 * tail))


def pairs_needed(alpha: float = ALPHA) -> int:
    """The fewest pairs for which a two-sided sign test can reach `alpha` at all."""
    n = 1
    while sign_test(n, 0) > alpha:
        n += 1
    return n


# Fewer runs (or pairs) than this are "few": the fewest with which a two-sided sign
# test can reach p < ALPHA at all. `compare` marks such groups and `paired` calls such
# a comparison inconclusive: one rule for both.
FEW = pairs_needed()


def wilson(successes: int, n: int) -> tuple[float, float] | None:
    """95% Wilson score interval of a rate: it never collapses at 0% or 100% (5 of 5
    gives about [57%, 100%]). None for no trials."""
    if n == 0:
        return None
    p = successes / n
    z2 = Z95 * Z95
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = Z95 * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return max(0.0, centre - half), min(1.0, centre + half)
