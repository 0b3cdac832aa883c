"""Bench environments: what a bench's checks run with, never benchkit's own.

A `venv` environment is a virtualenv built with uv from a Python found on this
machine (never downloaded), the repository's dependency files at base and the
bench's own pins. It is built once per key (the digest of the interpreter, the
dependency files' content, the extras, the pins, the project mode and the way it is
built) under `<cache>/envs/<key>/`, its files read-only, and never written in place.
In bubblewrap, each pilot, and each baseline, sees it bound read-only where its own
instance goes (`bound`: nothing copied, and nothing can be written there, root
included); the pilot holds a shared lock on it meanwhile, so that a prune leaves it
be. Without bubblewrap, each runs in a copy of its own made of hard links (`cp -al`,
a tenth of a second where copying the bytes takes a second): a tool that replaces a
file there (pip, uv, Python writing bytecode) replaces the copy's link only; one that
writes into a file in place is refused by its mode, or, as root, who ignores modes,
is found afterwards by the file's changed size or time: the cached environment is
then dropped and built again. An editable install is always a copy. The worktree's
own code is made importable in the instance: an editable install (`editable`),
`src/` or the root on `PYTHONPATH` (`pythonpath`), or nothing (`none`).

A `node` environment is the `node_modules` that `npm ci` installs from the
repository's `package.json` and `package-lock.json` at base, with the network, in
the environment stage (never in a check, which has none). It is cached under
`<cache>/envs/node-<key>/` by those two files, the node and npm of this machine, and
is each pilot's worktree's `node_modules` (bound read-only in bubblewrap, else hard
links again: later pilots never install), its `.bin` first on PATH; a file written in
place in a copy is found as above. npm keeps its downloads in `$npm_config_cache`
(default `<cache>/npm`).

A `none` environment is the caller's PATH as it is, for benches that bring their own
toolchain. Either way benchkit's own virtualenv, its plugins and its `PYTHONPATH` stay
out of the checks.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import posixpath
import re
import shlex
import shutil
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import Any, Literal

from uv import find_uv_bin

from benchkit.bench.bench_file import Bench
from benchkit.errors import BenchError
from benchkit.workspace.cache import cache_dir, discard, locked
from benchkit.workspace.commands import caller_path
from benchkit.workspace.git import Repository, file_text
from benchkit.workspace.proc import ProcError, capture

RECIPE_VERSION = 1  # the way benchkit builds an environment; a change makes new keys
META = "benchkit-env.json"
LAST_USED = ".last-used"
IN_USE = ".in-use"  # beside an environment: shared-locked by each pilot that binds it
PROBE = "import sys; print(sys.version.split()[0], sys.executable)"
# an interpreter of the machine's own: never a virtualenv (benchkit's), never a download
SYSTEM_ONLY = ("--system", "--no-python-downloads", "--python-preference", "only-system")


class EnvironmentFailure(Exception):
    """An environment that could not be built or copied: the bench's failure."""


@dataclass(frozen=True, kw_only=True)
class Recipe:
    """Everything that makes an environment; its key is their digest."""

    kind: Literal["venv", "node", "none"]
    python: str  # the base interpreter (venv), `node` (node), or the caller's `python`
    python_version: str
    files: tuple[tuple[str, str], ...] = ()  # dependency files at base: path, content
    entries: tuple[str, ...] = ()  # of those, the ones installed from (-r); others included
    extras: tuple[str, ...] = ()
    packages: tuple[str, ...] = ()
    project: Literal["editable", "pythonpath", "none"] = "pythonpath"
    builder: str = ""  # uv's version and benchkit's recipe version

    @property
    def key(self) -> str:
        if self.kind == "none":
            return "none"
        fields = asdict(self)
        digest = hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()
        return f"{self.kind}-{digest[:16]}"

    @property
    def described_python(self) -> str | None:
        """The interpreter the checks run with: `3.11.7 /usr/bin/python3.11`, `node
        v20.20.2 /usr/bin/node`."""
        if not self.python:
            return None
        node = "node " if self.kind == "node" else ""
        return f"{node}{self.python_version} {self.python}"

    def requirement_args(self, root: Path) -> list[str]:
        """uv's arguments for what to install, with the files written under `root`."""
        args: list[str] = []
        for path in self.entries:
            args += ["-r", str(root / path)]
        for extra in self.extras:
            args += ["--extra", extra]
        return [*args, *self.packages]


