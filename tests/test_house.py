"""The house: packages by concept whose imports run downward only, with no circle.

The layers are written down here, once, top to bottom. A module may import its own
package and any package on a lower floor; nothing imports the face; a function-level
import of a benchkit module is an arrow like any other (it may not hide a circle), and
only the face makes one. The README's package table is checked against the tree.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT

FACE = ("benchkit", "benchkit.cli", "benchkit.__main__")
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("face", FACE),
    ("flows", ("benchkit.change",)),
    ("flows", ("benchkit.run", "benchkit.analysis")),
    ("flows", ("benchkit.arms",)),
    ("effects", ("benchkit.workspace",)),
    ("effects over pure", ("benchkit.store",)),
    ("pure", ("benchkit.bench",)),
    ("pure", ("benchkit.gate",)),
    ("errors", ("benchkit.errors",)),
)
"""Floors from the top: a module imports only its own package and lower floors."""

PURE = ("benchkit.bench", "benchkit.gate")
EFFECTS = ("subprocess", "shutil", "tempfile", "fcntl", "signal", "socket")


@dataclass(frozen=True)
class Arrow:
    source: str
    target: str
    line: int
    in_function: bool


def modules(root: Path) -> dict[str, Path]:
    """Every module of the package under `root` (its bundled data left out)."""
    found = {}
    for path in sorted((root / "benchkit").rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        if "bundled" in parts:
            continue
        name = ".".join(parts).removesuffix(".__init__")
        found[name] = path
    return found


def _type_checking(node: ast.If) -> bool:
    return "TYPE_CHECKING" in ast.unparse(node.test)


def _walk(tree: ast.AST) -> Iterator[tuple[ast.AST, bool]]:
    """Every node with whether it sits in a function; `if TYPE_CHECKING:` bodies skipped."""
    stack: list[tuple[ast.AST, bool]] = [(tree, False)]
    while stack:
        node, in_function = stack.pop()
        yield node, in_function
        if isinstance(node, ast.If) and _type_checking(node):
            stack.extend((child, in_function) for child in node.orelse)
            continue
        inside = in_function or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        stack.extend((child, inside) for child in ast.iter_child_nodes(node))


def arrows(found: dict[str, Path]) -> list[Arrow]:
    """Each import of one benchkit module by another."""
    result = []
    for name, path in found.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        for node, in_function in _walk(ast.parse(path.read_text())):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*parts, *([node.module] if node.module else [])])
                targets = [
                    f"{base}.{alias.name}" if f"{base}.{alias.name}" in found else base
                    for alias in node.names
                ]
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            for target in targets:
                inner = name.startswith(target + ".") and target != "benchkit"  # its package
                if target in found and target != name and not inner:
                    result.append(Arrow(name, target, getattr(node, "lineno", 0), in_function))
    return result


def place(module: str) -> tuple[int, str]:
    """The index of the module's floor in `LAYERS`, and its package there."""
    for index, (_, packages) in enumerate(LAYERS):
        for package in packages:
            if module == package or (package != "benchkit" and module.startswith(package + ".")):
                return index, "face" if package in FACE else package
    raise LookupError(f"{module} is on no floor: add its package to LAYERS")


def floor(module: str) -> int:
    return place(module)[0]


