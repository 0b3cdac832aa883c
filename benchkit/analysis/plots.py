"""Plots of runs with matplotlib: each function takes runs and the columns to group
them by, and returns a `Plot`.

A `Plot` is a matplotlib Figure built without pyplot (it works under any backend)
that shows itself in Jupyter as a PNG, pyplot or not; `benchkit plot KIND --out
FILE` saves it (.png, .svg, .pdf). Each group has its own colour and marker, and the
legend sits beside the axes, where it hides nothing. A selection with nothing to
draw is a `UsageError` that says why, never empty axes.
"""

from __future__ import annotations

import io
import textwrap
from collections.abc import Callable, Sequence

import numpy as np
import polars as pl
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from benchkit.analysis.compare import compare
from benchkit.errors import UsageError
from benchkit.records import CHECKS
from benchkit.store.query import RunsLike, runs_frame

GROUPS = ("arm", "executor", "model", "bench")  # the columns `by` is chosen from
COLOURS = [f"C{n}" for n in range(10)]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*", "<"]


class Plot(Figure):
    """A matplotlib Figure that a notebook shows as a PNG."""

    def _repr_png_(self) -> bytes:
        buffer = io.BytesIO()
        self.savefig(buffer, format="png", dpi=100)
        return buffer.getvalue()


SMALLEST = 9
"""The smallest type on a plot, in points: readable where a report shows it."""


TITLE_WIDTH = 60  # characters: a longer title goes on two lines, not past the figure


def _title(ax: Axes, text: str) -> None:
    ax.set_title(textwrap.fill(text, TITLE_WIDTH), fontsize=10)


def _slanted(ax: Axes) -> None:
    """The groups' names slanted, each ending under its tick: none runs off the left."""
    for label in ax.get_xticklabels():
        label.set(rotation=30, horizontalalignment="right", rotation_mode="anchor")


def _figure(width: float = 7.6) -> tuple[Plot, Axes]:
    fig = Plot(figsize=(width, 4.4), layout="constrained")
    return fig, fig.add_subplot()


def default_by(runs: pl.DataFrame) -> tuple[str, ...]:
    """The arm, and each of executor, model and bench that differs between runs."""
    return ("arm", *[c for c in GROUPS[1:] if c in runs.columns and runs[c].n_unique() > 1])


def _label(row: dict[str, object], keys: Sequence[str]) -> str:
    return " / ".join("-" if row[k] in (None, "") else str(row[k]) for k in keys)


def _style(n: int) -> tuple[str, str]:
    """The n-th group's colour and marker: no two of the first 90 groups alike."""
    return COLOURS[n % len(COLOURS)], MARKERS[n % len(MARKERS)]


def _legend(fig: Plot, title: Sequence[str]) -> None:
    fig.legend(
        loc="outside right upper",
        fontsize=SMALLEST,
        title=" / ".join(title),
        title_fontsize=SMALLEST,
    )


def coverage_vs_cost(runs: pl.DataFrame, by: Sequence[str]) -> Plot:
    """Coverage of the human reference against reported cost, a colour and a marker
    per group."""
    costed = runs.filter(pl.col("cost_usd").is_not_null() & (pl.col("sites_total") > 0))
    if costed.is_empty():
        raise UsageError("plot coverage-cost", "", f"none of the {runs.height} runs reports a cost")
    fig, ax = _figure()
    groups = costed.partition_by(list(by), maintain_order=True, as_dict=False)
    for n, mine in enumerate(sorted(groups, key=lambda g: _label(g.row(0, named=True), by))):
        colour, marker = _style(n)
        ax.scatter(
            mine["cost_usd"],
            mine["sites_covered"] / mine["sites_total"],
            label=f"{_label(mine.row(0, named=True), by)} ({mine.height})",
            alpha=0.75,
            color=colour,
            marker=marker,
        )
    left_out = runs.height - costed.height
    ax.set_xlabel("cost reported by the arm (USD)")
    ax.set_ylabel("sites covered / total")
    ax.set_ylim(-0.05, 1.05)
    title = "Coverage against cost"
    if left_out:
        title += f" ({left_out} runs without a reported cost left out)"
    _title(ax, title)
    _legend(fig, by)
    return fig


def wall_by_group(runs: pl.DataFrame, by: Sequence[str]) -> Plot:
    """Each run's wall time without the base checks it ran (the baseline stage: the
    first run of a key pays for all), as box plots per group, the runs as dots."""
    timed = runs.filter(pl.col("wall_s").is_not_null())
    if timed.is_empty():
        raise UsageError("plot wall", "", f"none of the {runs.height} runs has a wall time")
    base = pl.col("baseline_s") if "baseline_s" in timed.columns else pl.lit(0.0)
    own = timed.with_columns(base.fill_null(0.0).alias("base_s")).with_columns(
        (pl.col("wall_s") - pl.col("base_s")).alias("own_s")
    )
    groups = own.group_by(list(by)).agg(pl.col("own_s"), pl.col("base_s").sum())
    groups = groups.sort(list(by))
    labels = [_label(row, by) for row in groups.iter_rows(named=True)]
    fig, ax = _figure()
    values = groups["own_s"].to_list()
    ax.boxplot(values, tick_labels=labels)
    for n, each in enumerate(values):
        colour, marker = _style(n)
        x = np.full(len(each), n + 1.0)
        ax.scatter(x, each, s=12, alpha=0.6, label=labels[n], color=colour, marker=marker)
    paid = float(groups["base_s"].sum())
    ax.set_ylabel("wall time without the base checks (s)")
    _title(ax, f"Wall time by {' and '.join(by)} (base checks apart: {paid:.1f} s in all)")
    ax.tick_params(axis="x", labelsize=SMALLEST)
    _slanted(ax)
    _legend(fig, by)
    return fig


