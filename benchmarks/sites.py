"""Site scoring at scale: `sites.score` on one file of N lines with N/5 human hunks and
as many arm hunks (half of them the human's own), its growth from 200 to 20,000 hunks
with the fitted exponent, and the plain quadratic reference side by side where it
finishes in reasonable time. Targets: 2,000 + 2,000 hunks on 10,000 lines under
200 ms; 20,000 + 20,000 on 100,000 lines under 2 s; an exponent of about 1.

    .venv/bin/python benchmarks/sites.py
"""

from __future__ import annotations

import math
import random
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchkit.bench.sites import FileChange, Hunk, score
from tests.bench.test_sites_random import reference_score

SIZES = [200, 500, 1_000, 2_000, 5_000, 10_000, 20_000]  # human hunks (and as many arm ones)
REFERENCE_UP_TO = 2_000


def change(
    hunks: int, seed: int
) -> tuple[list[FileChange], list[FileChange], dict[str, list[str]]]:
    """A file of 5 lines a human hunk: human hunks replace, delete or insert; the arm
    makes half of them the same way and the rest elsewhere."""
    rng = random.Random(seed)
    lines = hunks * 5
    base = {"big.py": [f"line {n}\n" for n in range(1, lines + 1)]}
    human, arm = [], []
    for k in range(hunks):
        start = 5 * k + 2
        kind = k % 3
        if kind == 0:
            hunk = Hunk(start=start, length=1, new_lines=(f"changed {k}\n",))
        elif kind == 1:
            hunk = Hunk(start=start, length=2, new_lines=())
        else:
            hunk = Hunk(start=start, length=0, new_lines=(f"added {k}\n",))
        human.append(hunk)
        if rng.random() < 0.5:
            arm.append(hunk)
        else:
            arm.append(Hunk(start=start + 2, length=1, new_lines=(f"other {k}\n",)))
    return (
        [FileChange(old_path="big.py", new_path="big.py", hunks=tuple(human))],
        [FileChange(old_path="big.py", new_path="big.py", hunks=tuple(arm))],
        base,
    )


def timed(run: Callable[[], object]) -> float:
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


def main() -> None:
    print(f"{'hunks':>8}{'lines':>10}{'score':>12}{'reference':>12}  ratio")
    points = []
    for n in SIZES:
        human, arm, base = change(n, seed=n)
        fast = min(timed(partial(score, human, arm, base_text=base)) for _ in range(3))
        points.append((n, fast))
        if n <= REFERENCE_UP_TO:
            slow = timed(partial(reference_score, human, arm, base))
            assert score(human, arm, base_text=base) == reference_score(human, arm, base)
            cells = f"{fast * 1000:>10.1f} ms{slow * 1000:>10.1f} ms  {slow / fast:5.0f}x"
            print(f"{n:>8,}{5 * n:>10,}{cells}")
        else:
            print(f"{n:>8,}{5 * n:>10,}{fast * 1000:>10.1f} ms{'-':>12}")
    xs = [math.log(n) for n, _ in points]
    ys = [math.log(t) for _, t in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - mx) ** 2 for x in xs
    )
    at = dict(points)
    print(
        f"\ngrowth exponent {slope:.2f} (target about 1); "
        f"2,000 hunks on 10,000 lines {at[2_000] * 1000:.0f} ms (target < 200 ms); "
        f"20,000 on 100,000 {at[20_000]:.2f} s (target < 2 s)"
    )


if __name__ == "__main__":
    main()
