"""Comparing arms and executors over many runs, with honest intervals.

- `compare`: per group (say arm and executor), the number of runs, the mean of each
  metric (a named one, or any numeric column) with its 95% interval (Wilson for a
  rate, which never collapses at 0% or 100%; a bootstrap for other means), and sums
  on request; a group of fewer than `stats.FEW` runs is marked.
- `paired`: two arms over the units they share (bench and trial): a paired
  bootstrap on the metric's differences and an exact sign test on pass/fail, which
  says "inconclusive" below `stats.FEW` pairs (the same rule), and says which factors
  it averaged over inside a unit.
- `flips`: the benches whose verdict differs between two arms.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import polars as pl

from benchkit.analysis.markdown import NONE, markdown_table
from benchkit.analysis.metrics import (
    DEFAULT_METRICS,
    RATES,
    metric_exprs,
    passed,
    stopped,
)
from benchkit.analysis.stats import (
    ALPHA,
    FEW,
    NORMAL_ABOVE,
    Summary,
    bootstrap_mean,
    mean_interval,
    sign_test,
)
from benchkit.errors import UsageError
from benchkit.gate.intervals import wilson  # one Wilson interval: the gate's
from benchkit.store.query import RunsLike, counted_runs, runs_frame


@dataclass(frozen=True)
class Comparison:
    """`compare`'s answer: one row per group; renders as markdown in a notebook."""

    frame: pl.DataFrame
    by: tuple[str, ...]
    metrics: tuple[str, ...]
    sums: bool = False
    rates: frozenset[str] = frozenset(RATES)
    left_out: int = 0  # runs interrupted, crashed or running: not their arm's outcome
    notes: tuple[str, ...] = ()  # what a figure is (a cost computed, or missing and why)

    def to_markdown(self) -> str:
        return comparison_table(self)

    def _repr_markdown_(self) -> str:
        return self.to_markdown()

    def __str__(self) -> str:
        return self.to_markdown()


def _group_keys(by: str | Sequence[str], columns: Sequence[str]) -> tuple[str, ...]:
    keys = (by,) if isinstance(by, str) else tuple(by)
    unknown = [k for k in keys if k not in columns]
    if unknown or not keys:
        raise UsageError(
            "by",
            "",
            f"no column {unknown[0]!r} in the runs to group by"
            if unknown
            else "give at least one column to group by",
        )
    return keys


