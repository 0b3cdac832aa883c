"""The CI stage, after verify: the forge's checks on the change the arm pushed.

An arm whose report names a pull request (`pr_url`), or the fork and commit it
pushed (`pushed_repository`, `pushed_sha`), gets its change's checks read with the
GitHub CLI: a pull request's with `gh pr checks`, a fork's push with `gh run list`
(the forge does not link a fork's push to the upstream pull request). benchkit
asks every `ci_poll` seconds until no check is pending, or the bench's
`ci_timeout` has passed; each check is a row of the `ci` table, and the run's `ci`
column says it in words (see `benchkit.gate.ci`).
"""

from __future__ import annotations

import time

from benchkit.arm_report import ArmReport
from benchkit.bench.bench_file import BenchFile
from benchkit.gate.ci import (
    NO_CHECKS,
    CiCheck,
    CiReadError,
    ci_words,
    fork_runs,
    minutes,
    pending,
    pr_checks,
)
from benchkit.records import CiResult
from benchkit.workspace.forge import Forge

NOT_ENABLED = "the fork's workflows were never enabled"


def asked(report: ArmReport) -> bool:
    """The arm's report names a change on the forge: its CI can be read."""
    return bool(report.pr_url or (report.pushed_repository and report.pushed_sha))


def _read(forge: Forge, report: ArmReport) -> tuple[tuple[CiCheck, ...], str]:
    """The checks as they stand, and why there are none where the forge says (an
    error of gh's is raised as `CiReadError`)."""
    if report.pr_url:
        out, error = forge.pr_checks(report.pr_url)
        if error is not None:
            if NO_CHECKS in error:
                return (), ""
            raise CiReadError(f"gh pr checks: {error.splitlines()[0] if error else 'failed'}")
        return pr_checks(out), ""
    assert report.pushed_repository and report.pushed_sha
    out, error = forge.fork_runs(report.pushed_repository, report.pushed_sha)
    if error is not None:
        raise CiReadError(f"gh run list: {error.splitlines()[0] if error else 'failed'}")
    runs = fork_runs(out)
    if runs:
        return runs, ""
    states = forge.workflow_states(report.pushed_repository)
    if states is not None and not states:
        return (), "the fork has no workflows"
    if states and all(s == "disabled_fork" for s in states):
        return (), NOT_ENABLED
    return (), ""


def ask_ci(report: ArmReport, bench: BenchFile, forge: Forge) -> CiResult:
    """The change's checks, asked until none is pending (nor, for a change with no
    checks yet, until one comes), or the bench's `ci_timeout` passes."""
    where = "fork"
    if report.pr_url:
        where = "fork PR" if forge.cross_repository(report.pr_url) else "PR"
    deadline = time.monotonic() + bench.ci_timeout
    while True:
        try:
            checks, why_none = _read(forge, report)
        except CiReadError as exc:
            return CiResult(said=f"unknown ({exc})", status=None)
        waiting = pending(checks) or (not checks and not why_none)
        if not waiting:
            words = ci_words(checks, where, why_none=why_none)
            return CiResult(said=words.said, status=words.status, checks=checks)
        if time.monotonic() + bench.ci_poll > deadline:
            if not checks:
                after = f"no checks after {minutes(bench.ci_timeout)}"
                return CiResult(said=f"none ({after})", status="none")
            words = ci_words(checks, where, waited=bench.ci_timeout)
            return CiResult(said=words.said, status=words.status, checks=checks)
        time.sleep(bench.ci_poll)