Bars = dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]  # mean, errors, n per group


def _rates(runs: pl.DataFrame, by: Sequence[str], metrics: list[str]) -> tuple[list[str], Bars]:
    """Per group label, each metric's mean, its interval below and above, and n."""
    result = compare(runs, by=list(by), metrics=metrics)
    labels = [_label(row, by) for row in result.frame.iter_rows(named=True)]
    found: Bars = {}
    for m in result.metrics:
        mean = result.frame[f"{m}_mean"].fill_null(np.nan).to_numpy().astype(float)
        low = result.frame[f"{m}_low"].fill_null(np.nan).to_numpy().astype(float)
        high = result.frame[f"{m}_high"].fill_null(np.nan).to_numpy().astype(float)
        n = result.frame[f"{m}_n"].to_numpy()
        errors = np.clip(np.nan_to_num(np.vstack([mean - low, high - mean])), 0, None)
        found[m] = (mean, errors, n)
    return labels, found


def _bars(fig: Plot, ax: Axes, labels: list[str], found: Bars, names: dict[str, str]) -> None:
    width = 0.8 / max(len(found), 1)
    x = np.arange(len(labels))
    upright = len(found) > 2  # bars too narrow for their counts written across
    for i, (m, (mean, errors, n)) in enumerate(found.items()):
        bars = ax.bar(
            x + i * width, np.nan_to_num(mean), width, yerr=errors, label=names.get(m, m), capsize=2
        )
        for bar in bars:  # outlined in its own colour: a zero rate is a line, not nothing
            bar.set_edgecolor(bar.get_facecolor())
            bar.set_linewidth(3)
        counts = [
            f"{round(v * k)}/{k}" if k else "-" for v, k in zip(np.nan_to_num(mean), n, strict=True)
        ]
        ax.bar_label(bars, counts, fontsize=SMALLEST, padding=2, rotation=90 if upright else 0)
    ax.set_xticks(x + 0.4 - width / 2, labels, fontsize=SMALLEST)
    _slanted(ax)
    ax.set_ylim(-0.03, 1.3 if upright else 1.1)  # a zero rate's line clear of the axis
    ax.set_yticks(np.linspace(0, 1, 6))


def check_pass_rates(runs: pl.DataFrame, by: Sequence[str]) -> Plot:
    """The share of runs each check passed, per group, with 95% Wilson intervals; the
    tests by the gate's verdict (a preexisting failure does not fail them)."""
    names = {f"{c}_ok": c for c in CHECKS}
    names["gate"] = "test (gate)"
    wanted = [
        "gate" if c == "test" else f"{c}_ok"
        for c in CHECKS
        if f"{c}_status" in runs.columns and runs[f"{c}_status"].drop_nulls().len()
    ]
    if not wanted:
        raise UsageError("plot checks", "", f"no check ran in the {runs.height} runs")
    labels, found = _rates(runs, by, wanted)
    fig, ax = _figure(8.4)
    _bars(fig, ax, labels, found, names)
    ax.set_ylabel("share of runs where the check passed")
    _title(ax, f"Checks passed by {' and '.join(by)} (95% Wilson intervals)")
    fig.legend(loc="outside right upper", fontsize=SMALLEST, title="check", title_fontsize=SMALLEST)
    return fig


def flaky_rate(runs: pl.DataFrame, by: Sequence[str]) -> Plot:
    """The share of judged runs whose tests passed only after a flaky rerun, per
    group, with 95% Wilson intervals and the counts on the bars."""
    if runs["test_verdict"].drop_nulls().is_empty():
        raise UsageError("plot flaky", "", f"the gate judged none of the {runs.height} runs")
    labels, found = _rates(runs, by, ["flaky"])
    fig, ax = _figure()
    _bars(fig, ax, labels, found, {"flaky": "flaky-pass"})
    ax.set_ylabel("share of judged runs that were flaky-pass")
    _title(ax, f"Flaky rate by {' and '.join(by)} (95% Wilson intervals)")
    return fig


PLOTS: dict[str, Callable[[pl.DataFrame, Sequence[str]], Plot]] = {
    "coverage-cost": coverage_vs_cost,
    "wall": wall_by_group,
    "checks": check_pass_rates,
    "flaky": flaky_rate,
}


def plot(kind: str, runs: RunsLike, by: str | Sequence[str] | None = None) -> Plot:
    """One of the plots (`coverage-cost`, `wall`, `checks`, `flaky`) of some runs, a
    colour and marker per group of `by` (default: the arm, and each of executor, model
    and bench that differs between the runs). A matplotlib Figure that a notebook
    shows."""
    if kind not in PLOTS:
        raise UsageError(kind, "", f"no such plot (plots: {', '.join(PLOTS)})")
    frame = runs_frame(runs).collect()
    if frame.is_empty():
        raise UsageError(f"plot {kind}", "", "no runs to plot: the selection is empty")
    keys = default_by(frame) if by is None else ((by,) if isinstance(by, str) else tuple(by))
    unknown = [k for k in keys if k not in frame.columns]
    if unknown or not keys:
        raise UsageError(
            "by", "", f"no column {unknown[0]!r} in the runs" if unknown else "is empty"
        )
    return PLOTS[kind](frame, keys)
