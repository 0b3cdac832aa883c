"""Git: one fresh repository per pilot, the arm's tree and diff, patches, commits.

Every git command runs with the user's and the system's git configuration shut
out, so that a diff is parsed the same way on every machine and the demo's commits
get the same shas everywhere; with hooks and fsmonitor off, and paths unquoted.

A pilot's worktree is a repository of its own that borrows the mirror's objects
(as `clone --shared` would) and has no remote: what an arm does to its config, hooks
or refs stays in it. benchkit reads what the arm left through a git folder of its own
(`snapshot`), never through the worktree's `.git`, whose config the arm may have
written (a filter, a hook, an fsmonitor would run with benchkit's rights). A bench's
mirror and its resolved commits are `benchkit.workspace.repository`'s.
"""

from __future__ import annotations

import itertools
import os
import re
import shutil
import stat
import tempfile
import threading
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from benchkit.workspace.cache import discard
from benchkit.workspace.proc import ProcError, Stoppable, capture

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


def commit_tree(mirror: Path, tree: str, parent: str | None, message: str) -> str:
    """A commit of `tree` on `parent` (or none), with the fixed identity."""
    args = ["commit-tree", tree, "-m", message]
    if parent:
        args += ["-p", parent]
    return git(*args, cwd=mirror).strip()


def add_worktree(mirror: Path, sha: str, where: Path, *, within: Stoppable | None = None) -> Path:
    """A fresh repository of its own at `sha` (detached) that borrows the mirror's
    objects and has no remote and no ref, so nothing done in it reaches the mirror:
    its `.git` as `git init --template=` makes it (without the sample hooks), then
    one git process, `checkout` (which, made by a thread, `within` stops)."""
    try:
        where.mkdir(parents=True, exist_ok=True)
        _git_folder(where / ".git", bare=False)
        _borrow(mirror, where / ".git")
        checkout = ["git", *SAFE_CONFIG, "checkout", "--quiet", "--detach", sha]
        capture(checkout, cwd=where, env=git_env(), within=within)
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


_TOKEN = uuid.uuid4().hex  # this process's, among every process's on a shared cache
_INDEXES = itertools.count()  # its scratch indexes, by number


@contextmanager
def scratch_index(folder: Path) -> Iterator[dict[str, str]]:
    """An index of git's own making in `folder`, by a name no other has (this
    process's random token, then a count), removed (and a lock a killed git left
    beside it) once the block ends: git's environment that names it. No folder of its
    own: making one and removing it costs a pilot more than the index itself."""
    index = folder / f"benchkit-index-{_TOKEN}-{next(_INDEXES)}"
    try:
        yield {"GIT_INDEX_FILE": str(index)}
    finally:
        index.unlink(missing_ok=True)
        index.with_name(f"{index.name}.lock").unlink(missing_ok=True)


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
    with scratch_index(git_dir) as env:
        git("read-tree", tree, cwd=git_dir, **env)
        stdin = "".join(f"{line}\0" for line in lines)
        git("update-index", "-z", "--index-info", cwd=git_dir, input_text=stdin, **env)
        return git("write-tree", cwd=git_dir, **env).strip()


def check_out(git_dir: Path, tree: str, parent: str, where: Path) -> None:
    """`tree` (a tree of `git_dir`, see `snapshot`), as one commit on `parent`, checked
    out in the repository at `where` (see `add_worktree`), which then reads `git_dir`'s
    objects: every file of it as the tree has it, written by git."""
    commit = commit_tree(git_dir, tree, parent, "benchkit: the arm's diff, on a clean tree")
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
_LEARNING = threading.Lock()  # one `git init` at a time, whichever thread needs it first


