"""The `none` backend: the caller's PATH as it is, for benches that bring their own
toolchain; benchkit's own virtualenv, its plugins and its `PYTHONPATH` stay out."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import ClassVar

from benchkit.bench.bench_file import Bench
from benchkit.workspace.proc import ProcError
from benchkit.workspace.recipe import Backend, Environment, Recipe, write_log
from benchkit.workspace.repository import Repository
from benchkit.workspace.venv import distributions, interpreter, project_variables, uv_env


class Caller(Backend):
    """Nothing built: the checks run with the caller's own programs."""

    kind: ClassVar[str] = "none"
    cached: ClassVar[bool] = False

    def recipe(self, bench: Bench, repo: Repository) -> Recipe:
        env = uv_env()  # the caller's PATH, without benchkit's virtualenv
        python = shutil.which("python", path=env["PATH"])
        try:
            version, path = interpreter(python, env) if python else ("", "")
        except ProcError:
            version, path = "", python or ""  # a `python` that does not run
        project = bench.file.environment.project
        return Recipe(kind="none", python=path, python_version=version, project=project)

    def build(self, recipe: Recipe, final: Path, *, log: Path) -> Environment:
        """The caller's own Python's packages, as they are; nothing is written."""
        packages = distributions(recipe.python) if recipe.python else None
        write_log(log, [f"environment none: the caller's PATH, python {recipe.python or '-'}"])
        return Environment(recipe=recipe, path=None, packages=packages)

    def variables(self, recipe: Recipe, instance: Path | None, tree: Path) -> dict[str, str]:
        return super().variables(recipe, None, tree) | project_variables(recipe, tree)
