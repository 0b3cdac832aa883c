"""A bench's repository: its mirror (cloned once, fetched on each planning), base
resolved, and the human reference and held-out tests committed on base.

A bench's `git` source is mirrored in the cache, one mirror per source, whatever
the benches that share it; a `tree` source becomes a bare repository of two commits.
A patch (a human reference, a test patch) is committed on base once per (base,
patch), under a ref of benchkit's own that the mirror's fetch keeps. The git
plumbing itself is `benchkit.workspace.git`.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from benchkit.errors import BenchError, RefError
from benchkit.workspace.cache import cache_dir, locked
from benchkit.workspace.git import changed_paths, commit_tree, files_of, git, with_files_of
from benchkit.workspace.proc import ProcError

if TYPE_CHECKING:  # a bench file's model (pydantic): not for the commands that only read
    from benchkit.bench.bench_file import Bench


@dataclass(frozen=True, kw_only=True)
class Repository:
    """A bench's repository, ready: its mirror and the resolved shas."""

    mirror: Path
    base_sha: str
    human_sha: str
    tests_sha: str | None = None  # base with the bench's test patch, when it has one

    @property
    def checked_base(self) -> str:
        """What the checks at base run on: base, with the held-out tests if any."""
        return self.tests_sha or self.base_sha


def _digest(*parts: bytes) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(len(part).to_bytes(8, "big"))
        h.update(part)
    return h.hexdigest()[:16]


def _tree_digest(folder: Path) -> bytes:
    h = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        h.update(str(path.relative_to(folder)).encode())
        h.update(b"\0x" if os.access(path, os.X_OK) else b"\0-")
        h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.digest()


def _commit_patch(mirror: Path, base_sha: str, patch: Path, message: str) -> str:
    """Commit `patch` on top of `base_sha` without a worktree, with the fixed identity
    (its index in the mirror: a killed benchkit's is left there, not in /tmp)."""
    with tempfile.TemporaryDirectory(prefix="benchkit-index-", dir=mirror) as tmp:
        index = str(Path(tmp) / "index")
        git("read-tree", base_sha, cwd=mirror, GIT_INDEX_FILE=index)
        git(
            "apply", "--cached", "--whitespace=nowarn", str(patch), cwd=mirror, GIT_INDEX_FILE=index
        )
        tree = git("write-tree", cwd=mirror, GIT_INDEX_FILE=index).strip()
    return commit_tree(mirror, tree, base_sha, message)


def _build_from_tree(bench: Bench, folder: Path, patch: Path) -> Path:
    """A bare repository with two commits, base (the folder) and human (the patch)."""
    key = _digest(_tree_digest(folder), patch.read_bytes(), bench.name.encode())
    mirror = cache_dir() / "repos" / f"{bench.name}-tree-{key}.git"
    with locked(mirror):
        if (mirror / "refs" / "benchkit" / "human").exists():
            return mirror
        tmp = Path(tempfile.mkdtemp(prefix=mirror.name + ".", dir=mirror.parent))
        try:
            _fill_from_tree(bench, tmp, folder, patch)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)  # no half-made mirror stays
            raise
        os.replace(tmp, mirror)
    return mirror


def _fill_from_tree(bench: Bench, tmp: Path, folder: Path, patch: Path) -> None:
    """Commit the folder as base and the patch on it as human, in a new bare repository."""
    git("init", "--quiet", "--bare", str(tmp))
    with tempfile.TemporaryDirectory(prefix="benchkit-index-", dir=tmp) as scratch:
        index = str(Path(scratch) / "index")
        work = ["--git-dir", str(tmp), "--work-tree", str(folder)]
        git(*work, "add", "--all", ".", cwd=folder, GIT_INDEX_FILE=index)
        tree = git("write-tree", cwd=tmp, GIT_INDEX_FILE=index).strip()
    base = commit_tree(tmp, tree, None, f"{bench.name}: base")
    git("update-ref", "refs/benchkit/base", base, cwd=tmp)
    try:
        human = _commit_patch(tmp, base, patch, f"{bench.name}: human reference")
    except ProcError as exc:
        raise BenchError(bench.path, "human.patch", f"does not apply to the tree: {exc}") from None
    git("update-ref", "refs/benchkit/human", human, cwd=tmp)


def _slug(source: str) -> str:
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", source.rstrip("/").rsplit("/", 1)[-1])
    return name.removesuffix(".git") or "repo"


# A mirror's fetch: every ref of its origin, but benchkit's own (the human references
# and held-out tests it committed), which a prune would otherwise delete
MIRROR_REFS = ("+refs/*:refs/*", "^refs/benchkit/*")


def _mirror_git(source: str, fetched: dict[str, Path] | None = None) -> Path:
    """Clone a repository as a mirror once, then fetch it on every later use (once a
    planning, with `fetched`: the mirrors it fetched, by source)."""
    local = Path(source).expanduser()
    url = str(local.resolve()) if local.exists() else source
    if fetched is None:
        return _fetched(url)
    with _FETCHING:  # benches planned in threads: each mirror fetched by one of them
        if url not in fetched:
            fetched[url] = _fetched(url)
        return fetched[url]


_FETCHING = threading.Lock()


