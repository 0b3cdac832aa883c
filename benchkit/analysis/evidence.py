"""Evidence for a pull request: the pilot table of some runs, by id or as given, and
under it who covered each run's sites (`session 1 covered 10 sites, the rules 2`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import polars as pl

from benchkit.analysis.markdown import Markdown
from benchkit.analysis.pilot_table import pilot_table
from benchkit.analysis.text import covered_by
from benchkit.errors import StoreError, UsageError
from benchkit.records import Run
from benchkit.store.query import pick_runs, run_sites, runs_frame
from benchkit.store.query import runs as stored_runs
from benchkit.store.store import Store


def evidence(
    runs: Sequence[str] | Sequence[Run] | pl.DataFrame,
    *,
    labels: Sequence[str] | Mapping[str, str] | None = None,
    store: Store | Path | str | None = None,
) -> Markdown:
    """The pilot table for a PR body: one row per run (run ids or their unique
    prefixes, read from the store; or the runs as `bk.pilot` or `bk.runs` gave them),
    labelled with `labels` (a list, or a mapping of run id to label; default: the arm);
    under it, for each run whose sites are attributed, who covered them."""
    records = [r for r in runs if isinstance(r, Run)] if not isinstance(runs, pl.DataFrame) else []
    if isinstance(runs, pl.DataFrame):
        frame = runs
    elif not runs:
        frame = pl.DataFrame()
    elif all(isinstance(r, str) for r in runs):
        frame = pick_runs(stored_runs(store), [str(r) for r in runs])
    else:
        frame = runs_frame(records, latest=False).collect()
    rows = frame.to_dicts()
    if not rows:
        raise UsageError("evidence", "", "no runs to put in the table: the selection is empty")
    if labels is None:
        names = [str(r["arm"]) for r in rows]
    elif isinstance(labels, Mapping):
        names = [labels.get(str(r["run_id"]), str(r["arm"])) for r in rows]
    else:
        names = list(labels)
    shown = pilot_table(rows, names)
    try:
        sites = run_sites(records or frame, store)  # a run's own, or the store's
    except StoreError:  # no store to read them from: runs given as a frame from elsewhere
        sites = pl.DataFrame()
    by_run = {str(k[0]): g.to_dicts() for k, g in sites.group_by("run_id")} if sites.height else {}
    said = [
        f"- **{name}**: {words}."
        for row, name in zip(rows, names, strict=True)
        if (words := covered_by(by_run.get(str(row["run_id"]), [])))
    ]
    return Markdown(f"{shown}\n\n" + "\n".join(said)) if said else shown
