"""The sessions' edits: files named in the repository, and the arm's commits as the
sessions' edits where the tool names none; the commits read from a real worktree."""

from __future__ import annotations

import subprocess
from pathlib import Path, PurePath

from benchkit.arms.sessions import commits_of, in_repository, with_edits
from benchkit.records import ArmReport, SessionReport
from benchkit.workspace.git import commits_between, head_of, matches, reader, snapshot

FOUND = [
    ("a" * 40, "first", ("src/a.py",)),
    ("b" * 40, "second", ("src/b.py", "src/a.py")),
]


def test_a_file_a_tool_names_is_named_in_the_repository() -> None:
    tree = PurePath("/tmp/pilot/tree")
    assert in_repository("/tmp/pilot/tree/src/a.py", tree) == "src/a.py"
    assert in_repository("./src/a.py", tree) == "src/a.py"
    assert in_repository("/etc/hosts", tree) == "/etc/hosts"  # outside: as the tool said


def test_commits_are_the_edits_of_a_session_whose_tool_names_none() -> None:
    one = ArmReport(session_list=(SessionReport(session=0),))
    steps = commits_of(FOUND, sessions=1)
    assert [c.session for c in steps] == [0, 0]
    [session] = with_edits(one, steps, PurePath("/w")).session_list
    assert (session.files, session.files_from) == (("src/a.py", "src/b.py"), "commits")


def test_as_many_commits_as_sessions_are_one_a_session() -> None:
    two = ArmReport(session_list=(SessionReport(session=0), SessionReport(session=1)))
    steps = commits_of(FOUND, sessions=2)
    assert [c.session for c in steps] == [0, 1]
    first, second = with_edits(two, steps, PurePath("/w")).session_list
    assert first.files == ("src/a.py",) and second.files == ("src/b.py", "src/a.py")
    three = commits_of(FOUND, sessions=3)  # no way to tell: no session said
    assert [c.session for c in three] == [None, None]


def test_a_tools_own_word_on_its_edits_wins() -> None:
    said = SessionReport(session=0, files=("/w/src/c.py",), files_from="tool")
    [session] = with_edits(
        ArmReport(session_list=(said,)), commits_of(FOUND, 1), PurePath("/w")
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
        (_git(tree, "rev-parse", "HEAD~1").strip(), "add b", ("b.py",)),
        (head, "add c", ("c.py",)),
    ]
    (tree / ".git" / "HEAD").write_text("ref: refs/heads/../../../../etc/passwd\n")
    assert head_of(tree) is None  # a ref out of its folder is no ref


def test_scratch_patterns_match_what_the_tool_keeps_for_itself() -> None:
    assert matches(".aider.tags.cache.v4/", [".aider*"])
    assert matches(".aider.tags.cache.v4/cache.db", [".aider*"])
    assert matches("cache/x/y.bin", ["cache/"])
    assert not matches("src/.aider.py", [".aider*"])
    assert not matches("src/a.py", [])
