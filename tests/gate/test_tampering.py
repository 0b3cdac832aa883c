"""What an arm did to tests, their configuration and CI; which files a bench holds out.
Pure: data in, records out."""

from __future__ import annotations

import json

import pytest

from benchkit.analysis.text import printable, tampering
from benchkit.gate.summary import first_error, pytest_error
from benchkit.gate.tampering import held_out, is_test_file, sections_of, tampered, telling_first


@pytest.mark.parametrize(
    ("path", "test"),
    [
        ("tests/test_calc.py", True),
        ("test_calc.py", True),
        ("pkg/calc_test.py", True),
        ("src/conftest.py", True),
        ("tests/fixtures/data.json", True),  # under a test folder
        ("src/__tests__/sum.js", True),
        ("src/sum.test.ts", True),
        ("e2e/login.cy.ts", True),
        ("app/tests.py", True),  # Django's
        ("pkg/calc_test.go", True),
        ("src/main/java/CalcTest.java", True),
        ("spec/calc_spec.rb", True),
        ("src/testing.py", False),  # a module named so, in no test folder
        ("numpy/testing/utils.py", False),  # a library's test helpers: its code
        ("docs/spec/api.md", False),
        ("src/contest.py", False),
        ("latest/notes.md", False),
    ],
)
def test_a_test_file_by_its_name_or_folder(path: str, test: bool) -> None:
    assert is_test_file(path) is test


def _never(path: str) -> bool:
    raise AssertionError(f"{path}: no sectioned file here")


def test_what_the_arm_did_to_each_test_config_and_ci_file() -> None:
    changes = [
        ("tests/test_a.py", "tests/test_a.py"),  # edited
        (None, "tests/test_new.py"),  # added
        ("tests/test_old.py", None),  # deleted
        ("tests/test_x.py", "tests/test_y.py"),  # renamed: one gone, one new
        ("pytest.ini", "pytest.ini"),
        (None, ".pytest.ini"),
        ("vitest.config.ts", "vitest.config.ts"),
        ("vite.config.ts", "vite.config.ts"),
        (None, ".github/workflows/ci.yml"),
        ("src/calc.py", "src/calc.py"),  # code: not named
        ("README.md", None),
    ]
    assert tampered(changes, _never) == (
        (".github/workflows/ci.yml", "added"),
        (".pytest.ini", "added"),
        ("pytest.ini", "edited"),
        ("tests/test_a.py", "edited"),
        ("tests/test_new.py", "added"),
        ("tests/test_old.py", "deleted"),
        ("tests/test_x.py", "deleted"),
        ("tests/test_y.py", "added"),
        ("vite.config.ts", "edited"),
        ("vitest.config.ts", "edited"),
    )


PYPROJECT = """\
[project]
name = "calc"
version = "{version}"

[tool.pytest.ini_options]
addopts = "{addopts}"
"""


def _package(test: str, version: str = "1.0.0") -> str:
    return json.dumps({"name": "x", "version": version, "scripts": {"test": test, "lint": "x"}})


@pytest.mark.parametrize(
    ("name", "old", "new", "counts"),
    [
        (
            "pyproject.toml",
            PYPROJECT.format(version="1", addopts="-q"),
            PYPROJECT.format(version="2", addopts="-q"),
            False,
        ),
        (
            "pyproject.toml",
            PYPROJECT.format(version="1", addopts="-q"),
            PYPROJECT.format(version="1", addopts="-q -p no:cacheprovider -k 'not slow'"),
            True,
        ),
        ("package.json", _package("vitest run"), _package("vitest run", "1.0.1"), False),
        ("package.json", _package("vitest run"), _package("vitest run || true"), True),
        ("setup.cfg", "[metadata]\nname = a\n", "[metadata]\nname = b\n", False),
        ("setup.cfg", "[tool:pytest]\naddopts = -q\n", "[tool:pytest]\naddopts = -x\n", True),
        ("package.json", '{"scripts": ', '{"scripts": {}}', True),  # unreadable before
        ("setup.cfg", "[metadata\nname = a\n", "[metadata]\nname = a\n", True),  # likewise
        ("pyproject.toml", "[tool\n", "[tool]\n", True),
    ],
)
def test_a_project_file_counts_when_its_test_sections_change(
    name: str, old: str, new: str, counts: bool
) -> None:
    changed = sections_of(name, old) != sections_of(name, new)
    assert tampered([(name, name)], lambda path: changed) == (((name, "edited"),) if counts else ())


