"""What an arm file's tool needs to run here (its program on PATH, a key in the
environment, the network), and whether this machine has it."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from benchkit.bench.arm_file import ArmFile, load_arm
from benchkit.bench.find import arm_files


def missing_program(file: ArmFile) -> str | None:
    """The program the arm starts first by name, when it is not on PATH."""
    return next((p for p in file.programs if shutil.which(p) is None), None)


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
        programs=tuple((p, p != missing_program(file)) for p in file.programs),
        keys=tuple((n, bool(os.environ.get(n))) for n in file.env.secret),
        network=file.network and "network" in file.model_fields_set,  # said, not defaulted
    )


def arm_needs() -> dict[str, Needs]:
    """What each bundled arm file's tool needs, by its name."""
    return {path.stem: needs(path) for path in arm_files()}
