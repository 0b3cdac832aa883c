"""The arm registry: what an `--arm` value names.

An explicit table of the built-in arms (`noop`, `human`, `replay:<name or path>`,
`prediction:<file>`, `simulated-agent`); any other value is an arm file, by bundled
name or by path.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

from benchkit.arms.builtin import Human, Noop, replay
from benchkit.arms.protocol import Arm
from benchkit.bench.bench_file import Bench
from benchkit.bench.find import arm_files, find_arm_file
from benchkit.errors import ArmError
from benchkit.records import PilotSpec

Factory = Callable[[Bench, str], Arm]


def _predicted(bench: Bench, argument: str) -> Arm:
    from benchkit.arms.prediction import predicted  # a task set's: SWE-bench's models

    return predicted(bench, argument)


def _simulated(bench: Bench, argument: str) -> Arm:
    from benchkit.arms.simulated import SimulatedAgent  # demos' only

    return SimulatedAgent()


BUILTIN: dict[str, tuple[Factory, str]] = {
    "noop": (lambda bench, _: Noop(), "nothing: the base as it is"),
    "human": (lambda bench, _: Human(), "applies the human reference (the oracle)"),
    "replay": (replay, "applies a recorded patch"),
    "prediction": (_predicted, "replays a SWE-bench prediction of the bench's instance"),
    "simulated-agent": (
        _simulated,
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
    from benchkit.arms.command import command_arm  # an arm file's: pydantic's models

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


def list_arms() -> dict[str, str]:
    """The built-in arms and the bundled arm files, each with what it is."""
    found = {
        {"replay": "replay:NAME|PATH", "prediction": "prediction:FILE"}.get(name, name): what
        for name, (_, what) in BUILTIN.items()
    }
    from benchkit.bench.arm_file import load_arm

    for path in arm_files():
        found[path.stem] = load_arm(path).file.description or str(path)
    return found
