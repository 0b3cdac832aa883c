"""Finding benches: the bundled ones by name, any other by the path of its folder or file."""

from __future__ import annotations

import os
from pathlib import Path

from benchkit.spec import Bench, BenchError, load_bench

BENCH_FILE = "bench.toml"


def bundled_data(folder: str, variable: str) -> Path:
    """`data/<folder>` of this checkout, or the folder the variable names."""
    configured = os.environ.get(variable)
    if configured:
        return Path(configured)
    return Path(__file__).resolve().parent.parent / "data" / folder


def bundled_dir() -> Path:
    """`data/benches` of this checkout, or `BENCHKIT_BENCHES`."""
    return bundled_data("benches", "BENCHKIT_BENCHES")


def bundled() -> list[Path]:
    folder = bundled_dir()
    return sorted(folder.glob(f"*/{BENCH_FILE}")) if folder.is_dir() else []


def find_bench(name_or_path: str | Path) -> Bench:
    """A bench by bundled name, or by the path of its folder or its bench.toml."""
    path = Path(name_or_path).expanduser()
    if path.is_dir():
        path = path / BENCH_FILE
    if not path.exists() and isinstance(name_or_path, str) and "/" not in name_or_path:
        path = bundled_dir() / name_or_path / BENCH_FILE
        if not path.exists():
            known = ", ".join(p.parent.name for p in bundled()) or "none"
            raise BenchError(name_or_path, "", f"no such bench (bundled: {known})")
    return load_bench(path)
