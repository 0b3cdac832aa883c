"""The `node` backend: the `node_modules` that the repository's package manager (npm,
pnpm or yarn: see `benchkit.workspace.managers`) installs from its `package.json` and
lock file at base, with the network, in the environment stage (never in a check,
which has none).

It is cached under `<cache>/envs/node-<key>/` by those files, the node of this
machine and the manager's version, and is each pilot's worktree's `node_modules`
(bound read-only in a sandbox that binds, else hard links: later pilots never
install), its `.bin` first on PATH. The folders tools write into (`Node.writable`:
vite's `.vite-temp`, `.cache`, ...) are each pilot's own in a sandbox that binds.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import time
from pathlib import Path
from typing import ClassVar

from benchkit.bench.bench_file import Bench
from benchkit.errors import BenchError
from benchkit.workspace.commands import caller_path
from benchkit.workspace.git import file_text, files_of
from benchkit.workspace.managers import (
    LOCKS,
    SETTINGS,
    install_command,
    manager_env,
    manager_of,
    tool,
    tool_bin,
    tool_spec,
)
from benchkit.workspace.monorepo import (
    PACKAGE,
    WorkspaceError,
    package_folders,
    package_globs,
)
from benchkit.workspace.proc import ProcError, capture
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

NODE_MODULES = "node_modules"


NOT_TELLING = re.compile(
    r"(complete log of this run|^\S+ (error|ERR!) (code \S+|\d{3}|errno \S+)$)"
)


def telling(stderr: str) -> str | None:
    """The line of a manager's failure that says what went wrong (`npm error 404 Not
    Found - GET https://...`), not its closing pointer to a log or its error code."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    errors = [
        line
        for line in lines
        if re.search(r"\b(error|ERR!|ERR_|Error)\b", line) and not NOT_TELLING.search(line)
    ]
    return errors[0] if errors else None


def _installed(folder: Path) -> tuple[str, ...]:
    """`name==version` of every package installed: npm's own record of them
    (`node_modules/.package-lock.json`), else the package.json of every package in
    node_modules (pnpm's under `.pnpm`, yarn's hoisted and nested)."""
    hidden = folder / NODE_MODULES / ".package-lock.json"
    found = set()
    if hidden.exists():
        record = json.loads(hidden.read_text())
        for where, package in record.get("packages", {}).items():
            if where and "version" in package and not package.get("link"):
                name = package.get("name") or where.rpartition("node_modules/")[2]
                found.add(f"{name}=={package['version']}")
        return tuple(sorted(found))
    for root, dirs, files in os.walk(folder / NODE_MODULES):  # links not followed
        dirs[:] = [d for d in dirs if d != ".bin"]
        here = Path(root)
        package = here.parent.name == NODE_MODULES or (
            here.parent.name.startswith("@") and here.parent.parent.name == NODE_MODULES
        )
        if not package or "package.json" not in files:
            continue
        try:
            said = json.loads((here / "package.json").read_text())
        except (OSError, ValueError):
            continue
        if isinstance(said, dict) and said.get("name") and said.get("version"):
            found.add(f"{said['name']}=={said['version']}")
    return tuple(sorted(found))


