"""What does a bench's environment cost a pilot: the first build, and a reuse?

In a scratch cache (uv's download cache included, so the first build fetches every
package from the registry), runs the environment stage of the demo bench (pytest,
ruff, mypy, flit_core, pip: about 100 MB) the way a pilot does: build or reuse the
cached environment, then make the pilot's own instance of it: a copy of hard links
(as without bubblewrap), or the cached one bound (as in bubblewrap, which binds it
read-only). Prints the first build and both kinds of reuse side by side, and the
end of each pilot's use: a copy's removal with the check that the cached environment
is as built (its files' sizes and times, then their bytes: a write in place that
restored a file's times changes those), beside a bound one's (no check: nothing
could be written). Target: a reused environment under 5% of a first build, and
under 1 s.

    .venv/bin/python benchmarks/environments.py [--reuses N] [--bench NAME|PATH]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from benchkit.bench.find import find_bench
from benchkit.workspace.environment import ensure, instantiate, recipe, remove
from benchkit.workspace.git import add_worktree, remove_worktree
from benchkit.workspace.repository import prepare_repository

TARGET_SHARE = 0.05
TARGET_S = 1.0


def stage(bench_name: str, scratch: Path, n: int, bound: bool = False) -> tuple[float, bool, float]:
    """One pilot's environment stage: seconds, whether it built, and the seconds of
    its end (the instance removed, the cached environment checked)."""
    bench = find_bench(bench_name)
    repo = prepare_repository(bench)
    worktree = scratch / f"worktree-{n}"
    add_worktree(repo.mirror, repo.base_sha, worktree)
    try:
        made = recipe(bench, repo)  # a pilot's plan reads it, before its stages
        started = time.perf_counter()
        built = ensure(made, log=scratch / f"env-{n}.log")
        instance = instantiate(
            built,
            where=scratch / f"worktree-{n}-env",
            tree=worktree,
            log=scratch / "i.log",
            bound=bound,
        )
        seconds = time.perf_counter() - started
        started = time.perf_counter()
        remove(instance, read_only=bound)
        end = time.perf_counter() - started
    finally:
        remove_worktree(worktree)
    return seconds, not built.reused, end


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reuses", type=int, default=10)
    parser.add_argument("--bench", default="demo")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="benchkit-envs-") as folder:
        scratch = Path(folder)
        os.environ["BENCHKIT_CACHE"] = str(scratch / "cache")
        os.environ["UV_CACHE_DIR"] = str(scratch / "uv")  # a cold download cache
        first, built, _ = stage(args.bench, scratch, 0)
        assert built, "the first stage must build"
        copies = [stage(args.bench, scratch, n) for n in range(1, args.reuses + 1)]
        binds = [stage(args.bench, scratch, -n, bound=True) for n in range(1, args.reuses + 1)]
        reuses, bound = [c[0] for c in copies], [b[0] for b in binds]
        size = sum(p.stat().st_size for p in (scratch / "cache" / "envs").rglob("*") if p.is_file())
    median, worst = statistics.median(reuses), max(reuses)
    print(f"bench {args.bench}: environment of {size / 1e6:.0f} MB\n")
    print(f"{'stage':<34}{'seconds':>9}{'of first build':>16}")
    print(f"{'first build (cold download cache)':<34}{first:>9.3f}{'100.0%':>16}")
    print(f"{'reuse, median of ' + str(len(reuses)):<34}{median:>9.3f}{median / first:>16.1%}")
    print(f"{'reuse, slowest':<34}{worst:>9.3f}{worst / first:>16.1%}")
    median_bound = statistics.median(bound)
    print(f"{'reuse bound, median of ' + str(len(bound)):<34}{median_bound:>9.3f}", end="")
    print(f"{median_bound / first:>16.1%}  (bubblewrap: nothing copied)")
    checked, unchecked = (
        statistics.median(c[2] for c in copies),
        statistics.median(b[2] for b in binds),
    )
    print(f"{'end of use, copy (checked), median':<34}{checked:>9.3f}{checked / first:>16.1%}")
    print(f"{'end of use, bound, median':<34}{unchecked:>9.3f}{unchecked / first:>16.1%}")
    met = worst < TARGET_S and worst / first < TARGET_SHARE
    print(
        f"\nreuse under {TARGET_SHARE:.0%} of a first build and under {TARGET_S:g} s "
        f"(slowest of {len(reuses)}): {'met' if met else 'NOT met'}"
    )


if __name__ == "__main__":
    main()
