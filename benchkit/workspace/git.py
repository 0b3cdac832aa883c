"""Git: cached mirrors, one fresh repository per pilot, the arm's diff, patches.

Every git command runs with the user's and the system's git configuration shut
out, so that a diff is parsed the same way on every machine and the demo's commits
get the same shas everywhere; with hooks and fsmonitor off, and paths unquoted.

A pilot's worktree is a repository of its own that borrows the mirror's objects
(as `clone --shared` would) and has no remote: what an arm does to its config, hooks
or refs stays in it. benchkit reads what the arm left through a git folder of its own
(`snapshot`), never through the worktree's `.git`, whose config the arm may have
written (a filter, a hook, an fsmonitor would run with benchkit's rights).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from benchkit.errors import BenchError, RefError
from benchkit.workspace.cache import cache_dir, discard, locked
from benchkit.workspace.proc import ProcError, capture

if TYPE_CHECKING:  # a bench file's model (pydantic): not for the commands that only read
    from benchkit.bench.bench_file import Bench

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


# Whatever a repository's own config says: no hook, no fsmonitor, paths as they are.
SAFE_CONFIG = (
    "-c",
    f"core.hooksPath={os.devnull}",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.quotePath=false",
)


def git(*args: str, cwd: Path | None = None, input_text: str | None = None, **env: str) -> str:
    return capture(["git", *SAFE_CONFIG, *args], cwd=cwd, env=git_env(env), input_text=input_text)


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


def _commit(mirror: Path, tree: str, parent: str | None, message: str) -> str:
    args = ["commit-tree", tree, "-m", message]
    if parent:
        args += ["-p", parent]
    return git(*args, cwd=mirror).strip()


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
    with tempfile.TemporaryDirectory(prefix="benchkit-index-", dir=tmp) as scratch:
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
    return _commit(repo.mirror, tree, sha, "benchkit: with the held-out tests")


def add_worktree(mirror: Path, sha: str, where: Path) -> Path:
    """A fresh repository of its own at `sha` (detached) that borrows the mirror's
    objects and has no remote and no ref, so nothing done in it reaches the mirror:
    its `.git` as `git init --template=` makes it (without the sample hooks), then
    one git process, `checkout`."""
    try:
        where.mkdir(parents=True, exist_ok=True)
        _git_folder(where / ".git", bare=False)
        _borrow(mirror, where / ".git")
        git("checkout", "--quiet", "--detach", sha, cwd=where)
    except BaseException:
        shutil.rmtree(where, ignore_errors=True)
        raise
    return where


def files_of(repo_dir: Path, tree: str) -> dict[str, tuple[str, str]]:
    """Every file of a tree or commit: its path, and its (mode, object id)."""
    listed = git("ls-tree", "-r", "-z", "--full-tree", tree, cwd=repo_dir)
    found = {}
    for entry in listed.split("\0"):
        if entry:
            meta, path = entry.split("\t", 1)
            mode, _kind, sha = meta.split()
            found[path] = (mode, sha)
    return found


def with_files_of(
    git_dir: Path, tree: str, theirs: Mapping[str, tuple[str, str]], paths: Sequence[str]
) -> str:
    """`tree` with each of `paths` as `theirs` (a tree's `files_of`) holds it (a path it
    lacks is removed), written in `git_dir` (a bare git folder, see `reader`)."""
    if not paths:
        return tree
    zero = "0" * 40
    lines = [
        f"{theirs[p][0]} {theirs[p][1]}\t{p}" if p in theirs else f"0 {zero}\t{p}" for p in paths
    ]
    with tempfile.TemporaryDirectory(prefix="benchkit-index-", dir=git_dir) as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        git("read-tree", tree, cwd=git_dir, **env)
        stdin = "".join(f"{line}\0" for line in lines)
        git("update-index", "-z", "--index-info", cwd=git_dir, input_text=stdin, **env)
        return git("write-tree", cwd=git_dir, **env).strip()


def check_out(git_dir: Path, tree: str, parent: str, where: Path) -> None:
    """`tree` (a tree of `git_dir`, see `snapshot`), as one commit on `parent`, checked
    out in the repository at `where` (see `add_worktree`), which then reads `git_dir`'s
    objects: every file of it as the tree has it, written by git."""
    commit = _commit(git_dir, tree, parent, "benchkit: the arm's diff, on a clean tree")
    _borrow(git_dir, where / ".git")
    git("checkout", "--quiet", "--force", "--detach", commit, cwd=where)


def remove_worktree(where: Path) -> None:
    discard(where)


def reader(mirror: Path, where: Path) -> Path:
    """A bare git folder of benchkit's own that reads the mirror's objects: it takes
    the snapshots of a worktree and diffs them, out of the arm's reach."""
    _git_folder(where, bare=True)
    return _borrow(mirror, where)


