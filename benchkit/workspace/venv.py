"""The `venv` backend: a virtualenv built with uv from a Python found on this machine
(never downloaded), the repository's dependency files at base and the bench's own pins.

It is built once per key (the digest of the interpreter, the dependency files'
content, the extras, the pins, the project mode and the way it is built). The
worktree's own code is made importable in each instance: an editable install
(`editable`), `src/` or the root on `PYTHONPATH` (`pythonpath`), or nothing (`none`).
uv keeps its downloads in `$UV_CACHE_DIR` (default `<cache>/uv`).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import posixpath
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import ClassVar

from uv import find_uv_bin

from benchkit.bench.bench_file import Bench
from benchkit.errors import BenchError
from benchkit.workspace.cache import cache_dir
from benchkit.workspace.commands import caller_path
from benchkit.workspace.git import file_text
from benchkit.workspace.proc import ProcError, capture
from benchkit.workspace.processes import callers_environ
from benchkit.workspace.recipe import (
    RECIPE_VERSION,
    Backend,
    Environment,
    EnvironmentFailure,
    Recipe,
    building,
    read_only,
    write_log,
    write_meta,
)
from benchkit.workspace.repository import Repository

PROBE = "import sys; print(sys.version.split()[0], sys.executable)"
# an interpreter of the machine's own: never a virtualenv (benchkit's), never a download
SYSTEM_ONLY = ("--system", "--no-python-downloads", "--python-preference", "only-system")
INCLUDE = re.compile(r"^\s*(?:-r|-c|--requirement|--constraint)(?:\s+|=)(\S+)")
DISTRIBUTIONS = (
    "import importlib.metadata as m; "
    "print('\\n'.join(sorted({f'{d.name}=={d.version}' for d in m.distributions()})))"
)


def importable_root(tree: Path) -> Path:
    """Where a tree's own code is imported from: `src/` when it has one, else its root."""
    return tree / "src" if (tree / "src").is_dir() else tree


def uv_env() -> dict[str, str]:
    """uv's environment: the caller's, without benchkit's virtualenv, with the cache of
    benchkit's (or `UV_CACHE_DIR`) and no interpreter downloads."""
    left_out = ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "CONDA_PREFIX")
    env = {k: v for k, v in callers_environ().items() if k not in left_out}
    env["PATH"] = os.pathsep.join(caller_path())
    env.setdefault("UV_CACHE_DIR", str(cache_dir() / "uv"))
    env["UV_PYTHON_DOWNLOADS"] = "never"
    return env


def uv(*args: str, timeout_s: float = 900.0, mark: Mapping[str, str] | None = None) -> str:
    """uv's output; `mark`: variables its environment carries besides (a build's)."""
    return capture([find_uv_bin(), *args], env=uv_env() | dict(mark or {}), timeout_s=timeout_s)


@cache
def _builder() -> str:
    return f"{version_of(find_uv_bin())}; recipe {RECIPE_VERSION}"


def version_of(program: str) -> str:
    """What `program --version` says, run once while its file stays the same (its
    stamp): remembered in the cache, as every command asks it of uv otherwise (a
    process of 7 ms)."""
    try:
        stamp = _stamp(program)
    except OSError:
        stamp = ""
    digest = hashlib.sha256(f"{program}\n{stamp}".encode()).hexdigest()[:16]
    memo = cache_dir() / "tools" / f"{Path(program).name}-{digest}"
    with contextlib.suppress(OSError):
        said = memo.read_text().strip()  # written whole (renamed into place), or not at all
        if stamp and said:
            return said
    said = capture([program, "--version"], env=uv_env(), timeout_s=60).strip()
    if stamp and said:
        with contextlib.suppress(OSError):  # whole or not at all: renamed into place
            memo.parent.mkdir(parents=True, exist_ok=True)
            fresh = memo.with_name(f".{memo.name}.{os.getpid()}")
            fresh.write_text(f"{said}\n")
            os.replace(fresh, memo)
    return said


