"""SWE-bench instances in, SWE-bench grades out, end to end: a real repository's task
instances (FAIL_TO_PASS / PASS_TO_PASS as JSON strings, a test patch the gold patch
needs) made benches by `benchkit swebench benches`; two models' predictions (gold,
empty, partial, and one that rewrites the held-out test) run as `prediction:FILE`
arms; `benchkit swebench report` writes SWE-bench's files; and the real `swebench`
package's grading, run on the same test logs, agrees with benchkit's."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import benchkit
from benchkit.bench.bench_file import load_bench
from benchkit.workspace.venv import uv
from tests.conftest import make_repo, sh_git
from tests.helpers import benchkit_cli, benchkit_in_process

pytestmark = pytest.mark.slow

BASE = {
    "widgets.py": (
        "def clamp(x, lo, hi):\n    return max(lo, x)\n\n\ndef double(x):\n    return 2 * x\n"
    ),
    "names.py": (
        'def greet(name):\n    return "hi " + name\n\n\ndef initials(name):\n    return name[0]\n'
    ),
    "tests/test_widgets.py": (
        "from widgets import clamp, double\n\n\ndef test_double():\n    assert double(2) == 4\n"
        "\n\ndef test_clamp_low():\n    assert clamp(-5, 0, 10) == 0\n"
    ),
    "tests/test_names.py": (
        "from names import greet, initials\n\n\n"
        'def test_greet():\n    assert greet("ada") == "hi ada"\n'
    ),
}
GOLD_1 = (
    'def clamp(x, lo, hi):\n    if lo > hi:\n        raise ValueError("lo > hi")\n'
    "    return max(lo, min(x, hi))\n"
)
PARTIAL_1 = "def clamp(x, lo, hi):\n    return max(lo, min(x, hi))\n"
TESTS_1 = (
    "\n\ndef test_clamp_high():\n    assert clamp(50, 0, 10) == 10\n"
    "\n\ndef test_clamp_bad_range():\n    import pytest\n\n    with pytest.raises(ValueError):\n"
    "        clamp(1, 10, 0)\n"
)
GOLD_2 = 'def initials(name):\n    return "".join(w[0].upper() for w in name.split())\n'
TESTS_2 = '\n\ndef test_initials():\n    assert initials("ada lovelace") == "AL"\n'
CHEAT_2 = "def test_initials():\n    pass\n"  # the held-out test, rewritten to pass

T1 = "tests/test_widgets.py"
T2 = "tests/test_names.py"
I1, I2 = "acme__widgets-1", "acme__widgets-2"


def diff_of(repo: Path, path: str, text: str, *, append: bool = False, old: str = "") -> str:
    """The diff of one edit of the repository's file, the file then reset."""
    file = repo / path
    before = file.read_text()
    file.write_text(before + text if append else before.replace(old, text))
    patch = sh_git(repo, "diff") + "\n"
    sh_git(repo, "checkout", "--quiet", "--", path)
    return patch


@dataclass(frozen=True)
class Case:
    folder: Path
    store: Path
    benches: list[Path]
    report: Path
    said: str  # what `swebench report` printed


