"""The schema, declared once: one row of every table written through the real builders,
each holding exactly its declared columns; a row that does not is an error."""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import benchkit
from benchkit.arm_report import ArmCommit, ArmReport, SessionReport, Tokens
from benchkit.bench.bench_file import load_bench
from benchkit.bench.names import RESERVED_CHECKS
from benchkit.change.ab import AbResult, write_ab
from benchkit.change.probe import ProbeResult, ProbeSet, Verdict, write_probe
from benchkit.change.testrun import CommandRun
from benchkit.columns import stored
from benchkit.errors import BenchError
from benchkit.gate.ci import CiCheck
from benchkit.gate.junit import CaseResult
from benchkit.gate.summary import RunnerSummary
from benchkit.gate.verdict import FileReruns, FirstFailure, GateResult
from benchkit.records import (
    PHASES,
    CheckResult,
    CiResult,
    EnvironmentUsed,
    Owner,
    PilotSpec,
    Run,
    SiteResult,
    SweBenchGrade,
    TestRecord,
)
from benchkit.run.baseline import Baseline, save
from benchkit.store.imports import import_runs
from benchkit.store.parquet import RowError, write_table
from benchkit.store.rows import check_rows, run_row
from benchkit.store.schema import (
    DECLARED_NAMES,
    RUN_COLUMNS,
    SCHEMA_VERSION,
    TABLES,
    check_columns,
    run_columns,
    table_schema,
)
from benchkit.store.store import Store

CASE = CaseResult(
    file="tests/test_a.py", name="test_x", outcome="failed", duration_s=0.1, message="boom"
)
CHECK = CheckResult(
    check="test",
    phase="after",
    status="fail",
    exit_code=1,
    duration_s=1.5,
    count=1,
    note="1 failed",
    log_path="logs/after-test.log",
    problem="pytest was interrupted: 1 error(s) during collection, so no test ran",
)


