"""Rows of the store's tables, built from records; and records read back from rows.

Each builder gives exactly the columns its table declares in
`benchkit.store.schema`; the writer checks that, so a misspelt or missing key fails
loudly at write time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict
from dataclasses import fields as dataclass_fields
from typing import Any

from benchkit.arm_report import TOKEN_COLUMNS, Tokens
from benchkit.gate.junit import CaseResult
from benchkit.gate.verdict import GateResult
from benchkit.records import PHASES, CheckResult, Run, TestRecord
from benchkit.store.schema import SCHEMA_VERSION, stored_fields, stored_names


def run_row(run: Run) -> dict[str, Any]:
    """The `runs` row of a run: each column its record's stored fields keep (see
    `benchkit.records.stored`), and its checks' `<check>_status` and `<check>_count`."""
    row: dict[str, Any] = {"schema_version": SCHEMA_VERSION}
    _kept(run, row)
    for check in run.check_names:
        result = run.after(check)
        row[f"{check}_status"] = result.status if result else None
        row[f"{check}_count"] = result.count if result else None
    return row


def _kept(record: Any, row: dict[str, Any]) -> None:
    """The columns a record's stored fields keep, added to `row`."""
    for sf in stored_fields(type(record)):
        value = getattr(record, sf.field)
        if sf.part is not None:
            if value is None:
                row.update(dict.fromkeys(stored_names(sf.part)))
            else:
                _kept(value, row)
        elif sf.how.columns:
            row.update(COMPUTED[sf.field](record))
        else:
            row[sf.name] = _value(value, sf.kind)


def _value(value: Any, kind: str) -> Any:
    """A field's value as its column holds it: lists for tuples, NAME=VALUE for pairs."""
    if value is None:
        return None
    if kind == "pairs":
        return [f"{name}={text}" for name, text in value]
    if kind == "strings":
        return list(value)
    return value


def _phases(run: Any) -> dict[str, Any]:
    return {"wall_s": run.wall_s, **{f"{p}_s": run.phases.get(p) for p in PHASES}}


def _cost(report: Any) -> dict[str, Any]:
    return {
        "cost_usd": report.cost_usd,
        "cost_source": report.cost_source,
        "price_table": report.price_table,
    }


def _tokens(report: Any) -> dict[str, Any]:
    return token_columns(report.tokens)


def token_columns(tokens: Tokens) -> dict[str, Any]:
    """The token columns of a run or a session (`TOKEN_COLUMNS`, in `Tokens`' order)."""
    values = (tokens.input, tokens.cached, tokens.cache_write, tokens.output)
    return {name: value for (name, _, _), value in zip(TOKEN_COLUMNS, values, strict=True)}


def _gate(run: Any) -> dict[str, Any]:
    return gate_columns(run.gate)


COMPUTED: dict[str, Callable[[Any], dict[str, Any]]] = {
    "phases": _phases,
    "gate": _gate,
    "cost_usd": _cost,
    "tokens": _tokens,
}
"""How the fields kept as computed columns (`benchkit.records.columns`) fill them."""


def _owned(owner: str, fields: Mapping[str, Any]) -> dict[str, Any]:
    return {"run_id": owner, "schema_version": SCHEMA_VERSION, **fields}


def session_rows(run: Run) -> list[dict[str, Any]]:
    return [
        _owned(
            run.run_id,
            {
                "session": s.session,
                "session_id": s.session_id,
                "status": s.status,
                "cost_usd": s.cost_usd,
                "cost_source": s.cost_source,
                "turns": s.turns,
                "duration_s": s.duration_s,
                **token_columns(s.tokens),
                "files": list(s.files) if s.files_from else None,  # null: nothing said
                "files_from": s.files_from,
                "kind": s.kind,
                "reason": s.reason,
            },
        )
        for s in run.report.session_list
    ]


def commit_rows(run: Run) -> list[dict[str, Any]]:
    return [_owned(run.run_id, asdict(c)) for c in run.commits]


def gate_columns(gate: GateResult | None) -> dict[str, Any]:
    if gate is None:
        names = (
            "test_verdict",
            "test_reasons",
            "preexisting_files",
            "flaky_files",
            "regression_files",
            "missing_files",
            "new_failing_files",
            "removed_tests",
            "regressions",
            "first_failures",
            "rerun_stats",
        )
        return dict.fromkeys(names)
    return {
        "test_verdict": gate.verdict,
        "test_reasons": "; ".join(gate.reasons) or None,
        "preexisting_files": list(gate.preexisting_files),
        "flaky_files": list(gate.flaky_files),
        "regression_files": list(gate.regression_files),
        "missing_files": list(gate.missing_files),
        "new_failing_files": list(gate.new_failing_files),
        "removed_tests": list(gate.removed),
        "regressions": gate.regressions,
        "first_failures": [
            {"file": f.file, "test": f.test, "message": f.message} for f in gate.first_failures
        ],
        "rerun_stats": [
            {
                "file": r.file,
                "attempts": r.attempts,
                "passes": r.passes,
                "fails": r.fails,
                "no_tests": r.no_tests,
                "missing": r.missing,
                "fail_rate_low": r.fail_rate[0] if r.fail_rate else None,
                "fail_rate_high": r.fail_rate[1] if r.fail_rate else None,
            }
            for r in gate.reruns
        ],
    }


def test_rows(owner: str, records: Iterable[TestRecord]) -> list[dict[str, Any]]:
    rows = []
    for t in records:
        case = asdict(t.case)
        case["test"] = case.pop("name")
        case["test_id"] = t.case.full_id
        rows.append(_owned(owner, {"phase": t.phase, "attempt": t.attempt, **case}))
    return rows


def check_rows(owner: str, checks: Iterable[CheckResult]) -> list[dict[str, Any]]:
    return [_owned(owner, asdict(c)) for c in checks]


def _fields(row: Mapping[str, Any], names: Iterable[str]) -> dict[str, Any]:
    return {name: row[name] for name in names}


def check_from_row(row: Mapping[str, Any]) -> CheckResult:
    return CheckResult(**_fields(row, (f.name for f in dataclass_fields(CheckResult))))


def test_from_row(row: Mapping[str, Any]) -> TestRecord:
    case = _fields(row, ("file", "outcome", "duration_s", "message"))
    test_id = row.get("test_id") or ""  # a version-2 row has none: its name is its id
    xfail = bool(row.get("xfail"))  # a row before version 10 has none
    return TestRecord(
        phase=row["phase"],
        attempt=row["attempt"],
        case=CaseResult(name=row["test"], test_id=test_id, xfail=xfail, **case),
    )


def site_rows(run: Run) -> list[dict[str, Any]]:
    return [
        _owned(
            run.run_id,
            {
                "site": s.site,
                "file": s.file,
                "kind": s.kind,
                "start": s.start,
                "length": s.length,
                "covered": s.covered,
                "matched": s.matched,
                "covered_session": s.session,
                "covered_step": s.step,
                "covered_kind": s.by,
            },
        )
        for s in run.sites
    ]


def ci_rows(run: Run) -> list[dict[str, Any]]:
    checks = run.ci.checks if run.ci else ()
    return [_owned(run.run_id, asdict(c)) for c in checks]
