"""A report to browse: a static site of a store's runs that opens from disk.

`benchkit report [--set NAME] --out DIR` writes `index.html` (the run sets, the
comparison table, the plots and every run) and one page per run (its answer first:
verdict, coverage, cost, wall, tampering; then the sites of the human reference and
the change file by file, the human's and the arm's side by side (`diff_view`); the
gate, the tests that did not pass, the checks with their logs, the sessions, and the
whole spec folded). No server and no script from elsewhere: the pages are HTML and
CSS, the plots PNG files, the logs and patches copies. Every value is escaped, and
read as `reading` rounds it.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib.resources import files
from pathlib import Path
from typing import Any

import polars as pl
from jinja2 import Environment, PackageLoader, select_autoescape

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
    return Environment(
        loader=PackageLoader("benchkit.analysis", "templates"),
        autoescape=select_autoescape(["html"]),
        keep_trailing_newline=True,
    )


def _read(path: Path) -> str | None:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return None


def _log_of(path: str | None, store: Store) -> str | None:
    """A check's log, when it is a file of the store's own: a path a row names (an
    imported one, say) or a link there that leads elsewhere is not read."""
    if not path:
        return None
    where = Path(path).resolve()
    if not where.is_relative_to(store.path.resolve()) or not where.is_file():
        return None
    return _read(where)


def _rows_of(name: str, store: Store, run_ids: Sequence[str]) -> pl.DataFrame:
    try:
        frame = table(name, store)
    except UsageError:
        return pl.DataFrame()
    if frame.is_empty() or "run_id" not in frame.columns:
        return frame
    return frame.filter(pl.col("run_id").is_in(list(run_ids)))


def report(
    store: Store | Path | str | None = None,
    out: Path | str = "report",
    *,
    run_set: str | None = None,
) -> Path:
    """Write the report of the store's runs (of one run set with `run_set`) to the
    folder `out`; its index page."""
    folder, out = Store.at(store).checked(), Path(out)
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
    checks = _rows_of("checks", folder, ids)
    tests = _rows_of("tests", folder, ids)
    sessions = _rows_of("sessions", folder, ids)
    sites = _rows_of("sites", folder, ids)
    for row in rows:
        page = _run_page(row, folder, out, checks, tests, sessions, sites)
        (out / "runs" / f"{row['run_id']}.html").write_text(
            env.get_template("run.html").render(root="../", **common, **page)
        )
    kept = set(ids)
    for stale in (out / "runs").glob("*.html"):  # an earlier report's runs, not this one's
        if stale.stem not in kept:
            stale.unlink(missing_ok=True)
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
        (out / name).write_text(
            files("benchkit.analysis").joinpath(f"templates/{name}").read_text()
        )
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
        "compare_note": note,
        "plots": plots,
        "runs_header": header,
        "runs_rows": [cells(row, header) for row in rows],
        "run_links": {str(r["run_id"]): f"runs/{r['run_id']}.html" for r in rows},
    }


def _copies(row: Mapping[str, Any], folder: Store, out: Path) -> dict[str, str]:
    """The run's logs and patches, copied beside its page; name to link."""
    artifacts = folder.artifacts(str(row["run_id"]))
    kept = out / "runs" / str(row["run_id"])
    links = {}
    found = [*artifacts.glob("logs/*.log"), *artifacts.glob("*.patch")]
    found += [artifacts / "logs" / "arm.stdout"]  # the arm's output: its transcript
    # a folder there is no log, and a link may lead out of the store: neither is copied
    for source in sorted(f for f in found if f.is_file() and not f.is_symlink()):
        target = kept / source.relative_to(artifacts)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target.with_name(target.name + ".txt"))  # opens as text
        links[str(source.relative_to(artifacts))] = (
            f"{row['run_id']}/{target.relative_to(kept)}.txt"
        )
    return links


def _run_page(
    row: Mapping[str, Any],
    folder: Store,
    out: Path,
    checks: pl.DataFrame,
    tests: pl.DataFrame,
    sessions: pl.DataFrame,
    sites: pl.DataFrame,
) -> dict[str, Any]:
    run_id = str(row["run_id"])
    links = _copies(row, folder, out)
    mine = checks.filter(pl.col("run_id") == run_id).to_dicts() if checks.height else []
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
            "log": excerpt(log) if (log := _log_of(c["log_path"], folder)) is not None else None,
            "href": links.get(f"logs/{Path(c['log_path'] or '').name}"),
        }
        for c in mine
    ]
    own_tests = tests.filter(pl.col("run_id") == run_id).to_dicts() if tests.height else []
    passed = sum(1 for t in own_tests if t["phase"] == "after" and t["outcome"] == "passed")
    own_sessions = sessions.filter(pl.col("run_id") == run_id).to_dicts() if sessions.height else []
    own_sites = sites.filter(pl.col("run_id") == run_id).to_dicts() if sites.height else []
    artifacts = folder.artifacts(run_id)
    marker = f" ({row['origin']})" if row.get("origin") in ("simulated", "imported") else ""
    human, agent = _read(artifacts / "human.patch"), _read(artifacts / "agent.patch")
    output = _log_of(str(artifacts / "logs" / "arm.stdout"), folder)
    told = _log_of(str(artifacts / "logs" / "instruction.txt"), folder)
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