def compare(
    runs: RunsLike,
    by: str | Sequence[str] = "arm",
    metrics: Sequence[str] | None = None,
    *,
    sums: bool = False,
    seed: int = 0,
) -> Comparison:
    """Per group: runs, the mean of each metric and its 95% interval (Wilson for a
    rate, a bootstrap otherwise), and with `sums` each metric's sum. A metric is one
    of `DEFAULT_METRICS` or any numeric column. The runs as `bk.runs()` or
    `bk.pilot()` gave them."""
    lazy, counted = counted_runs(runs)
    schema = lazy.collect_schema()
    keys = _group_keys(by, schema.names())
    available = metric_exprs(dict(schema))
    rates = RATES | {name for name, dtype in schema.items() if dtype == pl.Boolean}
    wanted = tuple(m for m in (metrics or DEFAULT_METRICS) if m in available)
    unknown = [m for m in (metrics or ()) if m not in available]
    if unknown:
        raise UsageError("metrics", "", f"no metric {unknown[0]!r} (known: {', '.join(available)})")
    out = stopped() if "status" in schema else pl.lit(False)
    costed = "cost" in wanted and {"cost_source", "price_table", "warnings"} <= set(schema)
    sources = [pl.col(c).alias(f"_{c}") for c in COST_SOURCE] if costed else []
    noted = pl.col("cost_source").is_in(NOTED) if costed else pl.lit(False)

    def chosen(exprs: list[pl.Expr]) -> pl.LazyFrame:
        return lazy.filter(~out).select(*keys, *exprs, noted.alias(NOTED_COLUMN))

    exprs = [available[m].alias(m) for m in wanted]
    grouped = _summaries(chosen(exprs), keys, wanted, rates).collect()
    if _nan_in(grouped, wanted):  # a NaN given (never stored): read as missing, again
        exprs = [available[m].fill_nan(None).alias(m) for m in wanted]
        grouped = _summaries(chosen(exprs), keys, wanted, rates).collect()
    left_out = counted - int(grouped["runs"].sum())
    if grouped.is_empty():
        why = f": the {_counted(left_out, 'run')} given did not finish" if left_out else ""
        raise UsageError("compare", "", f"no runs to compare{why or ': the selection is empty'}")
    notes: tuple[str, ...] = ()
    if grouped[NOTED_COLUMN].sum():  # the few runs whose cost the notes say, read now
        said = lazy.filter(~out, noted).select(*keys, *sources).collect()
        notes = cost_notes(said, grouped, keys)
    resampled = [m for m in wanted if m not in rates]
    samples = _resampled(chosen(exprs).drop(NOTED_COLUMN), grouped, keys, resampled)
    rows = []
    for group in grouped.iter_rows(named=True):
        row = {k: group[k] for k in keys}
        row["runs"] = group["runs"]
        row["few_runs"] = group["runs"] < FEW
        for m in wanted:
            n = group[f"{m}_n"]
            interval: tuple[float, float] | tuple[float, float, str] | None
            if m in rates:
                interval = wilson(round(group[f"{m}_sum"] or 0), n)
            else:
                summary = Summary(
                    n=n,
                    mean=group[f"{m}_mean"] or 0.0,
                    std=group[f"{m}_std"] or 0.0,
                    binary=bool(group[f"{m}_binary"]),
                )
                values = partial(_sample, samples, tuple(group[k] for k in keys), m)
                interval = mean_interval(summary, values, seed=seed)
            row[f"{m}_mean"] = group[f"{m}_mean"]
            if sums:
                row[f"{m}_sum"] = group[f"{m}_sum"] if n else None
            row[f"{m}_n"] = n
            row[f"{m}_low"] = interval[0] if interval else None
            row[f"{m}_high"] = interval[1] if interval else None
        rows.append(row)
    frame = pl.DataFrame(rows) if rows else pl.DataFrame({k: [] for k in (*keys, "runs")})
    return Comparison(
        frame=frame,
        by=keys,
        metrics=wanted,
        sums=sums,
        rates=frozenset(rates & set(wanted)),
        left_out=left_out,
        notes=notes,
    )


COST_SOURCE = ("cost_source", "price_table", "warnings")  # what says what a cost is


NOTED = ("computed", "missing")  # the cost sources a comparison's notes say
NOTED_COLUMN = "_noted"  # a compare's own column: whether a run's cost is `NOTED`


def cost_notes(said: pl.DataFrame, grouped: pl.DataFrame, keys: Sequence[str]) -> tuple[str, ...]:
    """What the cost column's figures are, where not all the tools' own (`said`: the
    runs whose cost source is `NOTED`), group by group in `grouped`'s order (its
    `runs`: each group's count): the groups whose costs were computed from tokens (by
    which price table: an estimate), and those with runs whose cost is missing, with
    the first run's reason."""
    if said.is_empty():  # every cost the tools' own: the common case
        return ()
    notes = []
    flagged = said.partition_by(list(keys), as_dict=True, maintain_order=True)
    for group in grouped.select(*keys, "runs").iter_rows():
        rows, runs = flagged.get(tuple(group[:-1])), group[-1]
        if rows is None:
            continue
        name = " ".join(str(value) for value in group[:-1])
        computed = rows.filter(pl.col("_cost_source") == "computed")
        if computed.height:
            tables = ", ".join(sorted(set(computed["_price_table"].drop_nulls())))
            notes.append(
                f"cost of {name}: computed from its tokens with the price table {tables} "
                f"({computed.height} of {runs} runs), an estimate, not a bill."
            )
        missing = rows.filter(pl.col("_cost_source") == "missing")
        if missing.height:
            reasons = Counter(_why_missing(ws) for ws in missing["_warnings"].to_list())
            why = "; ".join(
                f"{n} of them: {reason}" if len(reasons) > 1 else reason
                for reason, n in reasons.most_common()
            )
            notes.append(f"cost of {name}: missing for {missing.height} of {runs} runs ({why}).")
    return tuple(notes)


def _why_missing(warnings: Sequence[str] | None) -> str:
    """Why a run has no cost: its warning, or the tool reported none."""
    said = (w for w in warnings or () if w.startswith("cost missing: "))
    return next(said, "cost missing: the tool reported none").removeprefix("cost missing: ")


