"""Statistics against known answers; compare, paired, flips, evidence, import, upgrade."""

from __future__ import annotations

import hashlib
import math
import os
import subprocess
import sys
from collections.abc import Sequence
from datetime import UTC, date, datetime
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from matplotlib.container import BarContainer
from matplotlib.figure import Figure
from matplotlib.text import Text

import benchkit
from benchkit.analysis.compare import compare, flips, paired
from benchkit.analysis.markdown import markdown_table
from benchkit.analysis.pilot_table import (
    arm_cell,
    budget_cell,
    check_cell,
    coverage_cell,
    gate_cell,
    label_cell,
    sessions_cell,
)
from benchkit.analysis.stats import bootstrap_mean, pairs_needed, sign_test
from benchkit.analysis.text import gate_findings, table
from benchkit.errors import ImportFileError, UsageError
from benchkit.gate.intervals import wilson
from benchkit.store.imports import import_name, read_csv
from benchkit.store.query import as_rows
from benchkit.store.schema import SCHEMA_VERSION
from tests.conftest import ROOT
from tests.helpers import benchkit_in_process

# ---------------------------------------------------------------- statistics


def test_a_bootstrap_interval_covers_a_known_mean() -> None:
    rng = np.random.default_rng(7)
    covered = 0
    for trial in range(200):
        sample = rng.normal(loc=3.0, scale=2.0, size=40)
        interval = bootstrap_mean(sample, seed=trial, samples=1000)
        assert interval is not None
        covered += interval[0] <= 3.0 <= interval[1]
    # a 95% interval covers the true mean about 95% of the time (binomial: 185..199)
    assert 180 <= covered <= 199


def test_bootstrap_of_a_rate_and_of_a_large_group() -> None:
    rate = bootstrap_mean([1.0] * 30 + [0.0] * 10)
    assert rate is not None and rate[2] == "bootstrap"
    assert rate[0] < 0.75 < rate[1]
    big = bootstrap_mean(np.arange(10_000, dtype=float))
    assert big is not None and big[2] == "normal"
    half = 1.959963984540054 * np.arange(10_000).std(ddof=1) / math.sqrt(10_000)
    assert big[0] == pytest.approx(4999.5 - half)
    assert bootstrap_mean([4.2]) is None  # one run: no interval at all


def test_the_sign_test_exact_p_values() -> None:
    assert sign_test(6, 0) == 2 / 64
    assert sign_test(8, 2) == pytest.approx(2 * (1 + 10 + 45) / 1024)  # 0.109375
    assert sign_test(5, 5) == 1.0
    assert sign_test(0, 0) == 1.0
    assert pairs_needed() == 6  # 5 pairs can give p = 0.0625 at best


# ---------------------------------------------------------------- compare, paired, flips


Row = tuple[str, str, int, float, str | None]  # arm, bench, trial, coverage, verdict


def _runs(rows: Sequence[Row]) -> pl.DataFrame:
    """(arm, bench, trial, coverage, verdict) rows as a runs frame."""
    return pl.DataFrame(
        {
            "arm": [r[0] for r in rows],
            "executor": ["cli"] * len(rows),
            "bench": [r[1] for r in rows],
            "trial": [r[2] for r in rows],
            "status": ["ok"] * len(rows),
            "sites_total": [10] * len(rows),
            "sites_covered": [round(r[3] * 10) for r in rows],
            "sites_matched": [round(r[3] * 10) for r in rows],
            "sites_unrelated": [0] * len(rows),
            "cost_usd": [0.1] * len(rows),
            "wall_s": [1.0] * len(rows),
            "test_verdict": [r[4] for r in rows],
            "test_status": ["ok"] * len(rows),
        }
    )


def test_compare_groups_means_and_intervals() -> None:
    runs = _runs(
        [("a", "b1", t, 0.1 * t, "pass") for t in range(1, 7)] + [("b", "b1", 1, 0.5, "fail")]
    )
    result = compare(runs, by=["arm", "executor"], metrics=["coverage", "pass"])
    a, b = result.frame.sort("arm").to_dicts()
    assert (a["runs"], a["few_runs"], a["coverage_mean"]) == (6, False, pytest.approx(0.35))
    assert a["coverage_low"] < 0.35 < a["coverage_high"]
    assert (b["runs"], b["few_runs"], b["coverage_low"]) == (1, True, None)  # no interval
    markdown = result.to_markdown()
    low, high = 100 * a["coverage_low"], 100 * a["coverage_high"]
    assert f"| a | cli | 6 | 35.0% [{low:.1f}, {high:.1f}] |" in markdown  # a share, in percent
    assert "| b | cli | 1 (few) | 50.0% | 0.0% [0.0, 79.3] |" in markdown  # Wilson, even at 1
    assert "(few): fewer than 6 runs" in markdown  # the rule paired uses for pairs
    with pytest.raises(UsageError, match="no metric 'speed'"):
        compare(runs, metrics=["speed"])


def test_a_rate_of_5_of_5_has_an_interval_below_100_percent() -> None:
    runs = _runs([("a", "b1", t, 1.0, "pass") for t in range(1, 6)])
    [row] = compare(runs, metrics=["pass"]).frame.to_dicts()
    assert row["pass_mean"] == 1.0 and row["pass_high"] == 1.0
    assert row["pass_low"] == pytest.approx(0.5655, abs=1e-4)  # Wilson; never [100%, 100%]
    none = _runs([("a", "b1", t, 1.0, "fail") for t in range(1, 6)])
    [row] = compare(none, metrics=["pass"]).frame.to_dicts()
    assert (row["pass_low"], round(row["pass_high"], 4)) == (0.0, 0.4345)


def test_compare_takes_any_numeric_column_and_sums() -> None:
    runs = _runs([("a", "b1", t, 0.5, "pass") for t in range(1, 4)])
    result = compare(runs, metrics=["trial", "cost"], sums=True)
    [row] = result.frame.to_dicts()
    assert (row["trial_mean"], row["trial_sum"]) == (2.0, 6.0)
    assert "| trial sum |" in result.to_markdown().splitlines()[0] + "|"


