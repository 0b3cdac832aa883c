"""Node's package managers: which one a repository uses, the tool itself, and how it
installs from the lock file without changing it.

npm is this machine's. pnpm and yarn come from the npm registry, installed by npm
once per version into benchkit's cache (`<cache>/managers/`): the version the
repository's `packageManager` pins, else the one its lock file was written by
(`lockfileVersion` 9.0: pnpm 9; yarn's classic lock: yarn 1; its berry lock:
yarn 4). pnpm keeps its store under benchkit's cache, shared by every environment;
yarn berry installs a `node_modules` (`nodeLinker`), its cache shared likewise.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from pathlib import Path

from benchkit.workspace.cache import cache_dir, locked
from benchkit.workspace.commands import caller_path
from benchkit.workspace.proc import capture
from benchkit.workspace.processes import callers_environ

LOCKS = {"npm": "package-lock.json", "pnpm": "pnpm-lock.yaml", "yarn": "yarn.lock"}
# what the managers read, in the key: their settings, and pnpm's list of packages
SETTINGS = (".npmrc", ".yarnrc.yml", ".yarnrc", "pnpm-workspace.yaml")
TOOL_S = 600.0  # npm installing a manager from the registry


def npm_env() -> dict[str, str]:
    """npm's environment: the caller's PATH, benchkit's cache for its downloads (or
    `npm_config_cache`), no update notice, no audit, no funding appeals."""
    env = {k: v for k, v in callers_environ().items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["PATH"] = os.pathsep.join(caller_path())
    env.setdefault("npm_config_cache", str(cache_dir() / "npm"))
    env |= {"npm_config_update_notifier": "false", "npm_config_audit": "false"}
    env["npm_config_fund"] = "false"
    return env


def manager_env(manager: str) -> dict[str, str]:
    """A manager's environment: npm's, with pnpm's store and yarn berry's caches under
    benchkit's cache, shared by every environment."""
    env = npm_env()
    cache = cache_dir()
    if manager == "pnpm":
        env.setdefault("npm_config_store_dir", str(cache / "pnpm-store"))
    elif manager == "yarn":
        env |= {"YARN_NODE_LINKER": "node-modules", "YARN_ENABLE_GLOBAL_CACHE": "true"}
        env |= {"YARN_ENABLE_TELEMETRY": "0", "YARN_GLOBAL_FOLDER": str(cache / "yarn")}
        env.setdefault("YARN_CACHE_FOLDER", str(cache / "yarn" / "classic"))
    return env


def manager_of(files: dict[str, str], named: str | None) -> str | None:
    """The package manager of a repository: the bench's `[environment] manager`, or
    the one whose lock file it has (npm, then pnpm, then yarn); None: no lock file."""
    if named is not None:
        return named
    return next((m for m, lock in LOCKS.items() if lock in files), None)


def _berry(files: dict[str, str]) -> bool:
    """A yarn 2+ (berry) repository: its lock file's metadata."""
    return "__metadata:" in files.get(LOCKS["yarn"], "")


def tool_spec(manager: str, files: dict[str, str]) -> str:
    """The registry package of the manager (`pnpm@9`, `yarn@1`,
    `@yarnpkg/cli-dist@4.5.0`): the repository's `packageManager` pin, else the one
    its lock file was written by; npm is this machine's own (`npm`)."""
    if manager == "npm":
        return "npm"
    try:
        pinned = str(json.loads(files.get("package.json", "{}")).get("packageManager") or "")
    except (ValueError, AttributeError):
        pinned = ""
    name, _, version = pinned.partition("@")
    version = version.split("+", 1)[0]
    if name != manager or not version:
        if manager == "pnpm":
            found = re.search(r"lockfileVersion: '?(\d+)", files.get(LOCKS["pnpm"], ""))
            version = {"5": "7", "6": "8"}.get(found.group(1) if found else "9", "9")
        else:
            version = "4" if _berry(files) else "1"
    if manager == "yarn" and not version.startswith("1"):
        return f"@yarnpkg/cli-dist@{version}"
    return f"{manager}@{version}"


def _folder(spec: str) -> Path:
    return cache_dir() / "managers" / re.sub(r"[^A-Za-z0-9.@_-]+", "-", spec)


def tool_bin(manager: str, spec: str) -> Path | None:
    """The folder of the manager's program in benchkit's cache, for the checks' PATH
    (`pnpm -r run test`, `yarn workspaces foreach`); None for npm, the machine's."""
    return None if manager == "npm" else _folder(spec) / "node_modules" / ".bin"


def tool(manager: str, spec: str) -> Path:
    """The manager's program: npm's own, or the package installed from the registry
    into benchkit's cache, once per spec. Raises `ProcError` (npm's failure)."""
    if manager == "npm":
        return Path(shutil.which("npm", path=npm_env()["PATH"]) or "npm")
    folder = _folder(spec)
    program = folder / "node_modules" / ".bin" / manager
    with locked(folder):
        if not program.exists():
            folder.parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=f"{folder.name}.", dir=folder.parent))
            try:
                install = ["npm", "install", "--no-save", "--no-audit", "--no-fund"]
                capture([*install, "--prefix", str(tmp), spec], env=npm_env(), timeout_s=TOOL_S)
                shutil.rmtree(folder, ignore_errors=True)
                os.replace(tmp, folder)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
    return program


def install_command(manager: str, program: Path, files: dict[str, str]) -> list[str]:
    """The install from the lock file, never changing it."""
    if manager == "npm":
        return [str(program), "ci", "--no-audit", "--no-fund", "--loglevel=error"]
    if manager == "pnpm":
        return [str(program), "install", "--frozen-lockfile", "--reporter=append-only"]
    if _berry(files):
        return [str(program), "install", "--immutable"]
    return [str(program), "install", "--frozen-lockfile", "--non-interactive", "--no-progress"]