def _nan_in(grouped: pl.DataFrame, metrics: Sequence[str]) -> bool:
    """Whether a metric's sum in some group is NaN: a NaN among its values (or both
    infinities), which a mean must read as missing."""
    sums = [f"{m}_sum" for m in metrics if grouped.schema[f"{m}_sum"].is_float()]
    if not sums:
        return False
    return bool(grouped.select(pl.any_horizontal(pl.col(sums).is_nan().any())).item())


def _summaries(
    values: pl.LazyFrame, keys: Sequence[str], wanted: Sequence[str], rates: Collection[str]
) -> pl.LazyFrame:
    """Per group of `keys`, sorted by them: the runs, how many of them a cost note
    names (`NOTED_COLUMN`), and each metric's count, mean and sum, and of a metric not
    a rate (whose interval is Wilson's, from those) its standard deviation and whether
    it is all 0 or 1, computed by polars: a million runs never become Python objects."""
    aggregations = []
    for m in wanted:
        x = pl.col(m)
        aggregations += [
            x.count().alias(f"{m}_n"),
            x.mean().alias(f"{m}_mean"),
            x.sum().alias(f"{m}_sum"),
        ]
        if m not in rates:
            aggregations += [
                x.std().alias(f"{m}_std"),
                ((x == 0) | (x == 1)).all().alias(f"{m}_binary"),
            ]
    noted = pl.col(NOTED_COLUMN).sum()  # the runs a cost note names, by group
    return values.group_by(keys).agg(pl.len().alias("runs"), noted, *aggregations).sort(keys)


Samples = dict[tuple[object, ...], pl.DataFrame]


def _resampled(
    values: pl.LazyFrame, grouped: pl.DataFrame, keys: Sequence[str], metrics: Sequence[str]
) -> Samples:
    """The rows a bootstrap resamples, by group: only those of the groups where a
    metric has 2 to `NORMAL_ABOVE` values (past that its interval is the normal
    limit), as the groups' summaries (`grouped`) count them, so a large store's values
    are never copied out, nor looked at when no group is that small."""
    if not metrics:
        return {}
    few = pl.any_horizontal(pl.col(f"{m}_n").is_between(2, NORMAL_ABOVE) for m in metrics)
    small = grouped.filter(few).select(keys)
    if small.is_empty():
        return {}
    chosen = values.join(small.lazy(), on=list(keys), how="semi", nulls_equal=True)
    rows = chosen.select(*keys, *metrics).collect()
    return rows.partition_by(keys, as_dict=True, maintain_order=True)


def _sample(samples: Samples, group: tuple[object, ...], metric: str) -> np.ndarray[Any, Any]:
    """One group's values of a metric, as a bootstrap resamples them: sorted, so
    that the interval does not depend on the order the store holds the runs in."""
    return np.sort(samples[group][metric].drop_nulls().to_numpy())


FACTORS = ("bench", "arm", "executor", "model", "max_cost", "trial")


@dataclass(frozen=True, kw_only=True)
class Paired:
    """Two arms over the units (by default bench and trial) both ran."""

    a: str
    b: str
    metric: str
    on: tuple[str, ...]
    averaged: tuple[str, ...]  # factors that differ inside a unit, averaged over
    pairs: int
    mean_difference: float | None  # a - b
    low: float | None
    high: float | None
    wins: int  # units where a passed and b did not
    losses: int  # units where b passed and a did not
    p_value: float
    needed: int  # the fewest pairs that can reach significance: `stats.FEW`
    verdict: str

    def _repr_markdown_(self) -> str:
        return paired_table(self)


def _of_arms(runs: pl.LazyFrame, column: str, a: str, b: str) -> pl.LazyFrame:
    """The runs of the two arms (values of `column`) that are their arm's outcome."""
    return runs.filter(pl.col(column).is_in([a, b]), ~stopped())