def interpreter(python: str, env: Mapping[str, str], cwd: Path | None = None) -> tuple[str, str]:
    """The version and path of a Python, by running it (isolated: `-I`, so neither the
    working folder nor PYTHON* variables change what it finds)."""
    probe = capture([python, "-I", "-c", PROBE], cwd=cwd, env=env, timeout_s=60)
    version, _, path = probe.strip().partition(" ")
    return version, path


def distributions(python: str) -> tuple[str, ...] | None:
    """`name==version` of every package a Python sees (the caller's, for `none`)."""
    try:
        found = capture([python, "-I", "-c", DISTRIBUTIONS], env=uv_env(), timeout_s=60)
        return tuple(found.split())
    except (ProcError, OSError):
        return None


@cache
def _system_python(wanted: str) -> tuple[str, str]:
    """The version and path of the machine's own Python that `wanted` names (run to
    tell: a remembered answer of `uv python find` names a program, not a version; not
    run again while the program is the very file that was run, unchanged since)."""
    memo = _python_memo(wanted)
    said = ""
    try:
        said = memo.read_text()
        found, version, *known = said.split("\n")
        if len(known) > 1 and known[1] and known[1] == _stamp(found):
            return version, known[0]
        seen = interpreter(found, uv_env())
        if seen[0] == version:  # the same program, and still the same Python
            _remember(memo, found, seen, said)
            return seen
    except (OSError, ValueError, ProcError):
        pass  # none remembered, or gone since: uv finds it
    found = uv("python", "find", *SYSTEM_ONLY, wanted).strip()
    seen = interpreter(found, uv_env())
    _remember(memo, found, seen, said)
    return seen


def _stamp(program: str) -> str:
    """What replacing a program's file changes: its device, inode, size and time."""
    stat = os.stat(program)
    return f"{stat.st_dev}:{stat.st_ino}:{stat.st_size}:{stat.st_mtime_ns}"


def _remember(memo: Path, found: str, seen: tuple[str, str], said: str) -> None:
    """Remember the Python found, what it said it is, and, when the program found is
    the interpreter itself (not a wrapper, such as a pyenv shim, whose answer changes
    with no file of its own changing), the stamp of its file; unwritten when the memo
    `said` so already (a wrapper's, each command). Not atomic, and needs not be: a
    half-written memo names no program that runs, or another version, and the next
    command finds the Python again."""
    with contextlib.suppress(OSError):  # a cache that cannot be written: found each time
        stamp = _stamp(found) if os.path.samefile(found, seen[1]) else ""
        text = f"{found}\n{seen[0]}\n{seen[1]}\n{stamp}\n"
        if text != said:
            memo.parent.mkdir(parents=True, exist_ok=True)
            memo.write_text(text)


def _python_memo(wanted: str) -> Path:
    """Where `uv python find`'s answer for `wanted` is remembered (it looks at every
    Python on PATH: a tenth of a second a command), by what the answer depends on:
    uv's version, PATH, and each of its folders' modification time, which a Python
    installed there or removed changes."""
    stamps = [wanted, _builder()]
    for folder in uv_env()["PATH"].split(os.pathsep):
        try:
            stamps.append(f"{folder}@{os.stat(folder).st_mtime_ns}")
        except OSError:
            stamps.append(f"{folder}@-")
    key = hashlib.sha256("\n".join(stamps).encode()).hexdigest()[:16]
    return cache_dir() / "pythons" / key


def _dependency_files(
    bench: Bench, repo: Repository, names: list[str], requirements: list[str]
) -> dict[str, str]:
    """The dependency files at base, with every file they include (`-r`, `-c`), so the
    environment's key holds all that its build reads. Raises `BenchError`."""
    found: dict[str, str] = {}
    waiting = list(dict.fromkeys(names))
    while waiting:
        name = waiting.pop(0)
        if name in found:
            continue
        text = file_text(repo.mirror, repo.base_sha, name)
        field = "environment" if name == "pyproject.toml" else "environment.requirements"
        if text is None:
            why = " (its dependencies are read from it)" if name == "pyproject.toml" else ""
            raise BenchError(bench.path, field, f"no file {name} in the repository at base{why}")
        lines = text.splitlines() if name.endswith(".txt") or name in requirements else []
        if any(line.strip().startswith(("-e", "--editable")) for line in lines):
            raise BenchError(bench.path, field, f"{name}: an editable line; use project")
        found[name] = text
        folder = posixpath.dirname(name)
        for line in lines:
            include = INCLUDE.match(line)
            if include:
                waiting.append(posixpath.normpath(posixpath.join(folder, include.group(1))))
    return found


