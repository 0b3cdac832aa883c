"""Bench environments: what a bench's checks run with, never benchkit's own.

Each kind is a backend (`BACKENDS`: `venv`, `node`, `none`; see
`benchkit.workspace.recipe`). A built environment is cached by its recipe's key, its
files read-only, and never written in place. In a sandbox that binds (bubblewrap),
each pilot, and each baseline, sees it bound read-only where its own instance goes
(`bound`: nothing copied, and nothing can be written there, root included); the pilot
holds a shared lock on it meanwhile, so that a prune leaves it be. Otherwise each
runs in a copy of its own made of hard links (`cp -al`, a tenth of a second where
copying the bytes takes a second): a tool that replaces a file there (pip, uv, Python
writing bytecode, npm) replaces the copy's link only; one that writes into a file in
place is refused by its mode, or, as root, who ignores modes, is found afterwards by
the file's changed size or time: the cached environment is then dropped and built
again. An editable install is always a copy. `benchkit.workspace.inventory` lists
and prunes what the cache holds.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import time
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from benchkit.bench.bench_file import Bench
from benchkit.errors import BenchError
from benchkit.workspace.cache import discard, held_if_free, locked, locked_if_free
from benchkit.workspace.caller import Caller
from benchkit.workspace.commands import caller_path, words
from benchkit.workspace.node import Node
from benchkit.workspace.proc import ProcError, capture
from benchkit.workspace.processes import stop_marked
from benchkit.workspace.recipe import (
    BUILDING,
    LAST_USED,
    META,
    Backend,
    Environment,
    EnvironmentFailure,
    Recipe,
    contents,
    envs_dir,
    manifest,
)
from benchkit.workspace.repository import Repository
from benchkit.workspace.venv import Venv, uv

BACKENDS: dict[str, Backend] = {"venv": Venv(), "node": Node(), "none": Caller()}
"""Every kind of bench environment by the `kind` a bench file gives; a new kind is one
`Backend` subclass and one entry here."""
IN_USE = ".in-use"  # beside an environment: shared-locked by each pilot that binds it


def backend(kind: str) -> Backend:
    """The backend of an environment kind. Raises `BenchError` naming the kinds."""
    try:
        return BACKENDS[kind]
    except KeyError:
        raise BenchError(
            "environment", "kind", f"{kind!r} is not one of {', '.join(BACKENDS)}"
        ) from None


def recipe(bench: Bench, repo: Repository) -> Recipe:
    """What the bench's environment is made of, read at base; raises `BenchError`."""
    return backend(bench.file.environment.kind).recipe(bench, repo)


def _load(path: Path, recipe: Recipe) -> Environment | None:
    try:
        meta = json.loads((path / META).read_text())
    except (OSError, ValueError):
        return None
    return Environment(recipe=recipe, path=path, packages=tuple(meta["packages"]), reused=True)


def ensure(recipe: Recipe, *, log: Path) -> Environment:
    """The environment of a recipe: from the cache, or built now from the recipe's own
    files (what a killed build left swept first). Raises `EnvironmentFailure`."""
    builder = backend(recipe.kind)
    final = envs_dir() / recipe.key
    if not builder.cached:
        return builder.build(recipe, final, log=log)
    final.parent.mkdir(parents=True, exist_ok=True)
    if final.parent not in _SWEPT:  # once a process: a build killed since, the next one
        swept()
        _SWEPT.add(final.parent)
    with locked(final, shared=True):  # beside the copies other pilots make of it
        found = _load(final, recipe)
    if found is None:
        with locked(final):  # one build per key, whatever runs in parallel
            found = _load(final, recipe)
            if found is None:
                return builder.build(recipe, final, log=log)
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(f"environment {recipe.key}: reused from {final}\n")
    return found


_SWEPT: set[Path] = set()  # the caches whose killed builds this process swept (`ensure`)


def swept() -> list[str]:
    """What builds whose own process was killed left (a SIGKILL leaves what no
    `finally` removes): for each temporary folder `<key>.<random>` of a key no process
    is building (its lock free), every process carrying `BENCHKIT_BUILD=<key>` is
    stopped and the folder removed. The keys swept; a listing of the cache, at most."""
    left: dict[str, list[Path]] = {}
    try:  # by the listing's own file types: no look at each lock and mark
        with os.scandir(envs_dir()) as listed:
            entries = [(entry.name, entry.is_dir()) for entry in listed]
    except OSError:
        return []
    kinds = tuple(f"{kind}-" for kind, b in BACKENDS.items() if b.cached)
    for name, is_folder in entries:
        key, dot, _ = name.partition(".")  # its lock and in-use marks are files
        if dot and is_folder and key.startswith(kinds):
            left.setdefault(key, []).append(envs_dir() / name)
    swept = []
    for key, folders in sorted(left.items()):
        with locked_if_free(envs_dir() / key) as free:
            if free:
                stop_marked(f"{BUILDING}={key}".encode())
                for folder in folders:
                    discard(folder)
                swept.append(key)
    return swept