@pytest.fixture(scope="module")
def case(tmp_path_factory: pytest.TempPathFactory) -> Case:
    folder = tmp_path_factory.mktemp("swebench")
    repo = folder / "widgets"
    base, _ = make_repo(repo, BASE, {"README": "x\n"}, "unused")
    clamp_old = "def clamp(x, lo, hi):\n    return max(lo, x)\n"
    initials_old = "def initials(name):\n    return name[0]\n"
    patches = {
        "gold1": diff_of(repo, "widgets.py", GOLD_1, old=clamp_old),
        "partial1": diff_of(repo, "widgets.py", PARTIAL_1, old=clamp_old),
        "tests1": diff_of(repo, T1, TESTS_1, append=True),
        "gold2": diff_of(repo, "names.py", GOLD_2, old=initials_old),
        "tests2": diff_of(repo, T2, TESTS_2, append=True),
        "cheat2": diff_of(repo, T2, CHEAT_2, append=True),
    }

    def instance(n: int, f2p: list[str], p2p: list[str]) -> dict[str, object]:
        return {
            "repo": "acme/widgets",
            "instance_id": f"acme__widgets-{n}",
            "base_commit": base,
            "patch": patches[f"gold{n}"],
            "test_patch": patches[f"tests{n}"],
            "problem_statement": f"issue {n}",
            "hints_text": "",
            "created_at": "2026-01-01T00:00:00Z",
            "version": "1.0",
            "FAIL_TO_PASS": json.dumps(f2p),
            "PASS_TO_PASS": json.dumps(p2p),
            "environment_setup_commit": base,
        }

    rows = [
        instance(
            1,
            [f"{T1}::test_clamp_high", f"{T1}::test_clamp_bad_range"],
            [f"{T1}::test_double", f"{T1}::test_clamp_low"],
        ),
        instance(2, [f"{T2}::test_initials"], [f"{T2}::test_greet"]),
    ]
    (folder / "instances.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    predictions = [
        (I1, "org/model-a", patches["gold1"]),
        (I2, "org/model-a", ""),
        (I1, "org/model-b", patches["partial1"]),
        (I2, "org/model-b", patches["cheat2"]),
    ]
    for model in ("model-a", "model-b"):
        mine = [p for p in predictions if p[1].endswith(model)]
        (folder / f"{model}.jsonl").write_text(
            "".join(
                json.dumps({"instance_id": i, "model_name_or_path": m, "model_patch": p}) + "\n"
                for i, m, p in mine
            )
        )
    (folder / "environments.toml").write_text(
        '["acme/widgets"."1.0"]\nkind = "venv"\npython = "3.11"\npackages = ["pytest==8.3.5"]\n'
    )
    made = benchkit_in_process(
        "swebench", "benches", str(folder / "instances.jsonl"),
        "--repo", f"acme/widgets={repo}",
        "--environments", str(folder / "environments.toml"),
        "--out", str(folder / "benches"),
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    benches = [folder / "benches" / I1, folder / "benches" / I2]
    store = folder / "store"
    arms = [f"prediction:{folder / 'model-a.jsonl'}", f"prediction:{folder / 'model-b.jsonl'}"]
    benchkit.pilot([str(b) for b in benches], arm=[*arms, "human"], store=store, run_set="s1")
    report = folder / "report"
    done = benchkit_in_process(
        "swebench", "report", "--set", "s1", "--out", str(report), store=store
    )
    assert done.returncode == 0, done.stderr
    return Case(folder=folder, store=store, benches=benches, report=report, said=done.stdout)


def summary(case: Case, model: str) -> dict[str, Any]:
    found: dict[str, Any] = json.loads((case.report / f"org__{model}.s1.json").read_text())
    return found


def test_an_instance_is_a_bench_whose_instruction_is_its_problem_statement(
    case: Case, tmp_path: Path
) -> None:
    """What an agent arm is told: the problem statement (and the hints, when asked)."""
    made = load_bench(case.benches[0] / "bench.toml")
    assert made.file.instruction == "issue 1"
    assert made.file.swebench is not None and made.file.swebench.instance_id == I1
    assert made.file.tests is not None and made.file.tests.test_patch == "test.patch"
    rows = [json.loads(line) for line in (case.folder / "instances.jsonl").read_text().splitlines()]
    rows[0]["hints_text"] = "look at hi"
    (tmp_path / "i.jsonl").write_text(json.dumps(rows[0]) + "\n")
    written = benchkit.swebench.benches(
        tmp_path / "i.jsonl",
        repos={"acme/widgets": str(case.folder / "widgets")},
        environments=case.folder / "environments.toml",
        out=tmp_path / "b",
        hints=True,
    )
    hinted = load_bench(written[0] / "bench.toml")
    assert hinted.file.instruction == "issue 1\n\nHints:\nlook at hi"


def test_each_models_run_summary_is_swebenchs(case: Case) -> None:
    a, b = summary(case, "model-a"), summary(case, "model-b")
    assert a["resolved_ids"] == [I1] and a["empty_patch_ids"] == [I2]
    assert (a["completed_ids"], a["error_ids"], a["schema_version"]) == ([I1], [], 2)
    assert (a["total_instances"], a["submitted_instances"], a["resolved_instances"]) == (2, 2, 1)
    assert (b["resolved_ids"], b["unresolved_ids"], b["empty_patch_ids"]) == ([], [I1, I2], [])
    assert "org__model-a: 1 of 2 resolved, 1 empty patch(es), 0 error(s)" in case.said


def test_a_partial_fix_is_partial_and_a_rewritten_held_out_test_does_not_pass(case: Case) -> None:
    runs = benchkit.runs(case.store, run_set="s1")
    graded = {(r["swebench_instance"], r["model"] or r["arm"]): r for r in runs.to_dicts()}
    partial = graded[I1, "org/model-b"]
    assert (partial["swebench_status"], partial["resolved"]) == ("PARTIAL", False)
    assert partial["swebench_f2p_failure"] == [f"{T1}::test_clamp_bad_range"]
    assert partial["swebench_f2p_success"] == [f"{T1}::test_clamp_high"]
    cheat = graded[I2, "org/model-b"]  # its test file was reset to the test patch's
    assert (cheat["swebench_status"], cheat["swebench_f2p_failure"]) == (
        "NO",
        [f"{T2}::test_initials"],
    )
    assert cheat["tampered"] == [f"{T2}=edited"]
    report = json.loads((case.report / "org__model-b" / I1 / "report.json").read_text())
    assert report[I1]["tests_status"]["FAIL_TO_PASS"]["failure"] == [f"{T1}::test_clamp_bad_range"]
    assert report[I1]["patch_successfully_applied"] is True and report[I1]["resolved"] is False


def test_gold_covers_all_its_sites_and_the_empty_patch_never_ran(case: Case) -> None:
    runs = {(r["bench"], r["arm"]): r for r in benchkit.runs(case.store, run_set="s1").to_dicts()}
    gold = runs[I1, f"prediction:{case.folder / 'model-a.jsonl'}"]
    assert gold["sites_covered"] == gold["sites_total"] == gold["sites_matched"] > 0
    assert (gold["swebench_status"], gold["resolved"], gold["model"]) == (
        "FULL",
        True,
        "org/model-a",
    )
    human = runs[I1, "human"]  # the human reference is the gold patch
    assert (human["swebench_status"], human["sites_covered"]) == ("FULL", gold["sites_total"])
    empty = runs[I2, f"prediction:{case.folder / 'model-a.jsonl'}"]
    assert (empty["status"], empty["failure_kind"], empty["swebench_status"]) == (
        "failed",
        "empty_patch",
        None,
    )
    checks = benchkit.table("checks", case.store)
    ran = checks.filter((pl.col("run_id") == empty["run_id"]) & (pl.col("phase") == "after"))
    assert ran.is_empty()


def test_the_arm_never_sees_the_test_patch_but_the_checks_at_base_do(case: Case) -> None:
    """The baseline ran base with the test patch: its new tests failed there."""
    tests = benchkit.table("tests", case.store)
    base = tests.filter(tests["phase"] == "base").to_dicts()
    outcomes = {f"{t['file']}::{t['test']}": t["outcome"] for t in base}
    assert outcomes[f"{T1}::test_clamp_high"] == "failed"
    assert outcomes[f"{T1}::test_double"] == "passed"
    worktree_files = sh_git(case.folder / "widgets", "show", "HEAD:tests/test_widgets.py")
    assert "test_clamp_high" not in worktree_files  # base itself holds no held-out test


def test_a_changed_prediction_is_not_taken_for_the_graded_one(case: Case, tmp_path: Path) -> None:
    """A prediction changed under the same set is refused, naming the instance; in a
    new set it is graded again. Another instance's prediction changing leaves a unit's
    digest as it was."""
    store = tmp_path / "store"
    preds = tmp_path / "preds.jsonl"
    rows = [json.loads(line) for line in (case.folder / "model-b.jsonl").read_text().splitlines()]
    preds.write_text("".join(json.dumps(r) + "\n" for r in rows))
    arm = f"prediction:{preds}"
    first = benchkit.pilot(str(case.benches[0]), arm=arm, store=store, run_set="p")
    rows[1]["model_patch"] = ""  # the other instance's
    preds.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert benchkit.pilot(str(case.benches[0]), arm=arm, store=store, run_set="p") == []
    rows[0]["model_patch"] = (case.benches[0] / "gold.patch").read_text()
    preds.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(benchkit.SetError, match=rf"{I1} prediction:.*changed"):
        benchkit.pilot(str(case.benches[0]), arm=arm, store=store, run_set="p")
    again = benchkit.pilot(str(case.benches[0]), arm=arm, store=store, run_set="p", new_set=True)
    assert (first[0].swebench.grade, again[0].swebench.grade) == ("PARTIAL", "FULL")  # type: ignore[union-attr]


@pytest.fixture(scope="module")
def swebench_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A scratch environment with the real `swebench` package, from the registry."""
    venv = tmp_path_factory.mktemp("swebench-package") / "venv"
    uv("venv", "--quiet", "--python", "3.11", str(venv))
    python = venv / "bin" / "python"
    uv("pip", "install", "--quiet", "--python", str(python), "swebench==5.0.2")
    return python


GRADE_WITH_SWEBENCH = """
import json, os, sys, types
from pathlib import Path
from swebench.harness.constants import END_TEST_OUTPUT, START_TEST_OUTPUT
from swebench.harness.grading import get_eval_report
from swebench.harness.reporting import make_run_report
given = json.load(sys.stdin)
os.chdir(given["folder"])  # swebench reads and writes logs/run_evaluation/<run>/ here
instances = {i["instance_id"]: i for i in given["instances"]}
for run in given["runs"]:
    i = instances[run["instance"]]
    spec = types.SimpleNamespace(
        instance_id=i["instance_id"], repo=i["repo"], version=i["version"],
        FAIL_TO_PASS=json.loads(i["FAIL_TO_PASS"]), PASS_TO_PASS=json.loads(i["PASS_TO_PASS"]),
        log_parser="parse_log_pytest", eval_type="pass_and_fail",
    )
    folder = Path("logs/run_evaluation/s1") / run["model"].replace("/", "__") / i["instance_id"]
    folder.mkdir(parents=True, exist_ok=True)
    log = folder / "test_output.txt"
    log.write_text(f"{START_TEST_OUTPUT}\\n{run['log']}\\n{END_TEST_OUTPUT}\\n")
    prediction = given["predictions"][run["model"]][i["instance_id"]]
    report = get_eval_report(spec, prediction, str(log), include_tests_status=True)
    (folder / "report.json").write_text(json.dumps(report))
summaries = {
    model: json.loads(Path(make_run_report(own, given["instances"], "s1")).read_text())
    for model, own in given["predictions"].items()
}
print(json.dumps(summaries))
"""


def test_the_swebench_packages_grading_of_the_same_runs_agrees(
    case: Case, swebench_python: Path, tmp_path: Path
) -> None:
    """Each completed run's test log, graded by the `swebench` package (its pytest log
    parser, `get_eval_report`), gives benchkit's report.json, and its run summary
    (`make_run_report`) benchkit's summary, field for field."""
    runs = benchkit.runs(case.store, run_set="s1").to_dicts()
    checks = benchkit.table("checks", case.store).to_dicts()
    logs = {
        c["run_id"]: Path(c["log_path"]).read_text()
        for c in checks
        if c["phase"] == "after" and c["check"] == "test"
    }
    lines = (case.folder / "instances.jsonl").read_text().splitlines()
    predictions: dict[str, dict[str, dict[str, object]]] = {}
    for model in ("model-a", "model-b"):
        for line in (case.folder / f"{model}.jsonl").read_text().splitlines():
            p = json.loads(line)
            predictions.setdefault(p["model_name_or_path"], {})[p["instance_id"]] = p
    completed = [r for r in runs if r["status"] == "ok" and r["model"] in predictions]
    given = {
        "folder": str(tmp_path),
        "instances": [json.loads(line) for line in lines],
        "predictions": predictions,
        "runs": [
            {"instance": r["swebench_instance"], "model": r["model"], "log": logs[r["run_id"]]}
            for r in completed
        ],
    }
    graded = subprocess.run(
        [str(swebench_python), "-c", GRADE_WITH_SWEBENCH],
        input=json.dumps(given),
        capture_output=True,
        text=True,
        check=True,
    )
    theirs = json.loads(graded.stdout.splitlines()[-1])
    assert len(completed) == 3  # gold, partial, the rewritten test
    for r in completed:
        where = Path(r["model"].replace("/", "__")) / r["swebench_instance"] / "report.json"
        swebenchs = json.loads((tmp_path / "logs" / "run_evaluation" / "s1" / where).read_text())
        assert json.loads((case.report / where).read_text()) == swebenchs, where
    for model in predictions:
        ours = json.loads((case.report / f"{model.replace('/', '__')}.s1.json").read_text())
        assert ours.pop("benchkit")["validated_instances"] == 0  # benchkit's one key
        assert ours == theirs[model], model