def test_a_nan_given_is_read_as_missing_and_zeros_and_ones_are_resampled_as_such() -> None:
    """A frame's NaN (no stored run holds one) is a missing value, not a mean of NaN;
    a metric whose values are all 0 or 1 gets a binomial interval, as numpy's does."""
    runs = _runs([("a", "b1", t, 0.5, "pass") for t in range(1, 5)]).with_columns(
        wall_s=pl.Series([1.0, float("nan"), 3.0, 1.0]),
        cost_usd=pl.Series([0.0, 1.0, 1.0, 0.0]),
    )
    [row] = compare(runs, metrics=["wall", "cost"], sums=True).frame.to_dicts()
    assert (row["wall_n"], row["wall_mean"], row["wall_sum"]) == (3, 5 / 3, 5.0)
    expected = bootstrap_mean(np.array([0.0, 1.0, 1.0, 0.0]))
    assert expected is not None and expected[2] == "bootstrap"
    assert (row["cost_low"], row["cost_high"]) == pytest.approx(expected[:2])


def test_compare_agrees_with_plain_numpy_whatever_the_order_of_the_runs() -> None:
    """Every group's mean, sum, count and interval, against numpy over each group's
    own values: a rate's Wilson interval, a bootstrap of 2 to 1,000 values (sorted
    first, so the order the store holds the runs in does not matter), the normal
    limit past that, and a group of 1,500 runs of which only 600 report a cost."""
    rng = np.random.default_rng(3)
    sizes = {"tiny": 1, "small": 40, "large": 1_500}
    rows = [
        (arm, f"b{i}", i, float(rng.random()), "pass" if rng.random() < 0.7 else "fail")
        for arm, n in sizes.items()
        for i in range(n)
    ]
    runs = _runs(rows).with_columns(
        cost_usd=pl.Series(rng.gamma(2.0, 0.4, len(rows))),
        wall_s=pl.Series(rng.gamma(3.0, 60.0, len(rows))),
    )
    runs = runs.with_columns(  # only 600 of the large group's runs report a cost
        cost_usd=pl.when((pl.col("arm") == "large") & (pl.col("trial") >= 600))
        .then(None)
        .otherwise(pl.col("cost_usd"))
    )
    metrics = ["coverage", "cost", "wall", "pass"]
    result = compare(runs, metrics=metrics, sums=True).frame
    shuffled = compare(runs.sample(fraction=1.0, shuffle=True, seed=5), metrics=metrics).frame
    for name in ("coverage_low", "cost_low", "wall_high", "pass_low"):
        mine, theirs = result[name].fill_null(-1.0), shuffled[name].fill_null(-1.0)
        assert theirs.to_list() == pytest.approx(mine.to_list(), rel=1e-12)
    column = {"coverage": "sites_covered", "cost": "cost_usd", "wall": "wall_s"}
    for row in result.to_dicts():
        group = runs.filter(pl.col("arm") == row["arm"])
        for metric, source in column.items():
            values = group[source].drop_nulls().to_numpy().astype(float)
            values = values / 10 if metric == "coverage" else values
            assert row[f"{metric}_n"] == len(values)
            assert row[f"{metric}_mean"] == pytest.approx(values.mean())
            assert row[f"{metric}_sum"] == pytest.approx(values.sum())
            expected = bootstrap_mean(np.sort(values))
            got = (row[f"{metric}_low"], row[f"{metric}_high"])
            assert (
                got == (pytest.approx(expected[0]), pytest.approx(expected[1]))
                if expected
                else got == (None, None)
            )
        passes = int((group["test_verdict"] == "pass").sum())
        assert (row["pass_low"], row["pass_high"]) == wilson(passes, group.height)
    large = result.filter(pl.col("arm") == "large").row(0, named=True)
    assert large["cost_n"] == 600 and large["wall_n"] == 1_500  # bootstrap, then normal


def test_paired_names_its_unit_and_what_it_averaged_over() -> None:
    rows = [("new", "b1", t, 0.9, "pass") for t in (1, 2)]
    rows += [("old", "b1", t, 0.3, "fail") for t in (1, 2)]
    frame = _runs(rows)
    two = pl.concat([frame, frame.with_columns(pl.lit("sdk").alias("executor"))])
    result = paired(two, "new", "old")
    assert result.averaged == ("executor",)
    assert result.verdict.endswith("; averaged over executor inside each unit")
    table = result._repr_markdown_()
    assert "| pairs (bench, trial) | 2 |" in table
    assert "| averaged inside a unit | executor |" in table
    assert paired(two, "new", "old", on=("bench", "trial", "executor")).averaged == ()


def test_compare_and_evidence_of_no_runs_are_an_error_not_an_empty_table() -> None:
    with pytest.raises(UsageError, match="compare: no runs to compare: the selection is empty"):
        compare([])
    with pytest.raises(UsageError, match="no runs to compare: the selection is empty"):
        compare(_runs([]))
    stopped = _runs([("a", "b1", 1, 0.5, "pass")]).with_columns(status=pl.lit("interrupted"))
    with pytest.raises(UsageError, match="no runs to compare: the 1 run given did not finish"):
        compare(stopped)
    with pytest.raises(UsageError, match="evidence: no runs to put in the table"):
        benchkit.evidence([])


def test_paired_with_an_arm_no_run_has_is_an_error_not_a_verdict() -> None:
    rows = [("new", "b1", t, 0.9, "pass") for t in (1, 2)]
    rows += [("old", "b1", t, 0.3, "fail") for t in (1, 2)]
    with pytest.raises(UsageError, match="arm: no run of 'nosuch' to pair"):
        paired(_runs(rows), "new", "nosuch")
    with pytest.raises(UsageError, match="arm: no run of 'nosuch' to pair"):
        flips(_runs(rows), "nosuch", "old")


def test_paired_is_inconclusive_at_3_runs_per_arm() -> None:
    rows = [("new", "b1", t, 0.9, "pass") for t in (1, 2, 3)]
    rows += [("old", "b1", t, 0.3, "fail") for t in (1, 2, 3)]
    result = paired(_runs(rows), "new", "old")
    assert (result.pairs, result.wins, result.losses) == (3, 3, 0)
    assert result.p_value == 0.25
    assert result.verdict == (
        "inconclusive: 3 pairs cannot reach p < 0.05 at all; at least 6 are needed"
    )