@dataclass(frozen=True, kw_only=True)
class Environment:
    """A built environment in the cache (or the caller's PATH, for `none`)."""

    recipe: Recipe
    path: Path | None
    packages: tuple[str, ...] | None  # `name==version` as installed; None for `none`
    reused: bool = False

    @property
    def bin(self) -> Path | None:
        """Where its programs are: a virtualenv's `bin`, `node_modules/.bin`."""
        if self.path is None:
            return None
        return self.path / (NODE_BIN if self.recipe.kind == "node" else "bin")

    @property
    def packages_digest(self) -> str | None:
        if self.packages is None:
            return None
        return hashlib.sha256("\n".join(self.packages).encode()).hexdigest()[:16]


@dataclass(frozen=True, kw_only=True)
class Instance:
    """One pilot's own instance of an environment, for one tree: a copy, or the cached
    environment bound read-only at `path` by the sandbox."""

    environment: Environment
    path: Path | None  # the copy, or where the sandbox binds the environment; None for `none`
    tree: Path
    source: Path | None = None  # bound from here (read-only, by the sandbox); None: a copy

    @property
    def binds(self) -> tuple[tuple[Path, Path], ...]:
        """What the sandbox binds read-only for this instance: (from, to)."""
        if self.source is None or self.path is None:
            return ()
        return ((self.source, self.path),)

    def variables(self) -> dict[str, str]:
        """PATH (and VIRTUAL_ENV, PYTHONPATH) for a command that runs in this instance."""
        found = {"PATH": os.pathsep.join(caller_path())}
        kind = self.environment.recipe.kind
        if self.path is not None and kind == "node":  # the tree's node_modules
            found["PATH"] = os.pathsep.join([str(self.path / ".bin"), found["PATH"]])
            return found
        if self.path is not None:
            found["PATH"] = os.pathsep.join([str(self.path / "bin"), found["PATH"]])
            found["VIRTUAL_ENV"] = str(self.path)
        if self.environment.recipe.project == "pythonpath":
            found["PYTHONPATH"] = str(importable_root(self.tree))
        return found


def importable_root(tree: Path) -> Path:
    """Where a tree's own code is imported from: `src/` when it has one, else its root."""
    return tree / "src" if (tree / "src").is_dir() else tree


def uv_env() -> dict[str, str]:
    """uv's environment: the caller's, without benchkit's virtualenv, with the cache of
    benchkit's (or `UV_CACHE_DIR`) and no interpreter downloads."""
    left_out = ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "CONDA_PREFIX")
    env = {k: v for k, v in os.environ.items() if k not in left_out}
    env["PATH"] = os.pathsep.join(caller_path())
    env.setdefault("UV_CACHE_DIR", str(cache_dir() / "uv"))
    env["UV_PYTHON_DOWNLOADS"] = "never"
    return env


def uv(*args: str, timeout_s: float = 900.0) -> str:
    return capture([find_uv_bin(), *args], env=uv_env(), timeout_s=timeout_s)


@cache
def _builder() -> str:
    return f"{uv('--version').strip()}; recipe {RECIPE_VERSION}"


def interpreter(python: str, env: Mapping[str, str], cwd: Path | None = None) -> tuple[str, str]:
    """The version and path of a Python, by running it (isolated: `-I`, so neither the
    working folder nor PYTHON* variables change what it finds)."""
    probe = capture([python, "-I", "-c", PROBE], cwd=cwd, env=env, timeout_s=60)
    version, _, path = probe.strip().partition(" ")
    return version, path


