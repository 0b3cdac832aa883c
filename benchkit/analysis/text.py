"""Plain-text lines and tables of runs, for the terminal. Pure: rows in, text out."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from benchkit.bench.names import RESERVED_CHECKS
from benchkit.gate.verdict import removed_reason
from benchkit.records import CHECKS

CHECK_MARK = {"ok": "ok", "fail": "FAIL", "timeout": "TIME", "missing": "miss", None: "-"}


def check_names(row: Mapping[str, Any]) -> list[str]:
    """The bench checks a row holds (`ci_status`, `swebench_status` are no check's)."""
    statuses = (k.removesuffix("_status") for k in row if k.endswith("_status"))
    names = [c for c in statuses if c not in RESERVED_CHECKS]
    ordered = [c for c in CHECKS if c in names]
    return ordered + sorted(set(names) - set(ordered))


def _check_cell(row: Mapping[str, Any], check: str) -> str:
    return _check_mark(row.get(f"{check}_status"), row.get(f"{check}_count"))


def _check_mark(status: str | None, count: int | None) -> str:
    mark = CHECK_MARK.get(status, str(status))
    return f"{mark}({count})" if count and status is not None else mark


def money(usd: float) -> str:
    """One precision in a table: cents (`$0.27`, `$1,020.00`), and below a cent two
    significant digits (`$0.0042`, `$0.000040`), never a cost shown as $0 (nor as
    `$-0.00`: a negative zero reads as zero)."""
    usd += 0.0
    if 0 < usd < 0.01:
        return f"${usd:.{1 - math.floor(math.log10(usd))}f}"
    return f"${usd:,.2f}"


def cap_words(usd: float) -> str:
    """A cap as people say it: `$1`, `$0.25`."""
    return f"${usd:,.0f}" if usd == round(usd) else money(usd)


def _cost(value: float | None) -> str:
    return "-" if value is None else money(value)


def run_cost(row: Mapping[str, Any]) -> str:
    """A run's cost, `computed` where a price table made it from the tool's tokens."""
    said = _cost(row.get("cost_usd"))
    return f"{said} computed" if row.get("cost_source") == "computed" else said


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value + 0.0:.2f}"  # -0.0 reads 0.00


SPEC_COLUMNS = ("bench", "executor", "model")  # besides the arm and trial, of a matrix


