"""What an arm did to the tests and to what runs them; which files a bench holds out.

Pure: paths and file texts in, records out. A file is one of:

- a **test** file: `test_*.py`, `*_test.py`, `tests.py`, `conftest.py`, `*_test.go`,
  `*Test.java` (`*Tests.java`, `.kt`, `.cs`), `*.test.*`, `*.spec.*`, `*_spec.*`, or
  any file under a folder named `test`, `tests`, `__tests__` or `e2e`;
- **test configuration**: `pytest.ini`, `.pytest.ini`, `tox.ini`, `noxfile.py`,
  `vitest.config.*`, `vitest.workspace.*`, `vite.config.*` (where vitest's own block
  often lives), `jest.config.*`, `jest.setup.*`, `.mocharc.*`, `karma.conf.*`; and,
  where the change touches their test sections (added and deleted files included),
  `pyproject.toml` (`[tool.pytest...]`, `[tool.tox]`), `setup.cfg` (`[tool:pytest]`,
  `[tox:tox]`) and `package.json` (its `test` scripts, its `jest` key);
- **CI**: anything under `.github/`, `.gitlab-ci.yml`, `.circleci/`, `.buildkite/`,
  `azure-pipelines.yml`, `Jenkinsfile`.

The arm's diff is the arm's to make; `tampered` only names these files, with what was
done to each (added, edited, deleted), so that a reader sees what the checks' verdict
rests on.
"""

from __future__ import annotations

import fnmatch
import json
import re
import tomllib
from collections.abc import Callable, Iterable, Sequence
from pathlib import PurePosixPath
from typing import Any, Literal

Change = Literal["added", "edited", "deleted"]
Tampered = tuple[tuple[str, Change], ...]  # (path, what the arm did to it), in path order

TEST_FOLDERS = frozenset({"test", "tests", "__tests__", "e2e"})
_TEST_NAME = re.compile(
    r"^(test_.*\.py|.*_test\.(py|go)|tests\.py|conftest\.py|.*Tests?\.(java|kt|cs)"
    r"|.*\.(test|spec)\.[^.]+|.*_spec\.[^.]+)$"
)
_CONFIG_NAME = re.compile(
    r"^(\.?pytest\.ini|tox\.ini|noxfile\.py|(vitest\.config|vitest\.workspace|vite\.config"
    r"|jest\.config|jest\.setup|karma\.conf)\.[^/]+|\.mocharc(\.[^/]+)?)$"
)
_CI = re.compile(
    r"^(\.github/|\.circleci/|\.buildkite/|\.gitlab-ci\.ya?ml$|azure-pipelines\.ya?ml$"
    r"|Jenkinsfile$)"
)
SECTIONED = frozenset({"pyproject.toml", "setup.cfg", "package.json"})
"""Files of which only the test sections count (see `sections_of`)."""


def is_test_file(path: str) -> bool:
    """A test file (or a pytest conftest), by its name or a folder it lies in."""
    parts = PurePosixPath(path).parts
    return bool(_TEST_NAME.match(parts[-1])) or any(p in TEST_FOLDERS for p in parts[:-1])


def touches_tests(path: str) -> bool:
    """A test file, test configuration (whole files), or CI."""
    name = PurePosixPath(path).name
    return is_test_file(path) or bool(_CONFIG_NAME.match(name)) or bool(_CI.match(path))


def sections_of(name: str, text: str | None) -> Any:
    """The parts of a `pyproject.toml`, `setup.cfg` or `package.json` (its text, None
    when it is absent) that configure the tests, as plain data to compare; the whole
    text of one that cannot be read (then any change to it counts)."""
    if text is None:  # absent: as a file with no test section
        text = "{}" if name == "package.json" else ""
    try:
        if name == "pyproject.toml":
            tool = tomllib.loads(text).get("tool", {})
            return {k: tool.get(k) for k in ("pytest", "tox")}
        if name == "setup.cfg":
            return _setup_cfg_sections(text)
        data = json.loads(text)
        scripts = data.get("scripts") or {}
        tests = {k: v for k, v in scripts.items() if re.match(r"^(pre|post)?test(:|$)", k)}
        return {"scripts": tests, "jest": data.get("jest")}
    except (ValueError, AttributeError):  # AttributeError: not an object
        return text


def _setup_cfg_sections(text: str) -> Any:
    import configparser  # a change to a setup.cfg is rare: its parser is loaded then

    parser = configparser.RawConfigParser()
    try:
        parser.read_string(text)
    except configparser.Error:
        return text
    return {s: dict(parser[s]) for s in ("tool:pytest", "tox:tox") if parser.has_section(s)}


def tampered(
    changes: Iterable[tuple[str | None, str | None]],
    sections_changed: Callable[[str], bool],
) -> Tampered:
    """The files of the arm's diff that are tests, test configuration or CI, with what
    was done to each. `changes` are the diff's (old path, new path) pairs (None: the
    file is new, or gone); a rename is the old file deleted and the new one added.
    `sections_changed(path)` tells whether the arm changed the test sections of a
    `SECTIONED` file."""

    def counts(path: str) -> bool:
        sectioned = PurePosixPath(path).name in SECTIONED
        return touches_tests(path) or (sectioned and sections_changed(path))

    found: dict[str, Change] = {}
    for old, new in changes:
        if old is not None and new is not None and old == new:
            if counts(old):
                found[old] = "edited"
            continue
        if old is not None and counts(old):
            found[old] = "deleted"
        if new is not None and counts(new):
            found[new] = "added"
    return tuple(sorted(found.items()))


def held_out(
    paths: Iterable[str], rule: Sequence[str] | str, human_changed: Iterable[str]
) -> list[str]:
    """The files (of `paths`: those of the arm's tree and of the held-out source) that
    the bench holds out: those its globs match (a glob may name a folder), or with
    `"human"` the test files the human reference changed."""
    if isinstance(rule, str):  # "human"
        chosen = {p for p in human_changed if is_test_file(p)}
        return sorted(chosen)
    return sorted({p for p in paths if any(_held(p, glob) for glob in rule)})


def _held(path: str, glob: str) -> bool:
    """A glob's `*` crosses `/`; `**/` may match no folder; a folder holds its files."""
    folder = glob.rstrip("/")
    top = glob.removeprefix("**/") if glob.startswith("**/") else None
    return (
        fnmatch.fnmatchcase(path, glob)
        or path.startswith(f"{folder}/")
        or (top is not None and fnmatch.fnmatchcase(path, top))
    )


CACHES = frozenset({"__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".cache"})


def telling_first(paths: Iterable[str]) -> list[str]:
    """Ignored files the arm wrote, those a reader should see first: every file but
    the tools' caches (`__pycache__`, `.pytest_cache`, ...), then those; each in path
    order."""
    return sorted(paths, key=lambda p: (any(x in CACHES for x in PurePosixPath(p).parts), p))
