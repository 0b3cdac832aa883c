"""A report to browse: a static site of a store's runs that opens from disk.

`benchkit report [--set NAME] --out DIR` writes `index.html` (the run sets, the
comparison table, the pairs of arms, the plots and every run), a page per pair of arms
of a set (`pair_view`) and one per run (its answer first: verdict, coverage, cost,
wall, tampering; then the sites of the human reference and the change file by file,
the human's and the arm's side by side (`diff_view`, coloured by `colour`); the gate,
the tests that did not pass, the checks with their logs, the sessions, the transcript
(`transcript_view`), and the whole spec folded). No server and no script from
elsewhere: the pages are HTML and CSS with a few lines of the project's own script,
the plots PNG files, the logs and patches copies. Every value is escaped, and read as
`reading` rounds it.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache, partial
from importlib.resources import files
from multiprocessing import get_context
from pathlib import Path
from typing import Any, TypeVar

import polars as pl
from jinja2 import Environment, PackageLoader, select_autoescape

from benchkit.analysis.colour import lines_html
from benchkit.analysis.colour import style as syntax_style
from benchkit.analysis.compare import compare, comparison_cells
from benchkit.analysis.diff_view import side_by_side
from benchkit.analysis.gate_view import excerpt, gate_outcomes
from benchkit.analysis.pair_view import pair_names, pair_pages
from benchkit.analysis.pilot_table import arm_cell, check_cell, cost_cell, gate_cell
from benchkit.analysis.plots import PLOTS, default_by, plot
from benchkit.analysis.reading import Shown, shown
from benchkit.analysis.stats import FEW
from benchkit.analysis.text import cells, columns, covered_by, money
from benchkit.analysis.transcript_view import turn_rows
from benchkit.arms.transcript import read_transcript
from benchkit.errors import UsageError
from benchkit.store.query import runs as stored_runs
from benchkit.store.query import table
from benchkit.store.store import Store

SPEC_FIELDS = (
    "bench", "base_sha", "human_sha", "arm", "arm_vars", "executor", "model", "max_cost",
    "trial", "run_set", "attempt", "rerun_of", "origin", "status", "failure_kind",
    "failure_detail", "started_at", "wall_s", "prepare_s", "environment_s", "baseline_s",
    "execute_s", "verify_s", "score_s", "cost_usd", "cost_source", "over_budget",
    "launcher", "host", "pid", "sandbox", "env_python", "baseline_key", "baseline_cached",
    "benchkit_version", "warnings",
)  # fmt: skip
GATE_FIELDS = (
    "test_reasons", "regressions", "regression_files", "flaky_files", "preexisting_files",
    "missing_files", "new_failing_files", "removed_tests", "first_failures", "resolved",
    "tampered", "ignored_written", "ignored_written_count", "retryable",
)  # fmt: skip


def _text(value: object) -> str:
    """A cell's text as `reading` gives any value: `-` for nothing, a list joined."""
    return shown("", value).text


def _coverage(row: Mapping[str, Any], sites: str = "") -> str:
    """`2 of 15[ sites] covered, 1 matched, 1 unrelated change`."""
    unrelated = row.get("sites_unrelated")
    return (
        f"{_text(row.get('sites_covered'))} of {_text(row.get('sites_total'))}{sites} covered, "
        f"{_text(row.get('sites_matched'))} matched, {_text(unrelated)} unrelated "
        + ("change" if unrelated == 1 else "changes")
    )


@dataclass(frozen=True)
class Site:
    """One site of the human reference as a run page lists it."""

    site: int
    file: str
    lines: str
    covered: str
    matched: str


def _covered(row: Mapping[str, Any]) -> str:
    """`yes`, with who first covered the site where known: `yes (session 1)`."""
    if not row["covered"]:
        return "no"
    who = covered_by([row])
    return f"yes ({who.removesuffix(' covered 1 site')})" if who else "yes"