def a_full_run() -> Run:
    """A run with every part holding a value."""
    return Run(
        run_id="r1",
        spec=PilotSpec(
            bench="b",
            arm="a",
            executor="cli",
            model="m",
            max_cost=0.5,
            trial=2,
            arm_vars=(("TOOL", "2.1"),),
            checks=("test",),
            run_set="s1",
            attempt=2,
            rerun_of="r0",
        ),
        bench="b",
        bench_path="b/bench.toml",
        status="failed",
        failure_kind="crash",
        failure_detail="the arm exited 1",
        base_sha="1" * 40,
        human_sha="2" * 40,
        benchkit_version="0.1.0",
        started_at=datetime(2026, 1, 1, tzinfo=UTC),
        phases={s: 1.0 for s in PHASES},
        sites_total=3,
        sites_covered=2,
        sites_matched=1,
        sites_unrelated=1,
        files_recall=0.5,
        files_precision=1.0,
        diff_lines=7,
        worktree="/tmp/w",
        artifacts="/tmp/a",
        checks=(CHECK,),
        sites=(
            SiteResult(
                site=0,
                file="a.py",
                kind="lines",
                start=1,
                length=2,
                covered=True,
                matched=False,
                session=0,
                step=0,
                by="agent",
            ),
        ),
        tests=(TestRecord(phase="after", attempt=0, case=CASE),),
        gate=GateResult(
            verdict="fail",
            reasons=("a regression",),
            preexisting_files=("tests/test_p.py",),
            flaky_files=("tests/test_f.py",),
            regression_files=("tests/test_a.py",),
            missing_files=("tests/test_m.py",),
            new_failing_files=("tests/test_n.py",),
            removed=("tests/test_r.py::test_gone",),
            regressions=1,
            first_failures=(FirstFailure(file="tests/test_a.py", test="test_x", message="boom"),),
            reruns=(
                FileReruns(
                    file="tests/test_a.py", attempts=1, passes=0, fails=1, no_tests=0, missing=False
                ),
            ),
        ),
        tampered=(("tests/test_a.py", "edited"),),
        ignored_written=(".bench/site/sitecustomize.py",),
        ignored_written_count=1,
        swebench=SweBenchGrade(
            instance_id="acme__widgets-1",
            grade="PARTIAL",
            f2p_success=("t.py::test_a",),
            f2p_failure=("t.py::test_b",),
            p2p_success=("t.py::test_c",),
            p2p_failure=("t.py::test_d",),
        ),
        baseline_key="k",
        baseline_cached=True,
        retryable=False,
        arm_exit_code=1,
        report=ArmReport(
            cost_usd=0.05,
            price_table="benchkit 2026-12-02",
            tokens=Tokens(input=24763, cached=24448, cache_write=100, output=450),
            model="gpt-5-codex",
            sessions=1,
            sessions_accepted=1,
            sessions_rejected=0,
            feedback_rounds=2,
            over_budget=False,
            flaky_files=("tests/test_f.py",),
            turns=4,
            session_list=(
                SessionReport(
                    session=0,
                    session_id="s",
                    status="accepted",
                    cost_usd=0.05,
                    price_table="benchkit 2026-12-02",
                    turns=4,
                    duration_s=3.0,
                    tokens=Tokens(input=24763, cached=24448, cache_write=100, output=450),
                    files=("src/app.py",),
                    files_from="tool",
                    kind="agent",
                    reason="tests",
                ),
            ),
            session_reasons="1 accepted",
            pr_url="https://github.com/acme/tally/pull/7",
            pushed_repository="bench/tally",
            pushed_branch="fix",
            pushed_sha="3" * 40,
        ),
        ci=CiResult(
            said="fail at typecheck",
            status="fail",
            checks=(
                CiCheck(
                    name="typecheck",
                    workflow="ci",
                    state="FAILURE",
                    bucket="fail",
                    started_at=datetime(2026, 1, 1, 10, tzinfo=UTC),
                    completed_at=datetime(2026, 1, 1, 10, 1, tzinfo=UTC),
                    link="https://github.com/acme/tally/actions/runs/11/job/1",
                ),
            ),
        ),
        outcome="no: service error",
        commits=(ArmCommit(step=0, sha="3" * 40, subject="fix", files=("src/app.py",), session=0),),
        owner=Owner(pid=1, host="h", process_start=2),
        resolved=False,
        sandbox="bwrap",
        launcher="processes",
        bench_digest="0123456789abcdef",
        arm_digest="fedcba9876543210",
        warnings=("blob.bin: a binary file holding a secret's value, left out",),
        origin="pilot",
        check_names=("test",),
        environment=EnvironmentUsed(
            key="venv-0123456789abcdef",
            python="3.11.7 /usr/bin/python3.11",
            packages=("pytest==8.3.5",),
            packages_digest="fedcba9876543210",
        ),
    )


def _command_run(sha: str, case: CaseResult) -> CommandRun:
    summary = RunnerSummary(runner="pytest", failed_tests=1, failed_files=None, passed=0)
    return CommandRun(
        sha=sha,
        exit_code=1,
        timed_out=False,
        duration_s=0.5,
        cases=(case,),
        summary=summary,
        log_path="l",
        python="3.11.7 /usr/bin/python3.11",
    )


def _only(path: Path) -> dict[str, object]:
    rows: list[dict[str, object]] = pq.read_table(path).to_pylist()
    [row] = rows
    return row


def test_one_row_of_every_table_through_the_builders(tmp_path: Path) -> None:
    run = a_full_run()
    Store(tmp_path).record(run)
    passed = CaseResult(file="t.py", name="t", outcome="passed", duration_s=0.1, message=None)
    write_ab(
        Store(tmp_path),
        AbResult(
            ab_id="ab1",
            command=("pytest",),
            refs={"base": "main", "head": "fix"},
            runs={
                "base": (_command_run("1" * 40, CASE),),
                "head": (_command_run("2" * 40, passed),),
            },
        ),
    )
    write_probe(
        Store(tmp_path),
        ProbeResult(
            probe_id="p1",
            base_sha="1" * 40,
            head_sha="2" * 40,
            command=("pytest",),
            sets=(
                ProbeSet(
                    reverted=("a.py",),
                    verdicts=(
                        Verdict(
                            test="t.py::t",
                            at_head=passed.outcome,
                            reverted="failed",
                            verdict="discriminates",
                            message="boom",
                        ),
                    ),
                ),
            ),
        ),
    )
    written = {"runs": "r1", "checks": "r1", "tests": "r1", "sites": "r1", "sessions": "r1"}
    written |= {"commits": "r1", "ci": "r1"}
    written |= {"ab": "ab1", "probes": "p1"}
    assert set(written) == set(TABLES)
    for table, name in written.items():
        path = tmp_path / table / f"{name}.parquet"
        declared = table_schema(table, run.check_names if table == "runs" else ())
        assert pq.read_schema(path).names == declared.names(), table
        row = _only(path) if table != "ab" else pq.read_table(path).to_pylist()[1]
        empty = {k for k, v in row.items() if v is None or v == []}
        assert empty == set(), (table, empty)
    _, count = check_columns("test")
    assert _only(tmp_path / "runs" / "r1.parquet")[count.name] == 1


