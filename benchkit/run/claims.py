"""Claims: which benchkit runs which unit of a run set, so that two matrices run side
by side on one set share its units and never run one twice.

Before a matrix runs, it claims each unit it needs: `<store>/claims/<set>/<key>.json`,
created only when absent (linked into place whole), holding the claimant's host, pid
and process start. A unit another live benchkit claimed is left to it; a claim of this
host whose benchkit is gone (SIGKILLed, say) is taken over. A claim of another host is honoured:
benchkit cannot tell from here whether it lives (a Ray cluster has one driver, so
this is two matrices on one set from two machines). Claims are released as the
matrix ends.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
from pathlib import Path

from benchkit.run.liveness import lives
from benchkit.run.plan import Plan
from benchkit.store.atomic import temporary_file
from benchkit.store.store import Store
from benchkit.workspace.processes import own_start


def _path(store: Store, p: Plan) -> Path:
    key = hashlib.sha256(repr(p.unit).encode()).hexdigest()[:24]
    return store.claims / p.spec.run_set / f"{key}.json"


def _mine() -> dict[str, object]:
    return {"host": socket.gethostname(), "pid": os.getpid(), "process_start": own_start()}


def _held_elsewhere(path: Path) -> bool:
    """Whether the claim at `path` belongs to a live benchkit other than this one."""
    try:
        owner = json.loads(path.read_text())
    except (OSError, ValueError):
        return False  # half-written or gone: taken over
    if owner == _mine():
        return False
    return lives(str(owner.get("host")), int(owner.get("pid") or 0), owner.get("process_start"))


def claim(store: Store, plans: list[Plan]) -> tuple[list[Plan], list[Path]]:
    """The plans whose unit this benchkit now holds, and their claims; the others are
    being run by another benchkit."""
    mine, held = [], []
    for p in plans:
        path = _path(store, p)
        path.parent.mkdir(parents=True, exist_ok=True)
        for _ in range(2):  # once more after taking over a dead benchkit's claim
            if not _created(path):
                if _held_elsewhere(path):
                    break
                path.unlink(missing_ok=True)
                continue
            mine.append(p)
            held.append(path)
            break
    return mine, held


def _created(path: Path) -> bool:
    """Make the claim at `path`, whole, only when there is none: written beside it and
    linked into place, so that no other benchkit ever reads it half-written (and takes
    it over as a dead one's)."""
    handle, tmp = temporary_file(path.parent, f".{path.name}.")
    try:
        with os.fdopen(handle, "w") as file:
            json.dump(_mine(), file)
        os.link(tmp, path)
    except FileExistsError:
        return False
    finally:
        os.unlink(tmp)
    return True


def release(paths: list[Path]) -> None:
    for path in paths:
        with contextlib.suppress(OSError):
            path.unlink()
