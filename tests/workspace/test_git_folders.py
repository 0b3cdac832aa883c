"""What `git init` writes, learned ahead: a pilot's git folders then run no git (issue 37)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import PATIENCE_S, noting_stand_in

# a process that makes benchkit's own git folder (`reader`) with `git` a stand-in on
# its PATH, having learned what `git init` writes there first, or not
MAKES = """
import os, sys
from pathlib import Path
from benchkit.workspace.git import git_folders_learned, reader
folder, stand_in, ahead = Path(sys.argv[1]), sys.argv[2], sys.argv[3] == "ahead"
if ahead:
    git_folders_learned(folder)
os.environ["PATH"] = stand_in + os.pathsep + os.environ["PATH"]
reader(folder / "mirror", folder / "reader")
"""


@pytest.mark.parametrize("ahead", [True, False])
def test_git_folders_learned_ahead_leave_a_pilots_trees_no_git_init(
    ahead: bool, tmp_path: Path
) -> None:
    """The serial launcher learns them as it plans (`git_folders_ahead`): the first
    pilot's trees, which it waits for, then run no `git init` of their own (two side by
    side, 20 to 40 ms of its wait). Not learned, the first git folder runs one.
    `git` here is a stand-in that notes its arguments, then runs the real one."""
    stand_in, said = noting_stand_in("git", tmp_path)
    folder = tmp_path / "pilots"
    folder.mkdir()
    done = subprocess.run(
        [sys.executable, "-c", MAKES, str(folder), str(stand_in), "ahead" if ahead else "not"],
        capture_output=True,
        text=True,
        timeout=PATIENCE_S,
    )
    assert done.returncode == 0, done.stderr
    ran = said.read_text().splitlines() if said.exists() else []
    if ahead:
        assert ran == []
    else:
        [line] = ran  # after git's safe options (`-c ...`)
        assert " init --quiet --bare --template= -- " in f" {line}"
    fresh = tmp_path / "fresh"
    subprocess.run(["git", "init", "-q", "--bare", "--template=", str(fresh)], check=True)
    assert (folder / "reader" / "config").read_text() == (fresh / "config").read_text()
    assert (folder / "reader" / "HEAD").read_text() == (fresh / "HEAD").read_text()
