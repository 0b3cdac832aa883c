"""The trees of the pilots to come, made while the pilot before them runs.

A launcher that runs its pilots one after another in this process (`serial`) knows
which comes next. While a pilot runs (its checks, mostly), a thread makes the next
one's trees at its base in a spare folder beside the pilots' folders: its worktree,
benchkit's own git folder and the clean tree (see `benchkit.run.verify`). As the next
pilot starts, the spare folder becomes its folder by one rename (a repository of
benchkit's own moves with its folder: it borrows the mirror's objects by an absolute
path, and git's index holds no path of the folder's), which the thread makes once the
trees are made: the pilot waits for them only as it needs them, at `prepare`, and an
interrupted pilot stops their checkout as its own. The first pilot's are begun as the
store is read, its two trees side by side (that pilot waits for them). A pilot whose
spare could not be made makes its own trees, once the thread has found so. A spare
folder that a killed benchkit left is discarded by the next serial launch on the
machine.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from benchkit.workspace.cache import discard
from benchkit.workspace.proc import Stoppable
from benchkit.workspace.processes import alive, own_start
from benchkit.workspace.signals import deferred_interrupts

if TYPE_CHECKING:
    from benchkit.workspace.repository import Repository

# a pilot's trees, made in a folder; side by side (`together`) where a pilot waits for them
Trees = Callable[["Repository", Path, Stoppable, bool], None]

SPARE = "spare-"  # then its process's pid and start: beside the pilots' own (their run ids)


class _Spare(NamedTuple):
    repo: Repository  # made for its base
    folder: Path
    made: Future[None]
    making: Stoppable  # its commands, to stop


class Taken(NamedTuple):
    """A pilot's spare, being moved to its folder by the thread once it is made."""

    moved: Future[bool]  # True once in the folder; False: it could not be made, or moved
    making: Stoppable  # its commands: the pilot's own from now, to stop as it is


class Spares:
    """The trees of the pilots to come, in the order they run (their repositories),
    each made by `trees` in a spare folder of `folder` by the `executor`'s thread. Each
    pilot `take`s its own, then has the next one's made (`make_next`); `drop` discards
    what is left, once the last pilot ran or an interrupt stopped them."""

    def __init__(
        self,
        coming: Sequence[Repository],
        *,
        trees: Trees,
        folder: Path,
        executor: ThreadPoolExecutor,
    ) -> None:
        self._coming = deque(coming)
        self._trees, self._folder, self._executor = trees, folder, executor
        self._spare: _Spare | None = None

    def expect(self, coming: Sequence[Repository]) -> None:
        """The pilots to come are these, in this order (those a run set still needs,
        of the pilots first told): the first of them takes the spare being made when
        it is of its repository, and else discards it."""
        self._coming = deque(coming)

    def take(self, repo: Repository, folder: Path) -> Taken | None:
        """The trees made for this pilot (of `repo`), moved to `folder` (which does not
        exist yet) by the thread once they are made, without waiting for them here;
        None when none are made for it (the pilot makes its own). A spare made for
        another base is stopped and discarded by the thread. The caller takes it under
        `deferred_interrupts` (as `execute_plan` does), so that what is handed on is
        its own before an interrupt comes."""
        if self._coming:
            self._coming.popleft()  # this pilot's
        if self._spare is None:
            return None
        made_for, spare, made, making = self._spare
        same = (made_for.mirror, made_for.base_sha) == (repo.mirror, repo.base_sha)
        if not same:
            making.stop()  # not this pilot's: not waited for

        def moved() -> bool:
            wait([made])
            if same and made.exception() is None:
                with contextlib.suppress(OSError):
                    os.rename(spare, folder)
                    return True
            discard(spare)
            return False

        with deferred_interrupts():  # the spare handed on, or still known (to `drop`)
            moving = self._executor.submit(moved)
            self._spare = None
        return Taken(moving, making) if same else None

    def make_next(self, *, waited: bool = False) -> None:
        """The next pilot's trees, made in a spare folder by the thread, after what
        the thread has to do for the pilot at work; side by side where the pilot will
        be `waited` for them (the first pilot's, whose store is read meanwhile: no
        checks of a pilot's run beside them)."""
        if not self._coming or self._spare is not None:
            return
        repo = self._coming[0]
        mine = f"{os.getpid()}-{own_start()}"  # to tell a killed one's
        spare = self._folder / f"{SPARE}{mine}-{uuid.uuid4().hex[:12]}"

        making = Stoppable()

        def made() -> None:
            try:
                self._trees(repo, spare, making, waited)
            except BaseException:
                discard(spare)
                raise

        with deferred_interrupts():  # begun and known (to `drop`), or neither
            self._spare = _Spare(repo, spare, self._executor.submit(made), making)

    def drop(self) -> None:
        """What is being made, stopped and waited for; what was made, discarded
        (whatever comes meanwhile: a second Ctrl-C waits)."""
        with deferred_interrupts():
            self._coming.clear()
            if self._spare is None:
                return
            _, spare, made, making = self._spare
            making.stop()
            wait([made])
            with contextlib.suppress(OSError):
                discard(spare)
            self._spare = None


def sweep_spares(folder: Path) -> int:
    """Discard the spare folders in `folder` that a benchkit no longer running left
    (killed while a pilot's checks ran); how many."""
    gone = 0
    with contextlib.suppress(OSError), os.scandir(folder) as entries:
        for entry in entries:
            if not entry.name.startswith(SPARE):
                continue
            pid, _, start = entry.name.removeprefix(SPARE).partition("-")
            began = start.partition("-")[0]
            if pid.isdigit() and not alive(int(pid), int(began) if began.isdigit() else None):
                discard(Path(entry.path))
                gone += 1
    return gone
