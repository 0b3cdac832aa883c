"""Real JUnit reports of pytest, vitest and jest-junit, mapped to their test files."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from benchkit.gate.jest import parse_jest_json
from benchkit.gate.junit import (
    CaseResult,
    ReportError,
    failing_files,
    file_of,
    in_tree,
    parse_report,
)
from benchkit.gate.runners import RUNNERS
from benchkit.gate.summary import RunnerSummary, read_summary
from tests.conftest import ROOT

FIXTURES = ROOT / "tests" / "fixtures" / "junit"


def _cases(name: str) -> list[tuple[str | None, str, str]]:
    return [(c.file, c.name, c.outcome) for c in parse_report((FIXTURES / name).read_text())]


@pytest.mark.parametrize("family", ["xunit1", "xunit2"])
def test_pytest_both_families(family: str) -> None:
    assert _cases(f"pytest-{family}.xml") == [
        ("tests/test_broken.py", "tests.test_broken", "error"),  # collection error
        ("tests/test_fixture_error.py", "test_uses_boom", "error"),
        ("tests/unit/test_calc.py", "test_adds", "passed"),
        ("tests/unit/test_calc.py", "test_rounds_wrongly", "failed"),
        ("tests/unit/test_calc.py", "test_in_class", "passed"),
        ("tests/unit/test_calc.py", "test_param[1]", "passed"),
        ("tests/unit/test_calc.py", "test_param[2]", "failed"),
        ("tests/unit/test_calc.py", "test_later", "skipped"),
    ]


def test_vitest() -> None:
    assert _cases("vitest.xml") == [
        ("src/broken.test.js", "src/broken.test.js", "failed"),  # failed to load
        ("src/math.test.js", "add > adds", "passed"),
        ("src/math.test.js", "add > adds negatives", "passed"),
        ("src/math.test.js", "div > divides", "passed"),
        ("src/math.test.js", "div > rounds wrongly", "failed"),
        ("src/nested/skip.test.js", "later", "skipped"),
        ("src/nested/skip.test.js", "works", "passed"),
    ]


@pytest.mark.parametrize("variant", ["jest-junit-file.xml", "jest-junit-suite.xml"])
def test_jest_junit_with_a_file_or_a_filepath_suite(variant: str) -> None:
    cases = _cases(variant)
    assert [c[0] for c in cases] == ["lib/math.test.js"] * 4 + ["lib/nested/skip.test.js"] * 2
    assert [c[2] for c in cases] == ["passed"] * 3 + ["failed", "skipped", "passed"]
    # the file that failed to load is not in the report at all
    assert "lib/broken.test.js" not in {c[0] for c in cases}


def test_jest_junit_defaults_name_no_file() -> None:
    cases = _cases("jest-junit.xml")
    assert {c[0] for c in cases} == {None}
    assert [c[1] for c in cases if c[2] == "failed"] == ["div rounds wrongly"]


def test_messages_are_first_lines() -> None:
    [failure] = [
        c
        for c in parse_report((FIXTURES / "vitest.xml").read_text())
        if c.name == "div > rounds wrongly"
    ]
    assert failure.message == "expected 0.3333333333333333 to be 0.33 // Object.is equality"
    [jest] = [
        c
        for c in parse_report((FIXTURES / "jest-junit-file.xml").read_text())
        if c.outcome == "failed"
    ]
    # jest-junit puts the text in the element, not in a message attribute
    assert jest.message == "Error: expect(received).toBe(expected) // Object.is equality"


def test_failing_files_in_report_order() -> None:
    cases = parse_report((FIXTURES / "pytest-xunit2.xml").read_text())
    assert failing_files(cases) == [
        "tests/test_broken.py",
        "tests/test_fixture_error.py",
        "tests/unit/test_calc.py",
    ]


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        (
            {"file_attr": "./a/test_x.py", "classname": "zzz", "suite": None, "name": "t"},
            "a/test_x.py",
        ),
        (
            {"file_attr": None, "classname": "web/app.spec.ts", "suite": "x", "name": "t"},
            "web/app.spec.ts",
        ),
        (
            {"file_attr": None, "classname": "renders", "suite": "src/App.test.tsx", "name": "t"},
            "src/App.test.tsx",
        ),
        (
            {
                "file_attr": None,
                "classname": "pkg.sub.test_mod.TestA.TestB",
                "suite": "pytest",
                "name": "t",
            },
            "pkg/sub/test_mod.py",
        ),
        (
            {"file_attr": None, "classname": "pkg.mod_test", "suite": "pytest", "name": "t"},
            "pkg/mod_test.py",
        ),
        # a collection error outside any test module (a broken conftest): no file
        ({"file_attr": None, "classname": "", "suite": "pytest", "name": "tests"}, None),
        ({"file_attr": None, "classname": "add adds", "suite": "add", "name": "add adds"}, None),
    ],
)
def test_file_mapping_rules(kwargs: dict[str, str | None], expected: str | None) -> None:
    assert file_of(**kwargs) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "text", ["", "   \n", "not xml at all", "<testsuite><testcase", "<html><body/></html>"]
)
def test_bad_reports_are_errors(text: str) -> None:
    with pytest.raises(ReportError):
        parse_report(text)


def test_runner_summaries_of_the_real_logs() -> None:
    assert read_summary((FIXTURES / "pytest.log").read_text()) == RunnerSummary(
        runner="pytest", failed_tests=4, failed_files=None, passed=3, skipped=1, errors=2
    )
    assert read_summary((FIXTURES / "vitest.log").read_text()) == RunnerSummary(
        runner="vitest", failed_tests=1, failed_files=2, passed=4, skipped=1
    )
    assert read_summary((FIXTURES / "jest.log").read_text()) == RunnerSummary(
        runner="jest", failed_tests=1, failed_files=2, passed=4, skipped=1
    )


@pytest.mark.parametrize(
    ("log", "expected"),
    [
        ("===== 1 failed, 22 passed, 76 warnings in 0.07s =====\n", 1),
        ("1 failed, 23 passed in 0.05s\n", 1),
        ("3 passed in 0.01s\n", 0),
        ("!!!! Interrupted: 2 errors during collection !!!!\n", 2),
        (
            "x.test.ts:\n(pass) a\n(fail) b\n\n 1 pass\n 1 fail\n"
            "Ran 2 tests across 1 file. [5ms]\n",
            1,
        ),
    ],
)
def test_runner_summary_lines(log: str, expected: int) -> None:
    summary = read_summary(log)
    assert summary is not None and summary.failed_tests == expected


def test_no_summary_in_a_crash_log() -> None:
    assert read_summary("Segmentation fault (core dumped)\n") is None


def test_a_collection_error_says_what_failed_to_import() -> None:
    cases = parse_report((FIXTURES / "pytest-xunit2.xml").read_text())
    broken = next(c for c in cases if c.file == "tests/test_broken.py")
    assert broken.outcome == "error"
    assert broken.message == "ModuleNotFoundError: No module named 'does_not_exist'"


# ---------------------------------------------------------------- by the runner registry


def test_the_registry_reads_a_file_that_failed_to_load_as_an_error() -> None:
    """vitest's JUnit names it as a failed case named by the file; jest's JSON as a
    file without tests and a message; jest-junit leaves it out, and jest's log tells."""
    vitest = RUNNERS["vitest"].read_report((FIXTURES / "vitest.xml").read_text())
    assert [(c.file, c.outcome) for c in vitest if c.outcome == "error"] == [
        ("src/broken.test.js", "error")
    ]
    jest = RUNNERS["jest"]
    cases = jest.read_report(
        (FIXTURES / "jest-broken.json").read_text(), root=Path("/home/dev/sums")
    )
    assert [(c.file, c.full_id, c.outcome) for c in cases] == [
        ("test/sum.test.js", "sum \u203a adds", "failed"),
        ("test/sum.test.js", "sum \u203a adds negatives", "failed"),
        ("test/broken.test.js", "test/broken.test.js", "error"),
    ]
    assert cases[2].message == "Cannot find module '../src/missing' from 'test/broken.test.js'"
    junit = tuple(jest.read_report((FIXTURES / "jest-junit-file.xml").read_text()))
    assert "lib/broken.test.js" not in {c.file for c in junit}
    both = jest.with_unloaded(junit, (FIXTURES / "jest.log").read_text())
    [added] = [c for c in both if c.file == "lib/broken.test.js"]
    assert added.outcome == "error" and "Cannot find module './does-not-exist'" in (
        added.message or ""
    )
    logged = RUNNERS["vitest"].with_unloaded(tuple(vitest), (FIXTURES / "vitest.log").read_text())
    assert len(logged) == len(vitest)  # the report named it already: nothing twice


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "empty"),
        ('{"numTotalTests": 1}', "not jest's JSON report"),
        ("{", "not jest's"),
        ('{"testResults": null}', "not jest's"),
        ('{"testResults": [1]}', "not jest's"),
        (
            '{"testResults": [{"name": "a.test.js",'
            ' "assertionResults": [{"ancestorTitles": null}]}]}',
            "not jest's",
        ),
    ],
)
def test_a_bad_jest_json_report_is_an_error(text: str, why: str) -> None:
    with pytest.raises(ReportError, match=why):
        parse_jest_json(text)
    with pytest.raises(ReportError, match="writes JUnit XML"):
        RUNNERS["vitest"].read_report('{"testResults": []}')