_MADE: dict[tuple[int, bool], tuple[tuple[str, str], ...]] = {}  # a file system's, by kind


def _git_folder(where: Path, *, bare: bool) -> None:
    """A git folder as `git init --template=` makes it: its folders, and its files as
    `git init` wrote them once in this process on the same file system (its config
    says what git found there: file modes, symlinks, case), without a git process."""
    for folder in ("objects/info", "objects/pack", "refs/heads", "refs/tags"):
        (where / folder).mkdir(parents=True, exist_ok=True)
    kind = (os.stat(where).st_dev, bare)
    if kind not in _MADE:
        _MADE[kind] = _init_files(where.parent, bare=bare)
    for name, text in _MADE[kind]:
        (where / name).write_text(text)


def _init_files(folder: Path, *, bare: bool) -> tuple[tuple[str, str], ...]:
    """The files (name, text) of the git folder that `git init` makes in `folder`."""
    with tempfile.TemporaryDirectory(dir=folder, prefix=".git-init-") as tmp:
        flags = ["--bare"] if bare else []
        git("init", "--quiet", *flags, "--template=", "--", tmp)
        made = Path(tmp) if bare else Path(tmp) / ".git"
        return tuple((name, (made / name).read_text()) for name in ("config", "HEAD"))


def _borrow(mirror: Path, git_dir: Path) -> Path:
    """`git_dir` reads the mirror's objects (as `clone --shared` would have it)."""
    info = git_dir / "objects" / "info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "alternates").write_text(f"{(mirror / 'objects').resolve()}\n")
    return git_dir


LEFT_OUT = "benchkit-left-out"  # in a reader's info/: folders no snapshot holds


def exclude(git_dir: Path, folder: str) -> None:
    """Leave a folder of the worktree (the environment's `node_modules`, say) out of
    the snapshots `git_dir` takes (see `reader`), even when the arm staged it."""
    info = git_dir / "info"
    info.mkdir(parents=True, exist_ok=True)
    with (info / "exclude").open("a") as handle:
        handle.write(f"/{folder}/\n")
    with (info / LEFT_OUT).open("a") as handle:
        handle.write(f"{folder}\n")


def leave_out(git_dir: Path, paths: Sequence[str]) -> None:
    """Leave what the environment wrote in the worktree before the arm (`untracked`:
    folders as `folder/`, and files) out of the snapshots `git_dir` takes."""
    for path in paths:
        if path.endswith("/"):
            exclude(git_dir, path.rstrip("/"))
        else:
            with (git_dir / "info" / "exclude").open("a") as handle:
                handle.write(f"/{path}\n")


def _left_out(into: Path) -> list[str]:
    try:
        return [line for line in (into / "info" / LEFT_OUT).read_text().splitlines() if line]
    except OSError:
        return []


def _regular_file(path: Path) -> bool:
    return path.is_file() and not path.is_symlink()


def snapshot(worktree: Path, into: Path, base_sha: str) -> str:
    """A tree object of the worktree as it is now (committed, staged, unstaged and
    untracked files, not ignored ones), written in `into` (see `reader`). The
    worktree's own index and objects are read as data, never its config or hooks."""
    own_git = worktree / ".git"
    own_objects = own_git / "objects"
    alternates = into / "objects" / "info" / "alternates"
    borrowed = alternates.read_text().splitlines()[:1]  # the mirror's, from `reader`
    if own_objects.is_dir() and not own_git.is_symlink():
        borrowed.append(str(own_objects.resolve()))  # what the arm committed or staged
    alternates.write_text("".join(f"{line}\n" for line in borrowed))
    work = ["--git-dir", str(into), "--work-tree", str(worktree)]
    with tempfile.TemporaryDirectory(prefix="benchkit-index-", dir=into) as tmp:  # the pilot's
        index = str(Path(tmp) / "index")
        env = {"GIT_INDEX_FILE": index}
        own_index = own_git / "index"
        if _regular_file(own_index):  # its stat data spares rehashing every file
            shutil.copy2(own_index, index)  # keep its mtime: git re-reads racily clean entries
            try:
                if not _flagged(work, worktree, env):  # else files git would not look at
                    git(*work, "add", "--all", ".", cwd=worktree, **env)
                    _unstage(work, worktree, env, _left_out(into))
                    return git(*work, "write-tree", cwd=worktree, **env).strip()
            except ProcError:
                pass  # an index git cannot use
            Path(index).unlink(missing_ok=True)  # start again from base
        git(*work, "read-tree", base_sha, cwd=worktree, **env)
        git(*work, "add", "--all", ".", cwd=worktree, **env)
        _unstage(work, worktree, env, _left_out(into))
        tree = git(*work, "write-tree", cwd=worktree, **env).strip()
    return tree


