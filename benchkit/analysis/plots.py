"""Plots of runs with matplotlib: each function takes runs and returns a Figure.

Figures are built without pyplot, so they work under any backend: a notebook shows
them, `benchkit plot KIND --out FILE.png` saves them.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import polars as pl
from matplotlib.figure import Figure

from benchkit.analysis.compare import CHECKS, compare
from benchkit.errors import UsageError
from benchkit.store.query import RunsLike, runs_frame


def _label(row: dict[str, object], keys: tuple[str, ...]) -> str:
    return " / ".join(str(row[k]) for k in keys)


def coverage_vs_cost(runs: pl.DataFrame) -> Figure:
    """Coverage of the human reference against reported cost, one colour per arm."""
    fig = Figure(figsize=(6.4, 4.4))
    ax = fig.add_subplot()
    costed = runs.filter(pl.col("cost_usd").is_not_null() & (pl.col("sites_total") > 0))
    for arm in sorted(costed["arm"].unique().to_list()):
        mine = costed.filter(pl.col("arm") == arm)
        ax.scatter(
            mine["cost_usd"], mine["sites_covered"] / mine["sites_total"], label=arm, alpha=0.7
        )
    left_out = runs.height - costed.height
    ax.set_xlabel("cost reported by the arm (USD)")
    ax.set_ylabel("sites covered / total")
    ax.set_ylim(-0.05, 1.05)
    title = "Coverage against cost"
    if left_out:
        title += f" ({left_out} runs without a reported cost left out)"
    ax.set_title(title, fontsize=10)
    if costed.height:
        ax.legend(fontsize=8)
    return fig


def wall_by_arm(runs: pl.DataFrame, by: tuple[str, ...] = ("arm", "executor")) -> Figure:
    """Wall time per group, as box plots."""
    fig = Figure(figsize=(6.4, 4.4))
    ax = fig.add_subplot()
    groups = runs.group_by(by, maintain_order=True).agg(pl.col("wall_s")).sort(by)
    labels = [_label(row, by) for row in groups.iter_rows(named=True)]
    ax.boxplot([g for g in groups["wall_s"].to_list()], tick_labels=labels)
    ax.set_ylabel("wall time (s)")
    ax.set_title("Wall time by " + " and ".join(by), fontsize=10)
    ax.tick_params(axis="x", labelrotation=30, labelsize=8)
    fig.tight_layout()
    return fig


def _rates(
    runs: pl.DataFrame, metrics: list[str]
) -> tuple[list[str], dict[str, np.ndarray], dict[str, np.ndarray]]:
    result = compare(runs, by="arm", metrics=metrics)
    arms = [str(a) for a in result.frame["arm"].to_list()]
    means, errors = {}, {}
    for m in result.metrics:
        mean = result.frame[f"{m}_mean"].fill_null(np.nan).to_numpy().astype(float)
        low = result.frame[f"{m}_low"].fill_null(np.nan).to_numpy().astype(float)
        high = result.frame[f"{m}_high"].fill_null(np.nan).to_numpy().astype(float)
        means[m] = mean
        errors[m] = np.nan_to_num(np.vstack([mean - low, high - mean]))
    return arms, means, errors


def check_pass_rates(runs: pl.DataFrame) -> Figure:
    """The share of runs each check passed, per arm, with 95% intervals."""
    metrics = [f"{c}_ok" for c in CHECKS if f"{c}_status" in runs.columns]
    arms, means, errors = _rates(runs, metrics)
    fig = Figure(figsize=(7.2, 4.4))
    ax = fig.add_subplot()
    width = 0.8 / max(len(means), 1)
    x = np.arange(len(arms))
    for i, (m, mean) in enumerate(means.items()):
        ax.bar(x + i * width, mean, width, yerr=errors[m], label=m.removesuffix("_ok"), capsize=2)
    ax.set_xticks(x + 0.4 - width / 2, arms, rotation=30, fontsize=8)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("share of runs where the check passed")
    ax.set_title("Check pass rates by arm (95% intervals)", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def flaky_rate(runs: pl.DataFrame) -> Figure:
    """The share of runs whose tests passed only after a flaky rerun, per arm."""
    arms, means, errors = _rates(runs, ["flaky"])
    fig = Figure(figsize=(6.4, 4.4))
    ax = fig.add_subplot()
    if "flaky" in means:
        ax.bar(arms, means["flaky"], yerr=errors["flaky"], capsize=3)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("share of runs judged flaky-pass")
    ax.set_title("Flaky rate by arm (95% intervals)", fontsize=10)
    ax.tick_params(axis="x", labelrotation=30, labelsize=8)
    fig.tight_layout()
    return fig


PLOTS: dict[str, Callable[[pl.DataFrame], Figure]] = {
    "coverage-cost": coverage_vs_cost,
    "wall": wall_by_arm,
    "checks": check_pass_rates,
    "flaky": flaky_rate,
}


def plot(kind: str, runs: RunsLike) -> Figure:
    """One of the plots (`coverage-cost`, `wall`, `checks`, `flaky`) of some runs, as a
    matplotlib Figure."""
    if kind not in PLOTS:
        raise UsageError(kind, "", f"no such plot (plots: {', '.join(PLOTS)})")
    frame = runs_frame(runs).collect()
    if frame.is_empty():
        raise UsageError("plot", "", "no runs to plot")
    return PLOTS[kind](frame)
