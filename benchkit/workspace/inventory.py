"""The cache's inventory of bench environments: what `benchkit env list` shows and
`benchkit env prune` removes."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchkit.errors import UsageError
from benchkit.workspace.environment import BACKENDS, removed_unless_bound, swept
from benchkit.workspace.recipe import LAST_USED, META, envs_dir


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
    """The built environments in the cache, newest first (what builds killed midway
    left swept first)."""
    swept()
    found = []
    folder = envs_dir()
    kinds = [p for k, b in BACKENDS.items() if b.cached for p in folder.glob(f"{k}-*")]
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
    removing is always safe. Raises `UsageError` for days that are no number of days
    (NaN, which no age is less than, would remove them all)."""
    if unused_days is not None and not (math.isfinite(unused_days) and unused_days >= 0):
        raise UsageError("--unused-days", "", f"is a number of days, 0 or more, not {unused_days}")
    now = datetime.now(UTC)
    removed = []
    for entry in cached():
        last = entry.last_used or datetime.fromisoformat(entry.built_at)
        if unused_days is not None and (now - last).total_seconds() < unused_days * 86400:
            continue
        if removed_unless_bound(entry.path):
            removed.append(entry.key)
    return removed