def test_paired_with_enough_pairs() -> None:
    rows = []
    for bench in ("b1", "b2", "b3", "b4"):
        for trial in (1, 2):
            rows.append(("new", bench, trial, 0.8, "pass"))
            rows.append(("old", bench, trial, 0.4, "fail" if trial == 1 else "pass"))
    result = paired(_runs(rows), "new", "old")
    assert result.pairs == 8
    assert result.mean_difference == pytest.approx(0.4)
    assert (result.wins, result.losses) == (4, 0)
    assert result.verdict == (
        "new higher on coverage; pass/fail inconclusive: 4 pairs differ, at least 6 are needed"
    )


def test_flips_are_the_benches_whose_verdict_changed() -> None:
    rows: list[Row] = [
        ("new", "b1", 1, 0.9, "pass"),
        ("old", "b1", 1, 0.9, "pass"),
        ("new", "b2", 1, 0.9, "pass"),
        ("old", "b2", 1, 0.2, "fail"),
        ("new", "b3", 1, 0.1, "fail"),
        ("old", "b3", 1, 0.9, "flaky-pass"),
    ]
    assert flips(_runs(rows), "new", "old").rows() == [
        ("b2", "pass", "fail"),
        ("b3", "fail", "pass"),
    ]
    unjudged = [("new", "b4", 1, 0.9, None), ("old", "b4", 1, 0.9, "pass")]  # tests never ran
    assert flips(_runs(rows + unjudged), "new", "old").rows() == [
        ("b2", "pass", "fail"),
        ("b3", "fail", "pass"),
    ]


def test_paired_averages_over_no_factor_of_runs_it_left_out() -> None:
    rows = [("new", "b1", t, 0.9, "pass") for t in (1, 2)]
    rows += [("old", "b1", t, 0.3, "fail") for t in (1, 2)]
    frame = _runs(rows)
    stopped = frame.with_columns(executor=pl.lit("sdk"), status=pl.lit("interrupted"))
    assert paired(pl.concat([frame, stopped]), "new", "old").averaged == ()


# ---------------------------------------------------------------- evidence cells


@pytest.mark.parametrize(
    ("status", "count", "check", "cell"),
    [
        ("ok", 0, "lint", "ok"),
        ("fail", 10, "typecheck", "fail (10 errors)"),
        ("fail", 1, "lint", "fail (1 error)"),
        ("fail", 1, "test", "fail (1 fail)"),
        ("timeout", None, "test", "timeout"),
        (None, None, "build", "-"),
        ("fail", None, "build", "fail"),
    ],
)
def test_check_cells(status: str | None, count: int | None, check: str, cell: str) -> None:
    assert check_cell(status, count, check) == cell


def test_sessions_and_coverage_cells() -> None:
    row = {"sessions": 3, "sessions_accepted": 2, "sessions_rejected": 1, "feedback_rounds": 1}
    assert sessions_cell(row) == "3: 2 accepted, 1 rejected; 1 feedback round"
    assert sessions_cell({"sessions": None}) == "-"
    assert sessions_cell({"sessions": 1, "sessions_accepted": 1, "sessions_rejected": 0}) == (
        "1: 1 accepted"
    )
    assert sessions_cell({"sessions": 2, "sessions_accepted": 0, "sessions_rejected": 0}) == (
        "2: 2 not judged"  # neither accepted nor rejected
    )
    assert sessions_cell({"sessions": 2, "sessions_accepted": 0}) == "2: 0 accepted"
    stopped = {"sessions": 4, "sessions_accepted": 0, "sessions_rejected": 3, "over_budget": True}
    assert sessions_cell(stopped) == "4: 3 rejected, 1 stopped at the budget"
    many = {"sessions": 5, "sessions_accepted": 1, "sessions_rejected": 1, "over_budget": True}
    assert sessions_cell(many) == "5: 1 accepted, 1 rejected, 1 stopped at the budget, 2 not judged"
    told = {**stopped, "session_reasons": "3 rejected on tests, 1 stopped at the budget"}
    assert sessions_cell(told) == "4: 3 rejected on tests, 1 stopped at the budget"
    cov = {
        "sites_total": 51,
        "sites_covered": 10,
        "sites_unrelated": 0,
        "test_verdict": "pass",
        "regressions": 0,
    }
    assert coverage_cell(cov) == "10/51, 0 unrelated, no regressions"
    assert coverage_cell({**cov, "regressions": 2}) == "10/51, 0 unrelated, 2 regressions"
    assert coverage_cell({**cov, "regressions": 1}) == "10/51, 0 unrelated, 1 regression"
    unknown = {**cov, "sites_unrelated": None, "regressions": None}
    assert coverage_cell(unknown) == "10/51, - unrelated"  # unknown is not 0
    assert coverage_cell({**cov, "test_verdict": "error"}) == "10/51, 0 unrelated"
    assert coverage_cell({"sites_total": None, "regressions": 3}) == "-, 3 regressions"
    assert coverage_cell({"sites_total": None}) == "-"
    assert gate_cell(cov) == "pass"
    assert gate_cell({**cov, "test_verdict": None}) == "-"
    error = {"test_verdict": "error", "regressions": 0, "test_reasons": "the tests did not run"}
    assert gate_cell(error) == "error (the tests did not run)"


def test_the_pilot_table_marks_simulated_and_imported_runs_and_a_budget_stop() -> None:
    row = {"arm": "tool", "executor": "cli", "model": "small", "origin": "simulated"}
    assert label_cell(row, "after") == "after (simulated)"
    assert label_cell({**row, "origin": "pilot"}, "after") == "after"
    stopped = {**row, "origin": "pilot", "status": "interrupted", "failure_kind": "interrupted"}
    assert label_cell(stopped, "after") == "after (interrupted)"
    failed = {**row, "origin": "imported", "status": "failed", "failure_kind": "patch"}
    assert label_cell(failed, "after") == "after (imported, failed: patch)"
    assert label_cell({**row, "status": "ok"}, "after") == "after (simulated)"
    assert arm_cell(row) == "tool (cli, small)"
    assert arm_cell({**row, "model": ""}) == "tool (cli)"
    assert budget_cell({"cost_usd": 0.5, "over_budget": True}) == "$0.50, over budget"
    capped = {"cost_usd": 1.02, "over_budget": True, "max_cost": 1.0}
    assert budget_cell(capped) == "$1.02 on a $1 cap, over budget"
    assert budget_cell({"cost_usd": 0.2, "max_cost": 0.25}) == "$0.20 on a $0.25 cap"
    assert budget_cell({"cost_usd": 0.0042}) == "$0.0042"  # below a cent: more digits
    assert budget_cell({"cost_usd": 0.0}) == "$0.00"
    assert budget_cell({"cost_usd": None, "over_budget": None}) == "-"


