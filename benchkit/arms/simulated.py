"""The simulated agent: realistic variance for demo data, and said to be simulated.

Per pilot, seeded by (bench, executor, model, trial), it makes each of the human
reference's changes with a probability that depends on the executor and the model
(mostly a file's changes together, as they depend on each other; sometimes only
some of them; new definitions, the pure insertions, whenever it does any work),
sometimes makes an unrelated change, sometimes applies one of the bench's
`patches/break-*.patch` (a change that breaks a test), and reports a cost for each of
its sessions. Its name is `simulated-agent` and its runs are recorded with
`origin = "simulated"`: no figure of it is evidence about a real tool.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from unidiff.patch import Hunk, PatchSet

from benchkit.arm_report import ArmReport, SessionReport
from benchkit.arms.protocol import Arm, ArmContext, ArmOutcome
from benchkit.bench.sites import excluded
from benchkit.workspace.git import diff, git
from benchkit.workspace.proc import ProcError

SITE_PROBABILITY = {"cli": 0.55, "sdk": 0.7}  # by executor; others 0.6
MODEL_SHIFT = {"small": -0.2, "large": 0.15}  # by model; others 0
SLOPPY_PROBABILITY = 0.15  # a file changed in part, not as a whole
UNRELATED_PROBABILITY = 0.3
BREAK_PROBABILITY = 0.2
COST_PER_SESSION = {"small": 0.02, "large": 0.12}  # others 0.05


def probability(executor: str, model: str) -> float:
    """The chance that the simulated agent makes any one of the human's changes."""
    p = SITE_PROBABILITY.get(executor, 0.6) + MODEL_SHIFT.get(model, 0.0)
    return min(0.95, max(0.05, p))


def seed(bench: str, executor: str, model: str, trial: int) -> int:
    key = f"{bench}\0{executor}\0{model}\0{trial}".encode()
    return int.from_bytes(hashlib.sha256(key).digest()[:8], "big")


@dataclass(frozen=True)
class SimulatedAgent(Arm):
    name: str = "simulated-agent"

    instant: ClassVar[bool] = True

    @property
    def simulated(self) -> bool:
        return True

    def run(self, context: ArmContext) -> ArmOutcome:
        spec, bench, repo = context.spec, context.bench, context.repository
        rng = random.Random(seed(bench.name, spec.executor, spec.model, spec.trial))
        p = probability(spec.executor, spec.model)
        log = context.logs / "arm.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        notes = [
            f"simulated agent: p(site) = {p:.2f}, seed from {bench.name}/{spec.executor}/"
            f"{spec.model or '-'}/{spec.trial}"
        ]

        files = [
            f
            for f in PatchSet(diff(repo.mirror, repo.base_sha, repo.human_sha))
            if not f.is_binary_file and not excluded(f.path, bench.file.sites.exclude)
        ]  # tests, lock files: not the change the sites measure
        chosen: list[list[Hunk]] = []
        for changed in files:
            if rng.random() < SLOPPY_PROBABILITY:
                chosen.append([h for h in changed if rng.random() < p])  # part of a file
            else:
                chosen.append(list(changed) if rng.random() < p else [])  # a file together
        if any(chosen):  # new definitions come first: whoever does the work adds them
            chosen = [
                [h for h in changed if h in keep or not h.source_length]
                for changed, keep in zip(files, chosen, strict=True)
            ]
        made = sum(len(keep) for keep in chosen)
        chosen_files = []
        for changed, keep in zip(files, chosen, strict=True):
            if keep:
                del changed[:]
                changed.extend(keep)
                chosen_files.append(str(changed))
        self._apply(context, "".join(chosen_files), notes, "human changes")
        if rng.random() < UNRELATED_PROBABILITY:
            self._unrelated(context, rng, notes)
        breaks = sorted((bench.folder / "patches").glob("break-*.patch"))
        if breaks and rng.random() < BREAK_PROBABILITY:
            breaker = rng.choice(breaks)
            self._apply(context, breaker.read_text(), notes, f"break {breaker.name}")
        sessions = 1 + (rng.random() < 0.4) + (rng.random() < 0.2)
        rate = COST_PER_SESSION.get(spec.model, 0.05)
        session_list = tuple(
            SessionReport(
                session=i,
                session_id=f"sim-{i}",
                status="simulated",
                cost_usd=round(rate * rng.uniform(0.6, 1.4), 4),
                turns=rng.randint(2, 12),
            )
            for i in range(sessions)
        )
        notes.append(f"made {made} of the human's changes in {sessions} sessions")
        log.write_text("\n".join(notes) + "\n")
        report = ArmReport(
            cost_usd=round(sum(s.cost_usd or 0 for s in session_list), 4),
            sessions=sessions,
            turns=sum(s.turns or 0 for s in session_list),
            session_list=session_list,
        )
        return ArmOutcome(ok=True, exit_code=0, report=report)

    @staticmethod
    def _apply(context: ArmContext, patch: str, notes: list[str], what: str) -> None:
        if not patch.strip():
            return
        try:
            git(
                "apply",
                "--unidiff-zero",
                "--whitespace=nowarn",
                "-",
                cwd=context.worktree,
                input_text=patch,
            )
            notes.append(f"applied {what}")
        except ProcError as exc:
            notes.append(f"could not apply {what}: {exc}")

    @staticmethod
    def _unrelated(context: ArmContext, rng: random.Random, notes: list[str]) -> None:
        files = sorted(
            f
            for f in git("ls-files", "*.py", cwd=context.worktree).splitlines()
            if not excluded(f, context.bench.file.sites.exclude)
        )
        if files:
            target = Path(context.worktree, rng.choice(files))
            target.write_text(target.read_text() + "\n# tidied up (simulated)\n")
            notes.append(f"an unrelated change in {target.name}")
