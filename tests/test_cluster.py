"""The Ray launcher: a matrix as Ray tasks on a local cluster records what one process
records, with the base checks once per bench and each run's launcher and worker."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import benchkit
from benchkit.run.events import Event, StageBegun
from benchkit.store.heartbeat import read_beats
from tests.conftest import TinyRepo
from tests.test_workers import FIGURES, _two_benches

pytest.importorskip("ray", reason="Ray is in the development install: pip install -e '.[dev]'")


def test_a_matrix_on_a_local_ray_cluster_records_what_one_process_does(
    tiny: TinyRepo, tmp_path: Path
) -> None:
    benches = _two_benches(tiny, tmp_path)
    seen: list[tuple[str, str, bool]] = []

    def beats(event: Event) -> None:  # the heartbeat of a pilot at work, as it is told
        if isinstance(event, StageBegun) and event.stage == "verify":
            beat = read_beats(tmp_path / "ray").get(event.run_id)
            seen.append((event.run_id, event.stage, beat is not None and beat.stage == "verify"))

    ray = benchkit.pilot(
        benches,
        ["human", "noop"],
        trials=2,
        launcher="ray",
        jobs=2,
        store=tmp_path / "ray",
        sandbox="none",
        events=beats,
    )
    assert len(ray) == 8 and {r.launcher for r in ray} == {"ray"}
    assert {r.status for r in ray} == {"ok"}
    runs = benchkit.runs(tmp_path / "ray")
    assert runs.height == 8 and set(runs["launcher"]) == {"ray"}
    assert os.getpid() not in set(runs["pid"])  # Ray's workers ran them
    ran_at_base = runs.filter(~runs["baseline_cached"])["baseline_key"].to_list()
    assert sorted(ran_at_base) == sorted(set(runs["baseline_key"]))  # once a key
    assert seen and any(beat for _, _, beat in seen)  # heartbeats while running
    figures = {row[0]: row[1:] for row in runs.select("arm", *FIGURES).unique().rows()}
    assert len(figures) == 2  # the same figures on every bench and trial, as one process
    assert figures["human"][:3] == (2, 2, 0) and figures["noop"][:3] == (0, 0, 0)
    assert figures["human"][3] == figures["noop"][3] == "pass"


def test_the_cli_runs_a_pilot_on_ray_and_import_benchkit_does_not_load_ray(
    tiny: TinyRepo, tmp_path: Path
) -> None:
    argv = [sys.executable, "-m", "benchkit", "pilot", "--bench", str(tiny.bench_dir)]
    argv += ["--arm", "human", "--launcher", "ray", "--sandbox", "none", "--quiet"]
    done = subprocess.run(
        [*argv, "--store", str(tmp_path / "s")], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    [row] = benchkit.runs(tmp_path / "s").to_dicts()
    assert (row["launcher"], row["status"], row["sites_covered"]) == ("ray", "ok", 2)
    code = "import benchkit, sys; benchkit.runs; print('ray' in sys.modules)"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert loaded.stdout.strip() == "False"