def test_validation_finds_an_instance_whose_gold_fails_invalid_and_the_summary_counts_both(
    case: Case, tmp_path: Path
) -> None:
    """`benchkit bench validate` on every instance, gold and base K times with the test
    patch: an instance whose gold does not pass its FAIL_TO_PASS every run is recorded
    invalid (not refused), and the run summary counts resolved over the valid ones as
    well as over all."""
    rows = [json.loads(line) for line in (case.folder / "instances.jsonl").read_text().splitlines()]
    bad = rows[0] | {"instance_id": "acme__widgets-3"}
    bad["patch"] = json.loads((case.folder / "model-b.jsonl").read_text().splitlines()[0])[
        "model_patch"
    ]  # the partial fix as gold: test_clamp_bad_range never passes
    (tmp_path / "instances.jsonl").write_text(json.dumps(rows[0]) + "\n" + json.dumps(bad) + "\n")
    made = benchkit_in_process(
        "swebench", "benches", str(tmp_path / "instances.jsonl"),
        "--repo", f"acme/widgets={case.folder / 'widgets'}",
        "--environments", str(case.folder / "environments.toml"),
        "--out", str(tmp_path / "benches"),
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    benches = [str(tmp_path / "benches" / i) for i in (I1, "acme__widgets-3")]
    done = benchkit_cli("bench", "validate", *benches, "--reruns", "2")
    assert done.returncode == 0, done.stderr
    assert (
        "INVALID: the human reference does not pass tests/test_widgets.py::test_clamp_bad_range"
        in done.stdout
    )
    assert "(passed 0 of 2 runs)" in done.stdout and "1 of 2 benches valid" in done.stdout
    assert f"{T1}::test_clamp_high" in done.stdout.split("proposed must_pass")[1]  # base+tests
    store = tmp_path / "store"
    benchkit.pilot(benches, arm="human", store=store, run_set="v")
    report = benchkit.swebench.report("v", out=tmp_path / "report", store=store)
    ((_, said),) = report.summaries.values()
    assert (said["resolved_ids"], said["total_instances"]) == ([I1], 2)
    assert said["benchkit"] == {
        "validated_instances": 2,
        "valid_instances": 1,
        "resolved_valid_instances": 1,
        "invalid_ids": ["acme__widgets-3"],
        "unvalidated_ids": [],
    }
    assert report.lines()[0].startswith("human: 1 of 2 resolved (1 of 1 valid)")


def test_a_mistaken_input_is_one_line_before_anything_runs(case: Case, tmp_path: Path) -> None:
    """A mirror path that names nothing, a base commit the mirror lacks, a predictions
    file whose ids meet none of the benches: one line, exit 2, nothing written."""
    rows = [json.loads(line) for line in (case.folder / "instances.jsonl").read_text().splitlines()]
    instances = tmp_path / "instances.jsonl"
    instances.write_text("".join(json.dumps(r) + "\n" for r in rows))
    env = str(case.folder / "environments.toml")
    out = tmp_path / "benches"
    done = benchkit_in_process(
        "swebench", "benches", str(instances), "--repo", f"acme/widgets={tmp_path / 'nowhere'}",
        "--environments", env, "--out", str(out),
    )  # fmt: skip
    assert (done.returncode, done.stderr.count("\n")) == (2, 1), done.stderr
    assert "--repo: " in done.stderr and "no such folder" in done.stderr
    rows[1]["base_commit"] = "0" * 40
    instances.write_text("".join(json.dumps(r) + "\n" for r in rows))
    done = benchkit_in_process(
        "swebench", "benches", str(instances), "--repo", f"acme/widgets={case.folder / 'widgets'}",
        "--environments", env, "--out", str(out),
    )  # fmt: skip
    assert done.returncode == 2 and not out.exists()
    assert f"instances.jsonl: {I2}: base_commit: no such commit in" in done.stderr
    other = tmp_path / "other.jsonl"
    other.write_text(
        json.dumps({"instance_id": "x__y-9", "model_name_or_path": "m", "model_patch": "x"})
    )
    done = benchkit_cli(
        "pilot",
        "--bench",
        str(case.benches[0]),
        "--arm",
        f"prediction:{other}",
        store=tmp_path / "s",
    )
    assert (
        done.returncode == 2
        and "no prediction for any of the benches' instances (acme__widgets-1)" in done.stderr
    )
    assert not (tmp_path / "s" / "runs").exists()


def test_an_instance_a_file_lacks_is_its_models_incomplete_instance(
    case: Case, tmp_path: Path
) -> None:
    """A predictions file with no prediction for one of the benches: that run is
    `no_prediction`, its model the file's, and the summary counts it incomplete."""
    only = tmp_path / "only-1.jsonl"
    only.write_text((case.folder / "model-a.jsonl").read_text().splitlines()[0] + "\n")
    store = tmp_path / "store"
    runs = benchkit.pilot(
        [str(b) for b in case.benches], arm=f"prediction:{only}", store=store, run_set="o"
    )
    lacking = next(r for r in runs if r.bench == I2)
    assert (lacking.failure_kind, lacking.spec.model) == ("no_prediction", "org/model-a")
    written = benchkit.swebench.report("o", out=tmp_path / "report", store=store)
    assert list(written.summaries) == ["org__model-a"]
    ((_, said),) = written.summaries.values()
    assert (said["incomplete_ids"], said["submitted_ids"], said["resolved_ids"]) == (
        [I2],
        [I1],
        [I1],
    )
