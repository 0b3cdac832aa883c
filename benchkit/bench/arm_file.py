"""Arm files (`arm.toml`): a tool run as a command, validated with pydantic."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictBool, model_validator

from benchkit.bench.files import Argument, Command, Env, EnvName, Seconds, Strict, validated
from benchkit.bench.names import NAME
from benchkit.errors import ArmError


class AgentReport(Strict):
    """An agent CLI's own output (see `benchkit.arms.reports`): Claude Code's result
    message, Codex's JSON events, aider's text, Gemini CLI's JSON, OpenCode's JSON
    events; read from the arm's stdout, or from a file in the worktree."""

    adapter: Literal["claude-code", "codex", "aider", "gemini-cli", "opencode"]
    file: str | None = None


class JsonPathReport(Strict):
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
    input_tokens: str | None = None  # tokens read, cached or not ...
    cached_input_tokens: str | None = None  # ... of them read from the cache
    output_tokens: str | None = None
    model: str | None = None  # the model it ran, whose prices a cost from tokens takes
    pr_url: str | None = None  # the pull request it opened: its CI is read (a CI stage)
    pushed_repository: str | None = None  # or the fork (OWNER/NAME) ...
    pushed_branch: str | None = None  # ... the branch ...
    pushed_sha: str | None = None  # ... and the commit it pushed
    session_list: str | None = None  # one item per session:
    session_id: str = "id"  # ... and the keys read in each item
    session_status: str = "status"
    session_cost: str = "cost_usd"
    session_turns: str = "turns"
    session_duration: str = "duration_s"
    session_kind: str = "kind"  # agent, mechanical or manual
    session_reason: str = "reason"  # why it ended as it did

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
            "input_tokens",
            "cached_input_tokens",
            "output_tokens",
            "model",
            "pr_url",
            "pushed_repository",
            "pushed_branch",
            "pushed_sha",
            "session_list",
        ):
            path = getattr(self, name)
            if path is not None:
                try:
                    parse(path)
                except Exception as exc:
                    raise ValueError(f"{name}: not a JSONPath: {path!r} ({exc})") from None
        if (self.pushed_repository is None) != (self.pushed_sha is None):
            raise ValueError(
                "pushed_repository and pushed_sha: a fork's push is read by both, give both"
            )
        return self

    @property
    def names_a_change(self) -> bool:
        """The report names a change on the forge, whose CI a pilot reads."""
        return self.pr_url is not None or self.pushed_sha is not None


class NoReport(Strict):
    adapter: Literal["none"]


Report = Annotated[AgentReport | JsonPathReport | NoReport, Field(discriminator="adapter")]


class Executor(Strict):
    """What one executor adds: arguments after the command, and environment."""

    args: list[str] = Field(default_factory=list)
    env: Env = Field(default_factory=dict)


class ArmEnv(Strict):
    """What the arm's environment holds besides PATH, HOME and the locale."""

    allow: list[EnvName] = Field(default_factory=list)  # passed through from benchkit's
    secret: list[EnvName] = Field(default_factory=list)  # passed through, values redacted
    set: Env = Field(default_factory=dict)


def _scratch(pattern: str) -> str:
    """A pattern of files a tool keeps for itself: from the worktree's root, naming
    something (`.aider*`, `.cache/`), never everything (`*`, `**`) nor out of it."""
    parts = pattern.strip("/").split("/")
    named = re.search(r"[A-Za-z0-9_-]", pattern)
    if not named or ".." in parts or pattern.startswith(("/", "!")) or "\n" in pattern:
        raise ValueError(f"{pattern!r} is no pattern of the worktree's own files")
    return pattern


class ArmFile(Strict):
    """An `arm.toml`: a tool run as a command in the pilot's worktree.

    `{instruction}`, `{model}`, `{max_cost}`, `{executor}`, `{worktree}`, `{home}`,
    `{arm_dir}`, `{bench}` and every name of `[vars]` are replaced in `setup` and
    `command`: as whole arguments in a list, shell-quoted in a string.
    """

    name: Annotated[str, Field(pattern=NAME)]
    description: str = ""
    model: str = ""  # used when the pilot names none
    setup: list[Command] = Field(default_factory=list)
    command: Command
    timeout: Annotated[Seconds, Field(gt=0)] = 1800.0
    grace: Annotated[Seconds, Field(ge=0)] = 10.0
    network: StrictBool = True  # in the sandbox: false gives the tool no network
    # what the tool writes in the worktree for itself (a cache, a history), as git
    # patterns from the worktree's root: left out of its change
    scratch: list[Annotated[str, AfterValidator(_scratch)]] = Field(default_factory=list)
    vars: dict[str, Argument] = Field(default_factory=dict)
    env: ArmEnv = Field(default_factory=ArmEnv)
    executors: dict[str, Executor] = Field(default_factory=dict)
    default_executor: str | None = None  # else the first of `executors`
    report: Report = Field(default_factory=lambda: NoReport(adapter="none"))

    @property
    def programs(self) -> tuple[str, ...]:
        """The program it starts first by name, to be found on PATH before anything
        runs: its first setup step's, else its command's (a setup may install what
        comes after it); a list's only, as a shell line's first word may be the
        shell's own (`cd`, `FOO=1`)."""
        first = (self.setup or [self.command])[0]
        if isinstance(first, str) or "/" in first[0] or "{" in first[0]:
            return ()
        return (first[0],)

    @model_validator(mode="after")
    def _default_executor_declared(self) -> ArmFile:
        if self.default_executor is not None and self.default_executor not in self.executors:
            raise ValueError(f"default_executor {self.default_executor!r} is not in executors")
        return self


class ArmDefinition(BaseModel):
    """A loaded arm file and the folder it came from."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    file: ArmFile
    path: Path

    @property
    def folder(self) -> Path:
        return self.path.parent


def load_arm(path: Path) -> ArmDefinition:
    """Read and validate an arm file, or raise `ArmError` naming the file and field."""
    return ArmDefinition(file=validated(ArmFile, path, ArmError), path=path.resolve())