@pytest.mark.parametrize(
    ("message", "written"),
    [
        ("/w/tree/a.py", "a.py"),
        ("at /w/tree, then /w/tree: x", "at ., then .: x"),
        ("'/w/tree/'", "'.'"),
        ("/real/a.py", "a.py"),  # the root as resolved
        ("/w/tree2/b.py /w/tree.bak /w/tree~1/x", "/w/tree2/b.py /w/tree.bak /w/tree~1/x"),
        ("/srv/m/w/tree/calc.py file:///w/tree/x", "/srv/m/w/tree/calc.py file:///w/tree/x"),
        ("(/w/tree/a/b.py:3)", "(a/b.py:3)"),
    ],
)
def test_in_tree_writes_the_trees_paths_from_the_tree_and_nothing_else(
    message: str, written: str
) -> None:
    case = CaseResult(file="t.py", name="t", outcome="failed", duration_s=0.0, message=message)
    [seen] = in_tree([case], ["/w/tree", "/real/"])
    assert seen.message == written
    assert in_tree([case], [])[0] == case
    assert in_tree([replace(case, message=None)], ["/w/tree"])[0].message is None


@pytest.mark.parametrize("time", ["abc", "-5", "nan", "inf"])
def test_a_case_time_that_is_no_number_of_seconds_makes_the_report_unreadable(time: str) -> None:
    report = f'<testsuite name="s"><testcase classname="tests.test_a" name="t" time="{time}"/>'
    with pytest.raises(ReportError, match=rf"testcase 't': time '{time}' is not a number"):
        parse_report(report + "</testsuite>")
    fine = parse_report(
        '<testsuite name="s"><testcase classname="tests.test_a" name="t"/></testsuite>'
    )
    assert fine[0].duration_s == 0.0
