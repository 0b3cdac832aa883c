"""Planning a SWE-bench task set: N instances of one repository (one mirror), made
benches by `bk.swebench.benches`, then planned with one `prediction:FILE` arm (every
input checked: the bench files, the mirror fetched, base resolved, the gold patch and
the test patch committed on base, each environment's recipe, the predictions read).
Prints the seconds of each step, and how many environments the plans need (one per
version, whatever N). Target: planning 300 instances under 10 s.

The repository is SYNTHETIC: a module per instance, each with a one-line bug, its gold
patch and a test patch that adds the test telling it; instances alternate between two
versions.

    .venv/bin/python benchmarks/swebench_plan.py [--instances 300]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

from benchkit.run.launch import pilot_specs
from benchkit.run.plan import plan
from benchkit.swebench import benches
from benchkit.workspace.git import git_env


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=repo, env=git_env(), check=True, capture_output=True, text=True
    )
    return done.stdout


def task_set(folder: Path, count: int) -> tuple[Path, Path, Path, Path]:
    """The repository, its instances file, a predictions file and the environments
    file: `count` instances."""
    repo = folder / "repo"
    (repo / "tests").mkdir(parents=True)
    git(repo, "init", "--quiet", "--initial-branch", "main")
    for n in range(count):
        (repo / f"mod{n}.py").write_text(f"def f{n}(x):\n    return x + {n}\n")
        (repo / "tests" / f"test_mod{n}.py").write_text(
            f"from mod{n} import f{n}\n\n\ndef test_zero():\n    assert f{n}(0) == {n}\n"
        )
    git(repo, "add", "-A")
    git(repo, "commit", "--quiet", "-m", "base")
    base = git(repo, "rev-parse", "HEAD").strip()
    rows, predictions = [], []
    for n in range(count):
        module, test = repo / f"mod{n}.py", repo / "tests" / f"test_mod{n}.py"
        before, before_test = module.read_text(), test.read_text()
        module.write_text(before + f"\n\ndef g{n}(x):\n    return 2 * x\n")
        gold = git(repo, "diff")
        git(repo, "checkout", "--quiet", "--", ".")
        test.write_text(
            before_test
            + f"\n\ndef test_g():\n    from mod{n} import g{n}\n\n    assert g{n}(2) == 4\n"
        )
        test_patch = git(repo, "diff")
        git(repo, "checkout", "--quiet", "--", ".")
        rows.append(
            {
                "repo": "acme/many",
                "instance_id": f"acme__many-{n}",
                "base_commit": base,
                "patch": gold,
                "test_patch": test_patch,
                "problem_statement": f"add g{n}",
                "version": f"{n % 2}.0",
                "FAIL_TO_PASS": json.dumps([f"tests/test_mod{n}.py::test_g"]),
                "PASS_TO_PASS": json.dumps([f"tests/test_mod{n}.py::test_zero"]),
            }
        )
        predictions.append(
            {"instance_id": f"acme__many-{n}", "model_name_or_path": "m", "model_patch": gold}
        )
    instances = folder / "instances.jsonl"
    instances.write_text("".join(json.dumps(r) + "\n" for r in rows))
    preds = folder / "predictions.jsonl"
    preds.write_text("".join(json.dumps(p) + "\n" for p in predictions))
    environments = folder / "environments.toml"
    environments.write_text(
        "".join(
            f'["acme/many"."{v}.0"]\nkind = "venv"\npython = "3.11"\n'
            f'packages = ["pytest==8.{v + 2}.5"]\n'
            for v in (0, 1)
        )
    )
    return repo, instances, preds, environments


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=300)
    count = parser.parse_args().instances
    with tempfile.TemporaryDirectory(prefix="benchkit-swebench-plan-") as tmp:
        folder = Path(tmp)
        os.environ["BENCHKIT_CACHE"] = str(folder / "cache")
        os.environ["BENCHKIT_STORE"] = str(folder / "store")
        start = time.perf_counter()
        repo, instances, preds, environments = task_set(folder, count)
        made = time.perf_counter()
        written = benches(
            instances,
            repos={"acme/many": str(repo)},
            environments=environments,
            out=folder / "benches",
        )
        wrote = time.perf_counter()
        specs = pilot_specs([str(b) for b in written], [f"prediction:{preds}"])
        plans = plan(specs)
        planned = time.perf_counter()
        again = plan(specs)  # the mirror's refs made: a set planned again, as on resume
        replanned = time.perf_counter()
        keys = {p.recipe.key for p in plans}
        print(f"SYNTHETIC task set of {count} instances, one repository, 2 versions")
        print(f"  the repository and files made (not benchkit):  {made - start:6.2f} s")
        print(f"  bk.swebench.benches wrote {len(written)} benches:       {wrote - made:6.2f} s")
        print(f"  planned, first time ({len(plans)} plans):            {planned - wrote:6.2f} s")
        print(
            f"  planned again ({len(again)} plans):                  {replanned - planned:6.2f} s"
        )
        print(f"  environments the plans need: {len(keys)} (one per version)")


if __name__ == "__main__":
    main()
