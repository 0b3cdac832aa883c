"""The CI stage: an arm whose report names a pull request (or a fork's push) has its
change's checks read with the GitHub CLI, here the fake of tests/fakes/forge (gh's
subcommands, JSON shapes and exit codes): pass, fail, pending then pass, pending past
the bench's `ci_timeout`, no checks, a fork's run and a fork whose workflows were
never enabled; `gh` missing or logged out stops the pilot at planning."""

from __future__ import annotations

import os
from pathlib import Path

import polars as pl
import pytest

import benchkit
from benchkit.bench.arm_file import load_arm
from benchkit.bench.bench_file import load_bench
from benchkit.errors import ArmError, BenchError
from benchkit.gate.ci import ci_words, fork_runs, pr_checks, status_of_words
from tests.conftest import ROOT, TinyRepo
from tests.helpers import benchkit_in_process

FORGE = ROOT / "tests" / "fakes" / "forge"
PR = "https://github.com/acme/tally/pull/"
TOOL = """#!/bin/sh
printf '{"pr_url": "%s", "pushed_repository": "%s", "pushed_sha": "%s"}' "$1" "$2" "$3" \\
  > "$HOME/report.json"
echo "# done" >> calc.py
[ "$4" != crash ] || exit 3
"""
ARM = f"""name = "pr-tool"
description = "a scripted tool that pushes its change: its report names the PR, or the fork"
command = ["sh", "{{arm_dir}}/pr-tool.sh"]
timeout = 60

[executors.pass]
args = ["{PR}1", "", ""]
[executors.crash]
args = ["{PR}1", "", "", "crash"]
[executors.fail]
args = ["{PR}2", "", ""]
[executors.later]
args = ["{PR}3", "", ""]
[executors.pending]
args = ["{PR}4", "", ""]
[executors.nochecks]
args = ["{PR}5", "", ""]
[executors.fork]
args = ["", "bench/tally", "{"a" * 40}"]
[executors.disabled]
args = ["", "bench/disabled", "{"b" * 40}"]

[report]
adapter = "jsonpath"
file = "{{home}}/report.json"
pr_url = "$.pr_url"
pushed_repository = "$.pushed_repository"
pushed_sha = "$.pushed_sha"
"""


def _bench(tiny: TinyRepo, name: str, timeout: float) -> Path:
    """The tiny bench, waiting `timeout` seconds for CI and asking every 0.2 s."""
    text = (tiny.bench_dir / "bench.toml").read_text()
    path = tiny.bench_dir / f"{name}.toml"
    path.write_text(f"ci_timeout = {timeout}\nci_poll = 0.2\n{text}")
    return path


@pytest.fixture
def forge(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("PATH", f"{FORGE}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_GH_STATE", str(tmp_path))
    arm = tmp_path / "pr-tool.toml"
    arm.write_text(ARM)
    (tmp_path / "pr-tool.sh").write_text(TOOL)
    return arm


def test_the_ci_stage_reads_each_shape_of_the_forges_checks(
    tiny: TinyRepo, forge: Path, tmp_path: Path
) -> None:
    patient = _bench(tiny, "patient", 600)  # done long before: its checks end
    executors = ["pass", "crash", "fail", "later", "fork", "disabled"]
    runs = benchkit.pilot(str(patient), arm=str(forge), executor=executors, store=tmp_path / "s")
    hasty = _bench(tiny, "hasty", 1)  # the checks never end, or never come
    runs += benchkit.pilot(
        str(hasty),
        arm=str(forge),
        executor=["pending", "nochecks"],
        store=tmp_path / "s",
        run_set="hasty",  # the same bench's name, another file: a set of its own
    )
    said = {r.spec.executor: (r.ci.said, r.ci.status) for r in runs if r.ci}
    assert said == {
        "pass": ("2 pass, 0 fail (fork PR)", "ok"),
        "crash": ("2 pass, 0 fail (fork PR)", "ok"),  # the arm failed: its PR is checked too
        "fail": ("fail at typecheck", "fail"),
        "later": ("2 pass, 0 fail (PR)", "ok"),
        "fork": ("1 pass, 0 fail (fork)", "ok"),
        "disabled": ("none (the fork's workflows were never enabled)", "none"),
        "pending": ("pending (timed out after 1 s)", "pending"),
        "nochecks": ("none (no checks after 1 s)", "none"),
    }
    assert [r.status for r in runs if r.spec.executor == "crash"] == ["failed"]
    assert (tmp_path / "asks-3").read_text() == "2"  # pending, then asked again: done
    stored = benchkit.runs(tmp_path / "s")
    assert sorted(stored["ci"].to_list()) == sorted(s for s, _ in said.values())
    assert stored["ci_s"].is_not_null().all()
    ci = benchkit.table("ci", tmp_path / "s")
    failed = ci.join(stored.select("run_id", "executor"), on="run_id").filter(
        pl.col("executor") == "fail"
    )
    assert failed.sort("name").select("name", "bucket", "state").rows() == [
        ("test", "pass", "SUCCESS"),
        ("typecheck", "fail", "FAILURE"),
    ]
    assert failed["link"].to_list() == [
        f"{'https://github.com/acme/tally/actions/runs/11/job/'}{n}" for n in (2, 1)
    ]
    log = Path(runs[0].artifacts) / "logs" / "ci.log"
    assert (
        "$ gh pr checks https://github.com/acme/tally/pull/1 --json name,state" in log.read_text()
    )
    table = str(benchkit.evidence([runs[0], runs[2]]))
    assert "| 2 pass, 0 fail (fork PR) |" in table and "| fail at typecheck |" in table


@pytest.mark.parametrize(
    ("path", "said"),
    [
        (None, "needs gh (the GitHub CLI) on PATH to read the forge's checks: not found"),
        ("logged-out", "gh is not logged in (gh auth status: You are not logged into any"),
    ],
)
def test_gh_missing_or_logged_out_stops_the_pilot_at_planning(
    tiny: TinyRepo, forge: Path, tmp_path: Path, path: str | None, said: str
) -> None:
    env = dict(os.environ)
    if path is None:  # no gh on PATH at all: the fakes' folder left out
        env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if p != str(FORGE))
    else:
        env["FAKE_GH_LOGGED_OUT"] = "1"
    store = tmp_path / "s"
    done = benchkit_in_process(
        "pilot",
        "--bench",
        str(tiny.bench_dir),
        "--arm",
        str(forge),
        "--executor",
        "pass",
        "--store",
        str(store),
        env=env,
    )
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()[-1:]
    assert f"{forge}: report.pr_url: {said}" in line
    assert not (store / "runs").exists()  # nothing recorded: stopped before the first stage