@cache
def _system_python(wanted: str) -> tuple[str, str]:
    """The version and path of the machine's own Python that `wanted` names (run to
    tell: a remembered answer of `uv python find` names a program, not a version)."""
    memo = _python_memo(wanted)
    try:
        found, version = memo.read_text().split("\n")[:2]
        seen = interpreter(found, uv_env())
        if seen[0] == version:  # the same program, and still the same Python
            return seen
    except (OSError, ValueError, ProcError):
        pass  # none remembered, or gone since: uv finds it
    found = uv("python", "find", *SYSTEM_ONLY, wanted).strip()
    seen = interpreter(found, uv_env())
    # Not atomic, and needs not be: a half-written memo names no program that runs, or
    # another version, and the next command finds the Python again.
    with contextlib.suppress(OSError):  # a cache that cannot be written: found each time
        memo.parent.mkdir(parents=True, exist_ok=True)
        memo.write_text(f"{found}\n{seen[0]}\n")
    return seen


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


def recipe(bench: Bench, repo: Repository) -> Recipe:
    """What the bench's environment is made of, read at base; raises `BenchError`."""
    spec = bench.file.environment
    if spec.kind == "node":
        return _node_recipe(bench, repo)
    if spec.kind == "none":
        env = uv_env()  # the caller's PATH, without benchkit's virtualenv
        python = shutil.which("python", path=env["PATH"])
        try:
            version, path = interpreter(python, env) if python else ("", "")
        except ProcError:
            version, path = "", python or ""  # a `python` that does not run
        return Recipe(kind="none", python=path, python_version=version, project=spec.project)
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


NODE_FILES = ("package.json", "package-lock.json")  # what `npm ci` installs from
NODE_BIN = "node_modules/.bin"