def programs(commands: Sequence[str | Sequence[str]], environment: Environment) -> list[str]:
    """What each command's program resolves to on the checks' PATH, with the time its
    file last changed: `word=path@mtime_ns` (`word=?` when nothing does)."""
    kind = backend(environment.recipe.kind)
    built = environment.path
    folders = [str(kind.source(built) / kind.bin)] if built is not None else []
    path = os.pathsep.join([*folders, *caller_path()])
    found = []
    resolved: dict[str, str] = {}  # each program looked for once (`python -m ...`, mostly)
    for command in commands:
        said = words(command)
        if not said:
            continue
        if said[0] not in resolved:
            resolved[said[0]] = _program(said[0], path)
        found.append(f"{said[0]}={resolved[said[0]]}")
    return found


def _program(word: str, path: str) -> str:
    """`path@mtime_ns` of the file `word` runs on `path`, links followed (a link pointed
    elsewhere is a new tool), or `?`."""
    where = _found(word, path)
    if where is None or not os.access(where, os.X_OK):  # gone since: looked for again
        _found.cache_clear()
        where = _found(word, path)
    if where is None:
        return "?"
    real = Path(where).resolve()
    return f"{real}@{real.stat().st_mtime_ns}"


@lru_cache(maxsize=64)
def _found(word: str, path: str) -> str | None:
    """The first `word` on `path`: its folders looked through once a process (at every
    pilot's key they cost it a millisecond or two beside the checks), the found one
    only checked again; one put earlier on the PATH since is seen by the next."""
    return shutil.which(word, path=path)


@dataclass(frozen=True, kw_only=True)
class Instance:
    """One pilot's own instance of an environment, for one tree: a copy, or the cached
    environment bound read-only at `path` by the sandbox."""

    environment: Environment
    path: Path | None  # the copy, or where the sandbox binds the environment; None for `none`
    tree: Path
    source: Path | None = None  # bound from here (read-only, by the sandbox); None: a copy
    writable: tuple[tuple[Path, Path], ...] = ()  # (the pilot's own folder, bound over one)
    parts: tuple[tuple[Path, Path], ...] = ()  # further folders: (in the cache, in the tree)

    @property
    def binds(self) -> tuple[tuple[Path, Path], ...]:
        """What the sandbox binds read-only for this instance: (from, to)."""
        if self.source is None or self.path is None:
            return ()
        return ((self.source, self.path), *self.parts)

    @property
    def placed(self) -> tuple[Path, ...]:
        """Every folder of this instance: its own, and the further ones in the tree."""
        return () if self.path is None else (self.path, *(to for _, to in self.parts))

    def variables(self) -> dict[str, str]:
        """PATH (and VIRTUAL_ENV, PYTHONPATH) for a command that runs in this instance."""
        recipe = self.environment.recipe
        return backend(recipe.kind).variables(recipe, self.path, self.tree)


def instantiate(
    environment: Environment, *, where: Path, tree: Path, log: Path, bound: bool = False
) -> Instance:
    """The pilot's own instance of the environment, with the tree's code importable as
    the recipe says, where its backend places it (a node environment's is the tree's
    `node_modules`). With `bound` (commands run in a sandbox that binds it read-only), the cached
    environment itself, held in use until `remove`; else a copy, as is an editable
    install's. Raises `EnvironmentFailure`."""
    if environment.path is None:
        return Instance(environment=environment, path=None, tree=tree)
    kind = backend(environment.recipe.kind)
    source = kind.source(environment.path)
    bound = bound and environment.recipe.project != "editable"
    asked, where = where, kind.placed(where, tree)
    within = kind.within(environment.recipe, environment.path)
    parts = tuple((environment.path / folder, tree / folder) for folder in within)
    for place in [where, *(to for _, to in parts)] if where != asked else []:  # in the tree
        if place.exists() or place.is_symlink():
            raise EnvironmentFailure(f"{place} exists already: the environment's goes there")
    shutil.rmtree(where, ignore_errors=True)  # a copy a killed run left: never copy into it
    try:
        if bound:
            _hold(environment.path, where)  # first: the order a drop takes them in
        with locked(environment.path, shared=True):  # not while a drop or a prune removes it
            if not (environment.path / META).exists():
                raise OSError(f"the cached environment {environment.path.name} was removed")
            writable: tuple[tuple[Path, Path], ...] = ()
            for origin, place in ((source, where), *parts):
                if bound:
                    place.mkdir(parents=True)  # where bubblewrap binds it
                    writable += _own_folders(origin, place, kind.writable, tree)
                else:
                    capture(["cp", "-al", str(origin), str(place)])  # hard links, same fs
            (environment.path / LAST_USED).touch()
        if bound:
            return Instance(
                environment=environment,
                path=where,
                tree=tree,
                source=source,
                writable=writable,
                parts=parts,
            )
        if environment.recipe.project == "editable":
            python = str(where / "bin" / "python")
            output = uv("pip", "install", "--python", python, "--no-deps", "-e", str(tree))
            with log.open("a") as handle:
                handle.write(output)
    except BaseException as exc:
        release(where)
        for place in (where, *(to for _, to in parts)):
            shutil.rmtree(place, ignore_errors=True)
        if not isinstance(exc, ProcError | OSError):
            raise  # an interrupt: nothing held, nothing left
        with log.open("a") as handle:
            handle.write(f"{exc}\n{getattr(exc, 'stderr', '')}\n")
        raise EnvironmentFailure(f"the environment could not be set up: {exc}") from None
    return Instance(environment=environment, path=where, tree=tree, parts=parts)