def _flagged(work: list[str], worktree: Path, env: dict[str, str]) -> bool:
    """Whether the index marks a file `assume-unchanged` (lowercase tag) or
    `skip-worktree` (`S`): `add --all` would not see what the arm changed in it."""
    listed = git(*work, "ls-files", "-v", "-z", cwd=worktree, **env)
    return any(e[:1].islower() or e[:1] == "S" for e in listed.split("\0") if e)


def ignored_files(worktree: Path, into: Path, tree: str) -> list[str]:
    """The files in the worktree that git ignores (by the worktree's `.gitignore` files
    and `into`'s exclude) and `tree` does not hold, but those in the folders left out of
    every snapshot (see `exclude`), sorted."""
    work = ["--git-dir", str(into), "--work-tree", str(worktree)]
    with tempfile.TemporaryDirectory(prefix="benchkit-index-", dir=into) as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        git(*work, "read-tree", tree, cwd=worktree, **env)
        listed = git(*work, "ls-files", "-z", "-o", "-i", "--exclude-standard", cwd=worktree, **env)
    left = tuple(f"{folder}/" for folder in _left_out(into))
    return sorted(p for p in listed.split("\0") if p and not p.startswith(left))


def untracked(worktree: Path, into: Path, tree: str) -> list[str]:
    """What the worktree holds that `tree` does not and git does not ignore (a folder
    whole, as `folder/`), sorted: before the arm, what its environment's install wrote
    (setuptools' `*.egg-info/`)."""
    work = ["--git-dir", str(into), "--work-tree", str(worktree)]
    with tempfile.TemporaryDirectory(prefix="benchkit-index-", dir=into) as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        git(*work, "read-tree", tree, cwd=worktree, **env)
        listed = git(
            *work, "ls-files", "-z", "-o", "--directory", "--exclude-standard", cwd=worktree, **env
        )
    return sorted(p for p in listed.split("\0") if p)


def _unstage(work: list[str], worktree: Path, env: dict[str, str], folders: list[str]) -> None:
    """Folders left out of a snapshot even when the arm's own index holds them."""
    if folders:
        rm = ["rm", "-r", "--cached", "--quiet", "--ignore-unmatch", "--", *folders]
        git(*work, *rm, cwd=worktree, **env)


def diff(
    repo_dir: Path,
    old: str,
    new: str,
    *,
    context: int = 0,
    binary: bool = False,
    leave_out: Sequence[str] = (),
) -> str:
    """`git diff` between two commits or trees, rename-aware, with no config of the user;
    without the files of `leave_out`."""
    args = ["diff", "--no-color", "--no-ext-diff", "--no-textconv", "-M", f"-U{context}"]
    if binary:
        args.append("--binary")
    paths = [f":(exclude,literal){path}" for path in leave_out]
    return git(*args, old, new, "--", *([":/", *paths] if paths else []), cwd=repo_dir)


def changed_paths(repo_dir: Path, old: str, new: str) -> list[str]:
    """Every path changed between two trees (a renamed file under both names)."""
    out = git("diff", "--name-only", "-z", "--no-renames", old, new, cwd=repo_dir)
    return sorted(p for p in out.split("\0") if p)


def binary_changes(repo_dir: Path, old: str, new: str) -> list[str]:
    """The files changed between two trees that git takes as binary, as they are named
    in `new`."""
    out = git("diff", "--numstat", "-z", "--no-renames", old, new, cwd=repo_dir)
    fields = out.split("\0")
    return [f.split("\t", 2)[2] for f in fields if f.startswith("-\t-\t")]


def apply_patch(worktree: Path, patch_text: str) -> None:
    """Apply a patch to the worktree's files and its index, so that the worktree's diff
    is the whole patch (a file it adds that a `.gitignore` matches included); raises
    `ProcError` when it does not apply."""
    if patch_text.strip():
        git("apply", "--index", "--whitespace=nowarn", "-", cwd=worktree, input_text=patch_text)


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