def test_an_imported_row_and_a_baseline_hold_every_column(tmp_path: Path) -> None:
    csv = tmp_path / "published.csv"
    csv.write_text("bench,arm,cost_usd,lint_status,typecheck_count\nb,tool,0.5,ok,3\n")
    [run_id] = import_runs(csv, tmp_path / "store")
    [part] = (tmp_path / "store" / "runs").glob("*.parquet")
    assert pq.read_schema(part).names == table_schema("runs", ["lint", "typecheck"]).names()
    row = _only(part)
    assert (row["run_id"], row["cost_usd"], row["lint_status"], row["lint_count"]) == (
        run_id,
        0.5,
        "ok",
        None,
    )
    assert (row["typecheck_status"], row["typecheck_count"]) == (None, 3)  # a count alone kept
    save(
        Store(tmp_path),
        Baseline(
            key="k",
            checks=(CHECK,),
            tests=(TestRecord(phase="base", attempt=0, case=CASE),),
            report_read=True,
            cached=False,
        ),
    )
    for table in ("checks", "tests"):
        path = tmp_path / "baselines" / table / "k.parquet"
        assert pq.read_schema(path).names == table_schema(table).names()


def test_a_baseline_is_read_once_while_its_files_stay_and_again_once_written_anew(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every pilot of a matrix asks the cached checks at base: a process reads each
    file once while it stays the same file, and again once it is written anew (a
    refresh, a corrupt one run again)."""
    store = Store(tmp_path)
    reads: list[Path] = []
    read_file = benchkit.store.reads.read_file

    def counted(path: Path) -> list[dict[str, object]] | None:
        reads.append(path)
        return read_file(path)

    monkeypatch.setattr(benchkit.store.reads, "read_file", counted)
    assert store.baseline_rows("checks", "k") is None  # none yet
    first = Baseline(key="k", checks=(CHECK,), tests=(), report_read=False, cached=False)
    save(store, first)
    rows = [store.baseline_rows("checks", "k") for _ in range(3)]
    assert [len(r or []) for r in rows] == [1, 1, 1] and len(reads) == 1
    later = replace(CHECK, check="lint", status="fail")
    save(store, replace(first, checks=(CHECK, later)))
    again = store.baseline_rows("checks", "k")
    assert [r["check"] for r in again or []] == ["test", "lint"] and len(reads) == 2
    assert store.baseline_rows("checks", "k") == again and len(reads) == 2


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"satus": "fail"}, "unknown ['satus'], missing none"),
        ({"status": None}, None),
    ],
)
def test_a_row_that_is_not_its_columns_is_an_error(
    tmp_path: Path, change: dict[str, object], message: str | None
) -> None:
    [row] = check_rows("r1", [CHECK])
    row |= change
    if message is None:
        write_table(tmp_path, "checks", "ok", [row], table_schema("checks"))
        return
    with pytest.raises(RowError, match=message.replace("[", r"\[").replace("]", r"\]")):
        write_table(tmp_path, "checks", "bad", [row], table_schema("checks"))
    assert not (tmp_path / "checks").exists() or not list((tmp_path / "checks").iterdir())


def test_a_missing_key_is_an_error(tmp_path: Path) -> None:
    row = run_row(a_full_run())
    del row["wall_s"]
    with pytest.raises(RowError, match=r"unknown none, missing \['wall_s'\]"):
        write_table(tmp_path, "runs", "r1", [row], table_schema("runs", ("test",)))


DECLARED_RUNS = {c.name for c in RUN_COLUMNS}


@dataclass(frozen=True, kw_only=True)
class RunWithTokens(Run):
    """A run with one more field, as a change to `Run` would add it."""

    tokens: int | None = field(
        default=None, metadata=stored("Tokens the arm's model read and wrote.", kind="int64")
    )


def test_a_field_added_to_run_is_a_documented_column_of_the_runs_table(tmp_path: Path) -> None:
    """One field with `stored(...)`, written in one place: its column is declared with
    its type and doc, filled in the row, and written to and read from Parquet."""
    columns = run_columns(RunWithTokens)
    [added] = [c for c in columns if c.name == "tokens"]
    assert (added.type, added.doc) == (pl.Int64(), "Tokens the arm's model read and wrote.")
    assert [c.name for c in columns if c.name != "tokens"] == [c.name for c in RUN_COLUMNS]
    base = a_full_run()
    run = RunWithTokens(**{f.name: getattr(base, f.name) for f in fields(Run)}, tokens=1234)
    row = run_row(run)
    assert row["tokens"] == 1234
    checks = table_schema("runs", run.check_names)
    schema = pl.Schema(
        [(c.name, c.type) for c in columns]
        + [(name, kind) for name, kind in checks.items() if name not in DECLARED_RUNS]
    )
    write_table(tmp_path, "runs", run.run_id, [row], schema)
    path = tmp_path / "runs" / f"{run.run_id}.parquet"
    assert _only(path)["tokens"] == 1234
    assert pl.read_parquet_schema(path)["tokens"] == pl.Int64


def test_every_stored_field_of_a_run_is_one_declared_column() -> None:
    """The `runs` columns are Run's fields, in their order, each with its doc: no column
    declared apart from a field, none filled by no field."""
    names = [c.name for c in RUN_COLUMNS]
    assert len(names) == len(set(names))
    assert all(c.doc for c in RUN_COLUMNS)
    assert set(run_row(a_full_run())) == set(names) | {
        n for c in a_full_run().check_names for n in (f"{c}_status", f"{c}_count")
    }


def test_no_check_may_take_a_name_whose_status_column_is_benchkits_own(tmp_path: Path) -> None:
    """`ci_status` and `swebench_status` are columns of the runs table: a check named
    `ci` or `swebench` would write the same column, so a bench file naming one is
    refused, naming the field."""
    own = {c.removesuffix("_status") for c in DECLARED_NAMES["runs"] if c.endswith("_status")}
    assert own == RESERVED_CHECKS
    bench = tmp_path / "bench.toml"
    bench.write_text(
        'name = "b"\ninstruction = "x"\n[repo]\ngit = "."\nbase = "main"\n[human]\nref = "h"\n'
        '[[checks]]\nname = "swebench"\ncommand = "true"\n'
    )
    with pytest.raises(BenchError, match=r"bench.toml: checks.0.name: 'swebench' is a name"):
        load_bench(bench)


def test_a_version_10_session_reads_its_cost_as_reported_or_missing(tmp_path: Path) -> None:
    old = pa.table(
        {
            "run_id": ["r1", "r1"],
            "schema_version": pa.array([10, 10], pa.int32()),
            "session": pa.array([0, 1], pa.int32()),
            "session_id": ["s0", "s1"],
            "status": ["accepted", "rejected"],
            "cost_usd": [0.3, None],
            "turns": pa.array([4, None], pa.int32()),
            "duration_s": [12.0, None],
        }
    )
    (tmp_path / "sessions").mkdir()
    pq.write_table(old, tmp_path / "sessions" / "r1.parquet")
    read = benchkit.table("sessions", tmp_path)
    assert read["schema_version"].to_list() == [SCHEMA_VERSION] * 2
    assert read["cost_source"].to_list() == ["reported", "missing"]  # version 10 computed none
    assert read["files"].to_list() == [None, None]  # unknown, not "none edited"
    assert read["input_tokens"].to_list() == [None, None]