def test_the_words_of_the_ci_column() -> None:
    pr = pr_checks(
        '[{"name":"lint","state":"SUCCESS","bucket":"pass","workflow":"ci",'
        '"startedAt":"2026-12-01T10:00:00Z","completedAt":"2026-12-01T10:01:00Z","link":"l"},'
        '{"name":"docs","state":"SKIPPED","bucket":"skipping","workflow":"ci",'
        '"startedAt":"0001-01-01T00:00:00Z","completedAt":"0001-01-01T00:00:00Z","link":""}]'
    )
    assert pr[1].started_at is None and pr[1].link is None  # gh's zero time: not started
    assert ci_words(pr, "PR").said == "1 pass, 0 fail, 1 skipped (PR)"
    runs = fork_runs(
        '[{"name":"ci","status":"completed","conclusion":"cancelled","workflowName":"ci",'
        '"url":"u","startedAt":"2026-12-01T10:00:00Z","updatedAt":"2026-12-01T10:05:00Z"},'
        '{"name":"lint","status":"in_progress","conclusion":"","workflowName":"lint",'
        '"url":"v","startedAt":"2026-12-01T10:00:00Z","updatedAt":"2026-12-01T10:01:00Z"}]'
    )
    assert [(r.bucket, r.state) for r in runs] == [
        ("cancel", "completed/cancelled"),
        ("pending", "in_progress"),
    ]
    assert ci_words(runs, "fork").said == "cancelled at ci"
    assert ci_words(runs[1:], "fork", waited=600).said == "pending (timed out after 10 min)"
    assert ci_words((), "PR").said == "none"
    for text, status in [
        ("1 pass 0 fail (fork PR)", "ok"),
        ("1 pass, 2 fail", "fail"),
        ("fail at typecheck", "fail"),
        ("pending (timed out after 10 min)", "pending"),
        ("none", "none"),
        ("ok", "ok"),
        ("see the PR", None),
        ("0 fail, 2 pass", "ok"),  # counts in any order
        ("2 passed, 0 failed, 1 cancelled", "fail"),  # a cancelled check fails, as gh's
        ("1 pass, 0 fail, 2 pending", "pending"),
        ("reduced to 3 errors", None),  # a first word, not a prefix of one
    ]:
        assert status_of_words(text) == status, text
    with pytest.raises(ValueError, match="gh pr checks: not JSON"):
        pr_checks("no checks reported")


def test_a_bad_ci_setting_is_one_line_naming_the_file_and_the_field(
    tiny: TinyRepo, tmp_path: Path
) -> None:
    arm = tmp_path / "half.toml"
    arm.write_text(
        'name = "half"\ncommand = ["true"]\n\n[report]\nadapter = "jsonpath"\n'
        'file = "r.json"\npushed_sha = "$.sha"\n'
    )
    with pytest.raises(
        ArmError, match=r"half\.toml: report\.jsonpath: pushed_repository and pushed_sha: "
    ):
        load_arm(arm)
    bench = _bench(tiny, "impatient", 10)
    bench.write_text(bench.read_text().replace("ci_poll = 0.2", "ci_poll = 30"))
    with pytest.raises(
        BenchError, match=r"impatient\.toml: \(file\): ci_poll: 30 s, more than ci_timeout \(10 s\)"
    ):
        load_bench(bench)