def circles(found: dict[str, Path], edges: list[Arrow]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan)."""
    graph: dict[str, set[str]] = {m: set() for m in found}
    for arrow in edges:
        graph[arrow.source].add(arrow.target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in graph:
        if v not in index:
            visit(v)
    return groups


def problems(root: Path) -> list[str]:
    """Everything wrong with the house under `root`, one line each."""
    found = modules(root)
    edges = arrows(found)
    found_problems = [f"import circle: {' -> '.join(group)}" for group in circles(found, edges)]
    for arrow in edges:
        where = f"{arrow.source}:{arrow.line} imports {arrow.target}"
        if arrow.target == "benchkit" and arrow.source not in FACE:
            found_problems.append(f"{where}: only the face may import the face")
        elif place(arrow.source)[1] != place(arrow.target)[1] and (
            floor(arrow.target) <= floor(arrow.source)
        ):
            found_problems.append(f"{where}: an arrow upward or sideways")
        elif arrow.in_function and arrow.source not in FACE:
            found_problems.append(f"{where}: inside a function (it may hide a circle)")
    for name, path in found.items():
        if name.startswith(PURE):
            tree = ast.parse(path.read_text())
            used = {
                alias.name.split(".")[0]
                for node in ast.walk(tree)
                if isinstance(node, ast.Import | ast.ImportFrom)
                for alias in (
                    node.names if isinstance(node, ast.Import) else [ast.alias(node.module or "")]
                )
            }
            found_problems += [
                f"{name}: a pure module imports {m}" for m in sorted(used & {*EFFECTS})
            ]
    return found_problems


def test_every_module_is_on_a_floor() -> None:
    for name in modules(ROOT):
        floor(name)


def test_imports_run_downward_with_no_circle() -> None:
    assert problems(ROOT) == []


def _package(root: Path, files: dict[str, str]) -> Path:
    for relative, text in {"benchkit/__init__.py": "", **files}.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        (
            {
                "benchkit/store/__init__.py": "",
                "benchkit/store/a.py": "from benchkit.store import b\n",
                "benchkit/store/b.py": "def f():\n    from benchkit.store.a import g\n",
            },
            "import circle: benchkit.store.a -> benchkit.store.b",
        ),
        (
            {
                "benchkit/gate/__init__.py": "",
                "benchkit/gate/x.py": "from benchkit.run.pilot import go\n",
                "benchkit/run/__init__.py": "",
                "benchkit/run/pilot.py": "",
            },
            "benchkit.gate.x:1 imports benchkit.run.pilot: an arrow upward or sideways",
        ),
        (
            {"benchkit/run/__init__.py": "", "benchkit/run/p.py": "import benchkit\n"},
            "benchkit.run.p:1 imports benchkit: only the face may import the face",
        ),
        (
            {
                "benchkit/run/__init__.py": "",
                "benchkit/run/p.py": "def f():\n    from benchkit.store.q import r\n",
                "benchkit/store/__init__.py": "",
                "benchkit/store/q.py": "",
            },
            "benchkit.run.p:2 imports benchkit.store.q: inside a function",
        ),
        (
            {"benchkit/bench/__init__.py": "", "benchkit/bench/s.py": "import subprocess\n"},
            "benchkit.bench.s: a pure module imports subprocess",
        ),
    ],
)
def test_the_house_check_finds_what_is_wrong(
    tmp_path: Path, files: dict[str, str], expected: str
) -> None:
    found = problems(_package(tmp_path, files))
    assert any(p.startswith(expected) for p in found), found


def test_an_import_under_type_checking_is_no_arrow(tmp_path: Path) -> None:
    root = _package(
        tmp_path,
        {
            "benchkit/store/__init__.py": "",
            "benchkit/store/a.py": "import typing\nif typing.TYPE_CHECKING:\n"
            "    from benchkit.run.b import c\n",
            "benchkit/run/__init__.py": "",
            "benchkit/run/b.py": "from benchkit.store.a import d\n",
        },
    )
    assert problems(root) == []


def test_the_readme_package_table_matches_the_tree() -> None:
    readme = (ROOT / "README.md").read_text()
    lines = readme.split("### Packages", 1)[1].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    end = next(i for i in range(start, len(lines)) if not lines[i].startswith("|"))
    named_packages: set[str] = set()
    named_modules: set[str] = set()
    for row in lines[start + 2 : end]:
        first, floor_name, cell = (c.strip() for c in row.strip("|").split("|")[:3])
        package = first.strip("`").rstrip("/")
        named_packages.add(package)
        prefix = "benchkit" if package == "benchkit" else f"benchkit.{package}"
        for module in re.findall(r"`([\w.]+)`", cell):
            full = f"{prefix}.{module}".removesuffix(".__init__")
            assert LAYERS[floor(full)][0] == floor_name, (full, floor_name)
            named_modules.add(full)
    tree = modules(ROOT)
    packages = {p for p in tree if tree[p].name == "__init__.py" and p != "benchkit"}
    assert named_packages == {"benchkit"} | {p.removeprefix("benchkit.") for p in packages}
    assert named_modules == {m for m in tree if tree[m].name != "__init__.py"} | {"benchkit"}
