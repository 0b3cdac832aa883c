"""Bench files (`bench.toml`): their format, validated with pydantic.

A bad file is reported as one line naming the file and the field:
`demo/bench.toml: checks.2.timeout: Input should be a valid number`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, field_validator, model_validator

from benchkit.bench.files import Argument, Command, Env, Seconds, Strict, validated
from benchkit.bench.names import NAME, RESERVED_CHECKS
from benchkit.errors import BenchError
from benchkit.gate.runners import RUNNERS


class Count(Strict):
    """How to read a check's count: `"junit"` (failed and errored cases of the test
    report), or `{ regex = '...' }` (the first group of the last match in the output)."""

    regex: str | None = None
    junit: bool = False

    @field_validator("regex")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value is None:
            return value
        try:
            pattern = re.compile(value, re.MULTILINE)
        except re.error as exc:
            raise ValueError(f"not a regular expression: {exc}") from exc
        if pattern.groups < 1:
            raise ValueError("needs one group that captures the number")
        return value

    @model_validator(mode="after")
    def _one(self) -> Count:
        if (self.regex is None) == (not self.junit):
            raise ValueError("give one of \"junit\" or { regex = '...' }")
        return self


class Check(Strict):
    """A named command run on a tree, with the worktree as working directory.

    A string command runs under `/bin/sh -c`; a list runs as it is. `{report}` and
    `{worktree}` are replaced (shell-quoted) before it runs.
    """

    name: Annotated[str, Field(pattern=NAME)]
    command: Command
    timeout: Annotated[Seconds, Field(gt=0)] = 300.0
    count: Count | None = None

    @field_validator("name")
    @classmethod
    def _not_reserved(cls, value: str) -> str:
        if value in RESERVED_CHECKS:
            raise ValueError(f"{value!r} is a name of benchkit's own columns ({value}_status)")
        return value

    @field_validator("count", mode="before")
    @classmethod
    def _junit_shorthand(cls, value: object) -> object:
        return {"junit": True} if value == "junit" else value


class Repo(Strict):
    """Where the repository comes from: exactly one of `tree` or `git`."""

    tree: str | None = None  # folder with the base tree, next to bench.toml
    git: str | None = None  # local repository path or git URL
    base: str | None = None  # base ref; required with `git`

    @model_validator(mode="after")
    def _one_source(self) -> Repo:
        if (self.tree is None) == (self.git is None):
            raise ValueError("give exactly one of 'tree' (a folder) or 'git' (a repository)")
        if self.git is not None and not self.base:
            raise ValueError("'base' (the base ref) is required with 'git'")
        if self.tree is not None and self.base:
            raise ValueError("'base' goes with 'git'; a 'tree' is its own base")
        return self


class Human(Strict):
    """The human reference: a ref in the repository, or a patch file next to bench.toml."""

    ref: str | None = None
    patch: str | None = None

    @model_validator(mode="after")
    def _one(self) -> Human:
        if (self.ref is None) == (self.patch is None):
            raise ValueError("give exactly one of 'ref' or 'patch'")
        return self


TestName = Annotated[str, Field(pattern=r"^[^:]+::.+$")]  # FILE::ID


class Tests(Strict):
    """The test runner: the check that runs all tests, its JUnit report, how to run
    given files alone (`{files}` and `{report}` are replaced; by default the runner's
    own way), and the tests the bench expects to pass after a good change."""

    check: str = "test"
    report: str
    runner: str | None = None  # a name of the runner registry; else: from the log
    alone: str | list[str] | None = None
    must_pass: list[TestName] = Field(default_factory=list)  # fail to pass (FAIL_TO_PASS)
    keep_passing: list[TestName] = Field(default_factory=list)  # PASS_TO_PASS
    allow_removed: bool = False  # a test gone after the arm is listed, not failed
    # files reset to their held-out version before the checks after the arm: base's for
    # paths and globs, the human's for "human" (its test files, SWE-bench's test_patch)
    held_out: list[str] | Literal["human"] = Field(default_factory=list)
    # a patch next to bench.toml of tests the arm never sees (SWE-bench's test_patch):
    # the checks at base run on base with it applied; after the arm, the files it
    # touches are reset to base's and the patch applied
    test_patch: str | None = None

    @field_validator("held_out", mode="before")
    @classmethod
    def _list_or_human(cls, value: object) -> object:
        if isinstance(value, str) and value != "human":
            raise ValueError(f'{value!r}: give a list of paths or globs, or "human"')
        if not isinstance(value, str | list):
            raise ValueError('give a list of paths or globs, or "human"')
        return value

    @field_validator("held_out")
    @classmethod
    def _relative(cls, value: list[str] | str) -> list[str] | str:
        if isinstance(value, str):
            return value
        globs = [glob.removeprefix("./") for glob in value]  # as the repository's paths read
        for glob in globs:
            if not glob.strip() or glob.startswith("/") or ".." in glob.split("/"):
                raise ValueError(f"{glob!r} is not a path or glob inside the repository")
        return globs

    @field_validator("report")
    @classmethod
    def _report_path(cls, value: str) -> str:
        path = value.removeprefix("./")
        if not path.strip() or path.startswith("/") or ".." in path.split("/"):
            raise ValueError(f"{value!r} is not a path inside the repository")
        parts = path.split("/")
        globbed = [n for n, part in enumerate(parts) if any(c in part for c in "*?[")]
        if globbed and globbed[-1] == len(parts) - 1:
            raise ValueError(
                f"{value!r}: a glob names the packages' folders, then the report's path "
                "in each (packages/*/.bench/junit.xml)"
            )
        return path

    @property
    def in_packages(self) -> bool:
        """Whether each package of a workspace writes its own report (a glob)."""
        return any(c in self.report for c in "*?[")

    @property
    def report_name(self) -> str:
        """The report's path in its package's folder (after the glob), or in the tree."""
        parts = self.report.split("/")
        globbed = [n for n, part in enumerate(parts) if any(c in part for c in "*?[")]
        return "/".join(parts[globbed[-1] + 1 :]) if globbed else self.report

    @field_validator("runner")
    @classmethod
    def _known_runner(cls, value: str | None) -> str | None:
        if value is not None and value not in RUNNERS:
            raise ValueError(f"no runner {value!r} (runners: {', '.join(RUNNERS)})")
        return value

    @model_validator(mode="after")
    def _alone(self) -> Tests:
        if self.alone is None and self.runner is None:
            raise ValueError("give alone (a command with {files}) or the runner")
        words = [self.alone] if isinstance(self.alone, str) else self.alone or []
        if self.alone is not None and not any("{files}" in w for w in words):
            raise ValueError("alone must contain {files}: the files to run alone")
        return self

    @property
    def alone_command(self) -> str | list[str]:
        """How given files run alone: the bench's command, or its runner's."""
        if self.alone is not None:
            return self.alone
        assert self.runner is not None
        return RUNNERS[self.runner].alone


class Sites(Strict):
    exclude: list[str] = Field(default_factory=list)


class Sandbox(Strict):
    """What the bench's checks may do in the sandbox."""

    network: StrictBool = False  # checks run with no network unless the bench says so


