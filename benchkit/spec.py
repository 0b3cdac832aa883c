"""Bench files (`bench.toml`): their format, validated with pydantic.

A bad file is reported as one line naming the file and the field:
`data/benches/demo/bench.toml: checks.2.timeout: Input should be a valid number`.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Annotated, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"
FileModel = TypeVar("FileModel", bound=BaseModel)


class BenchError(Exception):
    """Bad input: one line naming the file and the field. The CLI exits 2."""

    def __init__(self, file: Path | str, field: str, message: str) -> None:
        self.file = str(file)
        self.field = field
        self.message = message
        super().__init__(f"{file}: {field}: {message}" if field else f"{file}: {message}")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Count(_Strict):
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


class Check(_Strict):
    """A named command run on a tree, with the worktree as working directory.

    A string command runs under `/bin/sh -c`; a list runs as it is. `{report}` and
    `{worktree}` are replaced (shell-quoted) before it runs.
    """

    name: Annotated[str, Field(pattern=NAME)]
    command: str | list[str]
    timeout: Annotated[float, Field(gt=0)] = 300.0
    count: Count | None = None

    @field_validator("count", mode="before")
    @classmethod
    def _junit_shorthand(cls, value: object) -> object:
        return {"junit": True} if value == "junit" else value


class Repo(_Strict):
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


class Human(_Strict):
    """The human reference: a ref in the repository, or a patch file next to bench.toml."""

    ref: str | None = None
    patch: str | None = None

    @model_validator(mode="after")
    def _one(self) -> Human:
        if (self.ref is None) == (self.patch is None):
            raise ValueError("give exactly one of 'ref' or 'patch'")
        return self


class Tests(_Strict):
    """The test runner: the check that runs all tests, its JUnit report, and how to
    run given files alone (`{files}` and `{report}` are replaced)."""

    check: str = "test"
    report: str
    alone: str | list[str]


class Sites(_Strict):
    exclude: list[str] = Field(default_factory=list)


class BenchFile(_Strict):
    name: Annotated[str, Field(pattern=NAME)]
    description: str = ""
    instruction: Annotated[str, Field(min_length=1)]
    repo: Repo
    human: Human
    checks: list[Check] = Field(default_factory=list)
    tests: Tests | None = None
    sites: Sites = Field(default_factory=Sites)
    env: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _consistent(self) -> BenchFile:
        names = [c.name for c in self.checks]
        if len(set(names)) != len(names):
            raise ValueError("check names must be unique")
        if self.tests is not None and self.tests.check not in names:
            raise ValueError(f"tests.check names no check: {self.tests.check!r}")
        if self.repo.tree is not None and self.human.patch is None:
            raise ValueError("a 'tree' source needs its human reference as a 'patch'")
        return self


class Bench(BaseModel):
    """A loaded bench: the validated file and the folder it came from."""

    model_config = ConfigDict(frozen=True)

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


def _field(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(part) for part in loc) or "(file)"


def _one_line(exc: ValidationError) -> tuple[str, str]:
    errors = exc.errors()
    first = errors[0]
    message = first["msg"].removeprefix("Value error, ")
    if first["type"] == "extra_forbidden":
        message = "unknown key"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return _field(tuple(first["loc"])), message + more


def _read_toml(path: Path) -> dict[str, object]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BenchError(path, "", "no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BenchError(path, "", f"cannot read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise BenchError(path, "", f"not valid TOML: {exc}") from None


def _validated(model: type[FileModel], path: Path) -> FileModel:
    """A TOML file read and validated, or a `BenchError` naming the file and the field."""
    raw = _read_toml(path)
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        field, message = _one_line(exc)
        raise BenchError(path, field, message) from None


def load_bench(path: Path) -> Bench:
    """Read and validate a bench file, or raise `BenchError`."""
    file = _validated(BenchFile, path)
    bench = Bench(file=file, path=path.resolve())
    for field, relative in (
        ("repo.tree", file.repo.tree),
        ("human.patch", file.human.patch),
    ):
        if relative is not None and not bench.resolve(relative).exists():
            raise BenchError(path, field, f"no such file or folder: {relative}")
    return bench


# ---------------------------------------------------------------- arm files


class ClaudeCodeReport(_Strict):
    """The result message of `claude -p --output-format json` or `stream-json`, read
    from the arm's stdout, or from a file in the worktree."""

    adapter: Literal["claude-code"]
    file: str | None = None


