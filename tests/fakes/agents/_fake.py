"""What the fake agent CLIs share: the edits they make and the modes they fail in.

Each fake (`claude`, `codex`, `aider`, `gemini`, `opencode`) takes the real tool's
flags, prints its output in the real tool's shapes and exits with its exit codes;
none calls a model. What it does is chosen by the model it is given, which reaches
it through the arm file as the real model's name would:

- any other model: a success;
- `budget`, `turn-limit`, `rate-limit`: the tool's own failure shapes (a tool with no
  budget or turn cap ignores them);
- `truncated`: the output cut off mid-line, as when the tool is killed.

Without its API key in the environment, each fails as the real tool does.
The edits: for the demo bench's instruction, four of the human's sites, in two files.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

DEMO = "Migrate tally off the deprecated float helpers"
DEMO_EDITS = (  # the human's first sites: Money's __float__, tax.py's migration
    (
        "src/tally/money.py",
        "    def format(self) -> str:",
        "    def __float__(self) -> float:\n        return float(self.amount)\n\n"
        "    def format(self) -> str:",
    ),
    (
        "src/tally/tax.py",
        "from tally.compat import round_money\n",
        "from tally.money import Money\n",
    ),
    (
        "src/tally/tax.py",
        "    return round_money(amount * rate_for(region))",
        "    return float(Money.of(amount * rate_for(region)).round())",
    ),
    (
        "src/tally/tax.py",
        "    return round_money(amount / (1 + rate_for(region)))",
        "    return float(Money.of(amount / (1 + rate_for(region))).round())",
    ),
)
FAILURES = ("budget", "turn-limit", "rate-limit", "truncated")


def mode(model: str) -> str:
    return model if model in FAILURES else "success"


def has_key(*names: str) -> bool:
    return any(os.environ.get(n) for n in names)


def edit(instruction: str) -> list[str]:
    """Make the plan's edits in the working folder; the paths edited, absolute."""
    done: list[str] = []
    if instruction.strip().startswith(DEMO):
        for name, old, new in DEMO_EDITS:
            path = Path.cwd() / name
            text = path.read_text()
            if old in text:
                path.write_text(text.replace(old, new, 1))
                done += [str(path)] if str(path) not in done else []
    return done


def out(event: object) -> None:
    print(json.dumps(event), flush=True)


def truncated(event: object) -> None:
    """An event cut off mid-line, and the exit of a killed process."""
    sys.stdout.write(json.dumps(event)[:25])
    sys.stdout.flush()
    sys.exit(137)