def test_markdown_cells_escape_pipes() -> None:
    assert markdown_table(["a"], [["x | y"]]).splitlines()[-1] == "| x \\| y |"


# ---------------------------------------------------------------- the store over time


def test_a_version_1_store_loads_through_the_upgrade() -> None:
    store = ROOT / "tests" / "fixtures" / "store-v1"
    runs = benchkit.runs(store)
    assert runs["schema_version"].to_list() == [SCHEMA_VERSION] * 2
    assert runs["origin"].to_list() == ["pilot", "pilot"]
    assert runs["cost_source"].to_list() == ["missing", "missing"]  # never reported in v1
    assert runs["flake_reruns"].to_list() == [1, 1]
    assert runs["cost_usd"].to_list() == [None, None]
    assert runs["warnings"].to_list() == [[], []]  # version 4: none kept before
    assert runs["sandbox"].to_list() == [None, None]  # unknown, not "none"
    assert runs["launcher"].to_list() == [None, None]
    assert runs.select("arm", "sites_covered").rows() == [("human", 15), ("replay:agent-a", 7)]
    assert benchkit.table("sites", store).height == 30
    compare(runs)  # the analysis runs on old records as on new


def test_filters_apply_to_runs_and_their_tables(tmp_path: Path) -> None:
    store = ROOT / "tests" / "fixtures" / "store-v1"
    assert benchkit.runs(store, arm="human").height == 1
    assert benchkit.runs(store, arm=["human", "replay:agent-a"], bench="demo").height == 2
    assert benchkit.runs(store, since=date(2099, 1, 1)).height == 0
    assert benchkit.runs(store, until=datetime(2099, 1, 1, tzinfo=UTC)).height == 2
    assert benchkit.runs(store, since="2099-01-01").height == 0  # ISO text, as a user types it
    assert benchkit.runs(store, until="2099-01-01T00:00:00+00:00").height == 2
    with pytest.raises(UsageError, match="since: not a date or an ISO date and time: 'yesterday'"):
        benchkit.runs(store, since="yesterday")
    assert benchkit.table("sites", store, arm="human").height == 15
    lazy = benchkit.scan("checks", store, arm="replay:agent-a")
    assert isinstance(lazy, pl.LazyFrame)
    assert lazy.collect()["run_id"].n_unique() == 1
    assert isinstance(benchkit.runs(store).to_pandas().shape, tuple)


# ---------------------------------------------------------------- outside records

CSV = """\
bench,arm,executor,cost_usd,wall_s,sites_total,sites_covered,sites_unrelated,test_status,\
test_count,ci_status,flaky_files,started_at
demo,published-tool,cli,0.42,310.5,15,11,2,fail,1,ok,tests/a.py;tests/b.py,2026-10-01T12:00:00Z
demo,published-tool,cli,,290,15,9,0,ok,0,,,
"""


def test_import_runs_recorded_elsewhere(tmp_path: Path) -> None:
    path = tmp_path / "published.csv"
    path.write_text(CSV)
    ids = benchkit.import_runs(path, tmp_path / "store")
    assert len(ids) == 2
    runs = benchkit.runs(tmp_path / "store").sort("run_id")
    assert runs["origin"].to_list() == ["imported", "imported"]
    first = runs.row(0, named=True)
    assert (first["cost_usd"], first["cost_source"], first["ci_status"]) == (0.42, "reported", "ok")
    assert first["flaky_files"] == ["tests/a.py", "tests/b.py"]
    assert first["human_sha"] is None  # what the file does not have stays null
    assert runs.row(1, named=True)["cost_source"] == "missing"
    benchkit.import_runs(path, tmp_path / "store")  # again: replaced, not doubled
    assert benchkit.runs(tmp_path / "store").height == 2


SEED_TABLE = [  # the seed's two-row pilot table, column for column
    "| run | run id | bench | base | arm (executor, model) | install | typecheck | lint | test "
    "| build | gate | flaky files | sessions | cost | wall | CI | coverage vs human |",
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- "
    "| --- | --- |",
    "| this PR (imported) | ID-1 | dms-saas | - | this PR (sdk) | ok | ok | ok | ok | ok | - "
    "| none | 1: 1 accepted; 0 feedback rounds | $0.27 on a $1 cap | 234 s "
    "| 1 pass 0 fail (fork PR) | 10/51, 0 unrelated, no regressions |",
    "| #237 pilot (imported) | ID-2 | dms-saas | - | #237 pilot (sdk) | ok | fail (10 errors) "
    "| ok | fail (1 fail) | fail | - | none "
    "| 4: 3 rejected, 1 stopped at the budget; 0 feedback rounds "
    "| $1.02 on a $1 cap, over budget | 612 s | fail at typecheck | 0/51, - unrelated |",
]


def test_the_seed_pilot_table_imported_as_it_is_renders_its_figures(tmp_path: Path) -> None:
    seed = ROOT / "tests" / "fixtures" / "tables" / "seed_pilot.csv"
    before = seed.read_bytes()
    ids = benchkit.import_runs(
        seed,
        tmp_path,
        consts={"bench": "dms-saas", "max_cost": "1"},
        mapping={"label": "arm", "stopped_by_budget": "over_budget"},
    )
    assert seed.read_bytes() == before  # no edit of the file
    assert ids.notes == ("ci: the text kept as `ci`, read as ci_status: ok 1, fail 1",)
    runs = benchkit.runs(tmp_path)
    assert runs.sort("run_id")["ci_status"].to_list() == ["ok", "fail"]
    text = str(benchkit.evidence(sorted(ids), store=tmp_path))
    stem = sorted(ids)[0].removesuffix("-1")
    assert text.replace(stem, "ID").splitlines() == SEED_TABLE


