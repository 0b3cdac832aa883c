"""Run sets: a matrix runs each unit once, resumes what is missing, continues trials,
refuses a changed spec, retries what failed, and reruns a recorded pilot."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest

import benchkit
from benchkit.bench.experiment_file import experiment
from benchkit.errors import SetError, UsageError
from benchkit.records import PHASES
from benchkit.run.events import Event, Planned, Recorded, StageBegun
from benchkit.store.query import runs_frame
from benchkit.store.store import Store
from tests.conftest import TinyRepo
from tests.helpers import PATIENCE_S, benchkit_cli, benchkit_in_process

pytestmark = pytest.mark.slow  # real pilots, seconds a test: the file starts early

UNIT = ["bench", "arm", "executor", "model", "max_cost", "trial"]


def test_the_same_matrix_twice_adds_nothing_and_more_trials_continue(
    tiny: TinyRepo, tmp_path: Path
) -> None:
    store = tiny.seeded(tmp_path / "store")
    matrix = ("--bench", str(tiny.bench_dir), "--arm", "noop", "--arm", "human")
    first = benchkit_in_process(
        "pilot", *matrix, "--trials", "2", "--set", "s1", "--store", str(store)
    )
    assert first.returncode == 0, first.stderr
    again = benchkit_in_process(
        "pilot", *matrix, "--trials", "2", "--set", "s1", "--store", str(store)
    )
    assert again.returncode == 0, again.stderr
    assert "4 of the matrix's pilots recorded already; 0 to run" in again.stderr
    table = [line for line in again.stdout.splitlines() if line[:8].isdigit()]
    assert len(table) == 4  # the table shows the set's runs of the matrix
    more = benchkit_in_process(
        "pilot", *matrix[:4], "--trials", "3", "--set", "s1", "--store", str(store)
    )
    assert more.returncode == 0, more.stderr
    runs = benchkit.runs(store)
    assert runs.height == 5 and runs.select(UNIT).n_unique() == 5
    assert sorted(runs.filter(pl.col("arm") == "noop")["trial"]) == [1, 2, 3]
    assert set(runs["run_set"]) == {"s1"} and set(runs["attempt"]) == {1}
    other = benchkit.pilot(tiny.bench_dir, "noop", store=store, sandbox="none")
    assert [r.spec.run_set for r in other] == ["default"]  # another set: its own units


def test_a_changed_arm_file_under_the_same_set_is_refused(tiny: TinyRepo, tmp_path: Path) -> None:
    store = tiny.seeded(tmp_path / "store")
    arm = tmp_path / "tool.toml"
    arm.write_text('name = "tool"\ncommand = "echo one > one.txt"\n')
    args = ("pilot", "--bench", str(tiny.bench_dir), "--arm", str(arm), "--set", "s1")
    first = benchkit_in_process(*args, "--store", str(store), "--sandbox", "none")
    assert first.returncode == 0, first.stderr
    arm.write_text('name = "tool"\ncommand = "echo two > two.txt"\n')
    refused = benchkit_in_process(
        *args, "--trials", "2", "--store", str(store), "--sandbox", "none"
    )
    assert refused.returncode == 2
    [said] = refused.stderr.strip().splitlines()
    assert said.startswith("benchkit: set s1: tiny ") and "arm's file or vars changed" in said
    assert "--new-set" in said
    assert benchkit.runs(store).height == 1  # nothing was written
    with pytest.raises(SetError):
        benchkit.pilot(tiny.bench_dir, str(arm), run_set="s1", store=store, sandbox="none")
    fresh = benchkit_in_process(*args, "--new-set", "--store", str(store), "--sandbox", "none")
    assert fresh.returncode == 0, fresh.stderr
    assert sorted(benchkit.runs(store)["run_set"]) == ["s1", "s1-2"]


def test_a_set_whose_runs_left_the_arm_files_model_unrecorded_is_resumed_not_run_again(
    tiny: TinyRepo, tmp_path: Path
) -> None:
    """Runs recorded before the arm file's model was the run's (`model` empty): the
    same units now, with the model recorded, are held, not pilots to run again."""
    store = tiny.seeded(tmp_path / "store")
    arm = tmp_path / "tool.toml"
    arm.write_text('name = "tool"\nmodel = "m-1"\ncommand = "echo one > one.txt"\n')
    [run] = benchkit.pilot(tiny.bench_dir, str(arm), run_set="s1", store=store, sandbox="none")
    assert run.spec.model == "m-1"
    [file] = (store / "runs").glob("*.parquet")
    older = pl.read_parquet(file).with_columns(model=pl.lit(""))  # as an older benchkit wrote it
    older.write_parquet(file)
    again = benchkit.pilot(tiny.bench_dir, str(arm), run_set="s1", store=store, sandbox="none")
    assert again == []
    more = benchkit.pilot(
        tiny.bench_dir, str(arm), trials=2, run_set="s1", store=store, sandbox="none"
    )
    assert [(r.spec.trial, r.spec.model) for r in more] == [(2, "m-1")]
    # a retry of such a unit is recorded as its unit was: one latest attempt, not two
    runs = benchkit.runs(store)
    first = runs.filter(pl.col("trial") == 1)
    failed = first.with_columns(status=pl.lit("failed"), retryable=pl.lit(True))
    failed.select(pl.read_parquet(file).columns).write_parquet(file)
    retried = benchkit.pilot(
        tiny.bench_dir,
        str(arm),
        trials=2,
        run_set="s1",
        store=store,
        sandbox="none",
        retry_failed=True,
    )
    assert [(r.spec.trial, r.spec.model, r.spec.attempt) for r in retried] == [(1, "", 2)]
    every = benchkit.runs(store)  # every attempt; analysis takes the latest of each unit
    assert every.height == 3 and runs_frame(every).collect().height == 2


def test_a_changed_bench_file_is_refused_and_a_var_is_part_of_the_arm(
    tiny: TinyRepo, tmp_path: Path
) -> None:
    store = tiny.seeded(tmp_path / "store")
    arm = tmp_path / "tool.toml"
    arm.write_text('name = "tool"\ncommand = "echo {word} > w.txt"\n[vars]\nword = "a"\n')
    benchkit.pilot(tiny.bench_dir, str(arm), store=store, sandbox="none")
    with pytest.raises(SetError, match="arm's file or vars changed"):
        benchkit.pilot(tiny.bench_dir, str(arm), arm_vars={"word": "b"}, store=store)
    tiny.bench_file.write_text(tiny.bench_file.read_text() + "\n# a comment\n")
    with pytest.raises(SetError, match=r"the bench file .*bench.toml changed"):
        benchkit.pilot(tiny.bench_dir, str(arm), trials=2, store=store, sandbox="none")
    assert benchkit.runs(store).height == 1


def test_a_resumed_set_after_a_sigkill_runs_only_what_is_missing(
    tiny: TinyRepo, tmp_path: Path
) -> None:
    store = tiny.seeded(tmp_path / "store")
    marker = tmp_path / "marker"
    free = tmp_path / "free"  # once it exists, every pilot ends at once
    arm = tmp_path / "slow.toml"  # the first pilot ends at once; the others wait
    wait = f"if [ -e {marker} ]; then sleep 3611.{os.getpid()}; fi; touch {marker}"
    arm.write_text(f'name = "slow"\ntimeout = 3600\ncommand = "[ -e {free} ] || {{ {wait}; }}"\n')
    args = ["pilot", "--bench", str(tiny.bench_dir), "--arm", str(arm), "--trials", "4"]
    args += ["--set", "s1", "--jobs", "2", "--sandbox", "none", "--store", str(store)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "benchkit", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + PATIENCE_S
        while time.monotonic() < deadline:
            runs = benchkit.runs(store) if (store / "runs").is_dir() else None
            if runs is not None and (runs["status"] == "ok").sum() >= 1 and _sleeping():
                break
            time.sleep(0.2)
        assert _sleeping(), "the slow pilots did not start"
        proc.kill()
        proc.wait()
        deadline = time.monotonic() + PATIENCE_S  # the workers stop their arms, then record them
        killed = benchkit.runs(store)
        while "running" in killed["status"] and time.monotonic() < deadline:
            time.sleep(0.1)
            killed = benchkit.runs(store)
        assert not _sleeping()
        finished = killed.filter(pl.col("status") == "ok")["trial"].to_list()
        assert len(finished) >= 1
        free.touch()
        resumed = benchkit_cli(*args)
        assert resumed.returncode == 0, resumed.stderr
        runs = benchkit.runs(store)
        again = runs.filter(pl.col("attempt") > 1)
        ok = runs.filter(pl.col("status") == "ok")
        assert sorted(ok["trial"]) == [1, 2, 3, 4]  # each unit finished once
        assert not set(finished) & set(again["trial"])  # what had finished did not run again
        assert set(runs.filter(pl.col("attempt") == 1)["status"]) <= {"ok", "interrupted"}
        last = benchkit.compare(runs, by="arm")
        assert last.frame["runs"].to_list() == [4]  # analysis takes the latest attempts
    finally:
        for pid in _sleepers():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def _sleepers() -> list[int]:
    token = f"sleep 3611.{os.getpid()}"
    done = subprocess.run(["pgrep", "-f", token], capture_output=True, text=True)
    return [int(p) for p in done.stdout.split()]


def _sleeping() -> bool:
    return bool(_sleepers())


def test_retry_failed_runs_a_retryable_failure_again_under_its_trial(
    tiny: TinyRepo, tmp_path: Path
) -> None:
    store = tiny.seeded(tmp_path / "store")
    flag = tmp_path / "fail-once"
    flag.write_text("")
    arm = tmp_path / "flaky.toml"  # rate-limited the first time: worth a retry
    limited = f"rm {flag}; echo 429 Too Many Requests >&2; exit 1"
    arm.write_text(f'name = "flaky"\ncommand = "if [ -e {flag} ]; then {limited}; fi"\n')
    [failed] = benchkit.pilot(tiny.bench_dir, str(arm), store=store, sandbox="none")
    assert (failed.status, failed.retryable) == ("failed", True)
    assert benchkit.pilot(tiny.bench_dir, str(arm), store=store, sandbox="none") == []
    [retried] = benchkit.pilot(
        tiny.bench_dir, str(arm), store=store, sandbox="none", retry_failed=True
    )
    assert (retried.status, retried.spec.trial, retried.spec.attempt) == ("ok", 1, 2)
    runs = benchkit.runs(store)
    assert runs.height == 2  # the failed attempt stays recorded
    comparison = benchkit.compare(runs, by="arm", metrics=["coverage"])
    assert comparison.frame["runs"].to_list() == [1]  # analysis takes the latest


def test_rerun_runs_a_recorded_spec_again_as_a_new_run_naming_it(
    tiny: TinyRepo, tmp_path: Path
) -> None:
    store = tiny.seeded(tmp_path / "store")
    first, _ = benchkit.pilot(
        tiny.bench_dir, "human", store=store, sandbox="none", trials=2, checks=["test"]
    )
    # a prefix names it: the two trials may start in one second, so more than its time
    again = benchkit_in_process(
        "rerun", first.run_id[:-2], "--store", str(store), "--sandbox", "none"
    )
    assert again.returncode == 0, again.stderr
    runs = benchkit.runs(store)
    [row] = runs.filter(pl.col("rerun_of") == first.run_id).to_dicts()
    assert (row["run_set"], row["arm"], row["trial"], row["only_checks"]) == (
        "reruns",
        "human",
        1,
        ["test"],
    )
    assert row["sites_covered"] == first.sites_covered
    assert first.run_id in again.stdout and row["run_id"] in again.stdout  # side by side
    missing = benchkit_in_process("rerun", "nosuchrun", "--store", str(store))
    assert missing.returncode == 2 and "nosuchrun" in missing.stderr


def test_an_experiment_file_runs_its_matrix_in_its_set(tiny: TinyRepo, tmp_path: Path) -> None:
    folder = tmp_path / "exp"
    folder.mkdir()
    (folder / "experiment.toml").write_text(
        f'set = "e1"\nbench = ["{tiny.bench_dir}"]\narm = ["noop", "human"]\n'
        'trials = 2\nstore = "runs"\nsandbox = "none"\njobs = 2\n'
    )
    done = benchkit_cli("run", str(folder / "experiment.toml"), "--quiet")
    assert done.returncode == 0, done.stderr
    runs = benchkit.runs(folder / "runs")
    assert runs.height == 4 and set(runs["run_set"]) == {"e1"}
    assert set(runs["launcher"]) == {"processes"}
    assert benchkit_cli("run", str(folder / "experiment.toml"), "--quiet").returncode == 0
    assert benchkit.runs(folder / "runs").height == 4
    (folder / "bad.toml").write_text('set = "e1"\ntrials = "two"\n')
    bad = benchkit_in_process("run", str(folder / "bad.toml"))
    assert bad.returncode == 2
    assert (
        bad.stderr.strip()
        == f"benchkit: {folder / 'bad.toml'}: trials: Input should be a valid integer"
    )
    with pytest.raises(UsageError, match="launcher"):
        benchkit.pilot(tiny.bench_dir, "noop", launcher="threads")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "said"),
    [
        # every error of the file in its line, TOML's words (a list, never a tuple)
        (
            'bench = 3\narm = ["noop", 4]\ntrials = "3"\n',
            "bench: Input should be a valid list; arm.1: Input should be a valid string; "
            "trials: Input should be a valid integer",
        ),
        ('bench = "demo"\narm = "arms/nope.toml"\n', "arm: arms/nope.toml: no such file"),
        ('arm = ["noop", "replay:p/x.patch"]\n', "arm.1: p/x.patch: no such file"),
        # the kinds the registries have, named as the flags name them
        ('sandbox = "docker"\n', "sandbox: 'docker' is not one of auto, none, bwrap"),
        ('launcher = "threads"\n', "launcher: 'threads' is not one of serial, processes, ray"),
    ],
)
def test_a_bad_experiment_file_names_itself_and_every_field(
    tmp_path: Path, text: str, said: str
) -> None:
    path = tmp_path / "experiment.toml"
    path.write_text(text)
    done = benchkit_in_process("run", str(path), "--store", str(tmp_path / "runs"))
    assert done.returncode == 2
    assert done.stderr.strip().startswith(f"benchkit: {path}: {said}"), done.stderr
    assert not (tmp_path / "runs").exists()


def test_one_name_where_an_experiment_file_takes_a_list_is_a_list_of_one(tmp_path: Path) -> None:
    path = tmp_path / "experiment.toml"
    path.write_text('bench = "demo"\narm = "noop"\nmodel = "small"\nchecks = "test"\n')
    said = experiment(path)
    assert (said["bench"], said["arm"], said["model"], said["checks"]) == (
        ["demo"],
        ["noop"],
        ["small"],
        ["test"],
    )


STAGES = (*PHASES, "cleanup")  # a pilot's stages, in their order: cleanup after its record


def _beaten(store: Store, run_id: str, stage: str) -> bool:
    """Whether the run's heartbeat says this stage or a later one before its run ends
    (a stage is beaten by the heartbeat's thread, just after the pilot tells it)."""
    later = STAGES[STAGES.index(stage) :]
    deadline = time.monotonic() + PATIENCE_S
    while time.monotonic() < deadline:
        beat = store.beats().get(run_id)
        if beat is None:
            return False  # the run ended first
        if beat.stage in later:
            return True
        time.sleep(0.01)
    return False


def test_events_tell_the_plan_each_stage_and_each_run(tiny: TinyRepo, tmp_path: Path) -> None:
    told: list[Event] = []
    beating: list[bool] = []

    def tell(event: Event) -> None:  # a worker's heartbeat, read as its stage is told
        told.append(event)
        if isinstance(event, StageBegun) and event.stage == "verify":
            beating.append(_beaten(Store(tmp_path / "store"), event.run_id, "verify"))

    runs = benchkit.pilot(
        tiny.bench_dir,
        ["noop", "human"],
        store=tmp_path / "store",
        sandbox="none",
        jobs=2,
        events=tell,
    )
    assert any(beating)  # heartbeats while running
    planned = [e for e in told if isinstance(e, Planned)]
    assert [(p.pilots, p.recorded, p.jobs) for p in planned] == [(2, (), 2)]
    recorded = [e.run.run_id for e in told if isinstance(e, Recorded)]
    assert sorted(recorded) == sorted(r.run_id for r in runs)
    stages = [e for e in told if isinstance(e, StageBegun)]
    assert {s.stage for s in stages} >= {"prepare", "baseline", "execute", "score", "cleanup"}
    assert {s.worker.split(":")[1] for s in stages} == {str(r.owner.pid) for r in runs if r.owner}