class Node(Backend):
    """The `node_modules` its package manager installs (npm ci, pnpm or yarn from
    their lock file), the worktree's own (copied or bound)."""

    kind: ClassVar[str] = "node"
    bin: ClassVar[str] = ".bin"
    # what tools write in node_modules as a matter of course: vite's bundled config
    # (.vite-temp) and its dependency and results caches (.vite, .vitest), the
    # .cache of babel-loader, eslint, terser and the like
    writable: ClassVar[tuple[str, ...]] = (".vite-temp", ".vite", ".vitest", ".cache")

    def recipe(self, bench: Bench, repo: Repository) -> Recipe:
        files = {
            name: text
            for name in ("package.json", *LOCKS.values(), *SETTINGS)
            if (text := file_text(repo.mirror, repo.base_sha, name)) is not None
        }
        if "package.json" not in files:
            raise BenchError(
                bench.path, "environment", "no file package.json in the repository at base"
            )
        files |= _packages(bench, repo, files)
        manager = manager_of(files, bench.file.environment.manager)
        if manager is None:
            locks = ", ".join(LOCKS.values())
            raise BenchError(
                bench.path, "environment", f"no lock file in the repository at base ({locks})"
            )
        if LOCKS[manager] not in files:
            raise BenchError(
                bench.path,
                "environment.manager",
                f"no file {LOCKS[manager]} in the repository at base ({manager} installs from it)",
            )
        kept = {k: v for k, v in files.items() if k not in LOCKS.values() or k == LOCKS[manager]}
        env = manager_env(manager)
        node, npm = shutil.which("node", path=env["PATH"]), shutil.which("npm", path=env["PATH"])
        if node is None or npm is None:
            missing = "node" if node is None else "npm"
            raise BenchError(bench.path, "environment.kind", f"no {missing} on this machine's PATH")
        spec = tool_spec(manager, kept)
        try:
            version = capture([node, "--version"], env=env, timeout_s=60).strip()
            program = tool(manager, spec)
            said = capture([str(program), "--version"], env=env, timeout_s=120).strip()
        except ProcError as exc:
            why = (exc.stderr or exc.stdout or str(exc)).strip().splitlines()
            raise BenchError(
                bench.path, "environment.kind", f"{spec} does not run: {why[0] if why else exc}"
            ) from None
        return Recipe(
            kind="node",
            python=str(Path(node).resolve()),
            python_version=version,
            files=tuple(sorted(kept.items())),
            builder=f"{manager} {said}; {spec}; recipe {RECIPE_VERSION}",
        )

    def build(self, recipe: Recipe, final: Path, *, log: Path) -> Environment:
        """The manager's install from the recipe's package.json and lock file."""
        started = time.monotonic()
        tmp = Path(tempfile.mkdtemp(prefix=f"{final.name}.", dir=final.parent))
        files = dict(recipe.files)
        manager, spec = recipe.builder.split(" ", 1)[0], recipe.builder.split("; ")[1]
        verb = "ci" if manager == "npm" else "install"
        lines = [f"environment {recipe.key}: {manager} {verb} with {recipe.builder}"]
        node = tmp / "node"
        try:
            install = install_command(manager, tool(manager, spec), files)
            node.mkdir()
            for path, text in recipe.files:
                (node / path).parent.mkdir(parents=True, exist_ok=True)
                (node / path).write_text(text)
            env = manager_env(manager) | building(recipe.key)
            lines.append(capture(install, cwd=node, env=env, timeout_s=1800))
            (node / NODE_MODULES).mkdir(exist_ok=True)  # a package without dependencies
            packages = _installed(node)
            for folder in (NODE_MODULES, *self.within(recipe, node)):
                read_only(node / folder)
            meta = write_meta(recipe, node, packages, started)
            os.replace(node, final)
        except (ProcError, OSError) as exc:
            said = [getattr(exc, "stdout", ""), getattr(exc, "stderr", str(exc))]
            write_log(log, [*lines, *said])
            why = (
                f"{' '.join(exc.argv[:2])} exited {exc.exit_code}: "
                if isinstance(exc, ProcError)
                else ""
            )
            told = telling(said[1]) if isinstance(exc, ProcError) else None
            raise EnvironmentFailure(
                f"the environment could not be built: {why + told if told else exc}"
            ) from None
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        write_log(log, [*lines, f"built in {meta['build_s']} s: {len(packages)} packages"])
        return Environment(recipe=recipe, path=final, packages=packages)

    def source(self, built: Path) -> Path:
        return built / NODE_MODULES

    def placed(self, where: Path, tree: Path) -> Path:
        return tree / NODE_MODULES  # the tree's own, wherever asked

    def variables(self, recipe: Recipe, instance: Path | None, tree: Path) -> dict[str, str]:
        """PATH: the instance's `.bin`, then the manager's own program (pnpm, yarn: a
        check may run `pnpm -r run test`), then the caller's."""
        manager, spec = recipe.builder.split(" ", 1)[0], recipe.builder.split("; ")[1]
        folder = tool_bin(manager, spec)
        path = [str(instance / self.bin)] if instance is not None else []
        path += [str(folder)] if folder is not None else []
        return {"PATH": os.pathsep.join([*path, *caller_path()])}

    def within(self, recipe: Recipe, built: Path) -> tuple[str, ...]:
        """Each workspace package's own `node_modules`, where the install made one."""
        packages = [str(Path(p).parent) for p, _ in recipe.files if Path(p).name == PACKAGE]
        return tuple(
            f"{folder}/{NODE_MODULES}"
            for folder in sorted(packages)
            if folder != "." and (built / folder / NODE_MODULES).is_dir()
        )


def _packages(bench: Bench, repo: Repository, files: dict[str, str]) -> dict[str, str]:
    """The package.json of each workspace package at base (none: not a workspace)."""
    try:
        globs = package_globs(files)
    except WorkspaceError as exc:
        raise BenchError(bench.path, "environment", f"the repository's {exc}") from None
    if not globs:
        return {}
    folders = package_folders(globs, files_of(repo.mirror, repo.base_sha))
    found = {}
    for folder in folders:
        text = file_text(repo.mirror, repo.base_sha, f"{folder}/{PACKAGE}")
        if text is not None:
            found[f"{folder}/{PACKAGE}"] = text
    return found
