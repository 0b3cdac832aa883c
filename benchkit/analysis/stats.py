"""Statistics over small counts, kept honest about how few there are."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
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
    if len(x) < 2:
        return None
    summary = Summary(
        n=len(x),
        mean=float(x.mean()),
        std=float(x.std(ddof=1)),
        binary=bool(np.isin(x, (0.0, 1.0)).all()),
    )
    return mean_interval(summary, lambda: x, samples=samples, seed=seed)


@dataclass(frozen=True)
class Summary:
    """What a mean's interval needs of its values: their count, mean, standard
    deviation (ddof 1) and whether they are all 0 or 1."""

    n: int
    mean: float
    std: float
    binary: bool


def mean_interval(
    summary: Summary,
    values: Callable[[], np.ndarray[Any, Any]],
    *,
    samples: int = BOOTSTRAP_SAMPLES,
    seed: int = 0,
) -> tuple[float, float, str] | None:
    """`bootstrap_mean` from a summary of the values: the values themselves (without
    NaN, in their order) are asked for only when they are resampled, which is never
    for a rate or past `NORMAL_ABOVE` of them."""
    n = summary.n
    if n < 2:
        return None
    rng = np.random.default_rng(seed)
    if summary.binary:
        means = rng.binomial(n, summary.mean, size=samples) / n
    elif n > NORMAL_ABOVE:
        half = Z95 * summary.std / math.sqrt(n)
        return summary.mean - half, summary.mean + half, "normal"
    else:
        x = values()
        means = x[rng.integers(0, n, size=(samples, n))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return float(low), float(high), "bootstrap"


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
