"""How fast does benchkit start?

Times, in fresh processes side by side in one run, a bare `python -c pass`,
`python -c "import benchkit"` and `benchkit --help`, and names any heavy library
(polars, pandas, pyarrow, numpy, matplotlib) that starting loaded. Target: the face
loads none of them, and costs a small fraction of what it did with them (0.45 s).

    .venv/bin/python benchmarks/startup.py [--repeat N]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

HEAVY = ("polars", "pandas", "pyarrow", "numpy", "matplotlib")
BIN = Path(sys.executable).parent


def timed(argv: list[str], repeat: int) -> list[float]:
    seconds = []
    for _ in range(repeat):
        started = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
        seconds.append(time.perf_counter() - started)
    return seconds


def heavy_loaded(python_args: list[str]) -> list[str]:
    """The heavy libraries a fresh interpreter imports to run these arguments."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *python_args],
        check=True,
        capture_output=True,
        text=True,
    )
    names = {line.rsplit("|", 1)[1].strip().split(".")[0] for line in done.stderr.splitlines()}
    return [m for m in HEAVY if m in names]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    cases = {  # what runs, and the same as interpreter arguments for -X importtime
        "python -c pass": ([sys.executable, "-c", "pass"], ["-c", "pass"]),
        "import benchkit": ([sys.executable, "-c", "import benchkit"], ["-c", "import benchkit"]),
        "benchkit --help": ([str(BIN / "benchkit"), "--help"], ["-m", "benchkit", "--help"]),
    }
    seconds: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(args.repeat):  # interleaved, so a busy moment hits every case alike
        for name, (argv, _) in cases.items():
            seconds[name] += timed(argv, 1)
    bare = min(seconds["python -c pass"])
    print(f"{'command':<18}{'best s':>8}{'median s':>10}{'over bare s':>13}  heavy libraries")
    for name, (_, python_args) in cases.items():
        best, median = min(seconds[name]), statistics.median(seconds[name])
        heavy = ", ".join(heavy_loaded(python_args)) or "none"
        print(f"{name:<18}{best:>8.3f}{median:>10.3f}{best - bare:>13.3f}  {heavy}")
    print(f"({args.repeat} runs each, interleaved; best and median wall seconds)")


if __name__ == "__main__":
    main()
