"""The sandbox seam: a kind is one `Sandbox` subclass and one entry in `SANDBOXES`; no
call site asks which kind it has."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest

import benchkit
from benchkit.bench.experiment_file import experiment
from benchkit.errors import UsageError
from benchkit.workspace.sandbox import SANDBOXES, Sandbox, choices, choose
from tests.conftest import TinyRepo

COMMANDS: list[list[str]] = []  # what the recording sandbox was given, in this process


@dataclass(frozen=True, kw_only=True)
class Recording(Sandbox):
    """A sandbox that runs each command as it is, and writes it down."""

    kind: ClassVar[str] = "recording"

    def command(
        self, argv: Sequence[str], *, status_fd: int | None = None, cwd: Path | None = None
    ) -> list[str]:
        COMMANDS.append([*argv, f"cwd={(cwd or self.tree).name}"])
        return list(argv)


def test_a_sandbox_kind_added_in_the_registry_runs_a_pilots_arm_and_checks(
    tiny: TinyRepo, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(SANDBOXES, "recording", Recording)
    COMMANDS.clear()
    [run] = benchkit.pilot(str(tiny.bench_dir), arm="human", sandbox="recording")
    assert (run.status, run.sandbox, run.gate and run.gate.verdict) == ("ok", "recording", "pass")
    said = [" ".join(c) for c in COMMANDS]
    tests = [c for c in said if "pytest" in c]
    assert any(c.endswith("cwd=base") for c in tests), said  # the checks at base
    assert any(c.endswith("cwd=verify") for c in tests), said  # and after, on a clean tree
    assert any("import calc, util" in c for c in said), said  # the lint check too
    assert benchkit.runs()["sandbox"].to_list() == ["recording"]


def test_a_sandbox_no_registry_names_is_one_line_naming_those_it_has() -> None:
    with pytest.raises(UsageError, match=r"'docker' is not one of auto, none, bwrap"):
        choose("docker")


def test_an_experiment_file_names_a_kind_the_registry_has(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What an experiment file's `sandbox` may name comes from the registry: a kind
    added there is taken, with no list of names to change in the file's reader."""
    path = tmp_path / "experiment.toml"
    path.write_text('sandbox = "recording"\n')
    with pytest.raises(UsageError, match=r"sandbox: 'recording' is not one of auto, none, bwrap"):
        experiment(path, {"sandbox": choices()})
    monkeypatch.setitem(SANDBOXES, "recording", Recording)
    assert experiment(path, {"sandbox": choices()})["sandbox"] == "recording"
