"""Two arms of a run set side by side, as the report's pair pages show them: `paired`
on each metric both arms have (the mean difference with its interval, the verdict),
the pass/fail counts and sign test, and `flips` with the runs behind each flip."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

import polars as pl

from benchkit.analysis.compare import flips, paired, paired_cells
from benchkit.analysis.metrics import stopped
from benchkit.errors import UsageError

METRICS = ("coverage", "matched", "unrelated", "cost", "wall")  # paired on each held


@dataclass(frozen=True)
class PairPage:
    """One pair of arms of one run set: what its page shows."""

    run_set: str | None
    a: str
    b: str
    file: str  # the page's name under pairs/
    rows: list[list[str]]  # metric, pairs, mean difference [interval], verdict
    counts: list[list[object]]  # a passes b fails, b passes a fails, the sign test
    why: str  # why nothing could be paired, or ""
    flips: list[list[str]]  # bench, a's verdict, b's verdict
    flip_runs: dict[str, list[tuple[str, str]]]  # bench: each run on it (arm trial N, id)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or "none"


def pair_pages(runs: pl.DataFrame) -> list[PairPage]:
    """A page per pair of arms inside each run set of two or more arms, in the order
    the arms sort. Pure: the runs in, the pages' contents out."""
    pages = []
    for (run_set,), group in sorted(
        runs.partition_by("run_set", as_dict=True, maintain_order=True).items(),
        key=lambda item: (item[0][0] is None, str(item[0][0])),
    ):
        arms = sorted({str(a) for a in group["arm"].drop_nulls()})
        for a, b in combinations(arms, 2):
            name = f"{_slug(str(run_set))}--{_slug(a)}--{_slug(b)}.html"
            pages.append(_page(group, None if run_set is None else str(run_set), a, b, name))
    return pages


def _page(runs: pl.DataFrame, run_set: str | None, a: str, b: str, file: str) -> PairPage:
    rows: list[list[str]] = []
    counts: list[list[object]] = []
    why = ""
    for metric in METRICS:
        try:
            result = paired(runs, a, b, metric=metric)
        except UsageError as exc:  # an arm with no finished run: nothing pairs
            why = exc.message
            break
        mean, sign = paired_cells(result)
        counts = counts or sign  # pass/fail does not depend on the metric
        if result.pairs and result.mean_difference is not None:
            rows.append([metric, str(result.pairs), mean, result.verdict])
    flipped: list[list[str]] = []
    behind: dict[str, list[tuple[str, str]]] = {}
    if not why:
        table = flips(runs, a, b)
        kept = runs.filter(~stopped(), pl.col("arm").is_in([a, b]))
        for bench, verdict_a, verdict_b in table.select("bench", a, b).iter_rows():
            flipped.append([str(bench), str(verdict_a), str(verdict_b)])
            on = kept.filter(pl.col("bench") == bench).sort("arm", "trial")
            behind[str(bench)] = [
                (f"{r['arm']} trial {r['trial']}", str(r["run_id"]))
                for r in on.iter_rows(named=True)
            ]
    return PairPage(
        run_set=run_set,
        a=a,
        b=b,
        file=file,
        rows=rows,
        counts=counts,
        why=why,
        flips=flipped,
        flip_runs=behind,
    )


def pair_names(pages: Sequence[PairPage]) -> list[tuple[str, str]]:
    """Each page's link text and file, for the index."""
    return [
        (f"{p.a} against {p.b}" + (f" (set {p.run_set})" if p.run_set else ""), p.file)
        for p in pages
    ]
