"""The house: packages by concept whose imports run downward only, with no circle.

The floors are import-linter's contracts in `pyproject.toml` (`lint-imports`, run by
`make lint`). These tests show that the contracts catch what they promise to, each on
a copy of the tree with one wrong import planted, and that the package table of
`docs/architecture.md` is the tree's.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.helpers import benchkit_modules

LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """`lint-imports` on the tree under `root`, with the contracts of its pyproject."""
    return subprocess.run(
        [str(LINT_IMPORTS)],
        cwd=root,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(root)},
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.fixture(scope="module")
def house(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the package's modules and its pyproject, to plant imports in."""
    root = tmp_path_factory.mktemp("house")
    shutil.copy(ROOT / "pyproject.toml", root)
    shutil.copytree(
        ROOT / "benchkit",
        root / "benchkit",
        ignore=shutil.ignore_patterns("bundled", "__pycache__", "templates"),
    )
    return root


def test_the_floors_hold_on_the_tree(house: Path) -> None:
    done = lint_imports(house)
    assert done.returncode == 0, done.stdout + done.stderr
    assert re.search(r"Contracts: (\d+) kept, 0 broken", done.stdout)


PLANTED = [
    (  # a pure floor reaching up
        {"benchkit/gate/upward.py": "from benchkit.store import schema\n"},
        "benchkit.gate.upward -> benchkit.store.schema",
    ),
    (  # two packages of one floor
        {"benchkit/run/sideways.py": "from benchkit.analysis import stats\n"},
        "benchkit.run.sideways -> benchkit.analysis.stats",
    ),
    (  # a function-level import is an arrow like any other
        {"benchkit/arms/late.py": "def f():\n    from benchkit.run import plan\n"},
        "benchkit.arms.late -> benchkit.run.plan",
    ),
    (  # where code runs, reading where runs are kept
        {"benchkit/workspace/kept.py": "from benchkit.store import parquet\n"},
        "benchkit.workspace.kept -> benchkit.store.parquet",
    ),
    (  # a circle within one package
        {
            "benchkit/store/aa.py": "from benchkit.store import bb\n",
            "benchkit/store/bb.py": "def f():\n    from benchkit.store import aa\n",
        },
        ".bb -> .aa",
    ),
    (  # a decision with an effect
        {"benchkit/bench/effect.py": "import subprocess\n"},
        "benchkit.bench.effect -> subprocess",
    ),
    (  # a package on no floor
        {"benchkit/extra/__init__.py": ""},
        "benchkit.extra",
    ),
]


@pytest.mark.parametrize(("files", "named"), PLANTED)
def test_a_planted_import_breaks_a_contract_that_names_it(
    house: Path, files: dict[str, str], named: str
) -> None:
    try:
        for relative, text in files.items():
            (house / relative).parent.mkdir(exist_ok=True)
            (house / relative).write_text(text)
        done = lint_imports(house)
    finally:
        for relative in files:
            (house / relative).unlink()
        if (house / "benchkit/extra").exists():
            shutil.rmtree(house / "benchkit/extra")
    assert done.returncode != 0
    assert named in done.stdout, done.stdout


def test_an_import_under_type_checking_is_no_arrow(house: Path) -> None:
    planted = house / "benchkit/gate/typed.py"
    typed = "if TYPE_CHECKING:\n    from benchkit.store import schema\n"
    planted.write_text(f"from typing import TYPE_CHECKING\n{typed}")
    try:
        done = lint_imports(house)
    finally:
        planted.unlink()
    assert done.returncode == 0, done.stdout


def test_the_architecture_package_table_matches_the_tree() -> None:
    page = (ROOT / "docs" / "architecture.md").read_text()
    lines = page.split("## Packages", 1)[1].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    end = next(i for i in range(start, len(lines)) if not lines[i].startswith("|"))
    named_packages: set[str] = set()
    named_modules: set[str] = set()
    for row in lines[start + 2 : end]:
        first, _floor, cell = (c.strip() for c in row.strip("|").split("|")[:3])
        package = first.strip("`").rstrip("/")
        named_packages.add(package)
        prefix = "benchkit" if package == "benchkit" else f"benchkit.{package}"
        for module in re.findall(r"`([\w.]+)`", cell):
            named_modules.add(f"{prefix}.{module}".removesuffix(".__init__"))
    tree = benchkit_modules(ROOT)
    packages = {p for p in tree if tree[p].name == "__init__.py" and p != "benchkit"}
    assert named_packages == {"benchkit"} | {p.removeprefix("benchkit.") for p in packages}
    assert named_modules == {m for m in tree if tree[m].name != "__init__.py"} | {"benchkit"}