def site_rows(sites: Sequence[Mapping[str, Any]]) -> list[Site]:
    """Each site: its base lines and whether the arm covered and matched it. Pure."""
    shown = []
    for row in sorted(sites, key=lambda r: int(r["site"])):
        length = int(row["length"] or 0)
        lines = (
            f"after {row['start']}"
            if length == 0
            else f"{row['start']}"
            if length == 1
            else f"{row['start']}-{row['start'] + length - 1}"
        )
        shown.append(
            Site(
                site=int(row["site"]),
                file=str(row["file"]),
                lines=f"{lines} ({row['kind']})",
                covered=_covered(row),
                matched="yes" if row["matched"] else "no",
            )
        )
    return shown


def _environment() -> Environment:
    env = Environment(
        loader=PackageLoader("benchkit.analysis", "templates"),
        autoescape=select_autoescape(["html"]),
        keep_trailing_newline=True,
    )
    env.globals["lines_html"] = lines_html
    return env


def _read(path: Path) -> str | None:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return None


Rows = dict[str, list[dict[str, Any]]]


def _rows_of(name: str, store: Store, run_ids: Sequence[str]) -> Rows:
    """The table's rows of the runs, by run id: read once, not filtered per page."""
    try:
        frame = table(name, store)
    except UsageError:
        return {}
    if frame.is_empty() or "run_id" not in frame.columns:
        return {}
    frame = frame.filter(pl.col("run_id").is_in(list(run_ids)))
    return {
        str(key[0]): part.to_dicts()
        for key, part in frame.partition_by("run_id", as_dict=True, maintain_order=True).items()
    }


def report(
    store: Store | Path | str | None = None,
    out: Path | str = "report",
    *,
    run_set: str | None = None,
) -> Path:
    """Write the report of the store's runs (of one run set with `run_set`) to the
    folder `out`; its index page."""
    folder, out = Store.at(store).checked(), Path(out)
    _real.cache_clear()  # a folder made a link since the last report is seen as one
    runs = stored_runs(folder, run_set=run_set)
    if runs.is_empty():
        raise UsageError(
            "report", "", f"no runs{f' in set {run_set}' if run_set else ''} to report"
        )
    try:
        out.mkdir(parents=True, exist_ok=True)
        (out / "runs").mkdir(exist_ok=True)
        (out / "plots").mkdir(exist_ok=True)
        (out / "pairs").mkdir(exist_ok=True)
    except OSError as exc:
        raise UsageError(out, "--out", exc.strerror or str(exc)) from None
    env = _environment()
    written = f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC"
    common = {"store": str(folder.path), "written": written}
    rows = runs.to_dicts()
    ids = [str(r["run_id"]) for r in rows]
    tables = [_rows_of(name, folder, ids) for name in ("checks", "tests", "sessions", "sites")]
    index = _written_apart(
        partial(_write_pages, rows, folder, out, tables, common),
        partial(_said, _write_index, runs, env, out, run_set, common),
        many=len(rows) >= PAGES_APART,
    )
    kept = set(ids)
    for stale in (out / "runs").glob("*.html"):  # an earlier report's runs, not this one's
        if stale.stem not in kept:
            stale.unlink(missing_ok=True)
    return index


PAGES_APART = 200
"""From this many runs, their pages are written by forked processes, one a core, while
this one draws the index: a page is a few milliseconds of Python (its diff coloured),
and a thousand of them on one core are seconds. Forked, not spawned: a worker needs
nothing imported again nor sent, and it uses neither polars nor a thread."""


def _written_apart(
    pages: Callable[[int, int], None], index: Callable[[], Path], *, many: bool
) -> Path:
    """`pages(n, workers)` (every `workers`-th run from the `n`-th) in worker processes
    where there are many pages and this is Linux, `index()` here meanwhile; all here
    otherwise. A worker that failed is an error of the report's."""
    workers = (os.cpu_count() or 1) if many and sys.platform == "linux" else 1
    if workers == 1:
        _said(pages, 0, 1)
        return index()
    context = get_context("fork")
    children = [
        context.Process(target=_worker, args=(pages, n, workers), daemon=True)
        for n in range(workers)
    ]
    for child in children:
        child.start()
    try:
        written = index()
    finally:
        for child in children:
            child.join()
    failed = [c.exitcode for c in children if c.exitcode != 0]
    if failed:
        raise UsageError(
            "report",
            "--out",
            f"{len(failed)} of {workers} page writers failed "
            f"(exit {failed[0]}): the error is above; the site is not whole",
        )
    return written


