"""The arm registry: what an `--arm` value names.

An explicit table of the built-in arms (`noop`, `human`, `replay:<name or path>`,
`prediction:<file>`, `simulated-agent`); any other value is an arm file, by bundled
name or by path.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from benchkit.arms.builtin import Human, Noop, replay
from benchkit.arms.command import command_arm
from benchkit.arms.prediction import predicted
from benchkit.arms.protocol import Arm
from benchkit.arms.simulated import SimulatedAgent
from benchkit.bench.arm_file import load_arm
from benchkit.bench.bench_file import Bench
from benchkit.bench.find import arm_files, find_arm_file
from benchkit.errors import ArmError
from benchkit.records import PilotSpec

Factory = Callable[[Bench, str], Arm]

BUILTIN: dict[str, tuple[Factory, str]] = {
    "noop": (lambda bench, _: Noop(), "nothing: the base as it is"),
    "human": (lambda bench, _: Human(), "applies the human reference (the oracle)"),
    "replay": (replay, "applies a recorded patch"),
    "prediction": (predicted, "replays a SWE-bench prediction of the bench's instance"),
    "simulated-agent": (
        lambda bench, _: SimulatedAgent(),
        "SIMULATED data for demos: makes each human change by chance",
    ),
}


def resolve_arm(bench: Bench, spec: PilotSpec) -> Arm:
    """The arm an `--arm` value names: `noop`, `human`, `replay:<name or path>`,
    `simulated-agent`, an arm file by bundled name, or an arm file's path."""
    kind, _, argument = spec.arm.partition(":")
    if kind in BUILTIN:
        if kind == "replay" and not argument:
            raise ArmError(spec.arm, "", "replay needs a patch: replay:<name or path>")
        factory, _ = BUILTIN[kind]
        return factory(bench, argument)
    path = find_arm_file(spec.arm)
    if path is None:
        files = [p.stem for p in arm_files()]
        raise ArmError(
            spec.arm,
            "",
            f"no such arm (built in: {', '.join(sorted(BUILTIN))}; "
            f"arm files: {', '.join(files) or 'none'}; or the path of an arm.toml)",
        )
    return command_arm(spec.arm, path, bench, spec)


def arm_digest(arm: Arm, spec: PilotSpec) -> str | None:
    """What the arm is made of (its file, or its patch, and the vars it is given), as
    a digest; None for an arm that is all benchkit's own (`noop`, `human`)."""
    made_of = arm.made_of
    if made_of is None:
        return None
    made = hashlib.sha256(made_of)
    for name, value in spec.arm_vars:
        made.update(f"\0{name}={value}".encode())
    return made.hexdigest()[:16]


@dataclass(frozen=True, kw_only=True)
class Needs:
    """What an arm file's tool needs to run here, and whether this machine has it."""

    programs: tuple[tuple[str, bool], ...]  # (program, found on PATH)
    keys: tuple[tuple[str, bool], ...]  # (a variable its file marks secret, set now)
    network: bool

    def said(self) -> str:
        """One line: `needs codex on PATH (not found); a key in CODEX_API_KEY |
        OPENAI_API_KEY (none set); the network`."""
        parts = [f"{p} on PATH" + ("" if found else " (not found)") for p, found in self.programs]
        if self.keys:
            names = " | ".join(n for n, _ in self.keys)
            set_now = ", ".join(n for n, on in self.keys if on)
            parts.append(f"a key in {names} ({set_now + ' set' if set_now else 'none set'})")
        if self.network:
            parts.append("the network")
        return "needs " + "; ".join(parts) if parts else ""


def needs(path: Path) -> Needs:
    """What the tool of an arm file needs to run here, found or not."""
    file = load_arm(path).file
    return Needs(
        programs=tuple((p, shutil.which(p) is not None) for p in file.programs),
        keys=tuple((n, bool(os.environ.get(n))) for n in file.env.secret),
        network=file.network and "network" in file.model_fields_set,  # said, not defaulted
    )


def arm_needs() -> dict[str, Needs]:
    """What each bundled arm file's tool needs, by its name."""
    return {path.stem: needs(path) for path in arm_files()}


def list_arms() -> dict[str, str]:
    """The built-in arms and the bundled arm files, each with what it is."""
    found = {
        {"replay": "replay:NAME|PATH", "prediction": "prediction:FILE"}.get(name, name): what
        for name, (_, what) in BUILTIN.items()
    }
    for path in arm_files():
        found[path.stem] = load_arm(path).file.description or str(path)
    return found