def _own_folders(
    source: Path, where: Path, names: tuple[str, ...], tree: Path
) -> tuple[tuple[Path, Path], ...]:
    """The folders of a bound environment its tools write into, each the instance's
    own: an empty folder beside its tree, bound writable over the read-only one
    (whose mount point, an empty folder, the cached environment gets once: a folder,
    which no manifest counts)."""
    if not names:
        return ()
    inside = where.relative_to(tree) if where.is_relative_to(tree) else Path(where.name)
    own = tree.with_name(f"{tree.name}.own") / inside  # beside the tree
    found = []
    for name in names:
        (source / name).mkdir(exist_ok=True)
        (own / name).mkdir(parents=True, exist_ok=True)
        found.append((own / name, where / name))
    return tuple(found)


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
    with held_if_free(_in_use(environment)) as free:
        yield free


def env_copy_of(worktree: Path) -> Path:
    """Where a pilot keeps its copy of the environment: beside its worktree."""
    return worktree.with_name(f"{worktree.name}-env")


class EnvironmentWarning(UserWarning):
    """A cached environment found changed, and dropped."""


def remove(
    instance: Instance | None, *, read_only: bool = False, going: Path | None = None
) -> None:
    """Remove a pilot's copy; check that the cached environment is as it was built,
    and drop it (with a warning) when it is not. A copy that was `read_only` to every
    command run with it (bubblewrap binds it so) cannot have written the cache: no
    check then (a walk of the whole environment, most of a pilot's cleanup). What of
    it is in the folder `going` (which the caller discards next, the pilot's) goes
    with that folder."""
    if instance is None or instance.path is None:
        return
    release(instance.path)
    own = instance.tree.with_name(f"{instance.tree.name}.own")
    for place in [*instance.placed, *([own] if instance.writable else [])]:
        if going is None or not place.is_relative_to(going):
            discard(place)
    if read_only or instance.source is not None:  # bubblewrap bound it read-only
        return
    cached_path = instance.environment.path
    assert cached_path is not None
    with locked(cached_path, shared=True):  # beside other pilots' copies and checks
        seen = _meta_text(cached_path)
        if seen is None or _as_built(cached_path, seen):
            return  # dropped meanwhile, or as it was built
    said = "it was dropped and will be built again"
    if not _drop(cached_path, seen):
        said = (
            f"pilots that bind it were still at work after {DROP_WAIT_S:g} s: it was kept; "
            "`benchkit env prune --all` drops it once they are done"
        )
    warnings.warn(
        f"a file of the cached environment {cached_path} was written in place; {said}",
        EnvironmentWarning,
        stacklevel=2,
    )


def _drop(cached_path: Path, seen: str) -> bool:
    """Remove the cached environment whose `META` read `seen` once no pilot binds it
    (within `DROP_WAIT_S`); whether it is gone."""
    deadline = time.monotonic() + DROP_WAIT_S
    while not removed_unless_bound(cached_path, seen=seen):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.2)
    return True


def removed_unless_bound(cached_path: Path, *, seen: str | None = None) -> bool:
    """Remove a cached environment unless a pilot binds it; whether it was. With
    `seen`, the build whose `META` read so; one whose `META` reads otherwise now (another
    pilot's check dropped it and a pilot built it again since, or a pilot's arm wrote
    its `META` through a copy's link) is checked again, and kept only as built."""
    with _unused(cached_path) as unused:
        if unused:
            with locked(cached_path):
                now = _meta_text(cached_path)
                if seen is None or now == seen or (now and not _as_built(cached_path, now)):
                    shutil.rmtree(cached_path, ignore_errors=True)
        return unused


def _meta_text(cached_path: Path) -> str | None:
    try:
        return (cached_path / META).read_text()
    except OSError:
        return None


def _as_built(cached_path: Path, meta_text: str) -> bool:
    """Whether a cached environment is as its `META` (read as `meta_text`) says it was
    built: its files' sizes and times, then their bytes (what an arm that restores the
    times of a file it rewrote changes); one built before benchkit kept its contents'
    digest, by sizes and times only. An unreadable `META` is not."""
    try:
        meta = json.loads(meta_text)
        built, digest = meta["manifest"], meta.get("contents")
    except (ValueError, KeyError, TypeError):
        return False
    return manifest(cached_path) == built and digest in (None, contents(cached_path))