def npm_env() -> dict[str, str]:
    """npm's environment: the caller's PATH, benchkit's cache for its downloads (or
    `npm_config_cache`), no update notice, no audit, no funding appeals."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["PATH"] = os.pathsep.join(caller_path())
    env.setdefault("npm_config_cache", str(cache_dir() / "npm"))
    env |= {"npm_config_update_notifier": "false", "npm_config_audit": "false"}
    env["npm_config_fund"] = "false"
    return env


def _node_recipe(bench: Bench, repo: Repository) -> Recipe:
    env = npm_env()
    node, npm = shutil.which("node", path=env["PATH"]), shutil.which("npm", path=env["PATH"])
    if node is None or npm is None:
        missing = "node" if node is None else "npm"
        raise BenchError(bench.path, "environment.kind", f"no {missing} on this machine's PATH")
    try:
        version = capture([node, "--version"], env=env, timeout_s=60).strip()
        npm_version = capture([npm, "--version"], env=env, timeout_s=60).strip()
    except ProcError as exc:
        raise BenchError(bench.path, "environment.kind", f"node does not run: {exc}") from None
    files = {}
    for name in NODE_FILES:
        text = file_text(repo.mirror, repo.base_sha, name)
        if text is None:
            why = "npm ci installs from it" if name.endswith("lock.json") else "npm ci reads it"
            raise BenchError(
                bench.path, "environment", f"no file {name} in the repository at base ({why})"
            )
        files[name] = text
    return Recipe(
        kind="node",
        python=str(Path(node).resolve()),
        python_version=version,
        files=tuple(files.items()),
        builder=f"npm {npm_version}; recipe {RECIPE_VERSION}",
    )


INCLUDE = re.compile(r"^\s*(?:-r|-c|--requirement|--constraint)(?:\s+|=)(\S+)")


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


DISTRIBUTIONS = (
    "import importlib.metadata as m; "
    "print('\\n'.join(sorted({f'{d.name}=={d.version}' for d in m.distributions()})))"
)


def _distributions(python: str) -> tuple[str, ...] | None:
    """`name==version` of every package a Python sees (the caller's, for `none`)."""
    try:
        found = capture([python, "-I", "-c", DISTRIBUTIONS], env=uv_env(), timeout_s=60)
        return tuple(found.split())
    except (ProcError, OSError):
        return None


def programs(commands: Sequence[str | Sequence[str]], environment: Environment) -> list[str]:
    """What each command's program resolves to on the checks' PATH, with the time its
    file last changed: `word=path@mtime_ns` (`word=?` when nothing does)."""
    folders = [str(environment.bin)] if environment.bin else []
    path = os.pathsep.join([*folders, *caller_path()])
    found = []
    for command in commands:
        try:
            words = shlex.split(command) if isinstance(command, str) else list(command)
        except ValueError:
            words = []
        if not words:
            continue
        where = shutil.which(words[0], path=path)
        if where is None:
            found.append(f"{words[0]}=?")
            continue
        real = Path(where).resolve()
        found.append(f"{words[0]}={real}@{real.stat().st_mtime_ns}")
    return found


def envs_dir() -> Path:
    return cache_dir() / "envs"


def _load(path: Path, recipe: Recipe) -> Environment | None:
    try:
        meta = json.loads((path / META).read_text())
    except (OSError, ValueError):
        return None
    return Environment(recipe=recipe, path=path, packages=tuple(meta["packages"]), reused=True)


def ensure(recipe: Recipe, *, log: Path) -> Environment:
    """The environment of a recipe: from the cache, or built now from the recipe's own
    files. Raises `EnvironmentFailure`."""
    if recipe.kind == "none":
        packages = _distributions(recipe.python) if recipe.python else None
        _write_log(log, [f"environment none: the caller's PATH, python {recipe.python or '-'}"])
        return Environment(recipe=recipe, path=None, packages=packages)
    final = envs_dir() / recipe.key
    final.parent.mkdir(parents=True, exist_ok=True)
    with locked(final):  # one build per key, whatever runs in parallel
        found = _load(final, recipe)
        if found is not None:
            log.parent.mkdir(parents=True, exist_ok=True)
            log.write_text(f"environment {recipe.key}: reused from {final}\n")
            return found
        if recipe.kind == "node":
            return _build_node(recipe, final, log=log)
        return _build(recipe, final, log=log)


def _build_node(recipe: Recipe, final: Path, *, log: Path) -> Environment:
    """`npm ci` in a temporary folder from the recipe's package.json and lock file,
    renamed into place: a stop leaves nothing half-built."""
    started = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix=f"{final.name}.", dir=final.parent))
    lines = [f"environment {recipe.key}: npm ci with {recipe.builder}"]
    node = tmp / "node"
    try:
        node.mkdir()
        for path, text in recipe.files:
            (node / path).write_text(text)
        ci = ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"]
        lines.append(capture(ci, cwd=node, env=npm_env(), timeout_s=1800))
        (node / "node_modules").mkdir(exist_ok=True)  # a package without dependencies
        packages = _node_packages(node)
        _read_only(node / "node_modules")
        meta = _write_meta(recipe, node, packages, started)
        os.replace(node, final)
    except (ProcError, OSError) as exc:
        _write_log(log, [*lines, getattr(exc, "stdout", ""), getattr(exc, "stderr", str(exc))])
        raise EnvironmentFailure(f"the environment could not be built: {exc}") from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    _write_log(log, [*lines, f"built in {meta['build_s']} s: {len(packages)} packages"])
    return Environment(recipe=recipe, path=final, packages=packages)


def _write_meta(
    recipe: Recipe, root: Path, packages: tuple[str, ...], started: float
) -> dict[str, object]:
    """What a built environment says of itself, in its `META` file: its key, recipe,
    packages, manifest, when and how fast it was built."""
    meta: dict[str, object] = {
        "key": recipe.key,
        "recipe": asdict(recipe) | {"files": [path for path, _ in recipe.files]},
        "packages": packages,
        "manifest": manifest(root),
        "built_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "build_s": round(time.monotonic() - started, 3),
    }
    (root / META).write_text(json.dumps(meta, indent=1))
    return meta


