"""Rows of the store's tables, built from records; and records read back from rows.

Each builder gives exactly the columns its table declares in
`benchkit.store.schema`; the writer checks that, so a misspelt or missing key fails
loudly at write time.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict
from dataclasses import fields as dataclass_fields
from typing import Any

from benchkit.gate.junit import CaseResult
from benchkit.gate.verdict import GateResult
from benchkit.records import ArmReport, CheckResult, EnvironmentUsed, Run, TestRecord
from benchkit.store.schema import SCHEMA_VERSION

PHASES = ("start", "prepare", "environment", "baseline", "execute", "verify", "score", "record")


def run_row(run: Run) -> dict[str, Any]:
    spec = run.spec
    row: dict[str, Any] = {
        "run_id": run.run_id,
        "schema_version": SCHEMA_VERSION,
        "origin": run.origin,
        "bench": run.bench,
        "arm": spec.arm,
        "bench_path": run.bench_path,
        "executor": spec.executor,
        "model": spec.model,
        "max_cost": spec.max_cost,
        "trial": spec.trial,
        "flake_reruns": spec.flake_reruns,
        "arm_vars": [f"{name}={value}" for name, value in spec.arm_vars],
        "only_checks": list(spec.checks),
        "run_set": spec.run_set,
        "attempt": spec.attempt,
        "rerun_of": spec.rerun_of,
        "status": run.status,
        "failure_kind": run.failure_kind,
        "failure_detail": run.failure_detail,
        "base_sha": run.base_sha,
        "human_sha": run.human_sha,
        "benchkit_version": run.benchkit_version,
        "bench_digest": run.bench_digest,
        "arm_digest": run.arm_digest,
        "started_at": run.started_at,
        "wall_s": run.wall_s,
        "sites_total": run.sites_total,
        "sites_covered": run.sites_covered,
        "sites_matched": run.sites_matched,
        "sites_unrelated": run.sites_unrelated,
        "files_recall": run.files_recall,
        "files_precision": run.files_precision,
        "diff_lines": run.diff_lines,
        **gate_columns(run.gate),
        "resolved": run.resolved,
        **environment_columns(run.environment),
        "baseline_key": run.baseline_key,
        "baseline_cached": run.baseline_cached,
        "retryable": run.retryable,
        "arm_exit_code": run.arm_exit_code,
        **report_columns(run.report),
        "pid": run.owner.pid if run.owner else None,
        "host": run.owner.host if run.owner else None,
        "process_start": run.owner.process_start if run.owner else None,
        "ci_status": None,  # CI's verdict is known only of imported records
        "worktree": run.worktree,
        "artifacts": run.artifacts,
        "sandbox": run.sandbox,
        "warnings": list(run.warnings),
        "launcher": run.launcher,
    }
    for stage in PHASES:
        row[f"{stage}_s"] = run.phases.get(stage)
    for check in run.check_names:
        result = run.after(check)
        row[f"{check}_status"] = result.status if result else None
        row[f"{check}_count"] = result.count if result else None
    return row


def environment_columns(used: EnvironmentUsed | None) -> dict[str, Any]:
    return {
        "env_key": used.key if used else None,
        "env_python": used.python if used else None,
        "env_packages": list(used.packages) if used and used.packages is not None else None,
        "env_packages_digest": used.packages_digest if used else None,
    }


def report_columns(report: ArmReport) -> dict[str, Any]:
    return {
        "cost_usd": report.cost_usd,
        "cost_source": report.cost_source,
        "sessions": report.sessions,
        "sessions_accepted": report.sessions_accepted,
        "sessions_rejected": report.sessions_rejected,
        "feedback_rounds": report.feedback_rounds,
        "over_budget": report.over_budget,
        "turns": report.turns,
        "reported_flaky_files": list(report.flaky_files)
        if report.flaky_files is not None
        else None,
    }


def _owned(owner: str, fields: Mapping[str, Any]) -> dict[str, Any]:
    return {"run_id": owner, "schema_version": SCHEMA_VERSION, **fields}


def session_rows(run: Run) -> list[dict[str, Any]]:
    return [_owned(run.run_id, asdict(s)) for s in run.report.session_list]


def gate_columns(gate: GateResult | None) -> dict[str, Any]:
    if gate is None:
        names = (
            "test_verdict",
            "test_reasons",
            "preexisting_files",
            "flaky_files",
            "regression_files",
            "missing_files",
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
    return TestRecord(
        phase=row["phase"],
        attempt=row["attempt"],
        case=CaseResult(name=row["test"], test_id=test_id, **case),
    )


def site_rows(run: Run) -> list[dict[str, Any]]:
    return [_owned(run.run_id, asdict(s)) for s in run.sites]