def _fetched(url: str) -> Path:
    mirror = cache_dir() / "repos" / f"{_slug(url)}-{_digest(url.encode())}.git"
    with locked(mirror):
        if mirror.exists():
            git("fetch", "--quiet", "--prune", "origin", *MIRROR_REFS, cwd=mirror)
        else:
            tmp = Path(tempfile.mkdtemp(prefix=mirror.name + ".", dir=mirror.parent))
            try:  # `--`: a source that looks like an option is still a URL
                git("clone", "--quiet", "--mirror", "--", url, str(tmp))
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)  # no half-made mirror stays
                raise
            os.replace(tmp, mirror)
    return mirror


def missing_commits(repo: Path, shas: Sequence[str]) -> list[str]:
    """Those of `shas` that name no commit of the repository at `repo` (one git call)."""
    asked = "".join(f"{sha}^{{commit}}\n" for sha in shas)
    out = git("cat-file", "--batch-check", cwd=repo, input_text=asked).splitlines()
    return [sha for sha, line in zip(shas, out, strict=True) if line.endswith(" missing")]


def resolve(mirror: Path, ref: str) -> str | None:
    try:
        return git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", cwd=mirror).strip()
    except ProcError:
        return None


def prepare_repository(bench: Bench, fetched: dict[str, Path] | None = None) -> Repository:
    """The bench's mirror with base and human resolved; a bad ref is a `BenchError`.
    `fetched`: the mirrors fetched so far by the caller (one planning), by source."""
    repo, human = bench.file.repo, bench.file.human
    if repo.tree is not None:
        assert human.patch is not None
        mirror = _build_from_tree(bench, bench.resolve(repo.tree), bench.resolve(human.patch))
        base_ref, human_ref = "refs/benchkit/base", "refs/benchkit/human"
    else:
        assert repo.git is not None and repo.base is not None
        try:
            mirror = _mirror_git(repo.git, fetched)
        except ProcError as exc:
            raise BenchError(bench.path, "repo.git", f"cannot clone: {exc}") from None
        base_ref, human_ref = repo.base, human.ref or ""
    base_sha = resolve(mirror, base_ref)
    if base_sha is None:
        raise BenchError(bench.path, "repo.base", f"no such ref: {base_ref}")
    if human.ref is not None:
        human_sha = resolve(mirror, human_ref)
        if human_sha is None:
            raise BenchError(bench.path, "human.ref", f"no such ref: {human_ref}")
    elif repo.git is not None:
        assert human.patch is not None
        human_sha = _patched(bench, mirror, base_sha, "human.patch", "human reference")
    else:
        found = resolve(mirror, human_ref)
        assert found is not None
        human_sha = found
    if human_sha == base_sha:
        field = "human.ref" if human.ref is not None else "human.patch"
        raise BenchError(bench.path, field, "names the base commit itself: no change to measure")
    tests = bench.file.tests
    tests_sha = None
    if tests is not None and tests.test_patch is not None:
        tests_sha = _patched(bench, mirror, base_sha, "tests.test_patch", "held-out tests")
    return Repository(mirror=mirror, base_sha=base_sha, human_sha=human_sha, tests_sha=tests_sha)


def _patched(bench: Bench, mirror: Path, base_sha: str, field: str, what: str) -> str:
    """Base with the bench's patch file of `field` (`human.patch`, `tests.test_patch`)
    committed on it, once per (base, patch) in the mirror: its ref is made only where
    none is (git's own ref lock), so benches planned at once, in threads or processes,
    agree on one commit without a lock of benchkit's."""
    section, key = field.split(".")
    patch = bench.resolve(getattr(getattr(bench.file, section), key))
    kind = "human" if section == "human" else "tests"
    ref = f"refs/benchkit/{kind}-{_digest(base_sha.encode(), patch.read_bytes())}"
    found = resolve(mirror, ref)
    if found:
        return found
    try:
        sha = _commit_patch(mirror, base_sha, patch, f"{bench.name}: {what}")
    except ProcError as exc:
        raise BenchError(bench.path, field, f"does not apply at base: {exc}") from None
    try:
        git("update-ref", ref, sha, "0" * 40, cwd=mirror)  # only where no ref is yet
    except ProcError:
        made = resolve(mirror, ref)  # made meanwhile, by another planning
        if made is None:
            raise
        return made
    return sha


def with_tests(repo: Repository, sha: str) -> str:
    """`sha` with the files of the bench's test patch as base with it has them (the
    commit the checks after the arm see), made in the mirror; `sha` itself when the
    bench has no test patch."""
    if repo.tests_sha is None:
        return sha
    if sha == repo.base_sha:
        return repo.tests_sha
    paths = changed_paths(repo.mirror, repo.base_sha, repo.tests_sha)
    tree = with_files_of(
        repo.mirror, f"{sha}^{{tree}}", files_of(repo.mirror, repo.tests_sha), paths
    )
    return commit_tree(repo.mirror, tree, sha, "benchkit: with the held-out tests")


def mirror_repository(repo: Path) -> Path:
    """The cached mirror of a local repository (or URL), fetched afresh."""
    try:
        return _mirror_git(str(repo))
    except ProcError as exc:
        raise RefError(repo, "", f"not a git repository: {exc}") from None


def resolve_ref(mirror: Path, repo: Path, ref: str, what: str) -> str:
    """A ref's commit in the mirror; a missing ref is a `RefError` naming it."""
    sha = resolve(mirror, ref)
    if sha is None:
        raise RefError(repo, what, f"no such ref: {ref}")
    return sha
