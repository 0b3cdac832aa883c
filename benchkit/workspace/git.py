"""Git: cached mirrors, one fresh worktree per pilot, the arm's diff, patches.

Every git command runs with the user's and the system's git configuration shut
out, so that a diff is parsed the same way on every machine and the demo's commits
get the same shas everywhere.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from benchkit.bench.bench_file import Bench
from benchkit.errors import BenchError, RefError
from benchkit.workspace.cache import cache_dir, locked
from benchkit.workspace.proc import ProcError, capture

FIXED_IDENTITY = {
    "GIT_AUTHOR_NAME": "benchkit",
    "GIT_AUTHOR_EMAIL": "benchkit@example.invalid",
    "GIT_AUTHOR_DATE": "2024-01-01T00:00:00+00:00",
    "GIT_COMMITTER_NAME": "benchkit",
    "GIT_COMMITTER_EMAIL": "benchkit@example.invalid",
    "GIT_COMMITTER_DATE": "2024-01-01T00:00:00+00:00",
}


def git_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") and k not in ("EMAIL",)}
    env.update(
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_TERMINAL_PROMPT="0",
        LC_ALL="C",
    )
    env.update(FIXED_IDENTITY)
    if extra:
        env.update(extra)
    return env


def git(*args: str, cwd: Path | None = None, input_text: str | None = None, **env: str) -> str:
    return capture(["git", *args], cwd=cwd, env=git_env(env), input_text=input_text)


@dataclass(frozen=True, kw_only=True)
class Repository:
    """A bench's repository, ready: its mirror and the resolved shas."""

    mirror: Path
    base_sha: str
    human_sha: str


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


def _commit(mirror: Path, tree: str, parent: str | None, message: str) -> str:
    args = ["commit-tree", tree, "-m", message]
    if parent:
        args += ["-p", parent]
    return git(*args, cwd=mirror).strip()


def _commit_patch(mirror: Path, base_sha: str, patch: Path, message: str) -> str:
    """Commit `patch` on top of `base_sha` without a worktree, with the fixed identity."""
    with tempfile.TemporaryDirectory(prefix="benchkit-index-") as tmp:
        index = str(Path(tmp) / "index")
        git("read-tree", base_sha, cwd=mirror, GIT_INDEX_FILE=index)
        git(
            "apply", "--cached", "--whitespace=nowarn", str(patch), cwd=mirror, GIT_INDEX_FILE=index
        )
        tree = git("write-tree", cwd=mirror, GIT_INDEX_FILE=index).strip()
    return _commit(mirror, tree, base_sha, message)


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
    with tempfile.TemporaryDirectory(prefix="benchkit-index-") as scratch:
        index = str(Path(scratch) / "index")
        work = ["--git-dir", str(tmp), "--work-tree", str(folder)]
        git(*work, "add", "--all", ".", cwd=folder, GIT_INDEX_FILE=index)
        tree = git("write-tree", cwd=tmp, GIT_INDEX_FILE=index).strip()
    base = _commit(tmp, tree, None, f"{bench.name}: base")
    git("update-ref", "refs/benchkit/base", base, cwd=tmp)
    try:
        human = _commit_patch(tmp, base, patch, f"{bench.name}: human reference")
    except ProcError as exc:
        raise BenchError(bench.path, "human.patch", f"does not apply to the tree: {exc}") from None
    git("update-ref", "refs/benchkit/human", human, cwd=tmp)


def _slug(source: str) -> str:
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", source.rstrip("/").rsplit("/", 1)[-1])
    return name.removesuffix(".git") or "repo"


def _mirror_git(source: str) -> Path:
    """Clone a repository as a mirror once, then fetch it on every later use."""
    local = Path(source).expanduser()
    url = str(local.resolve()) if local.exists() else source
    mirror = cache_dir() / "repos" / f"{_slug(url)}-{_digest(url.encode())}.git"
    with locked(mirror):
        if mirror.exists():
            git("fetch", "--quiet", "--prune", "origin", cwd=mirror)
        else:
            tmp = Path(tempfile.mkdtemp(prefix=mirror.name + ".", dir=mirror.parent))
            try:  # `--`: a source that looks like an option is still a URL
                git("clone", "--quiet", "--mirror", "--", url, str(tmp))
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)  # no half-made mirror stays
                raise
            os.replace(tmp, mirror)
    return mirror


