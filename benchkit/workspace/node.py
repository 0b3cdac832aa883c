"""The `node` backend: the `node_modules` that `npm ci` installs from the repository's
`package.json` and `package-lock.json` at base, with the network, in the environment
stage (never in a check, which has none).

It is cached under `<cache>/envs/node-<key>/` by those two files, the node and npm of
this machine, and is each pilot's worktree's `node_modules` (bound read-only in a
sandbox that binds, else hard links: later pilots never install), its `.bin` first on
PATH. npm keeps its downloads in `$npm_config_cache` (default `<cache>/npm`).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import ClassVar

from benchkit.bench.bench_file import Bench
from benchkit.errors import BenchError
from benchkit.workspace.cache import cache_dir
from benchkit.workspace.commands import caller_path
from benchkit.workspace.git import file_text
from benchkit.workspace.proc import ProcError, capture
from benchkit.workspace.recipe import (
    RECIPE_VERSION,
    Backend,
    Environment,
    EnvironmentFailure,
    Recipe,
    read_only,
    write_log,
    write_meta,
)
from benchkit.workspace.repository import Repository

NODE_FILES = ("package.json", "package-lock.json")  # what `npm ci` installs from
NODE_MODULES = "node_modules"


def npm_env() -> dict[str, str]:
    """npm's environment: the caller's PATH, benchkit's cache for its downloads (or
    `npm_config_cache`), no update notice, no audit, no funding appeals."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["PATH"] = os.pathsep.join(caller_path())
    env.setdefault("npm_config_cache", str(cache_dir() / "npm"))
    env |= {"npm_config_update_notifier": "false", "npm_config_audit": "false"}
    env["npm_config_fund"] = "false"
    return env


def _installed(folder: Path) -> tuple[str, ...]:
    """`name==version` of every package npm installed, from its own record of them
    (`node_modules/.package-lock.json`)."""
    hidden = folder / NODE_MODULES / ".package-lock.json"
    if not hidden.exists():
        return ()  # nothing installed
    record = json.loads(hidden.read_text())
    found = set()
    for where, package in record.get("packages", {}).items():
        if where and "version" in package and not package.get("link"):
            name = package.get("name") or where.rpartition("node_modules/")[2]
            found.add(f"{name}=={package['version']}")
    return tuple(sorted(found))


class Node(Backend):
    """`npm ci`'s `node_modules`, the worktree's own (copied or bound)."""

    kind: ClassVar[str] = "node"
    bin: ClassVar[str] = ".bin"

    def recipe(self, bench: Bench, repo: Repository) -> Recipe:
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

    def build(self, recipe: Recipe, final: Path, *, log: Path) -> Environment:
        """`npm ci` from the recipe's package.json and lock file."""
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
            (node / NODE_MODULES).mkdir(exist_ok=True)  # a package without dependencies
            packages = _installed(node)
            read_only(node / NODE_MODULES)
            meta = write_meta(recipe, node, packages, started)
            os.replace(node, final)
        except (ProcError, OSError) as exc:
            said = [getattr(exc, "stdout", ""), getattr(exc, "stderr", str(exc))]
            write_log(log, [*lines, *said])
            raise EnvironmentFailure(f"the environment could not be built: {exc}") from None
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        write_log(log, [*lines, f"built in {meta['build_s']} s: {len(packages)} packages"])
        return Environment(recipe=recipe, path=final, packages=packages)

    def source(self, built: Path) -> Path:
        return built / NODE_MODULES

    def placed(self, where: Path, tree: Path) -> Path:
        return tree / NODE_MODULES  # the tree's own, wherever asked