class Environment(Strict):
    """What the checks run with. `venv`: a virtualenv of the bench's own, built with uv
    from a Python on this machine, the repository's dependency files at base and the
    bench's pins, cached by what makes it; `node`: the `node_modules` that its package
    manager installs from the repository's lock file at base (`package-lock.json`: npm
    ci; `pnpm-lock.yaml`: pnpm; `yarn.lock`: yarn, classic or berry; or `manager`),
    cached by the lock file's digest and the manager's version; `none`: the caller's
    PATH as it is."""

    kind: Literal["venv", "node", "none"] = "none"
    python: str | None = None  # a version ("3.11") or an interpreter's path; venv only
    requirements: list[str] = Field(default_factory=list)  # files in the repository at base
    extras: list[str] = Field(default_factory=list)  # of the repository's pyproject.toml
    packages: list[str] = Field(default_factory=list)  # the bench's own pins
    project: Literal["editable", "pythonpath", "none"] = "pythonpath"
    manager: Literal["npm", "pnpm", "yarn"] | None = None  # node: else by the lock file

    @model_validator(mode="after")
    def _venv_only(self) -> Environment:
        given = [k for k in ("python", "requirements", "extras", "packages") if getattr(self, k)]
        if self.kind != "venv" and given:
            raise ValueError(f'{given[0]} goes with kind = "venv"')
        if self.kind != "node" and self.manager is not None:
            raise ValueError('manager goes with kind = "node"')
        if self.kind != "venv" and self.project == "editable":
            raise ValueError('project = "editable" needs kind = "venv"')
        return self


