"""Command arms: a tool described by an `arm.toml`, run in the pilot's worktree.

The tool runs in its own process group (`proc`), with an environment of its own:
PATH, HOME set to a folder of the pilot's, the locale, and only what its file
allows. Values of the variables its file marks secret are passed to the tool and
written nowhere: benchkit redacts them from the logs it keeps. Every substituted
value reaches the tool as one plain argument (a list command) or shell-quoted (a
string command), so an instruction holding quotes, `;`, `$(...)` or a newline is text.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from benchkit.arm_report import ArmReport
from benchkit.arms.failures import classify
from benchkit.arms.needs import missing_program
from benchkit.arms.protocol import Arm, ArmContext, ArmOutcome
from benchkit.arms.reports import read_report
from benchkit.bench.arm_file import AgentReport, ArmDefinition, JsonPathReport, load_arm
from benchkit.bench.bench_file import Bench
from benchkit.errors import ArmError
from benchkit.records import PilotSpec, redact
from benchkit.workspace import proc
from benchkit.workspace.commands import PLACEHOLDER, allowed_env, fill, substitute
from benchkit.workspace.forge import gh_problem

BASE_ENV = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TERM")
BUILT_IN_VARS = (
    "instruction",
    "model",
    "max_cost",
    "executor",
    "worktree",
    "home",
    "arm_dir",
    "bench",
)


def _placeholders(command: str | Sequence[str]) -> set[str]:
    parts = [command] if isinstance(command, str) else list(command)
    return {name for part in parts for name in PLACEHOLDER.findall(part)}


@dataclass(frozen=True)
class CommandArm(Arm):
    """A tool run as a command; `run` never raises for the tool's own failures."""

    arm: ArmDefinition
    name: str
    label: str  # its executor's
    executor_args: tuple[str, ...]
    executor_env: tuple[tuple[str, str], ...]
    vars: tuple[tuple[str, str], ...]

    @property
    def executor(self) -> str:
        return self.label

    @property
    def model(self) -> str:
        """The model its file names, when the pilot gives none."""
        return self.arm.file.model or ""

    @property
    def source(self) -> Path:
        """The file the arm is made of."""
        return self.arm.path

    @property
    def network(self) -> bool:
        return self.arm.file.network

    @property
    def scratch(self) -> tuple[str, ...]:
        """What its file says the tool writes for itself in the worktree."""
        return tuple(self.arm.file.scratch)

    @property
    def takes_vars(self) -> bool:
        return True

    @property
    def priced(self) -> bool:
        return True

    def _values(self, context: ArmContext) -> dict[str, str]:
        spec = context.spec
        values = {
            "instruction": context.bench.file.instruction.strip(),
            "model": spec.model or self.model,
            "max_cost": "" if spec.max_cost is None else f"{spec.max_cost:g}",
            "executor": self.executor,
            "worktree": str(context.worktree),
            "home": str(context.home),
            "arm_dir": str(self.arm.folder),
            "bench": context.bench.name,
        }
        for name, value in self.vars:
            values[name] = fill(value, values)
        return values

    def secrets(self) -> list[str]:
        """The values of the variables the arm file marks secret, as set now."""
        return [os.environ[n] for n in self.secret_names()]

    def secret_names(self) -> list[str]:
        """The variables the arm file marks secret that are set now."""
        return [n for n in self.arm.file.env.secret if os.environ.get(n)]

    def environment(
        self, context: ArmContext, values: Mapping[str, str]
    ) -> tuple[dict[str, str], list[str]]:
        """The arm's environment, and the secret values in it."""
        allowed = self.arm.file.env
        env = allowed_env(BASE_ENV)
        env["HOME"] = str(context.home)
        for name in [*allowed.allow, *allowed.secret]:
            if name in os.environ:
                env[name] = os.environ[name]
        env.update({k: fill(v, values) for k, v in allowed.set.items()})
        env.update({k: fill(v, values) for k, v in self.executor_env})
        return env, self.secrets()

    def run(self, context: ArmContext) -> ArmOutcome:
        file = self.arm.file
        values = self._values(context)
        env, secrets = self.environment(context, values)
        context.home.mkdir(parents=True, exist_ok=True)
        log, stdout = context.logs / "arm.log", context.logs / "arm.stdout"
        told = redact(values["instruction"], secrets)  # kept beside what the tool said
        (context.logs / "instruction.txt").write_text(told, errors="surrogateescape")
        run = partial(
            proc.run,
            cwd=context.worktree,
            env=env,
            log_path=log,
            timeout_s=file.timeout,
            grace_s=file.grace,
            secrets=secrets,
            sandbox=context.sandbox.with_network(file.network) if context.sandbox else None,
        )
        finished: proc.Finished | None = None
        for step in file.setup:
            command = substitute(step, values)
            finished = run(command)
            if finished.timed_out or finished.exit_code != 0:
                break
        else:
            command = substitute(file.command, values)
            if isinstance(command, str):
                command = " ".join([command, *map(shlex.quote, self.executor_args)])
            else:
                command = [*command, *self.executor_args]
            finished = run(command, stdout_path=stdout)
        assert finished is not None
        report = self._report(context, values, stdout, secrets)
        said = log.read_text(errors="replace") if log.exists() else ""
        failure = classify(
            exit_code=finished.exit_code,
            timed_out=finished.timed_out,
            interrupted=False,
            report=report,
            log=said,
            missing=_missing(command, said) if finished.not_found else None,
        )
        if failure is None:
            return ArmOutcome(ok=True, exit_code=finished.exit_code, report=report)
        return ArmOutcome(
            ok=False,
            failure_kind=failure.kind,
            detail=redact(failure.detail, secrets),
            retryable=failure.retryable,
            timed_out=finished.timed_out,
            exit_code=finished.exit_code,
            report=report,
        )

    def _report(
        self, context: ArmContext, values: Mapping[str, str], stdout: Path, secrets: list[str]
    ) -> ArmReport:
        spec = self.arm.file.report
        file_text = None
        if isinstance(spec, JsonPathReport | AgentReport) and spec.file:
            given = Path(fill(spec.file, values))
            path = given if given.is_absolute() else context.worktree / given
            if path.is_symlink() or not (
                given.is_absolute() or path.resolve().is_relative_to(context.worktree.resolve())
            ):  # the tool's report, not a file it points benchkit at
                return ArmReport(problem=f"report file {spec.file} is a link: not read")
            if path.is_file():
                file_text = redact(path.read_text(errors="replace"), secrets)
                kept = context.logs / f"report{path.suffix or '.txt'}"
                kept.write_text(file_text)
                if path.resolve().is_relative_to(context.worktree.resolve()):
                    path.unlink()  # the tool's report is not part of its change
        out = stdout.read_text(errors="replace") if stdout.exists() else ""
        return read_report(spec, stdout=out, file_text=file_text)


