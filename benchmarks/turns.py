"""Commands timed in turns: one of each, then again (each the best of its runs, or
all of them), so that what the machine does meanwhile falls on all of them alike
(this 2-core machine slows by about a tenth under minutes of load, and recovers at
rest)."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Sequence


def bests(commands: Sequence[Sequence[str]], repeat: int = 3) -> list[tuple[float, str]]:
    """Each command's best wall time (a process's whole life, from outside) and what
    its best run printed, the commands run in turns."""
    return [min(taken) for taken in all_runs(commands, repeat)]


def all_runs(commands: Sequence[Sequence[str]], repeat: int = 3) -> list[list[tuple[float, str]]]:
    """Each command's runs, `repeat` of them: its wall time (a process's whole life,
    from outside) and what it printed, the commands run in turns."""
    runs: list[list[tuple[float, str]]] = [[] for _ in commands]
    for _ in range(repeat):
        for argv, taken in zip(commands, runs, strict=True):
            started = time.perf_counter()
            done = subprocess.run(argv, capture_output=True, text=True, check=True)
            taken.append((time.perf_counter() - started, done.stdout))
    return runs