def resolve(mirror: Path, ref: str) -> str | None:
    try:
        return git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", cwd=mirror).strip()
    except ProcError:
        return None


def prepare_repository(bench: Bench) -> Repository:
    """The bench's mirror with base and human resolved; a bad ref is a `BenchError`."""
    repo, human = bench.file.repo, bench.file.human
    if repo.tree is not None:
        assert human.patch is not None
        mirror = _build_from_tree(bench, bench.resolve(repo.tree), bench.resolve(human.patch))
        base_ref, human_ref = "refs/benchkit/base", "refs/benchkit/human"
    else:
        assert repo.git is not None and repo.base is not None
        try:
            mirror = _mirror_git(repo.git)
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
        human_sha = _human_from_patch(bench, mirror, base_sha, bench.resolve(human.patch))
    else:
        found = resolve(mirror, human_ref)
        assert found is not None
        human_sha = found
    if human_sha == base_sha:
        field = "human.ref" if human.ref is not None else "human.patch"
        raise BenchError(bench.path, field, "names the base commit itself: no change to measure")
    return Repository(mirror=mirror, base_sha=base_sha, human_sha=human_sha)


def _human_from_patch(bench: Bench, mirror: Path, base_sha: str, patch: Path) -> str:
    ref = f"refs/benchkit/human-{_digest(base_sha.encode(), patch.read_bytes())}"
    with locked(mirror / "benchkit-human"):
        found = resolve(mirror, ref)
        if found:
            return found
        try:
            sha = _commit_patch(mirror, base_sha, patch, f"{bench.name}: human reference")
        except ProcError as exc:
            raise BenchError(bench.path, "human.patch", f"does not apply at base: {exc}") from None
        git("update-ref", ref, sha, cwd=mirror)
    return sha


def add_worktree(mirror: Path, sha: str, where: Path) -> Path:
    """A fresh detached worktree at `sha`."""
    with locked(mirror / "benchkit-worktrees"):
        git("worktree", "add", "--quiet", "--detach", str(where), sha, cwd=mirror)
    return where


def remove_worktree(mirror: Path, where: Path) -> None:
    with locked(mirror / "benchkit-worktrees"):
        try:
            git("worktree", "remove", "--force", "--force", str(where), cwd=mirror)
        except ProcError:
            shutil.rmtree(where, ignore_errors=True)
            git("worktree", "prune", cwd=mirror)


def snapshot(worktree: Path) -> str:
    """A tree object of the worktree as it is now: committed, staged, unstaged and
    untracked files, not ignored ones. The worktree's own index is left alone."""
    with tempfile.TemporaryDirectory(prefix="benchkit-index-") as tmp:
        index = str(Path(tmp) / "index")
        # Start from a copy of the worktree's index: its stat data spares rehashing.
        own = Path(
            git("rev-parse", "--path-format=absolute", "--git-path", "index", cwd=worktree).strip()
        )
        if own.exists():
            shutil.copy2(own, index)  # keep its mtime: git re-reads racily clean entries
        else:
            git("read-tree", "HEAD", cwd=worktree, GIT_INDEX_FILE=index)
        git("add", "--all", ".", cwd=worktree, GIT_INDEX_FILE=index)
        return git("write-tree", cwd=worktree, GIT_INDEX_FILE=index).strip()


def diff(repo_dir: Path, old: str, new: str, *, context: int = 0, binary: bool = False) -> str:
    """`git diff` between two commits or trees, rename-aware, with no config of the user."""
    args = ["diff", "--no-color", "--no-ext-diff", "--no-textconv", "-M", f"-U{context}"]
    if binary:
        args.append("--binary")
    return git(*args, old, new, "--", cwd=repo_dir)


def apply_patch(worktree: Path, patch_text: str) -> None:
    """Apply a patch to the worktree's files; raises `ProcError` when it does not apply."""
    if patch_text.strip():
        git("apply", "--whitespace=nowarn", "-", cwd=worktree, input_text=patch_text)


def file_text(repo_dir: Path, sha: str, path: str) -> str | None:
    """A file's text at a commit, or None when it is not there."""
    try:
        return git("show", f"{sha}:{path}", cwd=repo_dir)
    except ProcError:
        return None


def file_lines(repo_dir: Path, sha: str, path: str) -> list[str] | None:
    """A file's lines at a commit, or None when it is not there."""
    text = file_text(repo_dir, sha, path)
    return None if text is None else text.splitlines(keepends=True)


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
