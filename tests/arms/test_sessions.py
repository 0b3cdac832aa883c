"""The sessions' edits: files named in the repository, and the arm's commits as the
sessions' edits where the tool names none; the commits read from a real worktree."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path, PurePath

import pytest

from benchkit.arm_report import ArmReport, SessionReport
from benchkit.arms.protocol import is_scratch
from benchkit.arms.sessions import commits_of, in_repository, with_edits
from benchkit.bench.arm_file import load_arm
from benchkit.errors import ArmError
from benchkit.workspace.git import Commit, commits_between, head_of, reader, snapshot

FOUND = [
    Commit(sha="a" * 40, subject="first", files=("src/a.py",)),
    Commit(sha="b" * 40, subject="second", files=("src/b.py", "src/a.py")),
]


def test_a_file_a_tool_names_is_named_in_the_repository() -> None:
    tree = [PurePath("/tmp/pilot/tree"), PurePath("/private/tmp/pilot/tree")]
    assert in_repository("/tmp/pilot/tree/src/a.py", tree) == "src/a.py"
    assert in_repository("/private/tmp/pilot/tree/src/a.py", tree) == "src/a.py"  # its real path
    assert in_repository("./src/a.py", tree) == "src/a.py"
    assert in_repository("/etc/hosts", tree) == "/etc/hosts"  # outside: as the tool said


def test_commits_are_the_edits_of_a_session_whose_tool_names_none() -> None:
    one = ArmReport(session_list=(SessionReport(session=0),))
    steps = commits_of(FOUND, sessions=1)
    assert [c.session for c in steps] == [0, 0]
    [session] = with_edits(one, steps, [PurePath("/w")]).session_list
    assert (session.files, session.files_from) == (("src/a.py", "src/b.py"), "commits")


def test_as_many_commits_as_sessions_are_one_a_session() -> None:
    two = ArmReport(session_list=(SessionReport(session=0), SessionReport(session=1)))
    steps = commits_of(FOUND, sessions=2)
    assert [c.session for c in steps] == [0, 1]
    first, second = with_edits(two, steps, [PurePath("/w")]).session_list
    assert first.files == ("src/a.py",) and second.files == ("src/b.py", "src/a.py")
    three = commits_of(FOUND, sessions=3)  # no way to tell: no session said
    assert [c.session for c in three] == [None, None]


def test_a_tools_own_word_on_its_edits_wins() -> None:
    said = SessionReport(session=0, files=("/w/src/c.py",), files_from="tool")
    [session] = with_edits(
        ArmReport(session_list=(said,)), commits_of(FOUND, 1), [PurePath("/w")]
    ).session_list
    assert (session.files, session.files_from) == (("src/c.py",), "tool")


def _git(where: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=where, check=True, capture_output=True, text=True
    ).stdout


def test_the_arms_commits_read_from_its_worktree_without_its_git(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    _git(tree, "init", "-q", "-b", "main")
    identity = ["-c", "user.name=t", "-c", "user.email=t@example.com"]
    (tree / "a.py").write_text("a = 1\n")
    _git(tree, "add", ".")
    _git(tree, *identity, "commit", "-q", "-m", "base")
    base = _git(tree, "rev-parse", "HEAD").strip()
    for name, subject in (("b.py", "add b"), ("c.py", "add c")):
        (tree / name).write_text("x = 1\n")
        _git(tree, "add", name)
        _git(tree, *identity, "commit", "-q", "-m", subject)
    _git(tree, "pack-refs", "--all")  # HEAD -> refs/heads/main, packed
    head = head_of(tree)
    assert head == _git(tree, "rev-parse", "HEAD").strip()
    into = tmp_path / "reader"
    reader(tree, into)
    snapshot(tree, into, base)  # borrows the worktree's objects
    assert commits_between(into, base, head) == [
        Commit(sha=_git(tree, "rev-parse", "HEAD~1").strip(), subject="add b", files=("b.py",)),
        Commit(sha=head, subject="add c", files=("c.py",)),
    ]
    (tree / ".git" / "HEAD").write_text("ref: refs/heads/../../../../etc/passwd\n")
    assert head_of(tree) is None  # a ref out of its folder is no ref


def test_scratch_patterns_match_what_the_tool_keeps_for_itself() -> None:
    assert is_scratch(".aider.tags.cache.v4/", [".aider*"])
    assert is_scratch(".aider.tags.cache.v4/cache.db", [".aider*"])
    assert is_scratch("cache/x/y.bin", ["cache/"])
    assert not is_scratch("src/.aider.py", [".aider*"])
    assert not is_scratch("src/a.py", [])


def test_a_head_the_arm_made_a_trap_is_no_head(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / ".git" / "refs" / "heads").mkdir(parents=True)
    sha = "c" * 40
    (tree / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (tree / ".git" / "refs" / "heads" / "main").write_text(f"{sha}\n")
    assert head_of(tree) == sha
    outside = tmp_path / "outside"
    outside.write_text("d" * 40 + "\n")
    main = tree / ".git" / "refs" / "heads" / "main"
    main.unlink()
    main.symlink_to(outside)  # a ref through a symlink: no ref
    assert head_of(tree) is None
    main.unlink()
    os.mkfifo(main)  # a FIFO would block a reader forever
    assert head_of(tree) is None
    main.unlink()
    (tree / ".git" / "packed-refs").symlink_to(outside)
    assert head_of(tree) is None
    (tree / ".git" / "packed-refs").unlink()
    (tree / ".git" / "packed-refs").write_text(f"# pack-refs with: peeled\n{sha} refs/heads/main\n")
    assert head_of(tree) == sha
    (tree / ".git" / "packed-refs").unlink()
    heads = tree / ".git" / "refs" / "heads"
    heads.rename(tree / ".git" / "elsewhere")
    (tree / ".git" / "elsewhere" / "main").write_text(f"{sha}\n")
    heads.symlink_to(tree / ".git" / "elsewhere")  # a folder on the way a link, inside
    assert head_of(tree) is None
    heads.unlink()
    heads.mkdir()
    (heads / "main").write_text(f"{sha}\n")
    assert head_of(tree) == sha
    moved = tmp_path / "git"
    (tree / ".git").rename(moved)
    (tree / ".git").symlink_to(moved)  # a .git elsewhere: not the worktree's
    assert head_of(tree) is None


@pytest.mark.parametrize("pattern", ["*", "**", ".", "*/", "!notes.log", "../x", "/abs", ""])
def test_a_scratch_pattern_names_something_of_the_worktree(tmp_path: Path, pattern: str) -> None:
    arm = tmp_path / "arm.toml"
    arm.write_text(f'name = "mine"\ncommand = ["my-tool"]\nscratch = [{pattern!r}]\n')
    with pytest.raises(ArmError, match=r"scratch\.0: .* is no pattern of the worktree's own files"):
        load_arm(arm)


def test_the_program_checked_on_path_is_the_one_that_runs_first(tmp_path: Path) -> None:
    arm = tmp_path / "arm.toml"
    arm.write_text(
        'name = "mine"\nsetup = [["pipx", "install", "mytool"], ["mytool", "--version"]]\n'
        'command = ["mytool", "{instruction}"]\n'
    )
    assert load_arm(arm).file.programs == ("pipx",)  # mytool: the setup installs it
    arm.write_text('name = "mine"\ncommand = "cd src && mytool"\n')
    assert load_arm(arm).file.programs == ()  # a shell line: the shell says
