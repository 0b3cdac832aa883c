"""What does a node bench's environment cost once, and then per pilot?

Runs the bundled demo-node bench's `noop` arm three times in a scratch cache and
store: the first pilot installs node_modules with `npm ci` from the lock file (from
the npm registry, into a scratch npm cache), the later ones bind it read-only in
bubblewrap, or copy it without. Prints each
pilot's environment stage beside its wall time. Target: a later pilot spends under
10% of the first one's install time.

    .venv/bin/python benchmarks/node.py [--pilots 3] [--sandbox auto]
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pilots", type=int, default=3)
    parser.add_argument("--sandbox", default="auto", choices=["auto", "bwrap", "none"])
    args = parser.parse_args()
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


if __name__ == "__main__":
    main()