def test_a_project_file_added_or_deleted_counts_when_it_configures_the_tests() -> None:
    """A `setup.cfg` added with a `[tool:pytest]` section (a plugin of the arm's
    loaded by `addopts`), a `pyproject.toml` deleted with its pytest section: both
    count; an added `package.json` with no test script does not."""
    texts = {
        "setup.cfg": (None, "[tool:pytest]\naddopts = -p pkg.plug\n"),
        "pyproject.toml": (PYPROJECT.format(version="1", addopts="-q"), None),
        "package.json": (None, '{"name": "x", "scripts": {"build": "tsc"}}'),
    }

    def changed(path: str) -> bool:
        old, new = texts[path]
        return bool(sections_of(path, old) != sections_of(path, new))

    changes = [(None, "setup.cfg"), ("pyproject.toml", None), (None, "package.json")]
    assert tampered(changes, changed) == (("pyproject.toml", "deleted"), ("setup.cfg", "added"))


def test_held_out_globs_name_files_and_folders() -> None:
    paths = ["tests/test_a.py", "tests/unit/test_b.py", "src/calc.py", "tests/data/x.json"]
    assert held_out(paths, ["tests/test_*.py"], []) == ["tests/test_a.py"]
    assert held_out(paths, ["tests/unit"], []) == ["tests/unit/test_b.py"]
    assert held_out(["test_top.py", "a/test_b.py"], ["**/test_*.py"], []) == [
        "a/test_b.py",
        "test_top.py",
    ]
    assert held_out(paths, ["tests/*"], []) == [
        "tests/data/x.json",
        "tests/test_a.py",
        "tests/unit/test_b.py",
    ]


def test_held_out_human_is_the_test_files_the_human_changed() -> None:
    human = ["src/calc.py", "tests/test_calc.py", "tests/test_gone.py"]
    assert held_out(["src/calc.py"], "human", human) == ["tests/test_calc.py", "tests/test_gone.py"]


def test_what_a_runner_said_before_any_test_ran() -> None:
    conftest = (
        "ImportError while loading conftest '/tmp/x/tests/conftest.py'.\n"
        "tests/conftest.py:1: in <module>\n    from helpers import x\n"
        "E   ImportError: cannot import name 'x' from 'helpers' (/tmp/x/helpers.py)\n"
    )
    assert pytest_error(conftest) == "ImportError: cannot import name 'x' from 'helpers'"
    usage = (
        "ERROR: usage: python -m pytest [options] [file_or_dir]\n"
        "python -m pytest: error: unrecognized arguments: --bogus\n  inifile: None\n"
    )
    assert pytest_error(usage) == "error: unrecognized arguments: --bogus"
    main = "ERROR: usage: __main__.py [options]\n__main__.py: error: unrecognized arguments: -z\n"
    assert pytest_error(main) == "error: unrecognized arguments: -z"
    assert pytest_error("1 passed in 0.01s\n") is None
    vitest = (
        "failed to load config from /tmp/x/vitest.config.ts\n\n"
        "⎯⎯⎯⎯⎯⎯⎯ Startup Error ⎯⎯⎯⎯⎯⎯⎯⎯\nError: Cannot find module 'nope'\nRequire stack:\n"
    )
    assert first_error(vitest) == "Error: Cannot find module 'nope'"
    build = (
        "⎯⎯ Startup Error ⎯⎯\nError: Build failed with 1 error:\nvitest.config.ts:1:9: ERROR: x\n"
    )
    assert first_error(build) == "Error: Build failed with 1 error: vitest.config.ts:1:9: ERROR: x"


def test_the_ignored_files_a_reader_sees_first_are_not_caches() -> None:
    written = [
        "tests/__pycache__/t.pyc",
        ".bench/site/sitecustomize.py",
        ".pytest_cache/v",
        "a.log",
    ]
    assert telling_first(written) == [
        ".bench/site/sitecustomize.py",
        "a.log",
        ".pytest_cache/v",
        "tests/__pycache__/t.pyc",
    ]


def test_a_path_with_a_control_character_prints_on_one_line() -> None:
    row = {"tampered": ["tests/test_n\nl.py=added", "a=b.py=edited"]}
    assert tampering(row) == "tests/test_n\\nl.py (added), a=b.py (edited)"
    assert printable("x\ty\x01") == "x\\ty\\x01"
