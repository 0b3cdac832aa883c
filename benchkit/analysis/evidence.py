"""Evidence for a pull request: the pilot table of some runs, by id or as given."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import polars as pl

from benchkit.analysis.markdown import Markdown
from benchkit.analysis.pilot_table import pilot_table
from benchkit.errors import UsageError
from benchkit.records import Run
from benchkit.store.query import pick_runs, runs_frame
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
    labelled with `labels` (a list, or a mapping of run id to label; default: the arm)."""
    if isinstance(runs, pl.DataFrame):
        frame = runs
    elif not runs:
        frame = pl.DataFrame()
    elif all(isinstance(r, str) for r in runs):
        frame = pick_runs(stored_runs(store), [str(r) for r in runs])
    else:
        frame = runs_frame([r for r in runs if isinstance(r, Run)], latest=False).collect()
    rows = frame.to_dicts()
    if not rows:
        raise UsageError("evidence", "", "no runs to put in the table: the selection is empty")
    if labels is None:
        names = [str(r["arm"]) for r in rows]
    elif isinstance(labels, Mapping):
        names = [labels.get(str(r["run_id"]), str(r["arm"])) for r in rows]
    else:
        names = list(labels)
    return pilot_table(rows, names)