_T = TypeVar("_T")


def _said(write: Callable[..., _T], *args: Any) -> _T:
    """`write(*args)`, a file it could not write said in one line (a full disk, a
    folder where a page goes), not raised as an OSError."""
    try:
        return write(*args)
    except OSError as exc:
        where = exc.filename or "report"
        raise UsageError(where, "--out", exc.strerror or str(exc)) from None


def _worker(pages: Callable[[int, int], None], n: int, workers: int) -> None:
    """A forked page writer: its error as one line on stderr, and exit 2."""
    try:
        _said(pages, n, workers)
    except UsageError as exc:
        print(f"benchkit: {exc}", file=sys.stderr, flush=True)
        sys.exit(2)


def _write_pages(
    rows: Sequence[Mapping[str, Any]],
    folder: Store,
    out: Path,
    tables: Sequence[Rows],
    common: Mapping[str, str],
    first: int = 0,
    step: int = 1,
) -> None:
    """Every `step`-th run's page, from the `first`."""
    template = _environment().get_template("run.html")
    for row in rows[first::step]:
        page = _run_page(row, folder, out, *tables)
        (out / "runs" / f"{row['run_id']}.html").write_text(
            template.render(root="../", **common, **page)
        )


def _write_index(
    runs: pl.DataFrame, env: Environment, out: Path, run_set: str | None, common: Mapping[str, str]
) -> Path:
    """The pair pages, the styles and script, the plots and the index."""
    pairs = pair_pages(runs)
    for pair in pairs:
        (out / "pairs" / pair.file).write_text(
            env.get_template("pair.html").render(
                root="../", title=f"{pair.a} against {pair.b}", page=pair, few=FEW, **common
            )
        )
    for stale in (out / "pairs").glob("*.html"):
        if stale.name not in {p.file for p in pairs}:
            stale.unlink(missing_ok=True)
    for name in ("style.css", "sort.js"):
        text = files("benchkit.analysis").joinpath(f"templates/{name}").read_text()
        (out / name).write_text(text + (syntax_style() if name == "style.css" else ""))
    index = _index(runs, out, run_set) | {"pairs": pair_names(pairs)}
    path = out / "index.html"
    path.write_text(env.get_template("index.html").render(root="", **common, **index))
    return path


def _index(runs: pl.DataFrame, out: Path, run_set: str | None) -> dict[str, Any]:
    rows = runs.to_dicts()
    header = columns(rows, every=True)
    by = default_by(runs)
    try:
        compare_header, compare_rows, note = comparison_cells(compare(runs, by=list(by)))
    except UsageError as exc:  # every run interrupted, crashed or at work: nothing to compare
        compare_header, compare_rows, note = [], [], exc.message
    how, _, figures = note.partition("\n\n")  # how to read it, then the notes on figures
    plots = []
    for kind in PLOTS:
        try:
            figure = plot(kind, runs, by=by)
        except UsageError as exc:
            plots.append({"kind": kind, "file": None, "why": str(exc)})
            (out / "plots" / f"{kind}.png").unlink(missing_ok=True)  # an earlier report's
            continue
        figure.savefig(out / "plots" / f"{kind}.png", dpi=90)
        plots.append({"kind": kind, "file": f"plots/{kind}.png", "why": ""})
    sets = (
        runs.group_by("run_set")
        .agg(
            pl.len().alias("runs"),
            (pl.col("status") == "ok").sum().alias("ok"),
            (pl.col("status") != "ok").sum().alias("not ok"),
            pl.when(pl.col("cost_usd").is_not_null().any())  # none reported: no $0
            .then(pl.col("cost_usd").sum())
            .alias("cost"),
            pl.col("started_at").min().alias("first"),
            pl.col("started_at").max().alias("last"),
        )
        .sort("run_set", nulls_last=True)
    )
    return {
        "title": f"Runs of set {run_set}" if run_set else "Runs",
        "run_set": run_set,
        "runs_count": runs.height,
        "sets_header": ["set", "runs", "ok", "not ok", "cost", "first started", "last started"],
        "sets_rows": [
            [
                *(_text(s["run_set"]), s["runs"], s["ok"], s["not ok"]),
                cost_cell(s["cost"]),
                *(shown("started_at", s[k]).text for k in ("first", "last")),
            ]
            for s in sets.to_dicts()
        ],
        "compare_header": compare_header,
        "compare_rows": compare_rows,
        "compare_note": how,
        "compare_notes": [n.removeprefix("- ") for n in figures.splitlines()],
        "plots": plots,
        "runs_header": header,
        "runs_rows": [cells(row, header) for row in rows],
        "run_links": {str(r["run_id"]): f"runs/{r['run_id']}.html" for r in rows},
    }