class SweBench(Strict):
    """The SWE-bench task instance a bench was made from (`benchkit swebench benches`):
    its runs are graded by SWE-bench's rules as well (`benchkit.gate.swebench`)."""

    instance_id: Annotated[str, Field(min_length=1)]
    repo: str = ""  # OWNER/NAME
    version: str = ""


class BenchFile(Strict):
    name: Annotated[str, Field(pattern=NAME)]
    description: str = ""
    instruction: Annotated[Argument, Field(min_length=1)]
    repo: Repo
    human: Human
    checks: list[Check] = Field(default_factory=list)
    tests: Tests | None = None
    sites: Sites = Field(default_factory=Sites)
    environment: Environment = Field(default_factory=Environment)
    sandbox: Sandbox = Field(default_factory=Sandbox)
    env: Env = Field(default_factory=dict)
    swebench: SweBench | None = None
    ci_timeout: Annotated[Seconds, Field(gt=0)] = 600.0  # how long the forge's CI is waited for
    ci_poll: Annotated[Seconds, Field(gt=0)] = 30.0  # and how often it is asked

    @model_validator(mode="after")
    def _consistent(self) -> BenchFile:
        names = [c.name for c in self.checks]
        if len(set(names)) != len(names):
            raise ValueError("check names must be unique")
        if self.tests is not None and self.tests.check not in names:
            raise ValueError(f"tests.check names no check: {self.tests.check!r}")
        if self.repo.tree is not None and self.human.patch is None:
            raise ValueError("a 'tree' source needs its human reference as a 'patch'")
        if self.ci_poll > self.ci_timeout:
            raise ValueError(
                f"ci_poll: {self.ci_poll:g} s, more than ci_timeout ({self.ci_timeout:g} s)"
            )
        if self.swebench is not None and self.tests is None:
            raise ValueError("a SWE-bench instance needs [tests] (its FAIL_TO_PASS, PASS_TO_PASS)")
        return self


class Bench(BaseModel):
    """A loaded bench: the validated file and the folder it came from."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    file: BenchFile
    path: Path  # the bench.toml

    @property
    def name(self) -> str:
        return self.file.name

    @property
    def folder(self) -> Path:
        return self.path.parent

    def resolve(self, relative: str) -> Path:
        return (self.folder / relative).resolve()


def load_bench(path: Path) -> Bench:
    """Read and validate a bench file, or raise `BenchError`."""
    file = validated(BenchFile, path, BenchError)
    bench = Bench(file=file, path=path.resolve())
    for field, relative, folder in (
        ("repo.tree", file.repo.tree, True),
        ("human.patch", file.human.patch, False),
        ("tests.test_patch", file.tests.test_patch if file.tests else None, False),
    ):
        if relative is None:
            continue
        found = bench.resolve(relative)
        if not found.exists():
            raise BenchError(path, field, f"no such file or folder: {relative}")
        if found.is_dir() != folder:
            raise BenchError(path, field, f"not a {'folder' if folder else 'file'}: {relative}")
    return bench