def test_an_outcome_column_says_which_imported_runs_did_not_succeed(tmp_path: Path) -> None:
    path = tmp_path / "published.csv"
    path.write_text(
        "instance,verified,cost\n"
        "a-1,yes,0.10\na-2,no: service error,0.02\na-3,FAILED (timeout),0.30\na-4,partly,0.2\n"
    )
    ids = benchkit.import_runs(
        path,
        tmp_path / "store",
        mapping={"verified": "outcome", "instance": "bench", "cost": "cost_usd"},
        consts={"arm": "agent"},
    )
    assert ids.notes == (
        "outcome: 2 of 4 runs did not succeed, status failed (kind outcome): an outcome whose "
        "first word is no, not, false, fail(ed, ure), error, unresolved, crash(ed) or timeout "
        "says the run did not succeed; 1 outcome read as neither: status ok",
    )
    runs = benchkit.runs(tmp_path / "store").sort("bench")
    assert runs["outcome"].to_list() == ["yes", "no: service error", "FAILED (timeout)", "partly"]
    assert runs["status"].to_list() == ["ok", "failed", "failed", "ok"]
    assert runs["failure_kind"].to_list() == [None, "outcome", "outcome", None]
    assert runs["failure_detail"][1] == "the table's outcome: no: service error"
    kinds = tmp_path / "kinds.csv"  # a failure kind of the file's own is kept
    kinds.write_text("bench,arm,outcome,failure_kind\nb,x,no: service error,service\nc,x,yes,\n")
    assert [(r["status"], r["failure_kind"]) for r in read_csv(kinds)] == [
        ("failed", "service"),
        ("ok", None),
    ]
    given = tmp_path / "given.csv"  # a status of the file's own is the file's word ...
    given.write_text(
        "bench,arm,status,outcome\nb,x,ok,no: service error\nc,x,,Timeout\n"
        "d,x,,nothing broke\ne,x,,errorless\n"  # ... an empty cell gives none
    )
    rows = read_csv(given)
    assert [(r["status"], r["failure_kind"]) for r in rows] == [
        ("ok", None),
        ("failed", "outcome"),
        ("ok", None),  # a first word, not a prefix: nothing, errorless
        ("ok", None),
    ]


