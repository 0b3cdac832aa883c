"""The built-in arms: `noop` (nothing), `human` (the oracle: applies the human
reference) and `replay:<name or path>` (applies a recorded patch)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from benchkit.arms.protocol import Arm, ArmContext, ArmOutcome
from benchkit.bench.bench_file import Bench
from benchkit.errors import ArmError
from benchkit.workspace.git import apply_patch, diff
from benchkit.workspace.proc import ProcError


@dataclass(frozen=True)
class Noop(Arm):
    name: str = "noop"

    instant: ClassVar[bool] = True

    def run(self, context: ArmContext) -> ArmOutcome:
        return ArmOutcome(ok=True)


def apply_text(context: ArmContext, patch_text: str, what: str) -> ArmOutcome:
    """The arm's outcome of applying a patch's text to the worktree (logged)."""
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
class Human(Arm):
    name: str = "human"

    instant: ClassVar[bool] = True

    def run(self, context: ArmContext) -> ArmOutcome:
        repo = context.repository
        patch = diff(repo.mirror, repo.base_sha, repo.human_sha, context=3, binary=True)
        return apply_text(context, patch, "the human reference")


@dataclass(frozen=True)
class Replay(Arm):
    patch: Path
    name: str = "replay"

    instant: ClassVar[bool] = True

    @property
    def source(self) -> Path:
        """The file the arm is made of."""
        return self.patch

    def run(self, context: ArmContext) -> ArmOutcome:
        text = self.patch.read_text(encoding="utf-8", errors="surrogateescape")
        return apply_text(context, text, f"patch {self.patch.name}")


def replay(bench: Bench, argument: str) -> Arm:
    """The replay arm of a patch named in the bench's `patches/`, or of a patch file."""
    named = bench.folder / "patches" / f"{argument}.patch"
    given = Path(argument).expanduser()
    for candidate in (named, given):
        if candidate.is_file():
            return Replay(patch=candidate.resolve(), name=f"replay:{argument}")
    known = sorted(p.stem for p in (bench.folder / "patches").glob("*.patch"))
    raise ArmError(
        f"replay:{argument}",
        "",
        f"no patch named {argument!r} for bench {bench.name} "
        f"(known: {', '.join(known) or 'none'}) and no such file",
    )