KEPT = {"logs": (".log", "arm.stdout", "instruction.txt"), "": (".patch",)}
"""The files of a run's artifacts a page links to, by folder: its logs, its output and
what it was told, its patches."""


def _copies(
    row: Mapping[str, Any], folder: Store, out: Path, logs: Sequence[str | None]
) -> dict[str, str]:
    """The run's logs and patches, and the logs its checks name (its baseline's are
    shared by the runs of one bench), copied beside its page (a hard link where the
    filesystem allows): each one's name (`logs/after-test.log`) to its link from the
    page. A folder is no log, and a link, or a path a row names outside the store, may
    lead anywhere: none is copied. (os, not pathlib: a thousand pages, a dozen files
    each.)"""
    run_id = str(row["run_id"])
    artifacts, kept = str(folder.artifacts(run_id)), os.path.join(out, "runs", run_id)
    found: dict[str, str] = {}  # name: source
    for sub, ends in KEPT.items():
        with suppress(OSError):  # no such folder
            for e in os.scandir(os.path.join(artifacts, sub)):
                if e.name.endswith(ends) and e.is_file(follow_symlinks=False):
                    found[f"{sub}/{e.name}" if sub else e.name] = e.path
    for log in logs:
        if log and f"logs/{os.path.basename(log)}" not in found and _of_store(log, folder):
            found[f"logs/{os.path.basename(log)}"] = log
    links = {}
    for at, source in sorted(found.items()):
        target = os.path.join(kept, at + ".txt")  # opens as text
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with suppress(FileNotFoundError):
            os.unlink(target)  # an earlier report's
        try:
            os.link(source, target)
        except OSError:  # another filesystem, or one without links
            shutil.copyfile(source, target)
        links[at] = f"{run_id}/{at}.txt"
    return links


@lru_cache(maxsize=256)
def _real(folder: str) -> str:
    """A folder's real path. Asked once a report: `report` clears it."""
    return os.path.realpath(folder)


def _of_store(path: str, folder: Store) -> bool:
    """A regular file, not a link, in a folder that really is under the store's."""
    where = os.path.join(_real(os.path.dirname(os.path.abspath(path))), os.path.basename(path))
    inside = where.startswith(_real(str(folder.path)) + os.sep)
    return inside and os.path.isfile(where) and not os.path.islink(where)


def _own(name: str, links: Mapping[str, str], out: Path) -> str | None:
    """A file the page links to (`logs/after-test.log`), read from its copy: what was
    not copied (a row's path elsewhere, a link in the store) is not read."""
    return _read(out / "runs" / links[name]) if name in links else None


