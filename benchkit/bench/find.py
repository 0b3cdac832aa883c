"""Finding benches and arm files: the bundled ones by name, any other by its path.

The bundled benches and arm files ship inside the package (`benchkit/bundled/`), so
an installed wheel has them; `BENCHKIT_BENCHES` and `BENCHKIT_ARMS` name other
folders to look in by name instead.
"""

from __future__ import annotations

import os
from pathlib import Path

from benchkit.bench.bench_file import Bench, load_bench
from benchkit.errors import BenchError

BENCH_FILE = "bench.toml"
BUNDLED = Path(__file__).resolve().parent.parent / "bundled"


def _folder(kind: str, variable: str) -> Path:
    return Path(os.environ.get(variable) or BUNDLED / kind)


def benches_dir() -> Path:
    """The folder of benches found by name: the bundled ones, or `BENCHKIT_BENCHES`."""
    return _folder("benches", "BENCHKIT_BENCHES")


def arms_dir() -> Path:
    """The folder of arm files found by name: the bundled ones, or `BENCHKIT_ARMS`."""
    return _folder("arms", "BENCHKIT_ARMS")


def bench_files() -> list[Path]:
    """The bench files of the benches found by name."""
    folder = benches_dir()
    return sorted(folder.glob(f"*/{BENCH_FILE}")) if folder.is_dir() else []


def benches() -> list[Bench]:
    """The benches found by name (the bundled ones)."""
    return [load_bench(path) for path in bench_files()]


def find_bench(name_or_path: str | Path) -> Bench:
    """A bench by name, or by the path of its folder or its bench.toml."""
    path = Path(name_or_path).expanduser()
    if path.is_dir():
        path = path / BENCH_FILE
    if not path.exists() and isinstance(name_or_path, str) and "/" not in name_or_path:
        path = benches_dir() / name_or_path / BENCH_FILE
        if not path.exists():
            known = ", ".join(p.parent.name for p in bench_files()) or "none"
            raise BenchError(name_or_path, "", f"no such bench (bundled: {known})")
    return load_bench(path)


def arm_files() -> list[Path]:
    """The arm files found by name."""
    folder = arms_dir()
    return sorted(folder.glob("*.toml")) if folder.is_dir() else []


def find_arm_file(value: str) -> Path | None:
    """An arm file by name (`benchkit/bundled/arms/NAME.toml`) or by path."""
    path = Path(value).expanduser()
    if path.suffix == ".toml" and path.is_file():
        return path
    named = arms_dir() / f"{value}.toml"
    return named if "/" not in value and named.is_file() else None