def _node_packages(folder: Path) -> tuple[str, ...]:
    """`name==version` of every package npm installed, from its own record of them
    (`node_modules/.package-lock.json`)."""
    hidden = folder / "node_modules" / ".package-lock.json"
    if not hidden.exists():
        return ()  # nothing installed
    record = json.loads(hidden.read_text())
    found = set()
    for where, package in record.get("packages", {}).items():
        if where and "version" in package and not package.get("link"):
            name = package.get("name") or where.rpartition("node_modules/")[2]
            found.add(f"{name}=={package['version']}")
    return tuple(sorted(found))


def _build(recipe: Recipe, final: Path, *, log: Path) -> Environment:
    """Build the recipe's environment from its own files (what its key was made of),
    in a temporary folder renamed into place: a stop leaves nothing half-built."""
    started = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix=f"{final.name}.", dir=final.parent))
    lines = [f"environment {recipe.key}: building with {recipe.builder}"]
    try:
        inputs = tmp / "inputs"
        for path, text in recipe.files:
            (inputs / path).parent.mkdir(parents=True, exist_ok=True)
            (inputs / path).write_text(text)
        venv = ["venv", "--quiet", "--relocatable", "--no-python-downloads"]
        lines.append(uv(*venv, "--python", recipe.python, str(tmp / "venv")))
        python = str(tmp / "venv" / "bin" / "python")
        wanted = recipe.requirement_args(inputs)
        if wanted:
            install = ["pip", "install", "--python", python, "--link-mode=copy"]
            lines.append(uv(*install, "--compile-bytecode", *wanted))
        packages = tuple(uv("pip", "freeze", "--python", python).split())
        _read_only(tmp / "venv")
        meta = _write_meta(recipe, tmp / "venv", packages, started)
        os.replace(tmp / "venv", final)
    except ProcError as exc:
        _write_log(log, [*lines, exc.stdout, exc.stderr])
        raise EnvironmentFailure(f"the environment could not be built: {exc}") from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # the inputs; everything, when it failed
    _write_log(log, [*lines, f"built in {meta['build_s']} s: {' '.join(packages)}"])
    return Environment(recipe=recipe, path=final, packages=packages)


def _entries(root: Path) -> list[tuple[str, os.stat_result]]:
    """The environment's regular files (path, stat), its bookkeeping left out, in a
    fixed order: one `lstat` each, by `os.scandir`."""
    found: list[tuple[str, os.stat_result]] = []
    stack = [str(root)]
    while stack:
        folder = stack.pop()
        with os.scandir(folder) as entries:
            for entry in sorted(entries, key=lambda e: e.name):
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                elif entry.is_file(follow_symlinks=False) and entry.name not in (META, LAST_USED):
                    found.append((entry.path, entry.stat(follow_symlinks=False)))
    return found


def _read_only(root: Path) -> None:
    for path, stat in _entries(root):
        os.chmod(path, stat.st_mode & ~0o222)


