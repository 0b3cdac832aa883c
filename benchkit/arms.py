"""Arms: what runs in the pilot's worktree to make the change.

An arm is anything with `run(context) -> ArmOutcome`. The built-in arms are kept in
an explicit registry: `noop`, `human` (the oracle: applies the human reference) and
`replay:<name or path>` (applies a recorded patch).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from benchkit.proc import ProcError
from benchkit.records import PilotSpec
from benchkit.reports import NO_REPORT, ArmReport
from benchkit.spec import Bench
from benchkit.workspace import Repository, apply_patch, diff


class ArmError(ValueError):
    """An arm name that names no arm."""


@dataclass(frozen=True, kw_only=True)
class ArmContext:
    bench: Bench
    repository: Repository
    spec: PilotSpec
    worktree: Path
    home: Path  # the arm's own HOME, outside the worktree
    logs: Path


@dataclass(frozen=True, kw_only=True)
class ArmOutcome:
    ok: bool
    failure_kind: str | None = None
    detail: str | None = None
    retryable: bool | None = None
    timed_out: bool = False
    exit_code: int | None = None
    report: ArmReport = NO_REPORT


class Arm(Protocol):
    @property
    def name(self) -> str: ...

    def run(self, context: ArmContext) -> ArmOutcome: ...


@runtime_checkable
class Secretive(Protocol):
    """An arm holding secret values that must be written nowhere."""

    def secrets(self) -> list[str]: ...


@dataclass(frozen=True)
class Noop:
    name: str = "noop"

    def run(self, context: ArmContext) -> ArmOutcome:
        return ArmOutcome(ok=True)


def _apply(context: ArmContext, patch_text: str, what: str) -> ArmOutcome:
    log = context.logs / "arm.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    try:
        apply_patch(context.worktree, patch_text)
    except ProcError as exc:
        log.write_text(f"{what} does not apply:\n{exc.stderr}")
        return ArmOutcome(ok=False, failure_kind="patch", detail=f"{what} does not apply")
    log.write_text(f"{what} applied\n")
    return ArmOutcome(ok=True)


@dataclass(frozen=True)
class Human:
    name: str = "human"

    def run(self, context: ArmContext) -> ArmOutcome:
        repo = context.repository
        patch = diff(repo.mirror, repo.base_sha, repo.human_sha, context=3, binary=True)
        return _apply(context, patch, "the human reference")


@dataclass(frozen=True)
class Replay:
    patch: Path
    name: str = "replay"

    def run(self, context: ArmContext) -> ArmOutcome:
        text = self.patch.read_text(encoding="utf-8", errors="surrogateescape")
        return _apply(context, text, f"patch {self.patch.name}")


def _replay(bench: Bench, argument: str) -> Arm:
    named = bench.folder / "patches" / f"{argument}.patch"
    given = Path(argument).expanduser()
    for candidate in (named, given):
        if candidate.is_file():
            return Replay(patch=candidate.resolve(), name=f"replay:{argument}")
    known = sorted(p.stem for p in (bench.folder / "patches").glob("*.patch"))
    raise ArmError(
        f"replay:{argument}: no patch named {argument!r} for bench {bench.name} "
        f"(known: {', '.join(known) or 'none'}) and no such file"
    )


def _simulated(bench: Bench, argument: str) -> Arm:
    from benchkit.simulated import SimulatedAgent  # builds on this module

    return SimulatedAgent()


BUILTIN: dict[str, Callable[[Bench, str], Arm]] = {
    "noop": lambda bench, _: Noop(),
    "human": lambda bench, _: Human(),
    "replay": _replay,
    "simulated-agent": _simulated,
}


def resolve_arm(bench: Bench, spec: PilotSpec) -> Arm:
    """The arm an `--arm` value names: `noop`, `human`, `replay:<name or path>`, a
    bundled arm file by name (`data/arms/NAME.toml`) or an arm file's path."""
    from benchkit import command_arm  # command arms build on this module

    kind, _, argument = spec.arm.partition(":")
    factory = BUILTIN.get(kind)
    if factory is not None:
        if kind == "replay" and not argument:
            raise ArmError("replay needs a patch: replay:<name or path>")
        return factory(bench, argument)
    path = command_arm.find_arm_file(spec.arm)
    if path is None:
        files = sorted(p.stem for p in command_arm.bundled_arms_dir().glob("*.toml"))
        raise ArmError(
            f"unknown arm {spec.arm!r} (built in: {', '.join(sorted(BUILTIN))}; "
            f"arm files: {', '.join(files) or 'none'}; or the path of an arm.toml)"
        )
    return command_arm.command_arm(spec.arm, path, bench, spec)