def test_a_const_names_a_column_the_file_lacks(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("arm,cost_usd\nx,0.1\n")
    (row,) = read_csv(path, consts={"bench": "dms-saas", "trial": "2"})
    assert (row["bench"], row["trial"]) == ("dms-saas", 2)  # cast as the column's type
    with pytest.raises(ImportFileError, match="--const bench: empty: give a value"):
        read_csv(path, consts={"bench": ""})  # as an empty cell of a required column is
    with pytest.raises(ImportFileError, match="arm: given by the file and by --const"):
        read_csv(path, consts={"bench": "b", "arm": "y"})
    with pytest.raises(ImportFileError, match=r"t\.csv: --const trial: not a Int32: 'two'$"):
        read_csv(path, consts={"bench": "b", "trial": "two"})  # once, not once a row
    with pytest.raises(ImportFileError, match=r"--const trial: less than 1: 0$"):
        read_csv(path, consts={"bench": "b", "trial": "0"})
    with pytest.raises(ImportFileError, match="--const colour: not a runs column"):
        read_csv(path, consts={"bench": "b", "colour": "red"})
    done = benchkit_in_process(
        "import", str(path), "--const", "bench", "--store", str(tmp_path / "s")
    )
    assert done.returncode == 2 and "--const: takes NAME=VALUE, not 'bench'" in done.stderr


@pytest.mark.parametrize(
    ("text", "field", "message"),
    [
        ("bench,arm,colour\ndemo,x,red\n", "colour", "unknown column"),
        ("bench,cost_usd\ndemo,1\n", "arm", "missing column"),
        ("bench,arm,cost_usd\ndemo,x,0.1\ndemo,y,cheap\n", "row 3, cost_usd", "not a Float64"),
        ("bench,arm,over_budget\ndemo,x,maybe\n", "row 2, over_budget", "not true or false"),
        ("bench,arm\ndemo,\n", "row 2, arm", "empty"),
        ("bench,arm,origin\ndemo,x,pilot\n", "origin", "set by import"),
        ("bench,arm,ci_count\ndemo,x,3\n", "ci_count", "unknown column"),
        ("bench,arm,wall_s\ndemo,x,1\ndemo,x,nan\n", "row 3, wall_s", "not a finite number"),
        ("bench,arm,wall_s\ndemo,x,inf\n", "row 2, wall_s", "not a finite number"),
        ("bench,arm,wall_s\ndemo,x,-2.5\n", "row 2, wall_s", "negative: -2.5"),
        ("bench,arm,cost_usd\ndemo,x,-1\n", "row 2, cost_usd", "negative: -1.0"),
        ("bench,arm,cost_usd\ndemo,x,1e300\n", "row 2, cost_usd", "more than 1,000,000 USD"),
        ("bench,arm,trial\ndemo,x,0\n", "row 2, trial", "less than 1: 0"),
        ("bench,arm,sessions\ndemo,x,-3\n", "row 2, sessions", "negative: -3"),
        ("bench,arm,files_recall\ndemo,x,1.5\n", "row 2, files_recall", "not between 0 and 1"),
        ("bench,arm,status\ndemo,x,ok\ndemo,x,great\n", "row 3, status", "not one of ok, "),
        ("bench,arm,status\ndemo,x,running\n", "row 2, status", "not one of ok, "),
        ("bench,arm,test_status\ndemo,x,passed\n", "row 2, test_status", "not one of ok, fail"),
        ("bench,arm,started_at\ndemo,x,yesterday\n", "row 2, started_at", "not a date"),
        ("bench,arm,run_id\ndemo,x,r1\ndemo,y,r1\n", "row 3, run_id", "row 2 has it too"),
        ("bench,arm,test_verdict\ndemo,x,PASSED\n", "row 2, test_verdict", "not one of pass, "),
        ("bench,arm,launcher\ndemo,x,cloud\n", "row 2, launcher", "not one of serial, "),
        ("bench,arm,ci_status\ndemo,x,green\n", "row 2, ci_status", "not one of ok, fail"),
        ("bench,arm,my check_status\ndemo,x,ok\n", "my check_status", "unknown column"),
        ("bench,arm,wall_s\ndemo,a,1\ndemo,b,2,3\n", "row 3", "4 fields, where the header has 3"),
        ("bench,arm,cost_usd\ndemo,a\n", "row 2", "2 fields, where the header has 3"),
        ("bench,arm,arm\ndemo,a,b\n", "arm", "a column given twice in the header"),
        ("bench,arm\n", "", "no runs: the file has a header and no rows"),
    ],
)
def test_a_bad_csv_names_the_row_and_column(
    tmp_path: Path, text: str, field: str, message: str
) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(ImportFileError) as caught:
        read_csv(path)
    assert str(caught.value).startswith(f"{path}: {field}: " if field else f"{path}: ")
    assert message in str(caught.value)


def test_a_folder_to_import_is_no_csv_file(tmp_path: Path) -> None:
    with pytest.raises(ImportFileError, match=r": a folder, not a CSV file$"):
        read_csv(tmp_path)


PUBLISHED = """tool,model,task,attempts,sites,seconds,spend_usd,notes
upgrader,small,t1,2,3,10.25,0.013,a
upgrader,small,t2,1,5,11.50,0.021,
upgrader,small,t3,3,2,9.75,0.008,b
upgrader,large,t1,1,6,20.00,0.120,
upgrader,large,t2,2,7,18.40,0.095,c
"""
# The paper's aggregate of the table above, per model: attempts, sites, seconds, spend.
PUBLISHED_SUMS = {"large": ["3", "13", "38.4", "0.215"], "small": ["6", "10", "31.5", "0.042"]}
MAP = ["tool=arm", "task=bench", "attempts=sessions", "sites=sites_covered"]
MAP += ["seconds=wall_s", "spend_usd=cost_usd"]


def test_a_published_table_imported_with_a_map_gives_back_its_sums(tmp_path: Path) -> None:
    path = tmp_path / "published.csv"
    path.write_text(PUBLISHED)
    with pytest.raises(ImportFileError) as caught:  # every unknown column at once
        read_csv(path)
    assert str(caught.value).startswith(
        f"{path}: tool, task, attempts, sites, seconds, spend_usd, notes: 7 unknown columns"
    )
    argv = [sys.executable, "-m", "benchkit.cli", "import", str(path)]
    argv += [a for m in MAP for a in ("--map", m)] + ["--ignore", "notes"]
    env = {**os.environ, "BENCHKIT_STORE": str(tmp_path / "store")}
    done = subprocess.run(argv, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    argv = [sys.executable, "-m", "benchkit.cli", "compare", "--by", "model", "--sum"]
    argv += [a for m in ("sessions", "sites_covered", "wall", "cost") for a in ("--metric", m)]
    done = subprocess.run(argv, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    rows = [line.strip("|").split("|") for line in done.stdout.splitlines()[2:4]]
    sums = {cells[0].strip(): [c.strip() for c in cells[-4:]] for cells in rows}
    assert sums == PUBLISHED_SUMS
    with pytest.raises(ImportFileError, match="nope: no such column in the file"):
        read_csv(path, {"nope": "arm"})


@pytest.mark.parametrize(
    ("mapping", "ignore", "said"),
    [
        ({"seconds": "wall_s"}, (), "wall_s: more than one column"),
        ({"seconds": "bench"}, (), "bench: more than one column"),
        ({"seconds": "wall_s"}, ("seconds",), "seconds: mapped and ignored"),
        ({"seconds": ""}, (), "--map: SOURCE=COLUMN names no COLUMN"),
    ],
)
def test_a_map_that_clashes_is_one_line(
    tmp_path: Path, mapping: dict[str, str], ignore: tuple[str, ...], said: str
) -> None:
    path = tmp_path / "clash.csv"
    path.write_text("bench,arm,wall_s,seconds\nb,a,1,2\n")
    with pytest.raises(ImportFileError) as caught:
        read_csv(path, mapping, ignore)
    assert str(caught.value).startswith(f"{path}: {said}")


def test_a_bad_csv_names_every_bad_cell_at_once(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("bench,arm,wall_s,trial,run_id\ndemo,x,soon,0,r1\ndemo,x,1,1,r1\n")
    with pytest.raises(ImportFileError) as caught:
        read_csv(path)
    assert str(caught.value) == (
        f"{path}: row 2, wall_s: not a Float64: 'soon'; row 2, trial: less than 1: 0; "
        "row 3, run_id: row 2 has it too"
    )
    # a column with a cell not of its type still has its other cells checked, and a
    # column breaking one rule in a row and another in the next says both
    path.write_text("bench,arm,wall_s,cost_usd\ndemo,a,-1,nan\ndemo,b,abc,1e7\n")
    with pytest.raises(ImportFileError) as caught:
        read_csv(path)
    assert str(caught.value) == (
        f"{path}: row 2, wall_s: negative: -1.0; row 2, cost_usd: not a finite number: nan; "
        "row 3, wall_s: not a Float64: 'abc'; row 3, cost_usd: more than 1,000,000 USD: 10000000.0"
    )
    path.write_text("bench,arm,wall_s\n" + "demo,a,-1\n" * 12)
    with pytest.raises(ImportFileError) as caught:
        read_csv(path)
    assert str(caught.value).endswith("row 11, wall_s: negative: -1.0; and 2 more bad cells")


def test_an_imported_run_id_is_a_name_not_a_path(tmp_path: Path) -> None:
    path = tmp_path / "ids.csv"
    path.write_text("bench,arm,run_id\nb,a,../../x\n")
    with pytest.raises(ImportFileError, match="row 2, run_id: letters, digits"):
        read_csv(path)


def test_an_imported_run_id_the_store_holds_from_elsewhere_is_refused(tmp_path: Path) -> None:
    """Two files of one id: the second is refused, nothing written; the same file
    imported again replaces its own runs, as before."""
    first, second = tmp_path / "first.csv", tmp_path / "second.csv"
    first.write_text("bench,arm,run_id\nb,a,r1\n")
    second.write_text("bench,arm,run_id\nb,a,r2\nb,z,r1\n")
    store = tmp_path / "store"
    assert benchkit.import_runs(first, store) == ["r1"]
    assert benchkit.import_runs(first, store) == ["r1"]
    with pytest.raises(ImportFileError) as caught:
        benchkit.import_runs(second, store)
    assert str(caught.value) == (
        f"{second}: row 3, run_id: the store holds run r1 already "
        f"(in runs/{import_name(first)}.parquet)"
    )
    assert benchkit.runs(store)["run_id"].to_list() == ["r1"]


def test_a_corrected_file_imported_again_replaces_its_runs(tmp_path: Path) -> None:
    """An import is the file's, wherever its content goes: a corrected cost replaces
    the runs its first version gave, never adds to them; another file with the same
    content is another import."""
    path, store = tmp_path / "published.csv", tmp_path / "store"
    path.write_text("bench,arm,cost_usd\nb,tool-x,0.10\nb,tool-x,0.20\n")
    first = benchkit.import_runs(path, store)
    path.write_text("bench,arm,cost_usd\nb,tool-x,0.10\nb,tool-x,0.25\n")
    again = benchkit.import_runs(path, store)
    assert again == first  # the same ids: the same file's runs
    runs = benchkit.runs(store)
    assert sorted(runs["cost_usd"].to_list()) == [0.10, 0.25]
    copy = tmp_path / "copy" / "published.csv"
    copy.parent.mkdir()
    copy.write_bytes(path.read_bytes())
    assert benchkit.import_runs(copy, store) != first
    assert benchkit.runs(store).height == 4
    link = tmp_path / "link.csv"
    link.symlink_to(path)  # the same file by another name
    assert benchkit.import_runs(link, store) == first
    assert benchkit.runs(store).height == 4


def test_an_import_named_by_its_content_as_before_is_replaced_too(tmp_path: Path) -> None:
    path, store = tmp_path / "published.csv", tmp_path / "store"
    path.write_text("bench,arm,run_id\nb,tool-x,r1\n")
    benchkit.import_runs(path, store)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:12]
    mine = store / "runs" / f"{import_name(path)}.parquet"
    mine.rename(store / "runs" / f"imported-{digest}.parquet")  # as an earlier benchkit named it
    assert benchkit.import_runs(path, store) == ["r1"]  # its own id: not held from elsewhere
    assert sorted(f.name for f in (store / "runs").glob("*.parquet")) == [mine.name]


def test_cli_import_and_its_errors(tmp_path: Path) -> None:
    good, bad = tmp_path / "good.csv", tmp_path / "bad.csv"
    good.write_text(CSV)
    bad.write_text("bench,arm,cost_usd\ndemo,x,lots\n")
    env = {**os.environ, "BENCHKIT_STORE": str(tmp_path / "store")}
    done = subprocess.run(
        [sys.executable, "-m", "benchkit.cli", "import", str(good)],
        env=env,
        capture_output=True,
        text=True,
    )
    assert (done.returncode, done.stdout.strip()) == (0, f"imported 2 runs from {good}")
    again = subprocess.run(
        [sys.executable, "-m", "benchkit.cli", "import", str(good)],
        env=env,
        capture_output=True,
        text=True,
    )
    assert again.stdout.strip() == (
        f"imported 2 runs from {good}; they replace those of its earlier import"
    )
    done = subprocess.run(
        [sys.executable, "-m", "benchkit.cli", "import", str(bad)],
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2
    assert done.stderr.strip() == (f"benchkit: {bad}: row 2, cost_usd: not a Float64: 'lots'")


# ---------------------------------------------------------------- plots


@pytest.mark.parametrize("kind", ["coverage-cost", "wall", "checks", "flaky"])
def test_every_plot_is_a_figure(kind: str, tmp_path: Path) -> None:
    runs = _runs(
        [("a", "b1", t, 0.2 * t, "pass") for t in range(1, 4)] + [("b", "b1", 1, 0.5, "flaky-pass")]
    )
    figure = benchkit.plot(kind, runs)
    assert isinstance(figure, Figure)
    out = tmp_path / f"{kind}.png"
    figure.savefig(out)
    assert out.read_bytes()[:4] == b"\x89PNG"


def test_a_plot_shows_in_a_notebook_groups_by_any_column_and_says_when_empty() -> None:
    runs = _runs([("a", "b1", t, 0.2 * t, "pass") for t in range(1, 4)])
    runs = pl.concat([runs, runs.with_columns(pl.lit("sdk").alias("executor"))])
    figure = benchkit.plot("coverage-cost", runs)
    assert figure._repr_png_()[:4] == b"\x89PNG"  # what Jupyter shows, pyplot or not
    [legend] = figure.legends
    assert [t.get_text() for t in legend.get_texts()] == ["a / cli (3)", "a / sdk (3)"]
    marks = [str(h.get_paths()[0].vertices) for h in legend.legend_handles]  # type: ignore[union-attr]
    assert len(set(marks)) == 2  # a marker per group, not only a colour
    [legend] = benchkit.plot("coverage-cost", runs, by="bench").legends
    assert [t.get_text() for t in legend.get_texts()] == ["b1 (6)"]
    with pytest.raises(UsageError, match="none of the 6 runs reports a cost"):
        benchkit.plot("coverage-cost", runs.with_columns(pl.lit(None).alias("cost_usd")))
    with pytest.raises(UsageError, match="no runs to plot"):
        benchkit.plot("wall", runs.clear())
    with pytest.raises(UsageError, match="no column 'colour'"):
        benchkit.plot("wall", runs, by=["colour"])


@pytest.mark.parametrize("kind", ["coverage-cost", "wall", "checks", "flaky"])
def test_every_word_of_a_plot_is_at_least_9_points(kind: str) -> None:
    runs = _runs(
        [("a", "b1", t, 0.2 * t, "pass") for t in range(1, 4)] + [("b", "b1", 1, 0.5, "flaky-pass")]
    )
    figure = benchkit.plot(kind, runs)
    figure.canvas.draw()
    texts = [t for t in figure.findobj(Text) if t.get_text().strip() and t.get_visible()]
    small = {(t.get_text(), size) for t in texts if (size := float(t.get_fontsize())) < 9}
    assert texts and not small, small


def test_a_zero_rate_is_a_visible_bar_with_its_interval() -> None:
    runs = _runs([("a", "b1", t, 0.2 * t, "pass") for t in range(1, 4)])
    axes = benchkit.plot("flaky", runs).axes[0]
    [bars] = [c for c in axes.containers if isinstance(c, BarContainer)]
    [bar] = bars
    assert bar.get_height() == 0
    assert bar.get_linewidth() >= 2 and bar.get_edgecolor()[3] == 1  # a line at zero
    assert bars.errorbar is not None  # and its interval above it: 0 of 3 is [0, 56%]


def test_the_checks_plot_counts_the_tests_by_the_gate() -> None:
    runs = _runs([("human", "b1", t, 1.0, "pass") for t in range(1, 4)])
    runs = runs.with_columns(pl.lit("fail").alias("test_status"))  # a preexisting failure
    axes = benchkit.plot("checks", runs).axes[0]
    [tests] = [c for c in axes.containers if c.get_label() == "test (gate)"]
    assert [bar.get_height() for bar in tests] == [1.0]


def test_cli_plot_saves_a_png(tmp_path: Path) -> None:
    out = tmp_path / "wall.png"
    store = ROOT / "tests" / "fixtures" / "store-v1"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchkit.cli",
            "plot",
            "wall",
            "--out",
            str(out),
            "--store",
            str(store),
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert out.read_bytes()[:4] == b"\x89PNG"


def test_the_simulated_arm_says_so() -> None:
    assert "SIMULATED" in benchkit.list_arms()["simulated-agent"]
    assert (
        ROOT / "benchkit" / "bundled" / "benches" / "demo" / "patches" / "break-rounding.patch"
    ).exists()


def test_every_reason_of_the_gate_reaches_the_printed_line() -> None:
    row = {
        "test_verdict": "fail",
        "regression_files": ["tests/test_tax.py"],
        "first_failures": [{"file": "tests/test_tax.py", "test": "TestTax::test_x", "message": ""}],
        "test_reasons": "regression in tests/test_tax.py; jest's summary counts 3 failed, "
        "the report names 1",
    }
    assert gate_findings(row) == (
        "regression tests/test_tax.py (TestTax::test_x); "
        "jest's summary counts 3 failed, the report names 1"
    )


def test_the_flaky_rate_counts_runs_with_a_flaky_file_whatever_the_verdict() -> None:
    # seen to fail: a run whose gate failed on a regression, beside a file that was flaky,
    # counted 0 in the flaky rate, because only `flaky-pass` verdicts counted
    runs = _runs([("a", "b1", 1, 0.5, "fail"), ("a", "b1", 2, 0.5, "pass")]).with_columns(
        flaky_files=pl.Series([["tests/test_dates.py"], []], dtype=pl.List(pl.String))
    )
    (row,) = compare(runs, metrics=["flaky"]).frame.to_dicts()
    assert row["flaky_mean"] == 0.5
    unjudged = runs.with_columns(
        test_verdict=pl.lit(None, pl.String), flaky_files=pl.lit(None, pl.List(pl.String))
    )
    (row,) = compare(unjudged, metrics=["flaky"]).frame.to_dicts()
    assert row["flaky_mean"] is None  # the tests never ran: no rate, not 0


def test_a_long_regression_list_says_how_many_it_leaves_out() -> None:
    # seen on a real workspace (clack): 20 tests regressed, the line named the first 5
    # and nothing more, as if 5 had regressed
    first = [{"file": "t/log.test.ts", "test": f"log > case {n}", "message": ""} for n in range(5)]
    row = {
        "test_verdict": "fail",
        "regression_files": ["t/log.test.ts", "t/task.test.ts"],
        "regressions": 20,
        "first_failures": first,
        "test_reasons": "regression in t/log.test.ts, t/task.test.ts",
    }
    said = gate_findings(row)
    assert said.startswith("regression t/log.test.ts, t/task.test.ts (log > case 0, "), said
    assert said.endswith("log > case 4, and 15 more)"), said
    row["regressions"] = 5
    assert gate_findings(row).endswith("log > case 4)")


TABLE_ROWS = [
    {
        **{"run_id": "r1", "bench": "b", "arm": "human", "executor": "local", "model": None},
        **{"origin": "pilot", "run_set": "", "trial": 1, "status": "ok", "failure_kind": None},
        **{"lint_status": "fail", "lint_count": 2, "test_status": "ok", "test_count": 0},
        **{"test_verdict": "pass", "resolved": None, "tampered": ["tests/a.py=edited"]},
        **{"cost_usd": 0.5, "cost_source": "computed", "sites_covered": 3, "sites_matched": 2},
        **{"sites_total": 4, "sites_unrelated": 0, "files_recall": 0.5, "files_precision": None},
        "wall_s": 1.25,
    },
    {
        **{"run_id": "r22", "bench": "b", "arm": "replay:x", "executor": "local", "model": "m"},
        **{"origin": "pilot", "run_set": "s1", "trial": 12, "status": "failed"},
        **{"failure_kind": "patch", "lint_status": None, "lint_count": None},
        **{"test_status": "timeout", "test_count": None, "test_verdict": None, "resolved": None},
        **{"tampered": [], "cost_usd": None, "cost_source": None, "sites_covered": None},
        **{"sites_matched": None, "sites_total": 4, "sites_unrelated": None},
        **{"files_recall": None, "files_precision": None, "wall_s": None},
    },
]


def test_a_runs_table_made_a_column_at_a_time_reads_as_it_did_a_row_at_a_time() -> None:
    """The table of `benchkit runs`, each kind of cell (a plain value, a null, an empty
    name, a check's mark and count, a status with its kind, a cost, sites, a ratio):
    the text the row-at-a-time table made, byte for byte (seen before the change)."""
    assert table(TABLE_ROWS, every=True).splitlines() == [
        "run_id  bench  arm       executor  model  origin  run_set  trial  status          "
        "lint     test  gate  tampered  cost            covered  matched  unrelated  recall  "
        "precision  wall_s",
        "r1      b      human     local     -      pilot   -        1      ok              "
        "FAIL(2)  ok    pass  1         $0.50 computed  3/4      2/4      0          0.50    "
        "-          1.2",
        "r22     b      replay:x  local     m      pilot   s1       12     failed (patch)  "
        "-        TIME  -     -         -               -        -        -          -       "
        "-          -",
    ]
    assert table([], every=True) == (
        "run_id  bench  arm  executor  model  origin  run_set  trial  status  gate  cost  "
        "covered  matched  unrelated  recall  precision  wall_s"
    )


def test_a_frames_rows_made_a_column_at_a_time_are_its_dicts() -> None:
    """`as_rows`, on lists, structs in lists, nulls and an empty frame: `to_dicts`."""
    frame = pl.DataFrame(
        {
            "run_id": ["a", "b", None],
            "n": [1, None, 3],
            "files": [["x.py"], [], None],
            "stats": [[{"file": "x.py", "passes": 1}], None, []],
        }
    )
    assert as_rows(frame) == frame.to_dicts()
    assert as_rows(frame.clear()) == [] == frame.clear().to_dicts()
    assert as_rows(frame.select([])) == frame.select([]).to_dicts()  # no column: no key
