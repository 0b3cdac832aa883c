"""What does a node bench's environment cost once, and then per pilot?

Runs the bundled demo-node bench's `noop` arm three times in a scratch cache and
store: the first pilot installs node_modules with `npm ci` from the lock file (from
the npm registry, into a scratch npm cache), the later ones bind it read-only in
bubblewrap, or copy it without. Prints each
pilot's environment stage beside its wall time. Target: a later pilot spends under
10% of the first one's install time.

    .venv/bin/python benchmarks/node.py [--pilots 3] [--sandbox auto]

With `--managers`, the same for a tiny package locked by each manager (npm, pnpm,
yarn classic, yarn berry: tests/fixtures/node-managers), and for a pnpm workspace of
two packages (tests/fixtures/node-workspace: the root's node_modules and each
package's), side by side: the first build (the manager itself from the registry,
then its install), and each later pilot's environment stage: its `node_modules`
bound with the pilot's own writable folders in bubblewrap, or copied without.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pilots", type=int, default=3)
    parser.add_argument("--sandbox", default="auto", choices=["auto", "bwrap", "none"])
    parser.add_argument("--managers", action="store_true", help="npm, pnpm and yarn, side by side")
    args = parser.parse_args()
    if args.managers:
        managers(args.pilots, args.sandbox)
        return
    with tempfile.TemporaryDirectory(prefix="benchkit-node-") as scratch:
        os.environ["BENCHKIT_CACHE"] = str(Path(scratch) / "cache")
        os.environ.pop("npm_config_cache", None)  # benchkit's own, in the scratch cache
        from benchkit.run.launch import pilot_specs  # the cache chosen first
        from benchkit.run.pilot import execute_plan
        from benchkit.run.plan import plan
        from benchkit.store.store import Store

        store = Path(scratch) / "store"
        specs = pilot_specs("demo-node", ["noop"], trials=args.pilots)
        print(f"{'pilot':<8}{'environment s':>15}{'wall s':>9}   what the environment stage did")
        first = 0.0
        later: list[float] = []
        for n, p in enumerate(plan(specs, sandbox=args.sandbox), start=1):
            run = execute_plan(p, Store(store))
            env = run.phases["environment"]
            reused = "bound read-only" if p.sandbox == "bwrap" else "copied (hard links)"
            what = "npm ci from the registry" if n == 1 else f"node_modules {reused}"
            print(f"#{n:<7}{env:>15.3f}{run.wall_s:>9.2f}   {what}")
            first, later = (env, later) if n == 1 else (first, [*later, env])
    if later:
        share = max(later) / first
        verdict = "met" if share < 0.1 else "MISSED"
        print(
            f"\nthe slowest later pilot: {share:.1%} of the first one's install "
            f"(target < 10%: {verdict})"
        )


FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "node-managers"
BENCH = (FIXTURES / "bench.toml.in").read_text()  # {name}, {repo}
WORKSPACE = FIXTURES.parent / "node-workspace"  # two packages, vitest in each


def _repo(name: str, where: Path) -> Path:
    """A git repository of the fixture's base on main, the human's change on `human`."""
    repo = where / f"{name}-repo"
    shutil.copytree(FIXTURES / name / "base", repo)
    for argv in (
        ["git", "init", "-q", "-b", "main"],
        ["git", "add", "-A"],
        ["git", "-c", "user.name=b", "-c", "user.email=b@x", "commit", "-qm", "base"],
        ["git", "checkout", "-q", "-b", "human"],
        ["sed", "-i", "s/x \\* 2/Number(x) * 2/", "index.js"],
        ["git", "-c", "user.name=b", "-c", "user.email=b@x", "commit", "-qam", "human"],
        ["git", "checkout", "-q", "main"],
    ):
        subprocess.run(argv, cwd=repo, check=True)
    return repo


def managers(pilots: int, sandbox: str) -> None:
    with tempfile.TemporaryDirectory(prefix="benchkit-managers-") as scratch:
        os.environ["BENCHKIT_CACHE"] = str(Path(scratch) / "cache")
        os.environ.pop("npm_config_cache", None)
        from benchkit.run.launch import pilot_specs
        from benchkit.run.pilot import execute_plan
        from benchkit.run.plan import plan
        from benchkit.store.store import Store

        rows = []
        for name in ("npm", "pnpm", "yarn", "yarn-berry", "pnpm-workspace"):
            bench = WORKSPACE / "bench.toml"
            if name != "pnpm-workspace":
                bench = Path(scratch) / name / "bench.toml"
                bench.parent.mkdir()
                bench.write_text(BENCH.format(name=name, repo=_repo(name, Path(scratch))))
            started = time.monotonic()
            planned = plan(pilot_specs(str(bench), ["noop"], trials=pilots), sandbox=sandbox)
            planning = time.monotonic() - started  # the manager itself, from the registry
            stages = [
                execute_plan(p, Store(Path(scratch) / "store")).phases["environment"]
                for p in planned
            ]
            rows.append((name, planning, stages[0], stages[1:], planned[0].sandbox))
    print(
        f"{'manager':<16}{'planning s':>11}{'first build s':>15}{'later max s':>13}"
        f"{'later/first':>13}   sandbox"
    )
    for name, planning, first, later, box in rows:
        most = max(later) if later else float("nan")
        print(
            f"{name:<16}{planning:>11.2f}{first:>15.3f}{most:>13.3f}{most / first:>13.1%}   {box}"
        )
    print(
        "\nplanning: reading the recipe, the manager installed from the registry on first "
        "use; first build: its install; later: the environment stage of each later pilot"
    )


if __name__ == "__main__":
    main()