def _pair_units(
    runs: pl.LazyFrame, column: str, a: str, b: str, metric: pl.Expr, on: Sequence[str]
) -> tuple[pl.DataFrame, tuple[str, ...]]:
    """Each unit both arms ran, a's mean and pass rate beside b's (`_b`), and the
    factors (executor, model, ...) with more than one value inside some unit: one
    read of the runs for both."""
    names = runs.collect_schema().names()
    _group_keys([column, *on], names)
    factors = [f for f in FACTORS if f in names and f != column and f not in on]
    per_unit = (
        _of_arms(runs, column, a, b)
        .group_by([*on, column])
        .agg(
            metric.mean().alias("value"),
            passed().mean().alias("pass"),
            *[pl.col(f).n_unique().alias(f"_{f}") for f in factors],
        )
        .collect()
    )
    held = set(per_unit[column].to_list())
    for value in (a, b):
        if value not in held:
            raise UsageError(
                column, "", f"no run of {value!r} to pair (none, or none the arm finished)"
            )
    most = (
        per_unit.select(pl.col(f"_{f}").max().fill_null(0) for f in factors).row(0)
        if factors
        else ()
    )
    averaged = tuple(f for f, n in zip(factors, most, strict=True) if n > 1)
    per_unit = per_unit.drop(f"_{f}" for f in factors)
    left = per_unit.filter(pl.col(column) == a).drop(column)
    right = per_unit.filter(pl.col(column) == b).drop(column)
    return left.join(right, on=list(on), suffix="_b").sort(list(on)), averaged


def paired(
    runs: RunsLike,
    a: str,
    b: str,
    *,
    metric: str = "coverage",
    column: str = "arm",
    on: Sequence[str] = ("bench", "trial"),
    seed: int = 0,
) -> Paired:
    """Arm `a` against arm `b` (values of `column`) over the units (`on`) they share.
    Factors that differ inside a unit (say two executors) are averaged over, and the
    verdict says so."""
    lazy = runs_frame(runs)
    schema = lazy.collect_schema()
    known = metric_exprs(dict(schema))
    if metric not in known:
        raise UsageError("metric", "", f"no metric {metric!r} (known: {', '.join(known)})")
    units, averaged = _pair_units(lazy, column, a, b, known[metric], on)
    diffs = (units["value"] - units["value_b"]).drop_nulls().to_numpy()
    wins = int(((units["pass"] >= 0.5) & (units["pass_b"] < 0.5)).sum())
    losses = int(((units["pass_b"] >= 0.5) & (units["pass"] < 0.5)).sum())
    needed = FEW
    interval = bootstrap_mean(diffs, seed=seed)
    p_value = sign_test(wins, losses)
    if len(units) < needed:
        verdict = (
            f"inconclusive: {_counted(len(units), 'pair')} cannot reach p < {ALPHA:g} at all; "
            f"at least {needed} are needed"
        )
    elif interval is not None and interval[0] > 0:
        verdict = f"{a} higher on {metric}"
    elif interval is not None and interval[1] < 0:
        verdict = f"{b} higher on {metric}"
    else:
        verdict = f"no difference shown on {metric}"
    if len(units) >= needed and wins + losses < needed:
        verdict += (
            f"; pass/fail inconclusive: {wins + losses} pairs differ, at least {needed} are needed"
        )
    elif wins + losses >= needed:
        verdict += f"; pass/fail sign test p = {p_value:.3g}"
    if averaged:
        verdict += f"; averaged over {', '.join(averaged)} inside each unit"
    return Paired(
        a=a,
        b=b,
        metric=metric,
        on=tuple(on),
        averaged=averaged,
        pairs=len(units),
        mean_difference=float(diffs.mean()) if len(diffs) else None,
        low=interval[0] if interval else None,
        high=interval[1] if interval else None,
        wins=wins,
        losses=losses,
        p_value=p_value,
        needed=needed,
        verdict=verdict,
    )


def _counted(n: int, thing: str) -> str:
    return f"{n} {thing}" if n == 1 else f"{n} {thing}s"


def flips(
    runs: RunsLike, a: str, b: str, *, column: str = "arm", on: Sequence[str] = ("bench",)
) -> pl.DataFrame:
    """The units (benches, by default) whose verdict differs between arms a and b:
    a unit passes for an arm when most of that arm's runs on it pass; a unit whose
    runs of an arm have no verdict (their tests never ran) is no flip."""
    units, _ = _pair_units(runs_frame(runs), column, a, b, passed(), on)

    def verdict(share: str) -> pl.Expr:
        rate = pl.col(share)
        return (
            pl.when(rate.is_null())
            .then(None)
            .when(rate >= 0.5)
            .then(pl.lit("pass"))
            .otherwise(pl.lit("fail"))
        )

    return (
        units.with_columns(verdict("pass").alias(a), verdict("pass_b").alias(b))
        .filter(pl.col(a) != pl.col(b))
        .select(*on, a, b)
    )