def _git_folder(where: Path, *, bare: bool) -> None:
    """A git folder as `git init --template=` makes it: its folders, and its files as
    `git init` wrote them once in this process on the same file system (its config
    says what git found there: file modes, symlinks, case), without a git process."""
    for folder in ("objects/info", "objects/pack", "refs/heads", "refs/tags"):
        (where / folder).mkdir(parents=True, exist_ok=True)
    for name, text in _learned(where.parent, bare=bare):
        (where / name).write_text(text)


def git_folders_learned(folder: Path) -> None:
    """What `git init` writes on `folder`'s file system, for both kinds of git folder,
    learned now (`folder` made): by a thread as a launch begins, so that its first
    pilot's trees, which it waits for, run no `git init` (two, side by side, else)."""
    folder.mkdir(parents=True, exist_ok=True)
    for bare in (False, True):
        _learned(folder, bare=bare)


def _learned(folder: Path, *, bare: bool) -> tuple[tuple[str, str], ...]:
    """The files (name, text) of a git folder of the kind made in `folder`, as `git
    init` wrote them once in this process on its file system."""
    kind = (os.stat(folder).st_dev, bare)
    with _LEARNING:
        if kind not in _MADE:
            _MADE[kind] = _init_files(folder, bare=bare)
        return _MADE[kind]


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
    _excluded(git_dir, f"/{folder}/")
    with (git_dir / "info" / LEFT_OUT).open("a") as handle:
        handle.write(f"{folder}\n")


def leave_out(git_dir: Path, paths: Sequence[str]) -> None:
    """Leave what the environment wrote in the worktree before the arm (`untracked`:
    folders as `folder/`, and files) out of the snapshots `git_dir` takes."""
    for path in paths:
        if path.endswith("/"):
            exclude(git_dir, path.rstrip("/"))
        else:
            _excluded(git_dir, f"/{path}")


def exclude_patterns(git_dir: Path, patterns: Sequence[str]) -> None:
    """Leave the untracked files of the worktree that git patterns from its root
    match (`.aider*`) out of the snapshots `git_dir` takes; a tracked file stays in."""
    for pattern in patterns:
        _excluded(git_dir, f"/{pattern.lstrip('/')}")


def _excluded(git_dir: Path, pattern: str) -> None:
    info = git_dir / "info"
    info.mkdir(parents=True, exist_ok=True)
    with (info / "exclude").open("a") as handle:
        handle.write(f"{pattern}\n")


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
    work = _work(worktree, into)
    with scratch_index(into) as env:  # the pilot's
        index = env["GIT_INDEX_FILE"]
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


def ignored_files(worktree: Path, into: Path, tree: str, *, checked_out: bool = False) -> list[str]:
    """The files in the worktree that git ignores (by the worktree's `.gitignore` files
    and `into`'s exclude) and `tree` does not hold, but those in the folders left out of
    every snapshot (see `exclude`), sorted. `checked_out`: see `_holding`."""
    listed = _others(worktree, into, tree, checked_out, "-i")
    left = tuple(f"{folder}/" for folder in _left_out(into))
    return [p for p in listed if not p.startswith(left)]


def untracked(worktree: Path, into: Path, tree: str, *, checked_out: bool = False) -> list[str]:
    """What the worktree holds that `tree` does not and git does not ignore (a folder
    whole, as `folder/`), sorted: before the arm, what its environment's install wrote
    (setuptools' `*.egg-info/`). `checked_out`: see `_holding`."""
    return _others(worktree, into, tree, checked_out, "--directory")


def _others(worktree: Path, into: Path, tree: str, checked_out: bool, flag: str) -> list[str]:
    """`git ls-files -o` of the worktree against `tree` (see `_holding`), with `flag`,
    by `into`'s and the worktree's excludes: the paths, sorted."""
    with _holding(worktree, into, tree, checked_out) as env:
        listed = git(
            *_work(worktree, into),
            *("ls-files", "-z", "-o", flag, "--exclude-standard"),
            cwd=worktree,
            **env,
        )
    return sorted(p for p in listed.split("\0") if p)