class JsonPathReport(_Strict):
    """A JSON report file the tool writes, and the JSONPath of each figure in it.

    A count (`sessions`, `sessions_accepted`, `sessions_rejected`) is the number at
    its path, or how many things the path finds: `$.sessions[?(@.status == 'accepted')]`.
    """

    adapter: Literal["jsonpath"]
    file: str
    cost: str | None = None
    sessions: str | None = None
    sessions_accepted: str | None = None
    sessions_rejected: str | None = None
    feedback_rounds: str | None = None
    flaky_files: str | None = None
    over_budget: str | None = None
    error: str | None = None  # a message or code saying why the tool stopped
    session_list: str | None = None  # one item per session:
    session_id: str = "id"  # ... and the keys read in each item
    session_status: str = "status"
    session_cost: str = "cost_usd"
    session_turns: str = "turns"
    session_duration: str = "duration_s"

    @model_validator(mode="after")
    def _paths_parse(self) -> JsonPathReport:
        from jsonpath_ng.ext.parser import parse  # a heavy import, only for this adapter

        for name in (
            "cost",
            "sessions",
            "sessions_accepted",
            "sessions_rejected",
            "feedback_rounds",
            "flaky_files",
            "over_budget",
            "error",
            "session_list",
        ):
            path = getattr(self, name)
            if path is not None:
                try:
                    parse(path)
                except Exception as exc:
                    raise ValueError(f"{name}: not a JSONPath: {path!r} ({exc})") from None
        return self


class NoReport(_Strict):
    adapter: Literal["none"]


Report = Annotated[ClaudeCodeReport | JsonPathReport | NoReport, Field(discriminator="adapter")]


class Executor(_Strict):
    """What one executor adds: arguments after the command, and environment."""

    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)


class ArmEnv(_Strict):
    """What the arm's environment holds besides PATH, HOME and the locale."""

    allow: list[str] = Field(default_factory=list)  # passed through from benchkit's
    secret: list[str] = Field(default_factory=list)  # passed through, values redacted
    set: dict[str, str] = Field(default_factory=dict)


class ArmFile(_Strict):
    """An `arm.toml`: a tool run as a command in the pilot's worktree.

    `{instruction}`, `{model}`, `{max_cost}`, `{executor}`, `{worktree}`, `{home}`,
    `{arm_dir}`, `{bench}` and every name of `[vars]` are replaced in `setup` and
    `command`: as whole arguments in a list, shell-quoted in a string.
    """

    name: Annotated[str, Field(pattern=NAME)]
    description: str = ""
    model: str = ""  # used when the pilot names none
    setup: list[str | list[str]] = Field(default_factory=list)
    command: str | list[str]
    timeout: Annotated[float, Field(gt=0)] = 1800.0
    grace: Annotated[float, Field(ge=0)] = 10.0
    vars: dict[str, str] = Field(default_factory=dict)
    env: ArmEnv = Field(default_factory=ArmEnv)
    executors: dict[str, Executor] = Field(default_factory=dict)
    default_executor: str | None = None  # else the first of `executors`
    report: Report = Field(default_factory=lambda: NoReport(adapter="none"))

    @model_validator(mode="after")
    def _default_executor_declared(self) -> ArmFile:
        if self.default_executor is not None and self.default_executor not in self.executors:
            raise ValueError(f"default_executor {self.default_executor!r} is not in executors")
        return self


class Arm(BaseModel):
    """A loaded arm file and the folder it came from."""

    model_config = ConfigDict(frozen=True)

    file: ArmFile
    path: Path

    @property
    def folder(self) -> Path:
        return self.path.parent


def load_arm(path: Path) -> Arm:
    """Read and validate an arm file, or raise `BenchError` naming the file and field."""
    return Arm(file=_validated(ArmFile, path), path=path.resolve())
