"""Counts and names from the command line checked for what a machine can do before
anything is written, each said in one line with exit 2 (issue 36, cases 9, 10, 19, 20)."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest

import benchkit
from benchkit.run.events import Planned
from benchkit.run.launcher import LaunchWarning
from tests.conftest import TinyRepo
from tests.helpers import PATIENCE_S


def _benchkit(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "benchkit", *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=PATIENCE_S, env=env)


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--trials", "1000000000000"], "matrix may hold (100,000): split it into sets"),
        (["--set", "s" * 300], "run_set: is letters, digits, '.', '_' and '-', at most 100"),
    ],
)
def test_a_matrix_no_machine_can_plan_is_one_line_and_writes_nothing(
    tiny: TinyRepo, tmp_path: Path, args: list[str], said: str
) -> None:
    """Seen before: a MemoryError (a trillion trials are a trillion specs), and `File
    name too long` with `.gitignore` and `claims/` left in the store."""
    store = tmp_path / "store"
    done = _benchkit("pilot", "--bench", str(tiny.bench_dir), "--arm", "noop", "--store",
                     str(store), *args)  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and said in done.stderr, done.stderr
    assert not store.exists()


def test_a_bench_name_longer_than_a_file_name_may_be_is_refused_at_load(
    tiny: TinyRepo, tmp_path: Path
) -> None:
    bench = tiny.bench_dir / "bench.toml"
    bench.write_text(bench.read_text().replace('name = "tiny"', f'name = "{"t" * 300}"'))
    store = tmp_path / "store"
    done = _benchkit(
        "pilot", "--bench", str(tiny.bench_dir), "--arm", "noop", "--store", str(store)
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "bench.toml: name" in done.stderr, done.stderr
    assert not store.exists()


def test_jobs_are_never_more_than_the_pilots_and_more_than_the_cores_is_said(
    tiny: TinyRepo, tmp_path: Path
) -> None:
    """Seen before: `--jobs 12` on 2 pilots started 12 worker processes (and 100,000
    started hundreds, and no pilot)."""
    told: list[object] = []
    store = tiny.seeded(tmp_path / "store")
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        runs = benchkit.pilot(
            str(tiny.bench_dir), arm=["noop", "human"], jobs=64, store=store,
            sandbox="none", events=told.append,
        )  # fmt: skip
    [planned] = [e for e in told if isinstance(e, Planned)]
    assert planned.jobs == 2 and len(runs) == 2
    cores = os.cpu_count() or 1
    over = [str(w.message) for w in said if issubclass(w.category, LaunchWarning)]
    assert over == ([f"2 pilots at a time on {cores} cores: they share them, each one slower"]
                    if cores < 2 else [])  # fmt: skip


def test_env_prune_takes_a_number_of_days_not_nan(tmp_path: Path) -> None:
    """Seen before: `--unused-days nan` removed every cached environment, as `--all`."""
    env = {**os.environ, "BENCHKIT_CACHE": str(tmp_path / "cache")}
    for days in ("nan", "inf", "-1"):
        done = _benchkit("env", "prune", "--unused-days", days, env=env)
        assert done.returncode == 2, (days, done.stderr)
        assert done.stderr.count("\n") == 1 and "--unused-days" in done.stderr, done.stderr


INSTRUCTION = 'instruction = "Add mul() to calc and bump VERSION."'


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (
            lambda t: t + '\n[env]\n"A=B" = "1"\n',
            "bench.toml: env.A=B (its name): not a variable's name (letters, digits and _, not",
        ),
        (lambda t: t + '\n[env]\nA = "x\\u0000y"\n', "bench.toml: env.A: holds a NUL byte"),
        (
            lambda t: t.replace(INSTRUCTION, f'instruction = "{"x" * 200_000}"'),
            "bench.toml: instruction: is 200,000 bytes: one argument to a program is at "
            "most 131,071",
        ),
    ],
    ids=["env-name-with-equals", "nul-in-env-value", "instruction-past-an-argument"],
)
def test_a_bench_file_no_program_could_take_is_one_line_before_anything_is_written(
    tiny: TinyRepo, tmp_path: Path, edit: Callable[[str], str], said: str
) -> None:
    """Seen before: `ValueError: illegal environment variable name`, `embedded null byte`
    and `Argument list too long: '/usr/bin/bwrap'`, tracebacks with exit 1, and a
    failed run recorded."""
    bench = tiny.bench_dir / "bench.toml"
    bench.write_text(edit(bench.read_text()))
    store = tmp_path / "store"
    done = _benchkit("pilot", "--bench", str(tiny.bench_dir), "--arm", "human", "--store",
                     str(store), "--sandbox", "none")  # fmt: skip
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.count("\n") == 1 and said in done.stderr, done.stderr[-2000:]
    assert not store.exists()


def test_an_arm_file_with_a_nul_in_its_command_is_one_line(tiny: TinyRepo, tmp_path: Path) -> None:
    arm = tmp_path / "nul.toml"
    arm.write_text('name = "nul"\ncommand = ["sh", "-c", "echo a\\u0000b"]\n')
    store = tmp_path / "store"
    done = _benchkit("pilot", "--bench", str(tiny.bench_dir), "--arm", str(arm), "--store",
                     str(store), "--sandbox", "none")  # fmt: skip
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.count("\n") == 1 and "nul.toml: command" in done.stderr, done.stderr
    assert "NUL byte" in done.stderr and not store.exists()