def _work(worktree: Path, into: Path) -> list[str]:
    return ["--git-dir", str(into), "--work-tree", str(worktree)]


@contextmanager
def _holding(worktree: Path, into: Path, tree: str, checked_out: bool) -> Iterator[dict[str, str]]:
    """git's environment naming an index that holds `tree`, for a listing: read into a
    scratch index in `into`; or, `checked_out` (before the arm, with `tree` the commit
    benchkit checked out there), the worktree's own index, which holds that commit's
    files (an install may have refreshed its stat data, never its entries), read as
    data by `ls-files`, which never writes it."""
    own = worktree / ".git" / "index"
    if checked_out and _regular_file(own) and not (worktree / ".git").is_symlink():
        yield {"GIT_INDEX_FILE": str(own)}
        return
    with scratch_index(into) as env:
        git(*_work(worktree, into), "read-tree", tree, cwd=worktree, **env)
        yield env


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


OBJECT_ID = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")
MOST_COMMITS = 1000  # of an arm's commits, the ones a run keeps


def head_of(worktree: Path) -> str | None:
    """The commit a worktree's HEAD names, read from its files as plain data (no git
    reads the folder the arm had in hand): its regular files only, inside its own
    `.git`, a few bytes each, so that a symlink, a FIFO or a huge file the arm left
    there is no ref; None when it names no commit."""
    own = worktree / ".git"
    if own.is_symlink() or not own.is_dir():
        return None
    try:
        head = _small_file(own, "HEAD")
        for _ in range(5):  # a symbolic ref, to a ref, to a commit
            if head is None or not head.startswith("ref:"):
                return head if head and OBJECT_ID.fullmatch(head) else None
            ref = head.removeprefix("ref:").strip()
            loose = _small_file(own, ref)
            if loose is not None:
                head = loose
                continue
            packed = _small_file(own, "packed-refs", limit=1 << 20) or ""
            found = [line.split()[0] for line in packed.splitlines() if line.endswith(f" {ref}")]
            return found[0] if found and OBJECT_ID.fullmatch(found[0]) else None
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return None


def _small_file(folder: Path, name: str, limit: int = 4096) -> str | None:
    """The text of a regular file in `folder` (never through a symlink, never out of
    it), its first `limit` bytes; None where there is none."""
    parts = Path(name).parts
    if not parts or Path(name).is_absolute() or ".." in parts:
        return None
    path = folder
    try:  # each folder on the way a folder, not a link: read where it is, not followed
        for part in parts[:-1]:
            path = path / part
            if not stat.S_ISDIR(os.lstat(path).st_mode):
                return None
        path = path / parts[-1]
        kind = os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None
    if not stat.S_ISREG(kind):  # a symlink, a FIFO, a folder: no ref
        return None
    with path.open("rb") as handle:
        return handle.read(limit).decode().strip()


@dataclass(frozen=True, kw_only=True)
class Commit:
    """A commit of a worktree: its sha, its subject, the files it changed."""

    sha: str
    subject: str
    files: tuple[str, ...]


def commits_between(into: Path, base: str, head: str) -> list[Commit]:
    """The commits from `base` to `head`, oldest first (the last `MOST_COMMITS` of
    them), read in `into` (see `reader`), whose alternates hold what the arm committed
    once `snapshot` ran."""
    listed = git(
        "--git-dir",
        str(into),
        "-c",
        "core.quotePath=false",
        "log",
        f"--max-count={MOST_COMMITS}",
        "--reverse",
        "--format=%x01%H %s",
        "--name-only",
        "--no-renames",
        f"{base}..{head}",
    )
    found: list[tuple[str, str, list[str]]] = []
    for line in listed.splitlines():
        if line.startswith("\x01"):
            sha, _, subject = line[1:].partition(" ")
            found.append((sha, subject, []))
        elif line and found:
            found[-1][2].append(line)
    return [Commit(sha=sha, subject=subject, files=tuple(files)) for sha, subject, files in found]