def _run_page(
    row: Mapping[str, Any],
    folder: Store,
    out: Path,
    checks: Rows,
    tests: Rows,
    sessions: Rows,
    sites: Rows,
) -> dict[str, Any]:
    run_id = str(row["run_id"])
    links = _copies(row, folder, out, [c["log_path"] for c in checks.get(run_id, [])])
    mine = checks.get(run_id, [])
    check_rows = [
        {
            "cells": [
                c["phase"],
                c["check"],
                check_cell(c["status"], c["count"], c["check"]),
                _text(c["exit_code"]),
                shown("duration_s", c["duration_s"]).text,
                _text(c["note"]),
            ],
            "log": excerpt(log) if (log := _own(f"logs/{name}", links, out)) is not None else None,
            "href": links.get(f"logs/{name}"),
        }
        for c in mine
        for name in [os.path.basename(c["log_path"] or "") or "-"]
    ]
    own_tests = tests.get(run_id, [])
    passed = sum(1 for t in own_tests if t["phase"] == "after" and t["outcome"] == "passed")
    own_sessions, own_sites = sessions.get(run_id, []), sites.get(run_id, [])
    marker = f" ({row['origin']})" if row.get("origin") in ("simulated", "imported") else ""
    human, agent = (_own(n, links, out) for n in ("human.patch", "agent.patch"))
    output, told = (_own(f"logs/{n}", links, out) for n in ("arm.stdout", "instruction.txt"))
    transcript = read_transcript(output, told) if output else None
    return {
        "title": run_id,
        "run_id": run_id,
        "headline": f"{row['bench']} · {arm_cell(row)} · trial {row['trial']} · "
        f"{row['status']}{marker}",
        "summary": _summary(row),
        "spec": [(f, shown(f, row.get(f))) for f in SPEC_FIELDS if f in row],
        "checks_header": ["phase", "check", "status", "exit", "duration", "note", "log"],
        "checks_rows": check_rows,
        "logs": [(name, href) for name, href in links.items() if name.startswith("logs/")],
        "gate": [("verdict", Shown(gate_cell(row, regressions=True)))]
        + [(f, shown(f, row.get(f))) for f in GATE_FIELDS if f in row],
        "tests_header": ["the gate's word", "test", "message", "reruns alone"],
        "tests_rows": [
            [o.verdict, o.test, o.message, o.reruns] for o in gate_outcomes(row, own_tests)
        ],
        "tests_note": f"Every test of the report after the arm passed ({passed})."
        if passed
        else "No test report was read for this run.",
        "sessions_header": [
            "session",
            "id",
            "kind",
            "status",
            "reason",
            "cost",
            "turns",
            "seconds",
        ],
        "sessions_rows": [
            [
                *(s["session"] + 1, _text(s["session_id"]), _text(s.get("kind"))),
                *(_text(s["status"]), _text(s.get("reason"))),
                *(cost_cell(s["cost_usd"]), _text(s["turns"])),
                shown("duration_s", s["duration_s"]).text,
            ]
            for s in own_sessions
        ],
        "sites_summary": _coverage(row) + (f"; {who}" if (who := covered_by(own_sites)) else ""),
        "patches": [(name, href) for name, href in links.items() if name.endswith(".patch")],
        "sites": site_rows(own_sites),
        "diffs": side_by_side(own_sites, human, agent),
        "kept": [n for n, t in (("human.patch", human), ("agent.patch", agent)) if t is None],
        "transcript": transcript.format if transcript else None,
        "turns": turn_rows(transcript) if transcript else [],
        "output": excerpt(output) if output and not transcript else None,
        "output_href": links.get("logs/arm.stdout"),
    }


def _summary(row: Mapping[str, Any]) -> list[tuple[str, Shown]]:
    """The run's answer, first on its page: the verdict, what it covered, what it cost."""
    cap = row.get("max_cost")
    cost = cost_cell(row.get("cost_usd")) + (f" of a {money(cap)} cap" if cap else ", no cap")
    tampered = row.get("tampered") or []
    kind = f" ({row['failure_kind']})" if row.get("failure_kind") else ""
    return [
        ("verdict", Shown(gate_cell(row, regressions=True))),
        ("resolved", shown("resolved", row.get("resolved"))),
        ("status", Shown(f"{row['status']}{kind}")),
        ("coverage", Shown(_coverage(row, " sites"))),
        ("cost", Shown(cost, None if row.get("cost_usd") is None else repr(row["cost_usd"]))),
        ("wall", shown("wall_s", row.get("wall_s"))),
        ("tampering", Shown(", ".join(map(str, tampered)) if tampered else "none")),
        ("arm", Shown(arm_cell(row))),
        ("executor", shown("executor", row.get("executor"))),
        ("model", shown("model", row.get("model"))),
        ("trial", Shown(str(row["trial"]))),
    ]