def manifest(root: Path) -> str:
    """A digest of every file's path, size and modification time: it changes when a
    file is written in place (a hard-linked copy shares size and time with the cache)."""
    digest = hashlib.sha256()
    start = len(str(root)) + 1
    for path, stat in _entries(root):
        digest.update(f"{path[start:]}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


def _write_log(log: Path, lines: Sequence[str]) -> None:
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("\n".join(line.rstrip() for line in lines if line.strip()) + "\n")


def instantiate(
    environment: Environment, *, where: Path, tree: Path, log: Path, bound: bool = False
) -> Instance:
    """The pilot's own instance of the environment, with the tree's code importable as
    the recipe says (a node environment's is the tree's `node_modules`, not `where`).
    With `bound` (commands run in bubblewrap, which binds it read-only), the cached
    environment itself, held in use until `remove`; else a copy, as is an editable
    install's. Raises `EnvironmentFailure`."""
    if environment.path is None:
        return Instance(environment=environment, path=None, tree=tree)
    node = environment.recipe.kind == "node"
    source = environment.path / "node_modules" if node else environment.path
    bound = bound and environment.recipe.project != "editable"
    if node:
        where = tree / "node_modules"
        if where.exists() or where.is_symlink():
            raise EnvironmentFailure(f"{where} exists already: the environment's goes there")
    shutil.rmtree(where, ignore_errors=True)  # a copy a killed run left: never copy into it
    try:
        if bound:
            _hold(environment.path, where)  # first: the order a drop takes them in
        with locked(environment.path):  # not while a drop or a prune removes it
            if not (environment.path / META).exists():
                raise OSError(f"the cached environment {environment.path.name} was removed")
            if bound:
                where.mkdir(parents=True)  # where bubblewrap binds it
            else:
                capture(["cp", "-al", str(source), str(where)])  # hard links, same fs
            (environment.path / LAST_USED).touch()
        if bound:
            return Instance(environment=environment, path=where, tree=tree, source=source)
        if environment.recipe.project == "editable":
            python = str(where / "bin" / "python")
            output = uv("pip", "install", "--python", python, "--no-deps", "-e", str(tree))
            with log.open("a") as handle:
                handle.write(output)
    except BaseException as exc:
        release(where)
        shutil.rmtree(where, ignore_errors=True)
        if not isinstance(exc, ProcError | OSError):
            raise  # an interrupt: nothing held, nothing left
        with log.open("a") as handle:
            handle.write(f"{exc}\n{getattr(exc, 'stderr', '')}\n")
        raise EnvironmentFailure(f"the environment could not be set up: {exc}") from None
    return Instance(environment=environment, path=where, tree=tree)


_HELD: dict[Path, int] = {}  # a bound instance's path: its shared lock on the environment
DROP_WAIT_S = 60.0  # how long a drop waits for the pilots that bind an environment


def _in_use(environment: Path) -> Path:
    return environment.with_name(f"{environment.name}{IN_USE}")


def _hold(environment: Path, where: Path) -> None:
    """A shared lock on the environment while `where` binds it: a prune keeps it.
    Taken before the environment's own lock (`locked`), as a drop and a prune take
    them: never the one waiting for the other's."""
    handle = os.open(_in_use(environment), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(handle, fcntl.LOCK_SH)
    except BaseException:
        os.close(handle)
        raise
    _HELD[where] = handle


def release(where: Path | None) -> None:
    """Let go of the environment an instance at `where` binds (none: nothing)."""
    handle = _HELD.pop(where, None) if where is not None else None
    if handle is not None:
        os.close(handle)  # and its lock


@contextmanager
def _unused(environment: Path) -> Iterator[bool]:
    """Whether no pilot binds the environment, and none may begin to while the block
    runs (never waits: a pilot binds it for minutes)."""
    with open(_in_use(environment), "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def env_copy_of(worktree: Path) -> Path:
    """Where a pilot keeps its copy of the environment: beside its worktree."""
    return worktree.with_name(f"{worktree.name}-env")


class EnvironmentWarning(UserWarning):
    """A cached environment found changed, and dropped."""


def remove(instance: Instance | None, *, read_only: bool = False) -> None:
    """Remove a pilot's copy; check that the cached environment is as it was built,
    and drop it (with a warning) when it is not. A copy that was `read_only` to every
    command run with it (bubblewrap binds it so) cannot have written the cache: no
    check then (a walk of the whole environment, most of a pilot's cleanup)."""
    if instance is None or instance.path is None:
        return
    release(instance.path)
    discard(instance.path)
    if read_only or instance.source is not None:  # bubblewrap bound it read-only
        return
    cached_path = instance.environment.path
    assert cached_path is not None
    with locked(cached_path):
        try:
            built = json.loads((cached_path / META).read_text())["manifest"]
        except (OSError, ValueError, KeyError):
            return  # dropped meanwhile
        if manifest(cached_path) == built:
            return
    said = "it was dropped and will be built again"
    if not _drop(cached_path):
        said = (
            f"pilots that bind it were still at work after {DROP_WAIT_S:g} s: it was kept; "
            "`benchkit env prune --all` drops it once they are done"
        )
    warnings.warn(
        f"a file of the cached environment {cached_path} was written in place; {said}",
        EnvironmentWarning,
        stacklevel=2,
    )


def _drop(cached_path: Path) -> bool:
    """Remove a cached environment once no pilot binds it (within `DROP_WAIT_S`);
    whether it is gone."""
    deadline = time.monotonic() + DROP_WAIT_S
    while not _removed_unless_bound(cached_path):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.2)
    return True


def _removed_unless_bound(cached_path: Path) -> bool:
    """Remove a cached environment unless a pilot binds it; whether it was."""
    with _unused(cached_path) as unused:
        if unused:
            with locked(cached_path):
                shutil.rmtree(cached_path, ignore_errors=True)
        return unused


@dataclass(frozen=True, kw_only=True)
class Cached:
    """One environment in the cache, as `benchkit env list` shows it."""

    key: str
    path: Path
    runtime: str  # "python 3.11.7", "node v20.20.2"
    packages: int
    megabytes: float
    built_at: str
    last_used: datetime | None


def _size(path: Path) -> int:
    return sum(p.lstat().st_size for p in path.rglob("*") if not p.is_symlink())


def _runtime(recipe: dict[str, object]) -> str:
    """What runs a recipe's code: node for a node environment (its `python_version`
    field holds node's version), else Python."""
    return "node" if recipe.get("kind") == "node" else "python"


def cached() -> list[Cached]:
    """The built environments in the cache, newest first."""
    found = []
    folder = envs_dir()
    kinds = [*folder.glob("venv-*"), *folder.glob("node-*")] if folder.is_dir() else []
    for path in sorted(kinds):
        try:
            meta = json.loads((path / META).read_text())
        except (OSError, ValueError):
            continue  # a build in progress, or a broken folder
        used = path / LAST_USED
        runtime, packages, built_at = _described(meta) or _unreadable(path)
        found.append(
            Cached(
                key=path.name,
                path=path,
                runtime=runtime,
                packages=packages,
                megabytes=round(_size(path) / 1e6, 1),
                built_at=built_at,
                last_used=datetime.fromtimestamp(used.stat().st_mtime, UTC)
                if used.exists()
                else None,
            )
        )
    return sorted(found, key=lambda c: c.built_at, reverse=True)


def _unreadable(path: Path) -> tuple[str, int, str]:
    """How an environment whose record is broken is listed: built when it was written."""
    made = datetime.fromtimestamp((path / META).stat().st_mtime, UTC).isoformat()
    return f"unreadable {META}", 0, made


def _described(meta: Any) -> tuple[str, int, str] | None:
    """What runs an environment, its packages and when it was built, from its record;
    None when the record lacks them (listed as unreadable, and pruned like any)."""
    try:
        recipe = meta["recipe"]
        runtime = f"{_runtime(recipe)} {recipe['python_version']}"
        built_at = datetime.fromisoformat(str(meta["built_at"])).isoformat()
        return runtime, len(meta["packages"]), built_at
    except (KeyError, TypeError, AttributeError, ValueError):
        return None


def prune(*, unused_days: float | None = None) -> list[str]:
    """Remove cached environments (all of them, or those unused for `unused_days`);
    their keys. One a pilot at work binds is kept (a copy is the pilot's own), so
    removing is always safe."""
    now = datetime.now(UTC)
    removed = []
    for entry in cached():
        last = entry.last_used or datetime.fromisoformat(entry.built_at)
        if unused_days is not None and (now - last).total_seconds() < unused_days * 86400:
            continue
        if _removed_unless_bound(entry.path):
            removed.append(entry.key)
    return removed