SHARES = {"coverage", "matched"}  # a share of the sites per run: a mean read as a percent


def _format(value: float, percent: bool) -> str:
    """Enough digits to reproduce a figure: rates and shares to 0.1%, other values to 6
    significant digits (a cent of a dollar, a hundredth of a second)."""
    return f"{value:.1%}" if percent else f"{value:.6g}"


def _interval(mean: float | None, low: float | None, high: float | None, percent: bool) -> str:
    """`46.7% [24.8, 69.9]`: the mean, then its interval in the mean's unit."""
    if mean is None:
        return NONE
    if low is None or high is None:
        return _format(mean, percent)
    if percent:
        return f"{mean:.1%} [{100 * low:.1f}, {100 * high:.1f}]"
    return f"{_format(mean, percent)} [{_format(low, percent)}, {_format(high, percent)}]"


def comparison_cells(comparison: Comparison) -> tuple[list[str], list[list[object]], str]:
    """`compare`'s groups as a header, rows of cells (each metric's mean and 95%
    interval, then its sum when asked) and the note that says how to read them."""
    frame = comparison.frame
    sums = [m for m in comparison.metrics if comparison.sums]
    header = [*comparison.by, "runs", *comparison.metrics, *[f"{m} sum" for m in sums]]
    body: list[list[object]] = []
    for row in frame.iter_rows(named=True):
        runs = f"{row['runs']}" + (" (few)" if row.get("few_runs") else "")
        means = [
            _interval(
                row.get(f"{m}_mean"),
                row.get(f"{m}_low"),
                row.get(f"{m}_high"),
                m in comparison.rates or m in SHARES,
            )
            for m in comparison.metrics
        ]
        totals = [NONE if row.get(f"{m}_sum") is None else f"{row[f'{m}_sum']:.6g}" for m in sums]
        keys = [NONE if row[k] in (None, "") else row[k] for k in comparison.by]
        body.append([*keys, runs, *means, *totals])
    note = (
        "Rates with 95% Wilson intervals, other means (coverage and matched: the mean "
        "share of a run's sites) with 95% bootstrap intervals; a percent's interval is in "
        "percent. "
        f"(few): fewer than {FEW} runs, the fewest with which a two-sided sign test can "
        f"reach p < {ALPHA:g} at all (paired calls fewer pairs inconclusive)."
    )
    if comparison.left_out:
        note += (
            f" {_counted(comparison.left_out, 'run')} left out: interrupted, crashed or still "
            "running, which says nothing of the arm (run the set again to finish them)."
        )
    if comparison.notes:
        note += "\n\n" + "\n".join(f"- {n}" for n in comparison.notes)
    return header, body, note


def comparison_table(comparison: Comparison) -> str:
    """`compare`'s groups with each metric's mean and 95% interval, in markdown."""
    header, body, note = comparison_cells(comparison)
    return markdown_table(header, body) + "\n\n" + note


def paired_cells(result: Paired) -> tuple[str, list[list[object]]]:
    """The mean difference with its interval, and the pass/fail rows: who passed where
    the other failed, and the sign test."""
    mean = _interval(result.mean_difference, result.low, result.high, result.metric in SHARES)
    counts: list[list[object]] = [
        [f"{result.a} passes, {result.b} fails", result.wins],
        [f"{result.b} passes, {result.a} fails", result.losses],
        ["sign test p", f"{result.p_value:.3g}"],
    ]
    return mean, counts


def paired_table(result: Paired) -> str:
    mean, counts = paired_cells(result)
    rows: list[list[object]] = [
        [f"pairs ({', '.join(result.on)})", result.pairs],
        ["averaged inside a unit", ", ".join(result.averaged) or "nothing"],
        [f"mean {result.metric}, {result.a} - {result.b}", mean],
        *counts,
        ["verdict", result.verdict],
    ]
    return markdown_table(["", "value"], rows)