def varying(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The columns of `SPEC_COLUMNS` whose value differs between the rows: what tells
    the pilots of a matrix apart."""
    return [c for c in SPEC_COLUMNS if len({r.get(c) for r in rows}) > 1]


def name(row: Mapping[str, Any], show: Sequence[str] = ()) -> str:
    """A pilot's name: `human #1`, or `tiny human sonnet #1` with bench and model shown."""
    parts = [row.get(c) for c in ("bench", "arm", "executor", "model") if c == "arm" or c in show]
    return f"{' '.join(map(str, parts))} #{row.get('trial')}"


NAME_READS = ("bench", "arm", "executor", "model", "trial")  # what `name` reads


STORE_COLUMNS = ("bench", "arm", "executor", "model", "origin", "run_set")  # of `runs`


COLUMNS_READS = (*SPEC_COLUMNS, "resolved", "tampered")  # and each check's `_status`


def columns(rows: Sequence[Mapping[str, Any]], every: bool = False) -> list[str]:
    """The table's columns: the spec columns that tell the rows apart, or with `every`
    (a store's runs) all of `STORE_COLUMNS`. Reads `COLUMNS_READS` and the names of
    the checks' `_status` fields."""
    checks: list[str] = []
    for keys in dict.fromkeys(tuple(row) for row in rows):  # a frame's rows: one set of keys
        checks += [c for c in check_names(dict.fromkeys(keys)) if c not in checks]
    shown = STORE_COLUMNS if every else ("arm", *varying(rows))
    return [
        "run_id",
        *(c for c in STORE_COLUMNS if c in shown),
        "trial",
        "status",
        *checks,
        "gate",
        *(["resolved"] if any(r.get("resolved") is not None for r in rows) else []),
        *(["tampered"] if any(r.get("tampered") for r in rows) else []),
        "cost",
        "covered",
        "matched",
        "unrelated",
        "recall",
        "precision",
        "wall_s",
    ]


def _text(value: object) -> str:
    """A cell's text; a null (or an empty name) reads `-`."""
    return "-" if value is None or value == "" else str(value)


def _of(part: object, total: object) -> str:
    return "-" if part is None else f"{part}/{_text(total)}"


def _status_cell(row: Mapping[str, Any]) -> str:
    kind = row.get("failure_kind")
    return _text(row.get("status")) + (f" ({kind})" if kind else "")


def _wall_cell(row: Mapping[str, Any]) -> str:
    wall = row.get("wall_s")
    return "-" if wall is None else f"{wall + 0.0:.1f}"  # -0.0 reads 0.0


def _plain(column: str) -> Callable[[Mapping[str, Any]], str]:
    return lambda row: _text(row.get(column))


_PLAIN = frozenset((*STORE_COLUMNS, "run_id", "trial"))  # a cell of the value's text
_CELLS: dict[str, tuple[tuple[str, ...], Callable[[Mapping[str, Any]], str]]] = {
    # each fixed column's cell: the fields it reads, and how it is made of them
    **{c: ((c,), _plain(c)) for c in _PLAIN},
    "status": (("status", "failure_kind"), _status_cell),
    "gate": (("test_verdict",), lambda row: _text(row.get("test_verdict"))),
    "resolved": (("resolved",), lambda row: _text(resolved_word(row))),
    "tampered": (("tampered",), lambda row: _text(len(row.get("tampered") or []) or None)),
    "cost": (("cost_usd", "cost_source"), run_cost),
    "covered": (
        ("sites_covered", "sites_total"),
        lambda row: _of(row.get("sites_covered"), row.get("sites_total")),
    ),
    "matched": (
        ("sites_matched", "sites_total"),
        lambda row: _of(row.get("sites_matched"), row.get("sites_total")),
    ),
    "unrelated": (("sites_unrelated",), lambda row: _text(row.get("sites_unrelated"))),
    "recall": (("files_recall",), lambda row: _ratio(row.get("files_recall"))),
    "precision": (("files_precision",), lambda row: _ratio(row.get("files_precision"))),
    "wall_s": (("wall_s",), _wall_cell),
}


def cell_of(column: str) -> tuple[tuple[str, ...], Callable[[Mapping[str, Any]], str]]:
    """How a column's cell is made of a run: the fields it reads, and the function of
    a row (of at least those fields) that makes it: a fixed column's text, else a
    check's."""
    if column in _CELLS:
        return _CELLS[column]
    return (f"{column}_status", f"{column}_count"), lambda row: _check_cell(row, column)


def _cell(column: str) -> Callable[[Mapping[str, Any]], str]:
    return cell_of(column)[1]


def cells(row: Mapping[str, Any], header: Sequence[str]) -> list[str]:
    """A run's cells under `header`."""
    return [_cell(h)(row) for h in header]


def table(rows: Sequence[Mapping[str, Any]], every: bool = False) -> str:
    """An aligned text table, one line per run; checks read `status(count)`; with
    `every`, all of `STORE_COLUMNS`. (A store's thousands of runs: `listing`.)"""
    header = columns(rows, every)
    return aligned(header, [list(map(_cell(h), rows)) for h in header])


def aligned(header: Sequence[str], body: Sequence[Sequence[str]]) -> str:
    """A table of its columns' cells (`body`, a column each), each column as wide as
    its widest cell, the lines' ends stripped."""
    padded = []
    for h, cells in zip(header, body, strict=True):
        width = max([len(h), *map(len, cells)])
        padded.append([c.ljust(width) for c in (h, *cells)])
    return "\n".join("  ".join(cells).rstrip() for cells in zip(*padded, strict=True))


_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def printable(path: str) -> str:
    """A path as one line shows it: its control characters escaped (`\\n`)."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], path)


def tampering(row: Mapping[str, Any]) -> str | None:
    """What the arm did to tests, their configuration and CI: `tests/a.py (deleted)`."""
    found = [p.rpartition("=") for p in row.get("tampered") or []]
    return ", ".join(f"{printable(path)} ({change})" for path, _, change in found) or None


def resolved_word(row: Mapping[str, Any]) -> str | None:
    """`yes` or `no` when the bench names tests that decide the task; else None."""
    value = row.get("resolved")
    return None if value is None else ("yes" if value else "no")


def line(row: Mapping[str, Any], show: Sequence[str] = ()) -> str:
    """One run on one line: its name (with the `show` columns), status, checks, the
    gate, whether it resolved the task, what it did to tests, covered/total,
    unrelated, wall."""
    checks = " ".join(f"{c}={_check_cell(row, c)}" for c in check_names(row))
    status = cells(row, ["status"])[0]
    gate = f"gate={row['test_verdict']}  " if row.get("test_verdict") else ""
    if said := resolved_word(row):
        gate += f"resolved={said}  "
    if touched := tampering(row):
        gate += f"tampered {touched}  "
    if row.get("cost_usd") is not None:
        gate += f"cost {run_cost(row)}  "
    return (
        f"{name(row, show)}: {status}  {checks}  {gate}"
        f"covered {row.get('sites_covered')}/{row.get('sites_total')}  "
        f"matched {row.get('sites_matched')}  unrelated {row.get('sites_unrelated')}  "
        f"wall {row.get('wall_s') or 0:.1f}s"
    )


def _files(label: str, files: Sequence[str] | None) -> str | None:
    return f"{label} {', '.join(files)}" if files else None


GATE_READS = (  # what `gate_findings` reads
    *("rerun_stats", "flaky_files", "first_failures", "regression_files", "regressions"),
    *("preexisting_files", "missing_files", "test_reasons", "removed_tests", "tampered"),
)


def gate_findings(row: Mapping[str, Any]) -> str:
    """What the gate found in one run: preexisting, flaky, regression and missing files,
    tests removed where the bench allows it, and every reason of the gate."""
    reruns = {r["file"]: r for r in row.get("rerun_stats") or []}
    flaky = [
        f"{f} (passed {reruns[f]['passes']} of {reruns[f]['attempts']} alone)" if f in reruns else f
        for f in row.get("flaky_files") or []
    ]
    failures = [
        f"{x['test']}"
        for x in row.get("first_failures") or []
        if x["file"] in (row.get("regression_files") or [])
    ]
    regression = _files("regression", row.get("regression_files"))
    more = (row.get("regressions") or 0) - len(failures)
    if regression and failures:
        regression += f" ({', '.join(failures)}{f', and {more} more' if more > 0 else ''})"
    parts = [
        _files("preexisting", row.get("preexisting_files")),
        _files("flaky", flaky),
        regression,
        _files("missing", row.get("missing_files")),
    ]
    shown = {f"regression in {', '.join(row.get('regression_files') or [])}"}
    reasons = [r for r in str(row.get("test_reasons") or "").split("; ") if r and r not in shown]
    removed = row.get("removed_tests") or []
    if removed and removed_reason(removed) not in reasons:  # the bench allowed it
        parts.append(_files("removed (allowed)", removed))
    found = "; ".join([*(p for p in parts if p), *reasons])  # every reason of the gate
    touched = tampering(row)
    return (found or "no failing test") + (f"; tampered {touched}" if touched else "")


def tests_block(rows: Sequence[Mapping[str, Any]]) -> str:
    """One line per run with a gate verdict: what failed, and whether it was charged."""
    judged = [r for r in rows if r.get("test_verdict")]
    show = varying(judged)
    names = [name(r, show) for r in judged]
    return tests_lines(names, [r["test_verdict"] for r in judged], map(gate_findings, judged))


def tests_lines(names: Sequence[str], verdicts: Iterable[str], findings: Iterable[str]) -> str:
    """The tests block of the judged runs' names, verdicts and gate findings; empty
    where none was judged."""
    if not names:
        return ""
    width = max(map(len, names))
    lines = ["tests, by the gate:"]
    for said, verdict, found in zip(names, verdicts, findings, strict=True):
        lines.append(f"  {said:<{width}}  {verdict:<10}  {found}")
    return "\n".join(lines)


def _matrix_line(matrix: Mapping[str, Any], now: datetime) -> str:
    """A matrix at work: its set, queued pilots and the time left at its pace."""
    pilots, finished, running = matrix["pilots"], matrix["finished"], matrix["running"]
    queued = max(pilots - finished - running, 0)
    elapsed = (now - datetime.fromisoformat(matrix["started_at"])).total_seconds()
    left = (
        f"~{elapsed / finished * (pilots - finished):.0f} s left at its pace so far"
        if finished
        else "time left: known once its first pilot ends"
    )
    return (
        f"  set {matrix['run_set']}: {finished} of {pilots} done, {running} running, "
        f"{queued} queued, for {elapsed:.0f} s; {left}  ({matrix['host']}:{matrix['pid']})"
    )


def status(
    rows: Sequence[Mapping[str, Any]],
    beats: Mapping[str, Mapping[str, Any]],
    now: datetime,
    matrices: Sequence[Mapping[str, Any]] = (),
) -> str:
    """What the store holds: runs by status, cost so far, each matrix at work (its
    queued pilots, the time left) and each running pilot with the stage, worker and
    age its heartbeat gives."""
    if not rows and not matrices:
        return "no runs"
    counts: dict[str, int] = {}
    for row in rows:
        counts[str(row.get("status"))] = counts.get(str(row.get("status")), 0) + 1
    order = ["ok", "failed", "timeout", "interrupted", "crashed", "running"]
    shown = [s for s in order if s in counts] + sorted(set(counts) - set(order))
    lines = [f"{len(rows)} runs: " + ", ".join(f"{counts[s]} {s}" for s in shown)]
    costs = [r["cost_usd"] for r in rows if r.get("cost_usd") is not None]
    sources = Counter(
        r.get("cost_source") or "reported" for r in rows if r.get("cost_usd") is not None
    )
    said = ", ".join(f"{n} {source}" for source, n in sorted(sources.items())) or "0 reported"
    lines.append(f"cost so far: {_cost(sum(costs)) if costs else '-'} ({said})")
    if matrices:
        queued = sum(max(m["pilots"] - m["finished"] - m["running"], 0) for m in matrices)
        lines.append(f"queued: {queued}; at work:")
        lines += [_matrix_line(m, now) for m in matrices]
    running = [r for r in rows if r.get("status") == "running"]
    show = varying(running)
    for row in running:
        beat = beats.get(str(row.get("run_id")))
        if beat is None:
            where = "no heartbeat"
        else:
            since = (now - datetime.fromisoformat(beat["started_at"])).total_seconds()
            age = (now - datetime.fromisoformat(beat["updated_at"])).total_seconds()
            where = (
                f"{beat['stage']}  {beat['host']}:{beat['pid']}  for {since:.0f} s, "
                f"last beat {age:.0f} s ago"
            )
        lines.append(f"  {name(row, show)}  {where}  {row.get('run_id')}")
    return "\n".join(lines)


KIND_WORDS = {"mechanical": "the rules", "manual": "by hand"}  # a session's kind, as a name


def covered_by(sites: Sequence[Mapping[str, Any]]) -> str | None:
    """Who first covered a run's sites: `session 1 covered 10 sites, the rules 2`
    (sessions counted from 1, a mechanical one named the rules; a commit where no
    session is told), then the covered sites none is known for; None where none is."""
    named: list[tuple[tuple[int, int], str]] = []  # (order, who) of each attributed site
    unknown = 0
    for site in sites:
        if not site.get("covered"):
            continue
        session, step = site.get("covered_session"), site.get("covered_step")
        if session is not None:
            kind = KIND_WORDS.get(str(site.get("covered_kind")))
            named.append(((0, session), kind or f"session {session + 1}"))
        elif step is not None:
            named.append(((1, step), f"commit {step + 1}"))
        else:
            unknown += 1
    merged: dict[str, int] = {}  # by who, in session then commit order
    for _, name in sorted(named):
        merged[name] = merged.get(name, 0) + 1
    if not merged:
        return None
    (first, n), *rest = merged.items()
    said = f"{first} covered {n} site{'' if n == 1 else 's'}"
    said += "".join(f", {name}{' covered' if name[-1].isdigit() else ''} {m}" for name, m in rest)
    return said + (f", {unknown} by no session known" if unknown else "")
