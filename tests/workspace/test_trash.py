"""The cache's trash is emptied whatever is in it (issue 36, case 14)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchkit.workspace.cache import TRASH, cache_dir, discard, empty_trash, trash_emptied
from tests.helpers import PATIENCE_S, noting_stand_in

DEPTH = 3000
FILES = 5000  # a folder whose removal outlasts the exit that follows its discard
# a process that discards a folder and exits at once, as a command or as a library
DISCARDS = """
import sys
from pathlib import Path
from benchkit.workspace.processes import as_command, command_ended
command = sys.argv[1] == "command"
if command:
    as_command()
from benchkit.workspace.cache import discard
discard(Path(sys.argv[2]))
if command:
    command_ended(0)
sys.exit(0)
"""


def _deep(top: Path, depth: int) -> None:
    """A folder `depth` levels deep under `top`, made as an arm would (one level at a
    time, each from the last: no path reaches the bottom, past PATH_MAX)."""
    top.mkdir(parents=True)
    here = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=here)
            below = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=here)
            os.close(here)
            here = below
        os.close(os.open("leaf", os.O_CREAT | os.O_WRONLY, dir_fd=here))
    finally:
        os.close(here)


def test_a_folder_3000_levels_deep_is_removed_from_the_trash(tmp_path: Path) -> None:
    """Seen before: shutil.rmtree's RecursionError, ignored: the folder stayed in the
    trash for ever, and nothing said so."""
    left = cache_dir() / TRASH / "pilot-left-by-a-killed-benchkit"
    worktree = tmp_path / "worktree"  # and one benchkit discards as it is done with it
    try:
        _deep(left, DEPTH)
        assert empty_trash() == 1
        trash_emptied()
        assert not left.exists()
        _deep(worktree, DEPTH)
        discard(worktree)
        trash_emptied()
        assert not worktree.exists() and list((cache_dir() / TRASH).iterdir()) == []
    finally:  # a failure leaves nothing pytest's own cleanup could not remove
        subprocess.run(["rm", "-rf", "--", str(cache_dir() / TRASH), str(worktree)], check=False)


@pytest.mark.parametrize("kind", ["command", "library"])
def test_a_commands_exit_leaves_its_trash_to_rm_and_a_librarys_waits(
    kind: str, tmp_path: Path
) -> None:
    """A command's process ends without waiting for the thread that removes its trash:
    what is left is handed to `rm -rf`, which it does not wait for (the demo's last
    pilot folder: 15 to 20 ms of every command's exit, issue 37). Benchkit used as a
    library removes it before its process ends. `rm` here is a stand-in that notes its
    arguments, then runs the real one."""
    bin_, said = noting_stand_in("rm", tmp_path)
    folder = tmp_path / "done-with"
    folder.mkdir()
    for n in range(FILES):
        (folder / f"{n}.txt").write_text("x\n")
    trash = cache_dir() / TRASH
    env = {**os.environ, "PATH": f"{bin_}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(
        [sys.executable, "-c", DISCARDS, kind, str(folder)],
        env=env,
        capture_output=True,
        text=True,
        timeout=PATIENCE_S,
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert not folder.exists()
    mine = [p for p in trash.iterdir() if p.name.startswith("done-with-")]
    if kind == "library":
        assert mine == [] and not said.exists()  # removed by its thread before it ended
        return
    [line] = said.read_text().splitlines()  # the thread had not done it as the exit came
    argv = line.split(" ")
    assert argv[:2] == ["-rf", "--"] and len(argv) == 3
    assert Path(argv[2]).parent == trash and Path(argv[2]).name.startswith("done-with-")
    deadline = time.monotonic() + PATIENCE_S
    while Path(argv[2]).exists() and time.monotonic() < deadline:
        time.sleep(0.05)  # by `rm`, after the command's end
    assert not Path(argv[2]).exists()