def requirement_args(recipe: Recipe, root: Path) -> list[str]:
    """uv's arguments for what to install, with the recipe's files written under `root`."""
    args: list[str] = []
    for path in recipe.entries:
        args += ["-r", str(root / path)]
    for extra in recipe.extras:
        args += ["--extra", extra]
    return [*args, *recipe.packages]


def project_variables(recipe: Recipe, tree: Path) -> dict[str, str]:
    """What makes the tree's own code importable, as the recipe's project mode says."""
    return {"PYTHONPATH": str(importable_root(tree))} if recipe.project == "pythonpath" else {}


class Venv(Backend):
    """A uv virtualenv, copied per pilot (hard links) or bound read-only."""

    kind: ClassVar[str] = "venv"

    def recipe(self, bench: Bench, repo: Repository) -> Recipe:
        spec = bench.file.environment
        wanted = spec.python or f"{sys.version_info.major}.{sys.version_info.minor}"
        try:
            version, path = _system_python(wanted)
        except ProcError as exc:
            raise BenchError(
                bench.path, "environment.python", f"no Python {wanted} on this machine ({exc})"
            ) from None
        names = [*spec.requirements]
        if spec.extras or spec.project == "editable":
            names.append("pyproject.toml")  # the project's dependencies, and its extras
        files = _dependency_files(bench, repo, names, spec.requirements)
        return Recipe(
            kind="venv",
            python=path,
            python_version=version,
            files=tuple(files.items()),
            entries=tuple(dict.fromkeys(names)),
            extras=tuple(spec.extras),
            packages=tuple(spec.packages),
            project=spec.project,
            builder=_builder(),
        )

    def build(self, recipe: Recipe, final: Path, *, log: Path) -> Environment:
        """Built from the recipe's own files (what its key was made of)."""
        started = time.monotonic()
        tmp = Path(tempfile.mkdtemp(prefix=f"{final.name}.", dir=final.parent))
        lines = [f"environment {recipe.key}: building with {recipe.builder}"]
        try:
            inputs = tmp / "inputs"
            for path, text in recipe.files:
                (inputs / path).parent.mkdir(parents=True, exist_ok=True)
                (inputs / path).write_text(text)
            venv = ["venv", "--quiet", "--relocatable", "--no-python-downloads"]
            mark = building(recipe.key)
            lines.append(uv(*venv, "--python", recipe.python, str(tmp / "venv"), mark=mark))
            python = str(tmp / "venv" / "bin" / "python")
            wanted = requirement_args(recipe, inputs)
            if wanted:
                install = ["pip", "install", "--python", python, "--link-mode=copy"]
                lines.append(uv(*install, "--compile-bytecode", *wanted, mark=mark))
            packages = tuple(uv("pip", "freeze", "--python", python, mark=mark).split())
            read_only(tmp / "venv")
            meta = write_meta(recipe, tmp / "venv", packages, started)
            os.replace(tmp / "venv", final)
        except ProcError as exc:
            write_log(log, [*lines, exc.stdout, exc.stderr])
            raise EnvironmentFailure(f"the environment could not be built: {exc}") from None
        finally:
            shutil.rmtree(tmp, ignore_errors=True)  # the inputs; everything, when it failed
        write_log(log, [*lines, f"built in {meta['build_s']} s: {' '.join(packages)}"])
        return Environment(recipe=recipe, path=final, packages=packages)

    def variables(self, recipe: Recipe, instance: Path | None, tree: Path) -> dict[str, str]:
        found = super().variables(recipe, instance, tree)
        if instance is not None:
            found["VIRTUAL_ENV"] = str(instance)
        return found | project_variables(recipe, tree)
