"""A Node repository's workspace packages: the folders that its `pnpm-workspace.yaml`
(`packages:`) or its root `package.json` (`workspaces`, npm's and yarn's) names by
globs, found among the repository's files at base.

A workspace installs once at its root; each package may get a `node_modules` of its
own there (pnpm links each package's dependencies so), which a pilot's tree gets at
the same place. Pure: texts and paths in, folders out.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from fnmatch import fnmatchcase
from pathlib import PurePosixPath

PNPM_WORKSPACE = "pnpm-workspace.yaml"
PACKAGE = "package.json"


class WorkspaceError(ValueError):
    """A workspace file that cannot be read: its message names the file and the field."""


def package_globs(files: Mapping[str, str]) -> tuple[str, ...]:
    """The globs of a workspace's packages (`packages/*`, `!**/fixtures/**`): pnpm's
    file's, else the root package.json's `workspaces` (a list, or yarn's
    `{packages: [...]}`); none for a repository that is not a workspace. Raises
    `WorkspaceError`."""
    if PNPM_WORKSPACE in files:
        import yaml  # here: a pilot of a bench that is no pnpm workspace never needs it

        try:
            said = yaml.safe_load(files[PNPM_WORKSPACE]) or {}
        except yaml.YAMLError as exc:
            raise WorkspaceError(f"{PNPM_WORKSPACE}: not YAML ({exc})".splitlines()[0]) from None
        listed = said.get("packages", []) if isinstance(said, dict) else None
        return _globs(listed, f"{PNPM_WORKSPACE}: packages")
    try:
        said = json.loads(files.get(PACKAGE, "{}"))
    except ValueError as exc:
        raise WorkspaceError(f"{PACKAGE}: not JSON ({exc})") from None
    listed = said.get("workspaces", []) if isinstance(said, dict) else []
    if isinstance(listed, dict):
        listed = listed.get("packages", [])
    return _globs(listed, f"{PACKAGE}: workspaces")


def _globs(listed: object, where: str) -> tuple[str, ...]:
    if listed is None or not isinstance(listed, list):
        raise WorkspaceError(f"{where}: not a list of globs")
    found = []
    for glob in listed:
        if not isinstance(glob, str) or not glob.strip():
            raise WorkspaceError(f"{where}: {glob!r} is not a glob")
        found.append(glob.strip())
    return tuple(found)


def _matches(glob: Sequence[str], parts: Sequence[str]) -> bool:
    """Whether a folder's path segments match a glob's (`**`: any number of them)."""
    if not glob:
        return not parts
    if glob[0] == "**":
        return any(_matches(glob[1:], parts[n:]) for n in range(len(parts) + 1))
    return bool(parts) and fnmatchcase(parts[0], glob[0]) and _matches(glob[1:], parts[1:])


def _segments(glob: str) -> tuple[str, ...]:
    return tuple(s for s in glob.removeprefix("./").strip("/").split("/") if s not in ("", "."))


def package_folders(globs: Sequence[str], paths: Iterable[str]) -> tuple[str, ...]:
    """The folders of the repository's `paths` that hold a package.json and that the
    workspace's globs name (a `!glob` leaves folders out; nothing in a node_modules),
    sorted; the root is never one of them."""
    take = [_segments(g) for g in globs if not g.startswith("!")]
    leave = [_segments(g[1:]) for g in globs if g.startswith("!")]
    found = set()
    for path in paths:
        where = PurePosixPath(path)
        if where.name != PACKAGE or where.parent == PurePosixPath("."):
            continue
        parts = where.parent.parts
        if "node_modules" in parts:
            continue
        if any(_matches(g, parts) for g in take) and not any(_matches(g, parts) for g in leave):
            found.add(str(where.parent))
    return tuple(sorted(found))