SHELL_NOT_FOUND = re.compile(r":\s*([^:\s]+): (?:command )?not found\s*$", re.MULTILINE)


def _missing(command: str | Sequence[str], log: str) -> str:
    """The program that could not be started: a list's first, or the one the shell
    running a string said it did not find (`sh: 1: tool: not found`)."""
    if isinstance(command, str):
        found = SHELL_NOT_FOUND.findall(log)
        if found:
            return str(found[-1])
    return proc.program(command)


def command_arm(value: str, path: Path, bench: Bench, spec: PilotSpec) -> CommandArm:
    """A command arm from its file, checked against the pilot: raises `ArmError`."""
    arm = load_arm(path)
    file = arm.file
    given = dict(spec.arm_vars)
    unknown = sorted(set(given) - set(file.vars))
    if unknown:
        raise ArmError(
            path,
            "vars",
            f"no variable {unknown[0]!r} (declared: {', '.join(sorted(file.vars)) or 'none'})",
        )
    values = {**file.vars, **given}
    missing = sorted(n for n, v in values.items() if v == "")
    if missing:
        raise ArmError(path, f"vars.{missing[0]}", f"needs a value: --var {missing[0]}=VALUE")
    used = set().union(*(_placeholders(c) for c in [file.command, *file.setup]))
    known = set(BUILT_IN_VARS) | set(values)
    if used - known:
        raise ArmError(path, "command", f"unknown variable {{{sorted(used - known)[0]}}}")
    if "max_cost" in used and spec.max_cost is None:
        raise ArmError(path, "command", "passes {max_cost} to the tool: give --max-cost")
    if "model" in used and not (spec.model or file.model):
        raise ArmError(path, "command", "passes {model} to the tool: give --model")
    program = missing_program(file)
    if program is not None:
        raise ArmError(
            path,
            "command",
            f"needs {program} on PATH: not found (install it, or put a stand-in first on PATH)",
        )
    if isinstance(file.report, JsonPathReport) and file.report.names_a_change:
        problem = gh_problem()  # its CI is read with gh: said at planning, not after the arm
        if problem is not None:
            said = "report.pr_url" if file.report.pr_url else "report.pushed_sha"
            raise ArmError(path, said, problem)
    label = spec.executor or file.default_executor or next(iter(file.executors), "local")
    if file.executors and label not in file.executors:
        raise ArmError(
            path,
            "executors",
            f"no executor {label!r} (known: {', '.join(sorted(file.executors))})",
        )
    executor = file.executors.get(label)
    return CommandArm(
        arm=arm,
        name=value,
        label=label,
        executor_args=tuple(executor.args) if executor else (),
        executor_env=tuple(sorted(executor.env.items())) if executor else (),
        vars=tuple(values.items()),
    )
